// Overdue work and the sweep (bot/session/sweep.ts), without Discord: a step a session owes with nobody working on
// it (a stored reply no agent step answers, an agent message whose post failed) is overdue once it has waited
// overdueMs, never while something works on it, and no longer once the person is gone; the sweep hands it over to
// be advanced, tries again after a back-off what it could not get done, and says so when it gives up. Times are
// passed in explicitly, so nothing depends on how fast the machine is.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { acceptConsent } from '../../../prisma/participant-store.ts';
import type { PendingWork, SessionView } from '../../../bot/session/engine.ts';
import { createRuntime, type Runtime } from '../../../bot/runtime.ts';
import { createTestDatabase } from '../../../testing/database.ts';
import { recordingLog, scriptedAgent } from '../discord/harness.ts';

type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;
const OVERDUE_MS = 200;
let hold: Promise<void> | null = null;
let releaseHold = (): void => {};
const agent = scriptedAgent('scripted', async (dialogue) => {
  if (hold) await hold;
  return `Question ${dialogue.filter((m) => m.role === 'assistant').length + 1}?`;
});

/** A view that records what it shows (or fails to, as a channel that cannot post). */
function recordingView(fail = false): SessionView & { shown: string[] } {
  const shown: string[] = [];
  return {
    shown,
    async showAgentMessage(step) {
      if (fail) throw new Error('the channel refused the post');
      shown.push(step.parsed.text);
      return `msg-${step.turnId}`;
    },
    async showResult() {},
    async askRating() {},
    async notice() {},
  };
}

