// Guilds and roles over the fake Discord with two allowed guilds (A, B) and one that is not (C): a guild
// moderator sees, exports, flags and bans only in their guild and cannot act on everyone; an operator can; a
// guild outside the allowlist (joined before or after the start) gets no answer and is left; flags are listed and resolved; every action is
// audited with its guild and actor. Also the per-person limits, and agent messages that never unfurl a link.
import { MessageFlags } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import type { BackendTask, TaskRecord } from '../../../tasks/model.ts';
import type { FakeUser, InteractionRecord } from '../../../testing/fake-discord.ts';
import { BotHarness, scriptedAgent } from './harness.ts';

const task = builtinTasks({ kind: 'backend' })[1] as TaskRecord & BackendTask;
const agent = scriptedAgent('scripted', (dialogue) =>
  dialogue.filter((m) => m.role === 'assistant').length === 0
    ? 'What should happen with unusual inputs? (Like https://example.com/spec says?)'
    : `I WANT TO ANSWER:\n${task.reference}`,
);

describe('guilds and roles', () => {
  let guildB = '';
  let guildD = '';
  let operatorRole = '';
  const h = new BotHarness({
    // Several tasks: one person runs three sessions (each task once per person).
    tasks: builtinTasks({ kind: 'backend' }).slice(0, 4),
    agent,
    limits: { sessionsPerDay: 3, messagesPerMinute: 100, messageChars: 60 },
    botOptions: (fake) => {
      guildB = fake.addGuild().guildId;
      guildD = fake.addGuild().guildId; // the bot is in it before it starts, never allowed
      operatorRole = fake.role(fake.guildId, 'operators');
      return { guildIds: [fake.guildId, guildB], operatorRoleIds: [operatorRole] };
    },
  });
  let guildC = '';
  let channelC = '';
  let alice: FakeUser, bob: FakeUser, modA: FakeUser, modB: FakeUser, op: FakeUser;

  beforeAll(async () => {
    await h.start();
    ({ guildId: guildC, channelId: channelC } = h.fake.addGuild()); // joined after start, never allowed
    alice = h.fake.user('alice');
    bob = h.fake.user('bob');
    modA = h.fake.user('modA');
    modB = h.fake.user('modB');
    op = h.fake.user('op');
  });
  afterAll(async () => {
    await h.stop();
  });

  const ans = (i: InteractionRecord, what: string) =>
    h.reply(i, (s) => s.kind === 'original' || (s.kind === 'callback' && s.content !== ''), what);

  /** A full answered session in a guild; returns its session id. */
  async function answeredSession(user: FakeUser, guildId: string): Promise<string> {
    const start = h.fake.command(user, 'task', 'start', { kind: 'backend' }, { guildId });
    const consent = await h.reply(start, (s) => s.kind === 'original');
    const src = consent.components.length ? h.fake.click(user, consent, 'consent:accept:backend') : start;
    const hidden = await h
      .reply(src, (s) => s.content.includes('Only you can see this'))
      .catch((err) => {
        throw new Error(
          `${(err as Error).message}: ${h.fake
            .replies(src)
            .map((x) => x.content)
            .join(' | ')}`,
        );
      });
    const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
    await h.agentMessage(threadId, 1);
    h.fake.say(user, threadId, 'Nothing special.');
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'rating',
    );
    return (await h.tdb.prisma.session.findUniqueOrThrow({ where: { threadId } })).id;
  }

  it('leaves a guild outside the allowlist and answers nothing there', async () => {
    await h.fake.waitFor(() => h.fake.left.includes(guildC), 10_000, 'the bot to leave guild C');
    // A guild it was already in when it started is left too (discord.js emits no GuildCreate for those).
    await h.fake.waitFor(
      () => h.fake.left.includes(guildD),
      10_000,
      'the bot to leave guild D, joined before the start',
    );
    const before = h.fake.shown.length;
    const i = h.fake.command(alice, 'task', 'start', { kind: 'backend' }, { channelId: channelC });
    await new Promise((r) => setTimeout(r, 800));
    expect(i.ackAt).toBeNull();
    expect(h.fake.shown.length).toBe(before);
    expect(h.fake.left).not.toContain(guildB);
  });

  it("a moderator of guild B sees, exports and flags only guild B's sessions, and cannot act on everyone", async () => {
    const a = await answeredSession(alice, h.fake.guildId);
    const b = await answeredSession(bob, guildB);

    const stats = await ans(h.fake.command(modB, 'mod', 'stats', {}, { guildId: guildB, moderator: true }), 'stats');
    expect(stats.content).toMatch(/Sessions: answered 1\b/);

    const exp = h.fake.command(modB, 'mod', 'export', { format: 'jsonl' }, { guildId: guildB, moderator: true });
    const done = await h.reply(exp, (s) => s.kind === 'original' && s.content.startsWith('Export:'), 'export');
    expect(done.content).toContain('1 session(s)');
    const file = done.files.find((f) => f.name.endsWith('.jsonl'))!.data.toString('utf8');
    expect(file).toContain(b);
    expect(file).not.toContain(a);

    const flagA = await ans(
      h.fake.command(modB, 'mod', 'flag', { session: a, reason: 'x' }, { guildId: guildB, moderator: true }),
      'flag A',
    );
    expect(flagA.content).toMatch(/No session/);

    for (const [sub, opts] of [
      ['deploy', { version: 'test-policy' }],
      ['pause', {}],
      ['rollback', {}],
      ['ban', { user: alice, everywhere: true }],
    ] as const) {
      const r = await ans(
        h.fake.command(modB, 'mod', sub, opts as Record<string, string | boolean | FakeUser>, {
          guildId: guildB,
          moderator: true,
        }),
        sub,
      );
      expect(r.content, sub).toMatch(/operator|only/i);
    }
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: alice.id } });
    expect(p.banned).toBe(false);
    expect(
      await h.tdb.prisma.auditLog.count({
        where: { action: { in: ['collection.pause', 'policy.deploy', 'participant.ban'] } },
      }),
    ).toBe(0);

    // A plain member gets nothing, whatever Discord's client shows.
    const plain = await ans(h.fake.command(bob, 'mod', 'stats', {}, { guildId: guildB }), 'plain stats');
    expect(plain.content).toMatch(/for moderators/);
  });

  it('an operator (by role or by id) sees and exports everything and can pause, deploy and ban everywhere', async () => {
    const stats = await ans(h.fake.command(op, 'mod', 'stats', {}, { roles: [operatorRole] }), 'op stats');
    expect(stats.content).toMatch(/Sessions: answered 2\b/);
    const exp = h.fake.command(op, 'mod', 'export', { format: 'jsonl' }, { roles: [operatorRole] });
    const done = await h.reply(exp, (s) => s.kind === 'original' && s.content.startsWith('Export:'), 'export');
    expect(done.content).toContain('2 session(s)');
    // Neither the salt nor the token is in the file or its dataset card.
    expect(done.files.length).toBe(2);
    for (const f of done.files)
      for (const secret of ['test-export-salt', 'fake-bot-token'])
        expect(f.data.toString('utf8'), f.name).not.toContain(secret);
    const pause = await ans(h.fake.command(op, 'mod', 'pause', {}, { roles: [operatorRole] }), 'pause');
    expect(pause.content).toMatch(/paused/);
    await ans(h.fake.command(op, 'mod', 'resume', {}, { roles: [operatorRole] }), 'resume');
    await h.tdb.prisma.policyVersion.create({
      data: {
        name: 'test-policy-b',
        algorithm: 'external',
        checkpointPath: '/nonexistent',
        checkpointSha256: '0'.repeat(64),
      },
    });
    const dep = await ans(
      h.fake.command(op, 'mod', 'deploy', { version: 'test-policy-b' }, { roles: [operatorRole] }),
      'deploy',
    );
    expect(dep.content).toMatch(/Deployed test-policy-b/);
    const ban = await ans(
      h.fake.command(op, 'mod', 'ban', { user: bob, everywhere: true, reason: 'spam' }, { roles: [operatorRole] }),
      'ban',
    );
    expect(ban.content).toMatch(/Banned/);
    expect((await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: bob.id } })).banned).toBe(true);
    expect((await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: op.id } })).role).toBe(
      'operator',
    );
    const audits = await h.tdb.prisma.auditLog.findMany({ where: { actor: op.id } });
    expect(audits.map((x) => x.action).sort()).toEqual(
      ['collection.pause', 'collection.resume', 'data.export', 'participant.ban', 'policy.deploy'].sort(),
    );
    expect(audits.every((x) => x.guildId === h.fake.guildId)).toBe(true);
  });

  it('a guild ban holds in that guild only', async () => {
    const carol = h.fake.user('carol');
    await ans(
      h.fake.command(modB, 'mod', 'ban', { user: carol, reason: 'rude' }, { guildId: guildB, moderator: true }),
      'guild ban',
    );
    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: carol.id } });
    expect(p.banned).toBe(false);
    expect(p.bannedGuildIds).toEqual([guildB]);
    const inB = await ans(
      h.fake.command(carol, 'task', 'start', { kind: 'backend' }, { guildId: guildB }),
      'start in B',
    );
    expect(inB.content).toMatch(/not allowed/);
    const inA = await ans(
      h.fake.command(carol, 'task', 'start', { kind: 'backend' }, { guildId: h.fake.guildId }),
      'start in A',
    );
    expect(inA.content).not.toMatch(/not allowed/);
    const audit = await h.tdb.prisma.auditLog.findFirstOrThrow({
      where: { action: 'participant.guild-ban', target: carol.id },
    });
    expect(audit.actor).toBe(modB.id);
    expect(audit.guildId).toBe(guildB);
  });

  it('flags are listed and resolved, each in its guild', async () => {
    const s = await h.tdb.prisma.session.findFirstOrThrow({ where: { guildId: guildB } });
    const flagged = await ans(
      h.fake.command(modB, 'mod', 'flag', { session: s.id, reason: 'off-topic' }, { guildId: guildB, moderator: true }),
      'flag',
    );
    expect(flagged.content).toMatch(/Flagged|flag/i);
    const listB = await ans(h.fake.command(modB, 'mod', 'flags', {}, { guildId: guildB, moderator: true }), 'flags B');
    const flag = await h.tdb.prisma.moderationFlag.findFirstOrThrow({ where: { sessionId: s.id } });
    expect(listB.content).toContain(flag.id);
    expect(listB.content).toContain('off-topic');
    const listA = await ans(h.fake.command(modA, 'mod', 'flags', {}, { moderator: true }), 'flags A');
    expect(listA.content).toBe('No open flags.');
    const wrong = await ans(
      h.fake.command(modA, 'mod', 'resolve', { flag: flag.id, reason: 'fine' }, { moderator: true }),
      'resolve from A',
    );
    expect(wrong.content).toMatch(/No flag/);
    const ok = await ans(
      h.fake.command(
        modB,
        'mod',
        'resolve',
        { flag: flag.id, reason: 'checked, fine' },
        { guildId: guildB, moderator: true },
      ),
      'resolve',
    );
    expect(ok.content).toMatch(/resolved/);
    const after = await h.tdb.prisma.moderationFlag.findUniqueOrThrow({ where: { id: flag.id } });
    expect(after.resolvedAt).not.toBeNull();
    expect(after.resolvedBy).toBe(modB.id);
    expect(after.resolvedReason).toBe('checked, fine');
    expect(
      (await ans(h.fake.command(modB, 'mod', 'flags', {}, { guildId: guildB, moderator: true }), 'flags again'))
        .content,
    ).toBe('No open flags.');
    const audit = await h.tdb.prisma.auditLog.findFirstOrThrow({ where: { action: 'flag.resolve', target: flag.id } });
    expect([audit.actor, audit.guildId]).toEqual([modB.id, guildB]);
  });

  it('limits: an over-long reply and the N+1st session of the day are refused, and nothing is stored', async () => {
    const dan = h.fake.user('dan');
    await answeredSession(dan, h.fake.guildId);
    await answeredSession(dan, h.fake.guildId);
    // Third session: an over-long reply first.
    const start = h.fake.command(dan, 'task', 'start', { kind: 'backend' });
    const hidden = await h.reply(start, (s) => s.content.includes('Only you can see this'));
    const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
    await h.agentMessage(threadId, 1);
    const long = 'x'.repeat(61);
    const msg = h.fake.say(dan, threadId, long);
    const refusal = await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.raw.message_reference?.message_id === msg),
      30_000,
      'the refusal',
    );
    expect(refusal.content).toMatch(/61 characters long; the limit is 60/);
    expect(await h.tdb.prisma.turn.count({ where: { content: long } })).toBe(0);
    h.fake.say(dan, threadId, 'Nothing special.');
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'rating',
    );

    const p = await h.tdb.prisma.participant.findUniqueOrThrow({ where: { discordUserId: dan.id } });
    const sessionsBefore = await h.tdb.prisma.session.count({ where: { participantId: p.id } });
    const fourth = await ans(h.fake.command(dan, 'task', 'start', { kind: 'backend' }), 'fourth start');
    expect(fourth.content).toMatch(/started 3 sessions in the last 24 hours/);
    expect(await h.tdb.prisma.session.count({ where: { participantId: p.id } })).toBe(sessionsBefore);
  });

  it("posts the agent's messages with link previews suppressed (SuppressEmbeds), answer included", async () => {
    const linky = h.fake.user('linky');
    const { threadId } = await h.startSession(linky, 'backend');
    const first = await h.agentMessage(threadId, 1);
    expect(first.content).toContain('https://example.com/spec');
    expect(first.flags & MessageFlags.SuppressEmbeds).toBe(MessageFlags.SuppressEmbeds);
    h.fake.say(linky, threadId, 'Nothing special.');
    const answer = await h.agentMessage(threadId, 2);
    expect(answer.flags & MessageFlags.SuppressEmbeds).toBe(MessageFlags.SuppressEmbeds);
    await h.fake.waitFor(
      () => h.fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
      60_000,
      'rating',
    );
  });
});

describe('secrets', () => {
  const h = new BotHarness({ tasks: [task], agent, botOptions: () => ({ exportSaltIsDefault: true }) });
  beforeAll(async () => {
    await h.start();
  });
  afterAll(async () => {
    await h.stop();
  });

  it('/mod export refuses the development salt and says how to set one; nothing is exported or audited', async () => {
    const op = h.fake.user('op');
    const i = h.fake.command(op, 'mod', 'export', { format: 'jsonl' }, { roles: [h.operatorRole] });
    const r = await h.reply(i, (s) => s.kind === 'original' && s.content !== '', 'the refusal');
    expect(r.content).toMatch(/EXPORT_SALT is the development default/);
    expect(r.content).toMatch(/openssl rand/);
    expect(r.files).toEqual([]);
    expect(await h.tdb.prisma.auditLog.count({ where: { action: 'data.export' } })).toBe(0);
  });
});
