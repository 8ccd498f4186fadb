// Crash points, probed from outside with the real client: the bot is killed the instant Discord accepted the
// agent's message, the instant it accepted the result, while a person wrote in their thread, and between a reply
// stored (and kept in memory, bot/session/session-cache.ts) and the agent's step that reads it. After a
// restart nothing is posted twice, nothing is lost, and every session reaches its rating prompt. Also: a
// /privacy delete racing an agent turn shows the person no internal error, and nothing the bot posts pings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[1] as TaskRecord & BackendTask;
let hold: Promise<void> | null = null;
// Three messages: two questions (the second echoes mentions, which must never ping), then the answer.
const agent = scriptedAgent('scripted', async (dialogue) => {
  const mine = dialogue.filter((m) => m.role === 'assistant').length;
  if (hold) await hold;
  if (mine === 0) return 'What should happen with unusual inputs?';
  if (mine === 1) return 'Noted. @everyone <@&123456789012345678> should I also handle empty lists?';
  return `I WANT TO ANSWER:\n${task.reference}`;
});

const isAgent = (n: number) => (s: { content: string }) => s.content.startsWith(`**Agent** (message ${n} `);

describe('Discord bot crash recovery', () => {
  const h = new BotHarness({ tasks: [task], agent });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  async function sessionOf(threadId: string) {
    return h.tdb.prisma.session.findUniqueOrThrow({
      where: { threadId },
      include: { turns: { orderBy: { index: 'asc' } } },
    });
  }

  /** Sends the person's reply and returns once the agent is writing its answer, held until `release`. */
  async function replyWhileAgentWrites(
    user: ReturnType<typeof h.fake.user>,
    threadId: string,
    text: string,
  ): Promise<{ message: string; release: () => void }> {
    let open!: () => void;
    hold = new Promise<void>((r) => (open = r));
    const calls = agent.calls;
    const message = h.fake.say(user, threadId, text);
    await h.fake.waitFor(() => agent.calls > calls, 30_000, 'the agent to start writing');
    return { message, release: () => ((hold = null), open()) };
  }

  it("killed the instant the agent's message reached Discord: posted once after the restart, and the session goes on", async () => {
    const alice = h.fake.user('alice');
    const { threadId } = await h.startSession(alice, 'backend');
    await h.agentMessage(threadId, 1);
    const held = h.fake.holdResponse(
      'POST',
      new RegExp(`^/channels/${threadId}/messages$`),
      (b) => typeof b?.content === 'string' && isAgent(2)(b),
    );
    h.fake.say(alice, threadId, 'Treat negative numbers as zero.');
    await held;
    await h.stopBot(); // the crash: Discord has the message, the bot never learned its id
    const before = await sessionOf(threadId);
    expect(before.turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent']);
    expect(before.turns[2]!.externalMessageId).toBeNull();

    await h.startBot();
    await h.fake.waitFor(
      async () => (await sessionOf(threadId)).turns[2]!.externalMessageId,
      30_000,
      'the restarted bot to record the message',
    );
    const posted = h.fake.inChannel(threadId).filter(isAgent(2));
    expect(posted).toHaveLength(1);
    expect((await sessionOf(threadId)).turns[2]!.externalMessageId).toBe(posted[0]!.id);

    h.fake.say(alice, threadId, 'Yes, an empty list gives 0.');
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'the rating prompt',
    );
    expect(h.fake.inChannel(threadId).filter((s) => s.content.startsWith('**Agent**'))).toHaveLength(3);
  });

  it('killed the instant the result (with the rating prompt under it) was posted: not posted again after the restart, and both recorded', async () => {
    const bob = h.fake.user('bob');
    const { threadId } = await h.startSession(bob, 'backend');
    await h.agentMessage(threadId, 1);
    h.fake.say(bob, threadId, 'Nothing special.');
    await h.agentMessage(threadId, 2);
    const held = h.fake.holdResponse(
      'POST',
      new RegExp(`^/channels/${threadId}/messages$`),
      (b) => typeof b?.content === 'string' && b.content.startsWith('**Result:**'),
    );
    h.fake.say(bob, threadId, 'No, never empty.');
    await held;
    await h.stopBot();
    const before = await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId }, include: { evaluation: true } });
    expect(before.status).toBe('answered');
    expect(before.evaluation?.score).toBe(1);
    expect(before.resultShownAt).toBeNull();
    expect(before.ratingAskedAt).toBeNull();
    // The session's quality is written with the record of the result shown: not yet.
    expect(await h.tdb.prisma.sessionQuality.findUnique({ where: { sessionId: before.id } })).toBeNull();
    // The one post carries both: the rating prompt reached the person with the result, before the kill.
    expect(
      h.fake
        .inChannel(threadId)
        .filter((s) => s.content.startsWith('**Result:**') && s.content.includes('How helpful')),
    ).toHaveLength(1);

    await h.startBot();
    await h.fake.waitFor(
      async () => (await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } })).ratingAskedAt,
      30_000,
      'ratingAskedAt',
    );
    expect(h.fake.inChannel(threadId).filter((s) => s.content.startsWith('**Result:**'))).toHaveLength(1);
    expect(h.fake.inChannel(threadId).filter((s) => s.content.includes('How helpful'))).toHaveLength(1);
    const after = await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } });
    expect(after.resultShownAt).not.toBeNull();
    // Computed again by the restarted bot and written with that record: the session's and its person's.
    expect(await h.tdb.prisma.sessionQuality.findUnique({ where: { sessionId: after.id } })).not.toBeNull();
    expect(
      await h.tdb.prisma.participantQuality.findUnique({ where: { participantId: after.participantId } }),
    ).not.toBeNull();

    // Another restart finds nothing left to show.
    const shownBefore = h.fake.inChannel(threadId).length;
    await h.stopBot();
    await h.startBot();
    await new Promise((r) => setTimeout(r, 500));
    expect(h.fake.inChannel(threadId)).toHaveLength(shownBefore);
  });

  it('a message sent while the bot was down is taken on restart; a second one is not, and the person is told', async () => {
    const carol = h.fake.user('carol');
    const { threadId } = await h.startSession(carol, 'backend');
    await h.agentMessage(threadId, 1);
    await h.stopBot();
    const first = h.fake.say(carol, threadId, 'Negative numbers count as zero.');
    const second = h.fake.say(carol, threadId, 'Also, ignore None values.');
    await h.startBot();
    await h.agentMessage(threadId, 2);
    const s = await sessionOf(threadId);
    expect(
      s.turns.map((t) => [t.role, t.externalMessageId === first ? 'first' : t.role === 'human' ? 'other' : '']),
    ).toEqual([
      ['agent', ''],
      ['human', 'first'],
      ['agent', ''],
    ]);
    expect(s.turns[1]!.content).toBe('Negative numbers count as zero.');
    const notice = await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((m) => m.raw.message_reference?.message_id === second),
      30_000,
      'the notice about the second message',
    );
    expect(notice.content).toMatch(/send it again/);
    expect(s.turns.some((t) => t.externalMessageId === second)).toBe(false);

    h.fake.say(carol, threadId, 'Nothing else.');
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((m) => m.content.includes('How helpful')),
      60_000,
      'the rating prompt',
    );
    expect(h.fake.inChannel(threadId).filter((m) => m.content.startsWith('**Agent**'))).toHaveLength(3);
  });

  it('killed after the reply was stored and kept in memory, before the agent step that reads it finished: the restarted bot answers it once from the database', async () => {
    const erin = h.fake.user('erin');
    const { threadId } = await h.startSession(erin, 'backend');
    await h.agentMessage(threadId, 1);
    // The reply is written (to the database, then to the copy in memory), and the agent step has read that copy.
    const { message: reply, release } = await replyWhileAgentWrites(erin, threadId, 'Negative numbers are zero.');
    const stopping = h.stopBot(); // the crash: the copy in memory is lost with the process
    release();
    await stopping;
    const before = await sessionOf(threadId);
    expect(before.turns.filter((t) => t.role === 'human').map((t) => t.externalMessageId)).toEqual([reply]);

    await h.startBot();
    await h.agentMessage(threadId, 2);
    h.fake.say(erin, threadId, 'Nothing else.');
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'the rating prompt',
    );
    const after = await sessionOf(threadId);
    // Nothing lost, nothing doubled: each message stored once, each agent message posted once.
    expect(after.turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent', 'human', 'agent']);
    expect(after.turns.filter((t) => t.externalMessageId === reply)).toHaveLength(1);
    for (const n of [1, 2, 3]) expect(h.fake.inChannel(threadId).filter(isAgent(n))).toHaveLength(1);
    expect(after.status).toBe('answered');
  });

  it('a command and a click delivered again after a restart are not handled again: one consent, one session', async () => {
    const fay = h.fake.user('fay');
    const start = h.fake.command(fay, 'task', 'start', { kind: 'backend' });
    const prompt = await h.reply(start, (s) => s.kind === 'original' && s.components.length > 0, 'the consent prompt');
    const accept = h.fake.click(fay, prompt, 'consent:accept:backend');
    const hidden = await h.reply(accept, (s) => s.content.includes('Only you can see this'), 'the hidden information');
    const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
    await h.agentMessage(threadId, 1);
    await h.stopBot();
    await h.startBot();
    const shown = h.fake.replies(start).length + h.fake.replies(accept).length;
    h.fake.redeliver(start);
    h.fake.redeliver(accept);
    await h.agentMessage(threadId, 1);
    await new Promise((r) => setTimeout(r, 1_000));
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: fay.id } });
    expect(await h.tdb.prisma.session.count({ where: { participantId: p.id } })).toBe(1);
    expect(await h.tdb.prisma.auditLog.count({ where: { actor: fay.id, action: 'consent.accept' } })).toBe(1);
    expect(h.fake.replies(start).length + h.fake.replies(accept).length).toBe(shown);
    expect(h.fake.inChannel(threadId).filter(isAgent(1))).toHaveLength(1);
  });

  it('a /privacy delete racing an agent turn shows the person no internal error', async () => {
    const dan = h.fake.user('dan');
    const { threadId } = await h.startSession(dan, 'backend');
    await h.agentMessage(threadId, 1);
    const { release } = await replyWhileAgentWrites(dan, threadId, 'Zero for negatives.');
    const del = h.fake.command(dan, 'privacy', 'delete');
    await new Promise((r) => setTimeout(r, 300));
    release();
    const receipt = await h.reply(
      del,
      (s) => s.kind === 'original' && /deleted/i.test(s.content),
      'the deletion receipt',
    );
    expect(receipt.content).not.toMatch(/wrong|Invalid|constraint|prisma/i);
    await new Promise((r) => setTimeout(r, 500));
    const everything = [...h.fake.inChannel(threadId), ...h.fake.replies(del)].map((s) => s.content).join('\n');
    expect(everything).not.toMatch(/Something went wrong|Invalid `|constraint|prisma/i);
    // Deleted: their id is gone, and so is every session of theirs (no half-written turn left behind).
    expect(await h.tdb.prisma.participant.findUnique({ where: { discordUserId: dan.id } })).toBeNull();
    expect(await h.tdb.prisma.session.count({ where: { threadId } })).toBe(0);
  });

  it('nothing the bot posted could ping: mentions are off on every post carrying text', async () => {
    const posts = h.fake.requests.filter(
      (r) =>
        (r.method === 'POST' || r.method === 'PATCH') &&
        /^\/(channels\/\d+\/messages|webhooks\/|interactions\/)/.test(r.path) &&
        typeof (r.body?.content ?? r.body?.data?.content) === 'string',
    );
    expect(posts.length).toBeGreaterThan(20);
    // The echoed @everyone and role mention reached the thread, as text only.
    expect(posts.some((r) => String(r.body?.content).includes('@everyone'))).toBe(true);
    for (const r of posts) {
      const am = r.body.allowed_mentions ?? r.body.data?.allowed_mentions;
      expect(am, `${r.method} ${r.path}: ${String(r.body.content ?? r.body.data?.content).slice(0, 60)}`).toBeDefined();
      expect(am.parse ?? []).toEqual([]);
      expect(am.roles ?? []).toEqual([]);
      // Only the session's opening post may ping, and only the person it is for.
      expect((am.users ?? []).length).toBeLessThanOrEqual(1);
    }
  });
});
