// Scoring under load (bench:bot's 200 people): answers are scored in a bounded pool with a queue (bot/session/scoring.ts). Twenty
// answers arrive at once with a pool of 2: their people are told where their answer stands, never more than two are
// scored at once, and after a restart in the middle (answers stored and not yet scored) every answer is scored once,
// and shown once. Real discord.js client against the fake Discord, real Postgres, the real sandboxed scorer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { createScorer } from '../../../tasks/scorer.ts';
import { ScoringClosedError, ScoringPool, type ScoringState } from '../../../bot/session/scoring.ts';
import { BotMetrics } from '../../../bot/health.ts';
import { BotHarness, scriptedAgent } from '../discord/harness.ts';

describe('ScoringPool', () => {
  it('runs at most its size at once, the rest in arrival order, telling each where it stands', async () => {
    const pool = new ScoringPool(2);
    const started: number[] = [];
    const states: ScoringState[][] = Array.from({ length: 5 }, () => []);
    const gates: (() => void)[] = [];
    const done = Array.from({ length: 5 }, (_, i) =>
      pool.run(
        () =>
          new Promise<number>((resolve) => {
            started.push(i);
            gates[i] = () => resolve(i);
          }),
        (s) => states[i]!.push(s),
      ),
    );
    expect(started).toEqual([0, 1]);
    expect(pool.load).toEqual({ queued: 3, running: 2 });
    expect(states.map((s) => s[0])).toEqual([
      { state: 'scoring' },
      { state: 'scoring' },
      { state: 'queued', ahead: 2 },
      { state: 'queued', ahead: 3 },
      { state: 'queued', ahead: 4 },
    ]);
    gates[1]!();
    await done[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    expect(states[2]).toEqual([{ state: 'queued', ahead: 2 }, { state: 'scoring' }]);
    // Closing gives back what waits (still owed) and waits for what is being scored.
    let closed = false;
    const closing = pool.close().then(() => (closed = true));
    await expect(done[3]).rejects.toBeInstanceOf(ScoringClosedError);
    await expect(done[4]).rejects.toBeInstanceOf(ScoringClosedError);
    await new Promise((r) => setTimeout(r, 20));
    expect(closed).toBe(false);
    gates[0]!();
    gates[2]!();
    await closing;
    expect(await Promise.all([done[0], done[2]])).toEqual([0, 2]);
    await expect(pool.run(async () => 1)).rejects.toBeInstanceOf(ScoringClosedError);
    expect(() => new ScoringPool(0)).toThrow(/whole number/);
  });
});

const PEOPLE = 20;
const task = builtinTasks({ kind: 'backend' })[1] as TaskRecord & BackendTask;
/** Each person's answer: the reference, slowed down inside the sandbox so that answers pile up, marked with its person. */
const answerOf = (person: string) => `import time\ntime.sleep(0.4)\n# answer for ${person}\n${task.reference}`;
const agent = scriptedAgent('scripted', (dialogue) => {
  const last = dialogue.at(-1)!.content;
  const person = /^I am (person\d+)\./.exec(last)?.[1];
  return person ? `I WANT TO ANSWER:\n${answerOf(person)}` : 'Who are you?';
});

/** The real scorer, counting how often each answer is scored and how many are scored at once. */
const scorer = createScorer({ renderer: null });
const scored = new Map<string, number>();
let inFlight = 0;
let mostAtOnce = 0;

describe('Scoring under load on Discord: 20 answers at once, a pool of 2, a restart in the middle', () => {
  const metrics: BotMetrics = new BotMetrics(undefined, undefined, (): { queued: number; running: number } =>
    h.runtime.engine.scoringLoad(),
  );
  let queuedSeen = 0;
  const h: BotHarness = new BotHarness({
    metrics,
    tasks: [task],
    agent,
    evaluate: async (t, answer) => {
      scored.set(answer, (scored.get(answer) ?? 0) + 1);
      mostAtOnce = Math.max(mostAtOnce, ++inFlight);
      try {
        return await scorer.evaluate(t, answer);
      } finally {
        inFlight--;
      }
    },
    scoringPool: 2,
  });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
    await scorer.close();
  });

  it('scores every answer once, tells each person where their answer stands, and finishes after a restart', async () => {
    const people = Array.from({ length: PEOPLE }, (_, n) => h.fake.user(`person${n}`));
    const threads: string[] = [];
    for (const p of people) {
      const { threadId } = await h.startSession(p, 'backend');
      await h.agentMessage(threadId, 1);
      threads.push(threadId);
    }

    // Everyone replies at once; each reply is answered at once, so twenty answers wait to be scored together.
    people.forEach((p, n) => h.fake.say(p, threads[n]!, `I am person${n}. Zero for short stays.`));
    const evaluations = () => h.tdb.prisma.evaluation.count();
    const gauge = async (state: string) =>
      Number(
        new RegExp(`^sweetloop_scoring_answers\\{state="${state}"\\} (\\d+)$`, 'm').exec(
          await metrics.registry.metrics(),
        )?.[1],
      );
    await h.fake.waitFor(
      async () => {
        // /metrics shows the queue while it lasts, and never more than the pool's size being scored.
        queuedSeen = Math.max(queuedSeen, await gauge('queued'));
        expect(await gauge('running')).toBeLessThanOrEqual(2);
        return (await evaluations()) >= 3 || null;
      },
      60_000,
      'three answers scored',
    );
    expect(queuedSeen).toBeGreaterThan(0);

    // The restart: what is being scored is finished and stored, what waits is left owed in the database.
    await h.stopBot();
    const beforeRestart = await evaluations();
    expect(beforeRestart).toBeLessThan(PEOPLE);
    expect(await h.tdb.prisma.session.count({ where: { status: 'answered' } })).toBe(PEOPLE);
    const notices = threads.map((t) =>
      h.fake.inChannel(t).filter((s) => /waits to be scored|Scoring your answer/.test(s.content)),
    );
    expect(notices.every((n) => n.length >= 1)).toBe(true);
    const queued = notices
      .flat()
      .filter((s) => /waits to be scored: \d+ answers? (is|are) ahead of it/.test(s.content));
    expect(queued.length).toBeGreaterThan(0);

    await h.startBot();
    await h.fake.waitFor(async () => (await evaluations()) === PEOPLE || null, 120_000, 'every answer scored');
    const ratingPrompts = (t: string) => h.fake.inChannel(t).filter((s) => s.content.includes('How helpful'));
    await h.fake.waitFor(
      async () => (await h.tdb.prisma.session.count({ where: { ratingAskedAt: { not: null } } })) === PEOPLE || null,
      60_000,
      'every rating prompt',
    );

    // Once each: the sandbox ran every answer exactly once, never more than two at a time.
    expect([...scored.values()]).toEqual(Array(PEOPLE).fill(1));
    // (The protocol trims the answer it stores.)
    expect(new Set([...scored.keys()].map((a) => a.trim()))).toEqual(
      new Set(people.map((_, n) => answerOf(`person${n}`).trim())),
    );
    expect(mostAtOnce).toBe(2);
    expect([await gauge('queued'), await gauge('running')]).toEqual([0, 0]);
    const sessions = await h.tdb.prisma.session.findMany({ include: { evaluation: true } });
    // Each answer is the reference (slowed down): every test passes.
    expect(
      sessions.map((s) => [s.status, s.evaluation?.score, s.resultShownAt !== null, s.ratingAskedAt !== null]),
    ).toEqual(Array(PEOPLE).fill(['answered', 1, true, true]));
    // And shown once: one result and one rating prompt in every thread.
    await new Promise((r) => setTimeout(r, 300));
    for (const t of threads) {
      expect(h.fake.inChannel(t).filter((s) => s.content.startsWith('**Result:**'))).toHaveLength(1);
      expect(ratingPrompts(t)).toHaveLength(1);
    }
  });
});
