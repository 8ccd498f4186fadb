// Crash soak: simulated people (bench/crash-people.ts) run whole backend sessions over the fake Discord (real
// discord.js client, real Postgres) against the bot in its own process (bench/crash-bot.ts), while this driver
// SIGKILLs and restarts the bot again and again, at the kill points of bench/crash-points.ts: (a) a person's
// message stored, (b) an agent message posting, (c) the result posting, (d) during scoring, (f) during catch-up,
// and at random moments. (e), while the local server loads, needs a checkpoint policy served by the bot's own
// local server, whose load makes every restart slower: it runs in a second, shorter phase (--local-kills, with
// fewer people) over all the points, (e) and (b) twice as often. Either phase is skipped with 0 kills. After the kills, people finish their sessions and
// bench/crash-checks.ts checks the database and what Discord saw. Prints the kills survived, the sessions, each
// violation, a table, and one JSON line; exits 1 on any violation.
// Deterministic given --seed: the order of kill points, the waits, and what each person says and when they give
// up come from seeded streams (tasks/random.ts); the processes' own timing is not.
// Usage: npm run bench:crash [-- --kills 100 --people 8 --seed 1 --local-kills 12 --local-people 3
//   --deadline-ms 30000 --local-deadline-ms 120000 --give-up-ms (3 deadlines) --questions 2 --score-ms 1500 --cue-timeout-ms 40000 --keep-logs]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { builtinTasks } from '../tasks/library.ts';
import { Rng } from '../tasks/random.ts';
import { percentile } from '../tasks/stats.ts';
import { importTasks } from '../prisma/task-store.ts';
import { registerVersion } from '../prisma/policy-store.ts';
import { deployPolicyByName } from '../prisma/deployment-store.ts';
import { FakeDiscord } from '../testing/fake-discord.ts';
import { createTestDatabase } from '../testing/database.ts';
import { makeTinyCheckpoint } from '../testing/tiny-checkpoint.ts';
import { BotProcess, type Epoch } from './crash-process.ts';
import { Nudge, Person, type World } from './crash-people.ts';
import { cue, killPlan, POINTS, type Point } from './crash-points.ts';
import { checkSoak, type Figures, type Violation } from './crash-checks.ts';

