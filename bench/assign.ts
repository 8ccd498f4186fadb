// npm run bench:assign [-- --tasks 1000 --per-task 3 --people 200 --rounds 3]
//
// Study assignment under load, on a fresh Postgres database: a study of `tasks` backend tasks with k = `per-task`
// and a consent text, and `people` people who accepted it. In each of `rounds` rounds every person asks for a
// task at the same moment, through the engine's start() as the bot calls it on /task start (the admission rule,
// then bot/assign.ts choosing the task and creating the session under the study's lock); then every session of
// the round is answered through the session store, so the next round's people ask again with their history.
// Reported: assignment latency (p50, p99, max of start()), sessions created, refusals, tasks filled past k
// (must be 0) and people given the same task twice (must be 0); exit code 1 if either is not 0.
// Yardstick, same run and same database: the same number of assignments in a second, identical study, one at a
// time (each start() awaited before the next), i.e. the path's own cost with nobody waiting on the lock.
import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createRuntime, type Runtime } from '../bot/runtime.ts';
import { RefusedError } from '../bot/session/types.ts';
import { createTestDatabase, type TestDatabase } from '../testing/database.ts';
import { registerVersion } from '../prisma/policy-store.ts';
import { appendAgentTurn } from '../prisma/session-store.ts';
import { createStudy, setStudyStatus, type StudyWithArms } from '../prisma/study-store.ts';
import { importTasks } from '../prisma/task-store.ts';
import { generateMiniTasks } from '../tasks/mini.ts';
import { percentile } from '../tasks/stats.ts';
import { countArg } from './args.ts';

const TASKS = countArg('tasks', 1000);
const K = countArg('per-task', 3);
const PEOPLE = countArg('people', 200);
const ROUNDS = countArg('rounds', 3);
const CONSENT = 'Your messages in this study are recorded for research on collaborative agents.';

interface Phase {
  mode: 'concurrent' | 'serial';
  latenciesMs: number[];
  /** Wall time of each round, ms. */
  roundsMs: number[];
  refusals: Record<string, number>;
  sessions: number;
  overfilledTasks: number;
  repeatedTasks: number;
  maxPerTask: number;
}

async function makeStudy(
  t: TestDatabase,
  name: string,
  taskIds: string[],
  policyVersionId: string,
): Promise<StudyWithArms> {
  return createStudy(
    t.prisma,
    'bench',
    {
      name,
      kind: 'backend',
      split: 'train',
      perTask: K,
      seed: 7,
      taskIds,
      arms: [{ policyVersionId, share: 100 }],
      consentText: CONSENT,
      payPerSessionCents: null,
      bonusSuccessCents: null,
      currency: null,
      maxSessionsPerPerson: null,
      opensAt: null,
      closesAt: null,
      guildIds: [],
      channelIds: [],
    },
    { requireConsent: true },
  );
}

async function phase(t: TestDatabase, rt: Runtime, study: StudyWithArms, mode: Phase['mode']): Promise<Phase> {
  const people = Array.from({ length: PEOPLE }, (_, i) => ({
    externalId: `${mode}:${String(i).padStart(4, '0')}`,
    displayName: `${mode} ${i}`,
  }));
  for (const p of people) await rt.engine.acceptConsent(p, { studyId: study.id, version: study.consentVersion });
  const out: Phase = {
    mode,
    latenciesMs: [],
    roundsMs: [],
    refusals: {},
    sessions: 0,
    overfilledTasks: 0,
    repeatedTasks: 0,
    maxPerTask: 0,
  };
  const ask = async (p: (typeof people)[number]): Promise<string | null> => {
    const t0 = performance.now();
    try {
      const s = await rt.engine.start(p, 'backend');
      out.latenciesMs.push(performance.now() - t0);
      return s.sessionId;
    } catch (err) {
      if (!(err instanceof RefusedError)) throw err;
      out.refusals[err.reason] = (out.refusals[err.reason] ?? 0) + 1;
      return null;
    }
  };
  for (let round = 0; round < ROUNDS; round++) {
    const r0 = performance.now();
    let ids: (string | null)[];
    if (mode === 'concurrent') ids = await Promise.all(people.map(ask));
    else {
      ids = [];
      for (const p of people) ids.push(await ask(p));
    }
    out.roundsMs.push(performance.now() - r0);
    // Each session answered, as the engine stores the agent's answer: it keeps its slot, and its person is free
    // to ask again.
    for (const id of ids) {
      if (id)
        await appendAgentTurn(
          t.prisma,
          id,
          { content: 'I WANT TO ANSWER: def f(): pass', rawOutput: 'I WANT TO ANSWER: def f(): pass' },
          { answer: 'def f(): pass', endReason: 'answered' },
        );
    }
  }
  const perTask = await t.prisma.session.groupBy({
    by: ['taskId'],
    where: { studyId: study.id, status: { in: ['active', 'answered'] } },
    _count: { _all: true },
  });
  const perPersonTask = await t.prisma.session.groupBy({
    by: ['participantId', 'taskId'],
    where: { studyId: study.id },
    _count: { _all: true },
  });
  out.sessions = await t.prisma.session.count({ where: { studyId: study.id } });
  out.overfilledTasks = perTask.filter((g) => g._count._all > K).length;
  out.maxPerTask = Math.max(0, ...perTask.map((g) => g._count._all));
  out.repeatedTasks = perPersonTask.filter((g) => g._count._all > 1).length;
  return out;
}