describe('overdue work and the sweep', () => {
  let t: TestDb;
  let rt: Runtime;
  const log = recordingLog();
  let people = 0;

  beforeAll(async () => {
    t = await createTestDatabase();
    await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 4), { split: 'train' });
    await t.prisma.policyVersion.create({
      data: {
        name: 'p1',
        algorithm: 'external',
        checkpointPath: '/x',
        checkpointSha256: '0'.repeat(64),
        status: 'deployed',
        deployedAt: new Date(),
      },
    });
    rt = await createRuntime({
      channel: 'console',
      db: t.db,
      maxTurns: 5,
      idleMinutes: 30,
      overdueMs: OVERDUE_MS,
      loadAgent: async () => agent,
      render: null,
      policyPollMs: 60_000,
      log,
    });
  });
  // A failed test must not leave the agent held for the next one.
  afterEach(() => {
    hold = null;
    releaseHold();
  });
  afterAll(async () => {
    await rt?.close();
    await t?.drop();
  });

  /** A new person's session with the agent's first message stored (and shown unless `shown` is false). */
  async function session(shown = true): Promise<string> {
    const name = `console:p${++people}`;
    await acceptConsent(t.prisma, name, name);
    const s = await rt.engine.start({ externalId: name, displayName: name }, 'backend');
    const step = await rt.engine.agentStep(s.sessionId);
    if (shown) await rt.engine.markShown(step!.turnId, `first-${s.sessionId}`);
    return s.sessionId;
  }
  const lastActivity = async (id: string) =>
    (await t.prisma.session.findUniqueOrThrow({ where: { id } })).lastActivityAt.getTime();
  const after = (at: number, ms: number) => new Date(at + ms);
  const ids = (work: PendingWork[]) => work.map((w) => [w.kind, w.session.id]);
  const roles = async (id: string) =>
    (await t.prisma.turn.findMany({ where: { sessionId: id }, orderBy: { index: 'asc' } })).map((x) => [
      x.role,
      x.externalMessageId !== null,
    ]);

  it('a stored reply no agent step answers is overdue after overdueMs, and the sweep has the agent answer it', async () => {
    const id = await session();
    await rt.engine.humanTurn(id, 'Negative numbers count as zero.', null);
    const at = await lastActivity(id);
    expect(ids(await rt.engine.overdue(after(at, OVERDUE_MS / 2)))).toEqual([]);
    expect(ids(await rt.engine.overdue(after(at, OVERDUE_MS + 50)))).toEqual([['agent', id]]);

    const view = recordingView();
    let resumed: Promise<number> | null = null;
    const handed = await rt.engine.sweep(
      (work) => (resumed = rt.engine.resume(async () => ({ view }), work)),
      after(at, OVERDUE_MS + 50),
    );
    expect(ids(handed)).toEqual([['agent', id]]);
    expect(await resumed!).toBe(1);
    expect(view.shown).toEqual(['Question 2?']);
    expect(await roles(id)).toEqual([
      ['agent', true],
      ['human', false],
      ['agent', true],
    ]);
    expect(await rt.engine.overdue(after(at, 60_000))).toEqual([]);
    expect(log.lines('debug', 'sweep picks up an overdue session')).toContainEqual(
      expect.objectContaining({ session: id, kind: 'agent', try: 1 }),
    );
    expect(log.lines('debug', 'agent request sent')).toContainEqual(expect.objectContaining({ session: id, try: 1 }));
    expect(log.lines('debug', 'agent reply done')).toContainEqual(expect.objectContaining({ session: id }));
    expect(log.lines('debug', 'resuming session')).toContainEqual({ session: id, kind: 'agent' });
  });

  it('is never overdue while something works on it: the sweep leaves a turn being written alone', async () => {
    const id = await session();
    await rt.engine.humanTurn(id, 'Inputs are integers.', null);
    const at = await lastActivity(id);
    hold = new Promise<void>((r) => (releaseHold = r));
    const calls = agent.calls;
    const view = recordingView();
    const live = rt.engine.advance(id, view);
    for (let i = 0; i < 200 && agent.calls === calls; i++) await new Promise((r) => setTimeout(r, 25));
    expect(agent.calls).toBe(calls + 1);

    expect(await rt.engine.overdue(after(at, OVERDUE_MS + 50))).toEqual([]);
    let handedOver = false;
    expect(await rt.engine.sweep(() => (handedOver = true), after(at, OVERDUE_MS + 50))).toEqual([]);
    expect(handedOver).toBe(false);
    hold = null;
    releaseHold();
    expect(await live).toBe('awaiting-human');
    expect(view.shown).toEqual(['Question 2?']);
  });

  it('tries again after a back-off what it could not get done, counts it as overdue meanwhile, and warns when it gives up', async () => {
    const id = await session(false); // the agent's message is stored, its post never made it
    const at = await lastActivity(id);
    const failing = recordingView(true);
    const sweepAt = async (ms: number) => {
      let resumed: Promise<number> = Promise.resolve(0);
      const handed = await rt.engine.sweep(
        (work) => (resumed = rt.engine.resume(async () => ({ view: failing }), work)),
        after(at, ms),
      );
      expect(await resumed).toBe(0); // the post fails again
      return ids(handed);
    };
    expect(await sweepAt(OVERDUE_MS + 50)).toEqual([['show', id]]);
    expect(log.lines('error', 'cannot resume session')).toContainEqual(expect.objectContaining({ session: id }));
    expect(ids(await rt.engine.overdue(after(at, OVERDUE_MS + 60)))).toEqual([['show', id]]);
    // The next try waits one sweep (the overdue time before the timer starts), then two.
    expect(await sweepAt(OVERDUE_MS + 100)).toEqual([]);
    expect(await sweepAt(2 * OVERDUE_MS + 60)).toEqual([['show', id]]);
    expect(await sweepAt(3 * OVERDUE_MS + 60)).toEqual([]);
    expect(await sweepAt(4 * OVERDUE_MS + 70)).toEqual([['show', id]]);

    // Once the idle time has passed, the person is gone: no longer overdue, and the sweep says it gave up.
    const gone = 31 * 60_000;
    expect(await rt.engine.overdue(after(at, gone))).toEqual([]);
    expect(await sweepAt(gone)).toEqual([]);
    expect(log.lines('warn', 'sweep gives up: the session was not finished within the idle time')).toEqual([
      { session: id, kind: 'show', tries: 3 },
    ]);

    // Shown at last (the channel posts again): nothing is owed.
    const view = recordingView();
    expect(await rt.engine.resume(async () => ({ view }))).toBeGreaterThanOrEqual(1);
    expect(view.shown).toContain('Question 1?');
    expect(await roles(id)).toEqual([['agent', true]]);
  });

  it('sweeps on its own every everyMs', async () => {
    const id = await session();
    await rt.engine.humanTurn(id, 'Zero for an empty list.', null);
    const handed = new Promise<PendingWork[]>((resolve) => rt.engine.startSweep(50, resolve));
    const work = await Promise.race([
      handed,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no sweep within 10 s')), 10_000)),
    ]);
    expect(ids(work)).toContainEqual(['agent', id]);
  });
});