const { values: args } = parseArgs({
  options: {
    kills: { type: 'string', default: '100' },
    people: { type: 'string', default: '8' },
    seed: { type: 'string', default: '1' },
    'local-kills': { type: 'string', default: '12' },
    'deadline-ms': { type: 'string', default: '30000' },
    'local-deadline-ms': { type: 'string', default: '120000' },
    'give-up-ms': { type: 'string' },
    questions: { type: 'string', default: '2' },
    'score-ms': { type: 'string', default: '1500' },
    'cue-timeout-ms': { type: 'string', default: '40000' },
    'local-people': { type: 'string', default: '3' },
    'keep-logs': { type: 'boolean', default: false },
  },
});
const KILLS = Number(args.kills);
const PEOPLE = Number(args.people);
const SEED = Number(args.seed);
const LOCAL_KILLS = Number(args['local-kills']);
// The tiny checkpoint answers one request at a time (tfjs worker): fewer people, so that what is measured is
// recovery, not the queue.
const LOCAL_PEOPLE = Number(args['local-people']);
// The tiny checkpoint writes up to 1,024 tokens a reply, one request at a time, on the CPU: its phase allows more.
const deadlines: Record<PhaseName, number> = {
  scripted: Number(args['deadline-ms']),
  local: Number(args['local-deadline-ms']),
};
const giveUps: Record<PhaseName, number> = {
  scripted: Number(args['give-up-ms'] ?? 3 * deadlines.scripted),
  local: Number(args['give-up-ms'] ?? 3 * deadlines.local),
};
const CUE_TIMEOUT_MS = Number(args['cue-timeout-ms']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type PhaseName = 'scripted' | 'local';

interface PhaseResult {
  name: PhaseName;
  epochs: Epoch[];
  violations: Violation[];
  figures: Figures;
  lostStarts: number;
  wallSeconds: number;
  logDir: string;
}

type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;

async function phase(name: PhaseName, kills: number, tdb: TestDb): Promise<PhaseResult> {
  const t0 = performance.now();
  const dir = await mkdtemp(join(tmpdir(), `bench-crash-${name}-`));
  const fake = await new FakeDiscord({ heartbeatIntervalMs: 1_000 }).start();
  await importTasks(tdb.prisma, builtinTasks({ kind: 'backend' }));
  const checkpoint =
    name === 'local'
      ? await makeTinyCheckpoint({ dir: join(dir, 'tiny'), maxPositionEmbeddings: 16384 })
      : '/nonexistent';
  await registerVersion(tdb.prisma, {
    name: `crash-${name}`,
    algorithm: 'external',
    checkpointPath: checkpoint,
    checkpointSha256: '0'.repeat(64),
  });
  await deployPolicyByName(tdb.db, 'bench', `crash-${name}`);
  const env = {
    CRASH_DB_URL: tdb.url,
    CRASH_API_BASE: fake.apiBase,
    CRASH_GUILD_ID: fake.guildId,
    CRASH_AGENT: name === 'local' ? 'checkpoint' : 'scripted',
    CRASH_QUESTIONS: String(args.questions),
    // The tiny checkpoint never writes the answer marker: its sessions end at the turn limit.
    CRASH_MAX_TURNS: name === 'local' ? '3' : '10',
    CRASH_SCORE_MS: String(args['score-ms']),
  };
  const epochs: Epoch[] = [];
  let bot!: BotProcess;
  const spawnBot = () => {
    bot = new BotProcess(epochs.length, env, dir);
    epochs.push(bot.epoch);
  };
  let stopping = false;
  const world: World = {
    fake,
    seed: SEED,
    deadlineMs: deadlines[name],
    giveUpMs: giveUps[name],
    upSince: (t) =>
      epochs.reduce(
        (sum, e) => sum + Math.max(0, (e.killAt ?? e.exitAt ?? performance.now()) - Math.max(t, e.spawnAt)),
        0,
      ),
    // The fake still counts a killed bot's socket for a moment: the process must be alive too.
    connected: () => bot.alive && bot.epoch.killAt === null && fake.connectedClients() > 0,
    stopping: () => stopping,
    nudge: new Nudge(),
    sent: [],
    sessions: [],
    lostStarts: [],
  };

  spawnBot();
  const runs = Array.from({ length: name === 'local' ? LOCAL_PEOPLE : PEOPLE }, (_, n) => new Person(n, world).run());
  // Separate streams: the order of kill points does not depend on how many waits were drawn before.
  const rng = Rng.derive(SEED, name, 'waits');
  // The local phase weighs (e) and (b) double: a kill as an agent message posts, then a restart that loads the
  // local server, is the path on which a restarted bot was seen to stay silent.
  const points: Point[] = ['stored', 'agent-post', 'result-post', 'scoring', 'catch-up', 'random'];
  const plan = killPlan(
    name === 'local' ? [...points, 'agent-post', 'local-load', 'local-load'] : points,
    kills,
    Rng.derive(SEED, name, 'plan'),
  );
  let done = 0;
  let lastDown = { from: 0, to: 0 };
  const killAndRestart = async (point: Point, cued: boolean, wakeThinkers: boolean) => {
    await bot.kill(point, cued);
    // People keep writing while the bot is down; before a catch-up kill, whoever is thinking writes now.
    if (wakeThinkers) world.nudge.now();
    const from = performance.now();
    await sleep(200 + rng.next() * 2300);
    lastDown = { from, to: performance.now() };
    spawnBot();
    done++;
    process.stderr.write(`\r${name}: kill ${done}/${kills} (${point}${cued ? '' : ', cue not reached'})   `);
  };
  for (const [k, point] of plan.entries()) {
    if (done >= kills) break;
    if (point === 'catch-up' && !world.sent.some((m) => m.at >= lastDown.from && m.at < lastDown.to)) {
      // Catch-up needs a message sent while the bot was down: kill when someone is about to write (a kill at a
      // random moment, counted as one), and let them write while it is down.
      const thinking = await fake
        .waitFor(() => world.nudge.thinking > 0, CUE_TIMEOUT_MS, 'someone about to write')
        .catch(() => false);
      await killAndRestart('random', thinking, true);
      if (done >= kills) break;
    }
    const cued = await cue(point, { bot, fake, prisma: tdb.prisma, rng }, CUE_TIMEOUT_MS);
    await killAndRestart(point, cued, plan[k + 1] === 'catch-up');
  }
  process.stderr.write('\n');
  // The kills are done: people finish what they started (each gives up after a silence of giveUps[name]).
  stopping = true;
  let drainTimer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(runs),
    new Promise((r) => (drainTimer = setTimeout(r, 2 * giveUps[name] + 120_000))),
  ]);
  clearTimeout(drainTimer);
  await bot.kill('end', true);
  const endAt = bot.epoch.killAt ?? performance.now();
  const { violations, figures } = await checkSoak({
    fake,
    prisma: tdb.prisma,
    epochs,
    sent: world.sent,
    sessions: world.sessions,
    deadlineMs: deadlines[name],
    giveUpMs: giveUps[name],
    endAt,
    logDir: dir,
    t0,
  });
  await fake.stop();
  await tdb.drop();
  await rm(join(dir, 'tiny'), { recursive: true, force: true });
  return {
    name,
    epochs,
    violations,
    figures,
    lostStarts: world.lostStarts.length,
    wallSeconds: (performance.now() - t0) / 1000,
    logDir: dir,
  };
}