async function main(): Promise<void> {
  const t = await createTestDatabase();
  let rt: Runtime | null = null;
  try {
    await importTasks(t.prisma, generateMiniTasks({ seed: 3, count: 2 * TASKS, split: 'train' }));
    const ids = (await t.prisma.task.findMany({ select: { id: true }, orderBy: { externalId: 'asc' } })).map(
      (x) => x.id,
    );
    if (ids.length < 2 * TASKS)
      throw new Error(`only ${ids.length} distinct tasks were generated; ${2 * TASKS} needed`);
    const policy = await registerVersion(t.prisma, {
      name: 'bench-arm',
      algorithm: 'external',
      checkpointPath: null,
      kind: 'endpoint',
    });
    rt = await createRuntime({
      channel: 'console',
      db: t.db,
      maxTurns: 10,
      idleMinutes: 60,
      // Only start() runs here; the agent is never asked, and the sweep leaves the new sessions alone.
      loadAgent: async () => ({ name: 'unused', reply: async () => ({ text: 'unused' }) }),
      render: null,
      policyPollMs: 600_000,
      overdueMs: 3_600_000,
    });
    const load0 = loadavg()
      .map((x) => x.toFixed(1))
      .join(' ');
    // The yardstick first, in its own study, closed before the measured one opens (people join the oldest open one).
    const serialStudy = await makeStudy(t, 'bench-serial', ids.slice(TASKS), policy.id);
    const serial = await phase(t, rt, serialStudy, 'serial');
    await setStudyStatus(t.prisma, 'bench', serialStudy.name, 'closed', { requireConsent: true });
    const concurrentStudy = await makeStudy(t, 'bench-concurrent', ids.slice(0, TASKS), policy.id);
    const concurrent = await phase(t, rt, concurrentStudy, 'concurrent');
    const load1 = loadavg()
      .map((x) => x.toFixed(1))
      .join(' ');

    const round1 = (x: number) => Math.round(x * 10) / 10;
    const stats = (p: Phase) => ({
      p50: round1(percentile(p.latenciesMs, 50)),
      p99: round1(percentile(p.latenciesMs, 99)),
      max: round1(Math.max(...p.latenciesMs)),
      perSecond: round1((p.latenciesMs.length / p.roundsMs.reduce((a, b) => a + b, 0)) * 1000),
    });
    const c = stats(concurrent);
    const s = stats(serial);
    const f = (x: number) => x.toFixed(1).padStart(10);
    console.log(
      `\nbench:assign — a ${TASKS}-task study, k = ${K}; ${PEOPLE} people, ${ROUNDS} rounds; Postgres; engine start() (admission + bot/assign.ts)`,
    );
    console.log(
      `${'mode'.padEnd(44)}${'n'.padStart(6)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'max ms'.padStart(10)}${'assign/s'.padStart(10)}`,
    );
    console.log(
      `${`concurrent (${PEOPLE} at once, each round)`.padEnd(44)}${String(concurrent.latenciesMs.length).padStart(6)}${f(c.p50)}${f(c.p99)}${f(c.max)}${f(c.perSecond)}`,
    );
    console.log(
      `${'serial yardstick (one at a time)'.padEnd(44)}${String(serial.latenciesMs.length).padStart(6)}${f(s.p50)}${f(s.p99)}${f(s.max)}${f(s.perSecond)}`,
    );
    for (const p of [concurrent, serial]) {
      console.log(
        `${p.mode}: sessions created ${p.sessions}; refusals ${JSON.stringify(p.refusals)}; tasks over k ${p.overfilledTasks} (most sessions on a task ${p.maxPerTask}); ` +
          `people given a task twice ${p.repeatedTasks}; rounds ${p.roundsMs.map((x) => (x / 1000).toFixed(2)).join(', ')} s`,
      );
    }
    console.log(`load average ${load0} -> ${load1} on ${availableParallelism()} cores`);
    console.log(
      JSON.stringify({
        bench: 'assign',
        tasks: TASKS,
        k: K,
        people: PEOPLE,
        rounds: ROUNDS,
        concurrent: {
          ms: { p50: c.p50, p99: c.p99, max: c.max },
          perSecond: c.perSecond,
          sessions: concurrent.sessions,
          refusals: concurrent.refusals,
          overfilledTasks: concurrent.overfilledTasks,
          repeatedTasks: concurrent.repeatedTasks,
        },
        serial: {
          ms: { p50: s.p50, p99: s.p99, max: s.max },
          perSecond: s.perSecond,
          sessions: serial.sessions,
          refusals: serial.refusals,
          overfilledTasks: serial.overfilledTasks,
          repeatedTasks: serial.repeatedTasks,
        },
        loadAverage: [load0, load1],
        cores: availableParallelism(),
      }),
    );
    if (concurrent.overfilledTasks || concurrent.repeatedTasks || serial.overfilledTasks || serial.repeatedTasks)
      process.exitCode = 1;
  } finally {
    await rt?.close();
    await t.drop();
  }
}

await main();
