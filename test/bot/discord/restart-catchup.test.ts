// A restart's catch-up racing the agent's first load: the bot is killed the instant an agent message
// reached Discord, people write while it is down and again right after it is back, and the agent's first load
// (the local llama.cpp server's, lazy and slow) is held while they do. Every message sent while the bot was down
// must be taken as the reply it was, ahead of anything sent after the restart, whatever the agent is doing; a
// message that cannot be taken is answered at once; after the load every session goes on. And nothing waits
// forever: a load that outlasts the agent's deadline is told to the person (their message kept), also for a reply
// stored before the kill that the restart answers, and the wait ends with the session; catch-up and every
// abandoned agent request are in the log. Real discord.js client against the fake Discord, real Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../tasks/agent.ts';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { BotHarness, recordingLog, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[1] as TaskRecord & BackendTask;
/** The dialogues the agent was asked to answer, in order. */
const asked: ChatMessage[][] = [];
/** While set, the agent's replies wait for it (a turn in flight when the bot is killed). */
let replyGate: Promise<void> | null = null;
const agent = scriptedAgent('scripted', async (dialogue) => {
  if (replyGate) await replyGate;
  asked.push(dialogue);
  const mine = dialogue.filter((m) => m.role === 'assistant').length;
  return mine < 4 ? `Question number ${mine + 1}?` : `I WANT TO ANSWER:\n${task.reference}`;
});
/** While set, loading the agent waits for it: the local server's first load after a restart. */
let loadGate: Promise<void> | null = null;
let release: () => void = () => {};
let loads = 0;

const isAgent = (n: number) => (s: { content: string }) => s.content.startsWith(`**Agent** (message ${n} `);
const lastAsked = (d: ChatMessage[]) => d.at(-1)?.content;

