// Operations: /health/live, /health/ready and /metrics answer during a session (real HTTP server, real bot over
// the fake Discord, real Postgres); readiness and /metrics tell of a session whose next step nobody works on, until
// the sweep has it done; a graceful stop in the middle of a turn finishes and shows that turn, takes
// no new message (it is caught up on at the next start) and returns within its deadline, even when the turn in
// flight never ends.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { BotMetrics, startHealthServer, type HealthServer } from '../../../bot/health.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[1] as TaskRecord & BackendTask;
let hold: Promise<void> | null = null;
let releaseHold: (() => void) | null = null;
/** Holds the agent's next turn until the returned function is called. */
const holdAgent = (): (() => void) => {
  let release!: () => void;
  hold = new Promise<void>((r) => (release = r));
  releaseHold = () => {
    hold = null;
    release();
  };
  return releaseHold;
};
const agent = scriptedAgent('scripted', async (dialogue) => {
  if (hold) await hold;
  const mine = dialogue.filter((m) => m.role === 'assistant').length;
  return mine < 3 ? `Question ${mine + 1}?` : `I WANT TO ANSWER:\n${task.reference}`;
});

describe('health, metrics and graceful stop', () => {
  let metrics: BotMetrics;
  const h = new BotHarness({
    tasks: builtinTasks({ kind: 'backend' }).slice(0, 3),
    agent,
    overdueMs: 300,
    // The sweep runs when the test says (bot.sweep(), what its timer calls), not on a timer racing the checks.
    botOptions: () => ({ sweepMs: 3_600_000 }),
    get metrics() {
      return metrics;
    },
  });
  let server: HealthServer;
  const get = async (path: string) => {
    const r = await fetch(`http://127.0.0.1:${server.port}${path}`);
    return { status: r.status, text: await r.text() };
  };

  beforeAll(async () => {
    // As bot/main.ts wires them.
    const overdue = async () => (await h.runtime.engine.overdue()).length;
    metrics = new BotMetrics(() => h.tdb.prisma.session.count({ where: { status: 'active' } }), overdue);
    await h.start();
    server = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      metrics,
      ready: {
        gateway: () => h.bot.isReady(),
        database: async () => (await h.tdb.prisma.$queryRaw`SELECT 1`, true),
        policy: () => h.runtime.policies.deployed !== null,
        noOverdueWork: async () => (await overdue()) === 0,
      },
    });
  });
  // A failed test must not leave the agent held for the next one.
  afterEach(() => {
    releaseHold?.();
    releaseHold = null;
    hold = null;
  });
  afterAll(async () => {
    await server?.close();
    await h.stop();
  });

  it('answers /health and /metrics during a session', async () => {
    const alice = h.fake.user('alice');
    const { threadId } = await h.startSession(alice, 'backend');
    await h.agentMessage(threadId, 1);
    // The /task start interaction may still be finishing after the first question shows (slow machines).
    await h.fake.waitFor(() => metrics.inFlight === 0, 30_000, 'the start to finish');
    const release = holdAgent();
    const calls = agent.calls;
    h.fake.say(alice, threadId, 'Nothing unusual.');
    await h.fake.waitFor(() => agent.calls > calls, 30_000, 'the agent to start');

    expect(await get('/health/live')).toEqual({ status: 200, text: JSON.stringify({ status: 'live' }) });
    const ready = await get('/health/ready');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({
      status: 'ready',
      checks: { gateway: true, database: true, policy: true, noOverdueWork: true },
    });
    const m = (await get('/metrics')).text;
    expect(m).toMatch(/^sweetloop_active_sessions 1$/m);
    expect(m).toMatch(/^sweetloop_queue_depth 1$/m); // the message being answered
    expect(m).toMatch(/^sweetloop_turns_total\{role="agent"\} 1$/m);
    expect(m).toMatch(/^sweetloop_turns_total\{role="human"\} 1$/m);
    expect(m).toMatch(/^sweetloop_interaction_ack_seconds_count [1-9]/m);
    expect(m).toMatch(/^sweetloop_agent_turn_seconds_count 1$/m);
    expect(m).toMatch(/^sweetloop_evaluation_failures_total 0$/m);
    expect(m).toMatch(/^sweetloop_overdue_sessions 0$/m); // the agent is working on it
    release();
    await h.agentMessage(threadId, 2);
  });

  it('is not ready and counts an overdue session while a stored reply has nobody answering it, until the sweep does', async () => {
    const dave = h.fake.user('dave');
    const { threadId } = await h.startSession(dave, 'backend');
    await h.agentMessage(threadId, 1);
    await h.fake.waitFor(() => metrics.inFlight === 0, 30_000, 'the start to finish');
    const { id } = await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } });
    // Stored as the person's reply is, with no agent step after it (as when the step that should answer it died).
    await h.runtime.engine.humanTurn(id, 'Negative numbers count as zero.', null);
    await new Promise((r) => setTimeout(r, 400)); // past overdueMs
    const notReady = await get('/health/ready');
    expect(notReady.status).toBe(503);
    expect(JSON.parse(notReady.text)).toEqual({
      status: 'not ready',
      checks: { gateway: true, database: true, policy: true, noOverdueWork: false },
    });
    expect((await get('/metrics')).text).toMatch(/^sweetloop_overdue_sessions 1$/m);

    expect(await h.bot.sweep()).toBe(1);
    const second = await h.agentMessage(threadId, 2);
    await h.fake.waitFor(
      async () =>
        (await h.tdb.prisma.turn.findFirst({ where: { sessionId: id, index: 2 } }))?.externalMessageId === second.id,
      10_000,
      'the answer to be recorded as shown',
    );
    expect((await get('/health/ready')).status).toBe(200);
    expect((await get('/metrics')).text).toMatch(/^sweetloop_overdue_sessions 0$/m);
    expect(await h.bot.sweep()).toBe(0);
  });

  it('a graceful stop mid-turn finishes the turn, takes nothing new, and returns within its deadline', async () => {
    const bob = h.fake.user('bob');
    const { threadId } = await h.startSession(bob, 'backend');
    await h.agentMessage(threadId, 1);
    const release = holdAgent();
    const calls = agent.calls;
    h.fake.say(bob, threadId, 'First reply.');
    await h.fake.waitFor(() => agent.calls > calls, 30_000, 'the agent to start');

    const t0 = Date.now();
    const stopping = h.bot.shutdown(10_000);
    await new Promise((r) => setTimeout(r, 200));
    expect((await get('/health/ready')).status).toBe(503); // no longer taking work
    setTimeout(release, 300);
    expect(await stopping).toBe(true);
    expect(Date.now() - t0).toBeLessThan(10_000);
    // The turn in flight was stored and shown before the bot stopped.
    const shown = await h.agentMessage(threadId, 2);
    const turns = await h.tdb.prisma.turn.findMany({ where: { session: { threadId } }, orderBy: { index: 'asc' } });
    expect(turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent']);
    expect(turns[2]!.externalMessageId).toBe(shown.id);

    // A reply sent while the bot is away is taken at the next start.
    await h.runtime.close();
    const late = h.fake.say(bob, threadId, 'Sent while the bot was stopping.');
    await h.startBot();
    await h.agentMessage(threadId, 3);
    expect((await h.tdb.prisma.turn.findFirstOrThrow({ where: { externalMessageId: late } })).role).toBe('human');
  });

  it('returns by its deadline when the turn in flight never ends', async () => {
    const carol = h.fake.user('carol');
    const { threadId } = await h.startSession(carol, 'backend');
    await h.agentMessage(threadId, 1);
    hold = new Promise<void>(() => {}); // the agent's server never answers
    const calls = agent.calls;
    h.fake.say(carol, threadId, 'Hello?');
    await h.fake.waitFor(() => agent.calls > calls, 30_000, 'the agent to start');
    const t0 = Date.now();
    expect(await h.bot.shutdown(1_500)).toBe(false);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(1_000);
    expect(took).toBeLessThan(3_000);
    hold = null;
    await h.runtime.close();
  });
});
