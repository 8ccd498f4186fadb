// Recovery: the bot is stopped in the middle of sessions and started again on the same database; Discord
// rate-limits and fails requests. Nothing the person sent may be lost or handled twice.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[1] as TaskRecord & BackendTask;
let hold: Promise<void> | null = null;
const agent = scriptedAgent('scripted', async (dialogue) => {
  const mine = dialogue.filter((m) => m.role === 'assistant').length;
  if (mine > 0 && hold) await hold;
  return mine === 0 ? 'What should happen with unusual inputs?' : `I WANT TO ANSWER:\n${task.reference}`;
});

describe('Discord bot recovery', () => {
  const h = new BotHarness({ tasks: [task], agent });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('resumes every session after a restart in the middle, losing nothing and doubling nothing', async () => {
    const alice = h.fake.user('alice');
    const bob = h.fake.user('bob');
    const a = await h.startSession(alice, 'backend');
    await h.agentMessage(a.threadId, 1);

    // Bob has a session running too.
    const bobStart = h.fake.command(bob, 'task', 'start', { kind: 'backend' });
    const consent = await h.reply(bobStart, (s) => s.kind === 'original');
    const bobThread = await (async () => {
      const accept = h.fake.click(bob, consent, 'consent:accept:backend');
      const hidden = await h.reply(accept, (s) => s.content.includes('Only you can see this'));
      return /<#(\d+)>/.exec(hidden.content)![1]!;
    })();
    const bobP = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: bob.id } });
    await h.agentMessage(bobThread, 1);
    // The post's id is stored after Discord answers the post: under load that write can trail the message's
    // appearance, and the kill below must come after it (this test's premise: Bob's first turn was shown).
    for (let i = 0; ; i++) {
      const shown = await h.tdb.prisma.turn.count({
        where: { session: { participantId: bobP.id }, externalMessageId: { not: null } },
      });
      if (shown === 1) break;
      if (i > 600) throw new Error("Bob's first turn was never marked shown");
      await new Promise((r) => setTimeout(r, 50));
    }

    // Alice answers; the bot is killed while the agent is thinking about her message.
    let release!: () => void;
    hold = new Promise<void>((r) => (release = r));
    const callsBefore = agent.calls;
    const msgId = h.fake.say(alice, a.threadId, 'Treat negative numbers as zero.');
    await h.fake.waitFor(() => agent.calls > callsBefore, 30_000, 'the agent to start thinking');
    const aliceP = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: alice.id } });
    const beforeTurns = await h.tdb.prisma.turn.findMany({
      where: { session: { participantId: aliceP.id } },
      orderBy: { index: 'asc' },
    });
    expect(beforeTurns.map((t) => t.role)).toEqual(['agent', 'human']);
    await h.stopBot();
    void release; // the old process's agent never answers: it is dead

    hold = null;
    const bobSession = await h.tdb.prisma.session.findFirstOrThrow({ where: { participantId: bobP.id } });
    const bobTurns = await h.tdb.prisma.turn.findMany({ where: { sessionId: bobSession.id } });
    expect(bobTurns).toHaveLength(1);
    expect(bobTurns[0]!.externalMessageId).not.toBeNull();
    // Simulate the crash window between storing and posting: the message never reached Discord.
    const postedBefore = h.fake.inChannel(bobThread).filter((s) => s.content.startsWith('**Agent**')).length;
    await h.tdb.prisma.turn.update({ where: { id: bobTurns[0]!.id }, data: { externalMessageId: null } });
    h.fake.forget(h.fake.shown.find((s) => s.channelId === bobThread && s.content.startsWith('**Agent**'))!.id);
    expect(postedBefore).toBe(1);

    await h.startBot();

    // Alice's session continues: the agent answers her stored message once, then result and rating.
    await h.agentMessage(a.threadId, 2);
    await h.fake.waitFor(
      () => h.fake.inChannel(a.threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'rating after resume',
    );
    const turns = await h.tdb.prisma.turn.findMany({
      where: { session: { participantId: aliceP.id } },
      orderBy: { index: 'asc' },
    });
    expect(turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent']);
    expect(turns[1]!.externalMessageId).toBe(msgId);
    expect(turns[1]!.content).toBe('Treat negative numbers as zero.');
    expect(h.fake.inChannel(a.threadId).filter((s) => s.content.startsWith('**Agent**'))).toHaveLength(2);
    const session = await h.tdb.prisma.session.findFirstOrThrow({
      where: { participantId: aliceP.id },
      include: { evaluation: true },
    });
    expect(session.status).toBe('answered');
    expect(session.evaluation?.score).toBe(1);

    // Bob's stored-but-unshown message is posted on restart, once, and the turn records it.
    const bobShown = await h.agentMessage(bobThread, 1);
    const bobTurn = await h.tdb.prisma.turn.findFirstOrThrow({ where: { sessionId: bobSession.id } });
    expect(bobTurn.externalMessageId).toBe(bobShown.id);
    expect(h.fake.inChannel(bobThread).filter((s) => s.content.startsWith('**Agent**'))).toHaveLength(1);

    // And Bob's session goes on in the same thread with the new process.
    h.fake.say(bob, bobThread, 'Nothing special.');
    await h.agentMessage(bobThread, 2);
    await h.fake.waitFor(
      () => h.fake.inChannel(bobThread).find((s) => s.content.includes('How helpful')),
      60_000,
      "Bob's rating",
    );
  });

  it('keeps a session whose first posts Discord refused, and finishes it after a restart', async () => {
    const carol = h.fake.user('carol');
    const start = h.fake.command(carol, 'task', 'start', { kind: 'backend' });
    const consent = await h.reply(start, (s) => s.kind === 'original');
    // Every attempt discord.js makes to post the thread's first message fails (it tries 4 times), and the
    // first attempt after that too.
    h.fake.failRequests('POST', /^\/channels\/\d+\/messages$/, 5);
    const accept = h.fake.click(carol, consent, 'consent:accept:backend');
    const err = await h.reply(accept, (s) => s.content.startsWith('Something went wrong'), 'the error reply');
    // People never see internal errors: a short message with an error id (the details are in the log).
    expect(err.content).toMatch(/error id `[0-9a-f]{8}`/);
    expect(err.content).not.toContain('Bad Gateway');
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: carol.id } });
    const s = await h.tdb.prisma.session.findFirstOrThrow({ where: { participantId: p.id } });
    expect(s.status).toBe('active');
    expect(s.threadId).not.toBeNull();
    expect(await h.tdb.prisma.turn.count({ where: { sessionId: s.id } })).toBe(0);

    await h.stopBot();
    await h.startBot();
    const shown = await h.agentMessage(s.threadId!, 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(h.fake.inChannel(s.threadId!).filter((x) => x.content.startsWith('**Agent**'))).toHaveLength(1);
    const turns = await h.tdb.prisma.turn.findMany({ where: { sessionId: s.id } });
    expect(turns).toHaveLength(1);
    expect(turns[0]!.externalMessageId).toBe(shown.id);
  });

  it('waits out a 429 as Discord asks, then delivers', async () => {
    const dan = h.fake.user('dan');
    const { threadId } = await h.startSession(dan, 'backend');
    await h.agentMessage(threadId, 1);
    const from = h.fake.requests.length;
    h.fake.rateLimitOnce('POST', new RegExp(`^/channels/${threadId}/messages$`), 1.5);
    h.fake.say(dan, threadId, 'Nothing unusual.');
    await h.agentMessage(threadId, 2);
    const posts = h.fake.requests
      .slice(from)
      .filter((r) => r.method === 'POST' && r.path === `/channels/${threadId}/messages`);
    expect(posts[0]!.status).toBe(429);
    expect(posts[1]!.status).toBe(200);
    // The retry came after the time Discord asked for, not before (a correctness bound, not a speed one).
    expect(posts[1]!.at - posts[0]!.at).toBeGreaterThanOrEqual(1_400);
    expect(h.fake.inChannel(threadId).filter((s) => s.content.startsWith('**Agent**'))).toHaveLength(2);
  });
});