describe('Discord bot restart: catch-up while the agent loads, and an agent that does not come back', () => {
  const log = recordingLog();
  const h = new BotHarness({
    tasks: [task],
    agent,
    log,
    loadAgent: async () => {
      loads++;
      if (loadGate) await loadGate;
      return agent;
    },
  });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    loadGate = null;
    release();
    await h.stop();
  });

  const sessionOf = (threadId: string) =>
    h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId }, include: { turns: { orderBy: { index: 'asc' } } } });
  const stored = async (messageId: string) =>
    (await h.tdb.prisma.turn.findUnique({ where: { externalMessageId: messageId } })) !== null;

  it('takes every message sent while the bot was down ahead of later ones, and answers at once what it cannot take', async () => {
    const alice = h.fake.user('alice');
    const bob = h.fake.user('bob');
    const a = await h.startSession(alice, 'backend');
    await h.agentMessage(a.threadId, 1);
    const b = await h.startSession(bob, 'backend');
    await h.agentMessage(b.threadId, 1);

    // The kill: Discord has Alice's second agent message, the bot never learned its id.
    const held = h.fake.holdResponse(
      'POST',
      new RegExp(`^/channels/${a.threadId}/messages$`),
      (body) => typeof body?.content === 'string' && isAgent(2)(body),
    );
    h.fake.say(alice, a.threadId, 'Treat negative numbers as zero.');
    await held;
    await h.stopBot();
    expect((await sessionOf(a.threadId)).turns.map((t) => [t.role, t.externalMessageId === null])).toEqual([
      ['agent', false],
      ['human', false],
      ['agent', true],
    ]);

    // Both answer while the bot is down.
    const aliceDown = h.fake.say(alice, a.threadId, 'An empty list gives 0.');
    const bobDown = h.fake.say(bob, b.threadId, 'Inputs are always integers.');

    // The bot comes back; the agent's first load is held from the moment it begins.
    loadGate = new Promise<void>((r) => (release = r));
    const loadsBefore = loads;
    const restarted = h.startBot();
    await h.fake.waitFor(() => loads > loadsBefore, 30_000, "the agent's first load after the restart");

    // Bob, answered by nothing yet, writes again while the agent is still loading.
    const bobAfter = h.fake.say(bob, b.threadId, 'Hello? Are you there?');

    // What each sent while the bot was down is stored as their reply, while the load is still held...
    const takenBoth = async () => (await stored(aliceDown)) && (await stored(bobDown));
    await h.fake.waitFor(takenBoth, 10_000, 'both messages sent while the bot was down to be stored').catch(() => {});
    expect({
      aliceDown: await stored(aliceDown),
      bobDown: await stored(bobDown),
      bobAfter: await stored(bobAfter),
    }).toEqual({ aliceDown: true, bobDown: true, bobAfter: false });
    // ...and Bob's later message is answered at once (it is not his turn), not stored, not taken instead.
    const told = await h.fake.waitFor(
      () => h.fake.inChannel(b.threadId).find((s) => s.raw.message_reference?.message_id === bobAfter),
      10_000,
      'an answer to the message sent after the restart',
    );
    expect(told.content).toMatch(/wait/i);
    expect(loads).toBe(loadsBefore + 1);

    // The load finishes: each session's agent answers the message sent while the bot was down.
    loadGate = null;
    release();
    await restarted;
    const aliceThird = await h.agentMessage(a.threadId, 3);
    const bobSecond = await h.agentMessage(b.threadId, 2);
    const recorded = async (threadId: string, n: number) => (await sessionOf(threadId)).turns[n]?.externalMessageId;
    await h.fake.waitFor(
      async () => (await recorded(a.threadId, 4)) && (await recorded(b.threadId, 2)),
      10_000,
      'the agent messages to be recorded as shown',
    );
    const alicesSession = await sessionOf(a.threadId);
    expect(alicesSession.turns.map((t) => [t.role, t.content])).toEqual([
      ['agent', 'Question number 1?'],
      ['human', 'Treat negative numbers as zero.'],
      ['agent', 'Question number 2?'],
      ['human', 'An empty list gives 0.'],
      ['agent', 'Question number 3?'],
    ]);
    expect(alicesSession.turns[2]!.externalMessageId).toBe(h.fake.inChannel(a.threadId).find(isAgent(2))!.id);
    expect(alicesSession.turns[4]!.externalMessageId).toBe(aliceThird.id);
    const bobsSession = await sessionOf(b.threadId);
    expect(bobsSession.turns.map((t) => [t.role, t.content])).toEqual([
      ['agent', 'Question number 1?'],
      ['human', 'Inputs are always integers.'],
      ['agent', 'Question number 2?'],
    ]);
    expect(bobsSession.turns[2]!.externalMessageId).toBe(bobSecond.id);
    expect(asked.some((d) => lastAsked(d) === 'Inputs are always integers.')).toBe(true);
    expect(asked.some((d) => lastAsked(d) === 'Hello? Are you there?')).toBe(false);
    const caughtUp = log.lines('debug', 'catch-up: missed reply stored; the agent answers it in the background');
    expect(caughtUp.map((l) => l.message).sort()).toEqual([aliceDown, bobDown].sort());

    // Nothing was posted twice, and both sessions go on.
    h.fake.say(bob, b.threadId, 'Negative numbers count as zero.');
    await h.agentMessage(b.threadId, 3);
    h.fake.say(alice, a.threadId, 'Nothing else.');
    await h.agentMessage(a.threadId, 4);
    await new Promise((r) => setTimeout(r, 300));
    for (const [threadId, n] of [
      [a.threadId, 4],
      [b.threadId, 3],
    ] as const) {
      const posted = h.fake.inChannel(threadId).filter((s) => s.content.startsWith('**Agent**'));
      expect(posted.map((s) => s.content.split('\n')[0])).toHaveLength(n);
      expect(new Set(posted.map((s) => s.content)).size).toBe(n);
    }
  });

  const unavailable = (threadId: string) =>
    h.fake.inChannel(threadId).filter((s) => s.content.startsWith('The agent is unavailable right now.'));

  /** A session waiting for its person, who answers while the bot is down; the bot comes back with the agent's load held. */
  async function downAndBack(name: string): Promise<{ threadId: string; down: string }> {
    loadGate = null;
    release();
    const person = h.fake.user(name);
    const { threadId } = await h.startSession(person, 'backend');
    await h.agentMessage(threadId, 1);
    await h.stopBot();
    const down = h.fake.say(person, threadId, 'Zero for negatives.');
    loadGate = new Promise<void>((r) => (release = r));
    h.options.agentWaitMs = 1_000;
    await h.startBot(); // does not wait for the agent
    await h.fake.waitFor(
      async () => (await sessionOf(threadId)).turns.some((t) => t.externalMessageId === down),
      10_000,
      'the message sent while the bot was down to be stored',
    );
    return { threadId, down };
  }

  /** Lets the held load finish: the kept reply is answered, the person hears the agent is back, told only once. */
  async function answeredOnceLoaded(threadId: string): Promise<void> {
    loadGate = null;
    release();
    await h.agentMessage(threadId, 2);
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content === 'The agent is back.'),
      10_000,
      'the notice that the agent is back',
    );
    expect((await sessionOf(threadId)).turns.map((t) => [t.role, t.content])).toEqual([
      ['agent', 'Question number 1?'],
      ['human', 'Zero for negatives.'],
      ['agent', 'Question number 2?'],
    ]);
    expect(unavailable(threadId)).toHaveLength(1);
  }

  it("tells the person when the agent's first load outlasts the deadline, keeps their message, and answers it once loaded", async () => {
    const { threadId } = await downAndBack('erin');
    const told = await h.fake.waitFor(
      () => unavailable(threadId)[0],
      10_000,
      'the person to be told the agent is unavailable',
    );
    expect(told.content).toMatch(/Your session is kept/);
    expect((await sessionOf(threadId)).turns.map((t) => t.role)).toEqual(['agent', 'human']);

    await answeredOnceLoaded(threadId);
  });

  it('after a restart, tells the person whose reply was stored before the kill when the agent outlasts the deadline, and answers it once loaded', async () => {
    loadGate = null;
    release();
    const gina = h.fake.user('gina');
    const { threadId } = await h.startSession(gina, 'backend');
    await h.agentMessage(threadId, 1);
    // Her reply is stored and the agent is writing when the bot is killed (that reply is never answered).
    replyGate = new Promise<void>(() => {});
    const calls = agent.calls;
    const reply = h.fake.say(gina, threadId, 'Zero for negatives.');
    await h.fake.waitFor(() => agent.calls > calls, 10_000, 'the agent to start');
    expect(await stored(reply)).toBe(true);
    await h.stopBot();
    replyGate = null;

    // The restart owes her the agent's answer; nothing was sent while the bot was down, so no catch-up takes it.
    loadGate = new Promise<void>((r) => (release = r));
    h.options.agentWaitMs = 1_000;
    await h.startBot();
    const told = await h.fake.waitFor(
      () => unavailable(threadId)[0],
      10_000,
      'the person to be told the agent is unavailable',
    );
    expect(told.content).toMatch(/Your session is kept/);
    expect((await sessionOf(threadId)).turns.map((t) => t.role)).toEqual(['agent', 'human']);

    await answeredOnceLoaded(threadId);
  });

  it('ends the wait with the session: an idle session waiting for its agent expires, its lock is let go, and a late reply is not stored', async () => {
    const { threadId } = await downAndBack('frank');
    await h.fake.waitFor(() => unavailable(threadId)[0], 10_000, 'the person to be told the agent is unavailable');
    const { id } = await sessionOf(threadId);
    expect(h.runtime.engine.isBusy(id)).toBe(true);

    const expired = await h.runtime.engine.expireIdle(new Date(Date.now() + 31 * 60_000));
    expect(expired.map((s) => s.id)).toContain(id);
    await h.fake.waitFor(() => !h.runtime.engine.isBusy(id), 10_000, "the session's lock to be let go");

    loadGate = null;
    release();
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await sessionOf(threadId);
    expect(after.status).toBe('expired');
    expect(after.turns.map((t) => t.role)).toEqual(['agent', 'human']);
    expect(h.fake.inChannel(threadId).filter((s) => s.content.startsWith('**Agent**'))).toHaveLength(1);
    await h.fake.waitFor(
      () => log.lines('warn', 'agent request abandoned').find((l) => l.session === id),
      10_000,
      'the abandoned request to be logged',
    );
    expect(log.lines('warn', 'agent request abandoned').filter((l) => l.session === id)).toEqual([
      expect.objectContaining({ why: 'the session is expired' }),
    ]);
  });
});
