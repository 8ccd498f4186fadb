// End to end: the real discord.js client against the fake Discord, real Postgres, the real backend sandbox.
// The agent is scripted (a model stand-in): it asks one question, then answers with the task's reference, so
// the evaluation has a known right result.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[0] as TaskRecord & BackendTask;
const QUESTION = 'Before I write it: which details matter most to you, for example rates or rounding?';
const agent = scriptedAgent('scripted', (dialogue) => {
  const mine = dialogue.filter((m) => m.role === 'assistant').length;
  return mine === 0
    ? QUESTION
    : `Thanks, that is all I need.\nI WANT TO ANSWER:\n\`\`\`python\n${task.reference}\`\`\``;
});

describe('Discord bot, backend session', () => {
  // Typing shown at once: this agent answers at once, sooner than the engine's default delay for the indicator.
  const h = new BotHarness({ tasks: [task], agent, typingAfterMs: 0 });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('registers its slash commands as guild commands on start', () => {
    const names = (h.fake.commands.get(h.fake.guildId) ?? []).map((c) => c.name).sort();
    expect(names).toEqual(['compare', 'mod', 'privacy', 'task']);
    const mod = h.fake.commands.get(h.fake.guildId)!.find((c) => c.name === 'mod');
    expect(mod.default_member_permissions).toBe('32'); // Manage Server
    expect(h.fake.identifies[0].intents & (1 << 15)).toBeTruthy(); // message content
  });

  it('runs a full session: consent, hidden code, turns, answer, evaluation, rating, comment', async () => {
    const alice = h.fake.user('alice');
    const start = h.fake.command(alice, 'task', 'start', { kind: 'backend' });
    const consent = await h.reply(start, (s) => s.kind === 'original', 'consent');
    expect(start.callbackType).toBe(5); // deferred first
    expect(consent.content).toContain(h.consentText);
    expect(consent.components[0].components[0].custom_id).toBe('consent:accept:backend');
    expect(await h.tdb.prisma.session.count()).toBe(0); // nothing recorded before consent

    const accept = h.fake.click(alice, consent, 'consent:accept:backend');
    const hidden = await h.reply(accept, (s) => s.content.includes('Only you can see this'), 'hidden info');
    expect(accept.callbackType).toBe(6); // deferred update of the consent message
    expect(hidden.content).toContain('```python');
    expect(hidden.content).toContain(task.reference.split('\n').find((l) => l.startsWith('def '))!);
    const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
    const thread = h.fake.channels.get(threadId);
    expect(thread.type).toBe(12); // private thread
    expect(h.fake.threadMembers.get(threadId)!.has(alice.id)).toBe(true);

    const q = await h.agentMessage(threadId, 1);
    expect(q.content).toContain(QUESTION);
    expect(h.fake.requests.some((r) => r.path === `/channels/${threadId}/typing`)).toBe(true);

    const participant = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: alice.id } });
    expect(participant.consentGivenAt).not.toBeNull();
    const session = await h.tdb.prisma.session.findFirstOrThrow({ where: { participantId: participant.id } });
    expect(session.threadId).toBe(threadId);
    expect(session.policyVersionId).toBe(h.policy.id);

    // The person answers in the thread; the agent answers with code; the result and the rating follow.
    const msgId = h.fake.say(alice, threadId, 'Use the rates in my code; round to cents.');
    const answer = await h.agentMessage(threadId, 2);
    expect(answer.content).toContain('final answer');
    const result = await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.startsWith('**Result:**')),
      60_000,
      'result',
    );
    expect(result.content).toMatch(/(\d+) of \1 tests passed/);
    const rating = await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      30_000,
      'rating buttons',
    );
    expect(rating.components[0].components.map((c: any) => c.custom_id)).toEqual(
      [1, 2, 3, 4, 5].map((n) => `rate:${session.id}:${n}`),
    );

    const rate = h.fake.click(alice, rating, `rate:${session.id}:4`);
    await h.reply(rate, (s) => s.content.includes('you rated the agent 4/5'), 'rating thanks');
    const commentClick = h.fake.click(alice, rating, `comment:${session.id}`);
    await h.fake.waitFor(() => commentClick.callbackType === 9, 10_000, 'comment modal');
    const modal = h.fake.submitModal(alice, commentClick, { comment: 'Asked a sensible question.' });
    await h.reply(modal, (s) => s.content.includes('Thank you for your comment'), 'comment thanks');

    // The stored trajectory.
    const stored = await h.tdb.prisma.session.findUniqueOrThrow({
      where: { id: session.id },
      include: { turns: { orderBy: { index: 'asc' } }, evaluation: true, ratings: true },
    });
    expect(stored.status).toBe('answered');
    expect(stored.turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent']);
    expect(stored.turns[1]!.content).toBe('Use the rates in my code; round to cents.');
    expect(stored.turns[1]!.externalMessageId).toBe(msgId);
    expect(stored.answer).toBe(task.reference.trim());
    expect(stored.evaluation!.score).toBe(1);
    expect(stored.evaluation!.success).toBe(true);
    expect(stored.evaluation!.testsTotal).toBe(task.testCases.length);
    expect(stored.reward).toBe(1);
    expect(stored.ratings[0]!.value).toBe(4);
    expect(stored.ratings[0]!.comment).toBe('Asked a sensible question.');
    // Each agent turn was stored before Discord received it, and records the message that showed it.
    for (const [turn, shown] of [
      [stored.turns[0]!, q],
      [stored.turns[2]!, answer],
    ] as const) {
      expect(turn.createdAt.getTime()).toBeLessThanOrEqual(shown.wallAt);
      expect(turn.externalMessageId).toBeTruthy();
    }
    // Every interaction was acknowledged.
    for (const i of [start, accept, rate, commentClick, modal]) expect(i.ackAt).not.toBeNull();
  });

  it('lets a moderator export the sessions as a file', async () => {
    const mod = h.fake.user('mod');
    const i = h.fake.command(mod, 'mod', 'export', {}, { moderator: true });
    const reply = await h.reply(i, (s) => s.files.length > 0, 'export attachment');
    const data = reply.files.find((f) => f.name.endsWith('.jsonl'))!;
    const lines = data.data
      .toString('utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0].task.ground_truth).toBe(task.reference);
    expect(lines[0].dialogue_history.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(lines[0].reward).toBe(1);
    expect(reply.files.some((f) => f.name.endsWith('.README.md'))).toBe(true);
    const audit = await h.tdb.prisma.auditLog.findFirst({ where: { action: 'data.export', actor: mod.id } });
    expect(audit).not.toBeNull();
  });

  it('refuses moderator commands to a member without Manage Server', async () => {
    const bob = h.fake.user('bob');
    const before = await h.tdb.prisma.auditLog.count();
    for (const sub of ['stats', 'pause', 'export'] as const) {
      const i = h.fake.command(bob, 'mod', sub);
      const r = await h.reply(i, (s) => s.kind === 'callback' && s.content !== '', 'refusal');
      expect(r.content).toContain('for moderators');
      expect(r.flags & 64).toBe(64);
    }
    expect(await h.tdb.prisma.auditLog.count()).toBe(before);
    expect(await h.tdb.prisma.setting.findUnique({ where: { key: 'paused' } })).toBeNull();
  });

  it('refuses a banned person and writes the audit log', async () => {
    const mod = h.fake.user('mod2');
    const carol = h.fake.user('carol');
    const ban = h.fake.command(
      mod,
      'mod',
      'ban',
      { user: carol, reason: 'spam' },
      { moderator: true, roles: [h.operatorRole] },
    );
    await h.reply(ban, (s) => s.content.startsWith('Banned'), 'ban reply');
    const start = h.fake.command(carol, 'task', 'start', { kind: 'backend' });
    const r = await h.reply(start, (s) => s.kind === 'original', 'refusal');
    expect(r.content).toContain('not allowed');
    expect(r.components).toEqual([]);
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: carol.id } });
    expect(p.banned).toBe(true);
    expect(await h.tdb.prisma.session.count({ where: { participantId: p.id } })).toBe(0);
    expect(
      await h.tdb.prisma.auditLog.findFirst({ where: { action: 'participant.ban', target: carol.id, actor: mod.id } }),
    ).not.toBeNull();

    const unban = h.fake.command(mod, 'mod', 'unban', { user: carol }, { moderator: true, roles: [h.operatorRole] });
    await h.reply(unban, (s) => s.content.startsWith('Unbanned'), 'unban reply');
    const again = h.fake.command(carol, 'task', 'start', { kind: 'backend' });
    const consent = await h.reply(again, (s) => s.kind === 'original', 'consent after unban');
    expect(consent.content).toContain(h.consentText);
  });

  it('stores a redelivered MESSAGE_CREATE once and answers it once', async () => {
    const dave = h.fake.user('dave');
    const { threadId } = await h.startSession(dave, 'backend');
    await h.agentMessage(threadId, 1);
    const id = h.fake.say(dave, threadId, 'Round to cents, please.');
    h.fake.say(dave, threadId, 'Round to cents, please.', id); // the gateway delivers it again at once
    await h.agentMessage(threadId, 2);
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'rating',
    );
    h.fake.say(dave, threadId, 'Round to cents, please.', id); // and once more, later
    await new Promise((r) => setTimeout(r, 500));
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: dave.id } });
    const turns = await h.tdb.prisma.turn.findMany({
      where: { session: { participantId: p.id } },
      orderBy: { index: 'asc' },
    });
    expect(turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent']);
    expect(turns.filter((t) => t.externalMessageId === id)).toHaveLength(1);
    expect(h.fake.inChannel(threadId).filter((s) => s.content.startsWith('**Agent**'))).toHaveLength(2);
    // No "wait for the agent" notice was sent for the duplicate either.
    expect(h.fake.inChannel(threadId).filter((s) => /still writing|wait for the agent/i.test(s.content))).toHaveLength(
      0,
    );
  });

  it('pauses and resumes collection, one active session per person, /task stop and /privacy delete', async () => {
    const mod = h.fake.user('mod3');
    const erin = h.fake.user('erin');
    const { threadId } = await h.startSession(erin, 'backend');
    await h.agentMessage(threadId, 1);
    const second = h.fake.command(erin, 'task', 'start', { kind: 'backend' });
    expect((await h.reply(second, (s) => s.kind === 'original')).content).toContain('already have a session');

    const pause = h.fake.command(mod, 'mod', 'pause', {}, { moderator: true, roles: [h.operatorRole] });
    await h.reply(pause, (s) => s.content.includes('paused'));
    const frank = h.fake.user('frank');
    const accept = h.fake.click(
      frank,
      await h.reply(h.fake.command(frank, 'task', 'start', { kind: 'backend' }), (s) => s.kind === 'original'),
      'consent:accept:backend',
    );
    expect((await h.reply(accept, (s) => s.content.includes('paused'))).content).toContain('paused');
    const resume = h.fake.command(mod, 'mod', 'resume', {}, { moderator: true, roles: [h.operatorRole] });
    await h.reply(resume, (s) => s.content.includes('resumed'));
    expect(
      await h.tdb.prisma.auditLog.count({
        where: { action: { in: ['collection.pause', 'collection.resume'] }, actor: mod.id },
      }),
    ).toBe(2);

    const status = h.fake.command(erin, 'task', 'status');
    const st = await h.reply(status, (s) => s.kind === 'followup', 'status hidden info');
    expect(h.fake.replies(status).find((s) => s.kind === 'original')!.content).toContain('your turn to answer');
    expect(st.content).toContain('```python');

    const stop = h.fake.command(erin, 'task', 'stop');
    await h.reply(stop, (s) => s.content.includes('has ended'));
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: erin.id } });
    expect((await h.tdb.prisma.session.findFirstOrThrow({ where: { participantId: p.id } })).status).toBe('abandoned');
    await h.fake.waitFor(() => h.fake.channels.get(threadId).thread_metadata.archived, 10_000, 'thread archived');

    const del = h.fake.command(erin, 'privacy', 'delete');
    await h.reply(del, (s) => s.content.includes('deleted'));
    expect(await h.tdb.prisma.session.count({ where: { participantId: p.id } })).toBe(0);
    const after = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { id: p.id } });
    expect(after.consentGivenAt).toBeNull();
    expect(after.deletedAt).not.toBeNull();
  });

  it('deploys and rolls back policies: new sessions get the deployed one, running sessions keep theirs', async () => {
    const mod = h.fake.user('mod4');
    const gina = h.fake.user('gina');
    const harry = h.fake.user('harry');
    const g = await h.startSession(gina, 'backend');
    await h.agentMessage(g.threadId, 1);
    await h.tdb.prisma.policyVersion.create({
      data: {
        name: 'test-policy-2',
        algorithm: 'sweet',
        checkpointPath: '/nonexistent-2',
        checkpointSha256: '1'.repeat(64),
      },
    });
    const unknown = h.fake.command(
      mod,
      'mod',
      'deploy',
      { version: 'no-such-version' },
      { moderator: true, roles: [h.operatorRole] },
    );
    expect((await h.reply(unknown, (s) => s.kind === 'original')).content).toContain('No policy version named');
    const deploy = h.fake.command(
      mod,
      'mod',
      'deploy',
      { version: 'test-policy-2' },
      { moderator: true, roles: [h.operatorRole] },
    );
    await h.reply(deploy, (s) => s.content.startsWith('Deployed test-policy-2'));
    const v2 = await h.tdb.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'test-policy-2' } });
    expect(v2.status).toBe('deployed');
    expect((await h.tdb.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'test-policy' } })).status).toBe(
      'retired',
    );

    const hs = await h.startSession(harry, 'backend');
    await h.agentMessage(hs.threadId, 1);
    const harryS = await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId: hs.threadId } });
    const ginaS = await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId: g.threadId } });
    expect(harryS.policyVersionId).toBe(v2.id);
    expect(ginaS.policyVersionId).toBe(h.policy.id);

    const rollback = h.fake.command(mod, 'mod', 'rollback', {}, { moderator: true, roles: [h.operatorRole] });
    await h.reply(rollback, (s) => s.content.includes('test-policy is deployed again'));
    expect((await h.tdb.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'test-policy' } })).status).toBe(
      'deployed',
    );
    expect(
      await h.tdb.prisma.auditLog.count({
        where: { actor: mod.id, action: { in: ['policy.deploy', 'policy.rollback'] } },
      }),
    ).toBe(2);
  });

  it('expires an idle session and says so in its thread', async () => {
    const ivy = h.fake.user('ivy');
    const { threadId } = await h.startSession(ivy, 'backend');
    await h.agentMessage(threadId, 1);
    await h.tdb.prisma.session.update({
      where: { threadId },
      data: { lastActivityAt: new Date(Date.now() - 31 * 60_000) },
    });
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('expired after 30 minutes')),
      30_000,
      'expiry notice',
    );
    expect((await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } })).status).toBe('expired');
    await h.fake.waitFor(() => h.fake.channels.get(threadId).thread_metadata.archived, 10_000, 'thread archived');
    h.fake.say(ivy, threadId, 'Hello?');
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('This session has ended')),
      30_000,
      'ended notice',
    );
  });

  it('flags a session for moderators', async () => {
    const mod = h.fake.user('mod5');
    const s = await h.tdb.prisma.session.findFirstOrThrow({ where: { status: 'answered' } });
    const bad = h.fake.command(mod, 'mod', 'flag', { session: 'not-a-uuid' }, { moderator: true });
    expect((await h.reply(bad, (x) => x.kind === 'original')).content).toContain('is not a session id');
    const flag = h.fake.command(mod, 'mod', 'flag', { session: s.id, reason: 'off-topic' }, { moderator: true });
    await h.reply(flag, (x) => x.content.startsWith('Flagged'));
    expect(await h.tdb.prisma.moderationFlag.count({ where: { sessionId: s.id, reason: 'off-topic' } })).toBe(1);
    const stats = h.fake.command(mod, 'mod', 'stats', {}, { moderator: true });
    const st = await h.reply(stats, (x) => x.content.startsWith('Participants'));
    expect(st.content).toContain('Open flags: 1');
  });
});