/** Kills of a phase by point: how many, how many at their cue, how many restarts after them had a violation. */
function byPoint(r: PhaseResult) {
  const rows = new Map<Point, { kills: number; cued: number; failed: number }>();
  for (const e of r.epochs) {
    if (!e.point || e.point === 'end') continue;
    const row = rows.get(e.point as Point) ?? { kills: 0, cued: 0, failed: 0 };
    row.kills++;
    if (e.cued) row.cued++;
    if (r.violations.some((v) => v.epoch === e.n + 1)) row.failed++;
    rows.set(e.point as Point, row);
  }
  return rows;
}

const results: PhaseResult[] = [];
const t0 = performance.now();
// Both databases first: a test run elsewhere on the same server may replace the template they are copied from.
const databases = [KILLS > 0 ? await createTestDatabase() : null, LOCAL_KILLS > 0 ? await createTestDatabase() : null];
if (databases[0]) results.push(await phase('scripted', KILLS, databases[0]));
if (databases[1]) results.push(await phase('local', LOCAL_KILLS, databases[1]));
const wall = (performance.now() - t0) / 1000;

console.log(`\nbench:crash — seed ${SEED}, fake Discord, Postgres, the bot in its own process`);
for (const r of results) {
  const rows = byPoint(r);
  console.log(
    r.name === 'scripted'
      ? `\nphase 1: ${PEOPLE} people, scripted agent (${args.questions} questions, then the reference), real sandboxed evaluator after ${args['score-ms']} ms; agent deadline ${deadlines.scripted / 1000} s`
      : `\nphase 2: ${LOCAL_PEOPLE} people, a tiny checkpoint served by the bot's own local server (tfjs worker); agent deadline ${deadlines.local / 1000} s`,
  );
  console.log(
    `${'kill point'.padEnd(36)}${'kills'.padStart(7)}${'at cue'.padStart(8)}${'restarts with violations'.padStart(26)}`,
  );
  for (const [point, row] of rows)
    console.log(
      `${POINTS[point].padEnd(36)}${String(row.kills).padStart(7)}${String(row.cued).padStart(8)}${String(row.failed).padStart(26)}`,
    );
  const secs = (xs: number[]) =>
    xs.length
      ? `p50 ${(percentile(xs, 50) / 1000).toFixed(1)} s, max ${(Math.max(...xs) / 1000).toFixed(1)} s`
      : 'never';
  const since = (es: Epoch[], at: (e: Epoch) => number | null) =>
    es.flatMap((e) => (at(e) === null ? [] : [at(e)! - e.spawnAt]));
  const [first, ...restarts] = r.epochs;
  const gateway = since(restarts, (e) => e.gatewayAt);
  const ready = since(restarts, (e) => e.readyAt);
  const f = r.figures;
  console.log(
    `sessions ${f.sessions}: answered ${f.answered}, rated ${f.rated}, ended with the person told ${f.endedTold} (gave up on silence ${f.gaveUp}); starts lost before their thread ${r.lostStarts}`,
  );
  console.log(
    `people's messages ${f.messages}: stored ${f.stored}, answered by the bot ${f.told}, copies of a stored reply left unanswered ${f.copiesUnanswered}, after the final answer ${f.late}`,
  );
  console.log(
    `longest silence while the bot ran: ${(f.maxSilenceMs / 1000).toFixed(1)} s (deadline ${deadlines[r.name] / 1000} s); the agent's own time per message p50 ${(f.agentMs.p50 / 1000).toFixed(1)} s, max ${(f.agentMs.max / 1000).toFixed(1)} s`,
  );
  console.log(
    `first start to gateway connected ${secs(since([first!], (e) => e.gatewayAt))}; restarts: ${secs(gateway)}; to start() done (resumed, caught up): ${secs(ready)} (${restarts.length - ready.length} of ${restarts.length} killed before)`,
  );
  console.log(`wall ${r.wallSeconds.toFixed(0)} s; bot logs in ${r.logDir}`);
  for (const v of r.violations)
    console.log(`VIOLATION ${r.name} ${v.kind}${v.epoch !== null ? ` (epoch ${v.epoch})` : ''}: ${v.detail}`);
}
const kills = results.reduce((n, r) => n + r.epochs.filter((e) => e.point && e.point !== 'end').length, 0);
const failed = results.reduce((n, r) => n + [...byPoint(r).values()].reduce((m, row) => m + row.failed, 0), 0);
const violations = results.reduce((n, r) => n + r.violations.length, 0);
console.log(`\nkills survived ${kills - failed}/${kills}; violations ${violations}; wall ${wall.toFixed(0)} s`);
console.log(
  JSON.stringify({
    bench: 'crash',
    seed: SEED,
    people: PEOPLE,
    deadlineMs: deadlines,
    kills,
    killsSurvived: kills - failed,
    violations,
    violationsByKind: Object.fromEntries(
      [...new Set(results.flatMap((r) => r.violations.map((v) => v.kind)))].map((k) => [
        k,
        results.reduce((n, r) => n + r.violations.filter((v) => v.kind === k).length, 0),
      ]),
    ),
    phases: Object.fromEntries(
      results.map((r) => [
        r.name,
        {
          kills: r.epochs.filter((e) => e.point && e.point !== 'end').length,
          byPoint: Object.fromEntries(byPoint(r)),
          ...r.figures,
          lostStarts: r.lostStarts,
          wallSeconds: Math.round(r.wallSeconds),
        },
      ]),
    ),
    wallSeconds: Math.round(wall),
  }),
);
for (const r of results)
  if (!r.violations.length && !args['keep-logs']) await rm(r.logDir, { recursive: true, force: true });
// A person stuck past the drain may still hold timers: exit now that everything is reported.
process.exit(violations > 0 ? 1 : 0);
