// The one admission rule, against a real database: consent asked, bans (everywhere, per guild, and the ban a
// deleted person keeps under the keyed hash), a pause; and the engine's start() refusing by the same rule.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { acceptConsent } from '../../../prisma/participant-store.ts';
import { admission } from '../../../bot/session/admission.ts';
import { ban } from '../../../bot/moderation.ts';
import { setPaused } from '../../../prisma/moderation-store.ts';
import { deletePerson } from '../../../bot/privacy.ts';
import { createRuntime, type Runtime } from '../../../bot/runtime.ts';
import { createTestDatabase } from '../../../bot/testing/database.ts';
import { scriptedAgent } from '../discord/harness.ts';

type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;
const KEY = 'admission-test-key-0123456789';
const guild = { id: 'mod', guildId: 'guild-a', operator: false };

describe('admission', () => {
  let t: TestDb;
  let rt: Runtime;
  beforeAll(async () => {
    t = await createTestDatabase();
    await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 2), { split: 'train' });
    await t.prisma.policyVersion.create({ data: { name: 'p1', algorithm: 'external', checkpointPath: '/x', checkpointSha256: '0'.repeat(64), status: 'deployed', deployedAt: new Date() } });
    rt = await createRuntime({
      channel: 'discord',
      db: t.db,
      maxTurns: 3,
      idleMinutes: 30,
      loadAgent: async () => scriptedAgent('scripted', () => 'Could you tell me more?'),
      render: null,
      policyPollMs: 60_000,
      privacy: { key: KEY, dirs: [] },
    });
  });
  afterAll(async () => {
    await rt?.close();
    await t?.drop();
  });

  it('asks a stranger for consent and admits whoever gave it', async () => {
    expect(await admission(t.prisma, { externalId: 'u:new' }, {}, KEY)).toEqual({ needsConsent: true });
    const p = await acceptConsent(t.prisma, 'u:ok', 'ok');
    expect(await admission(t.prisma, { externalId: 'u:ok' }, { guildId: 'guild-a' }, KEY)).toEqual({ ok: true, participant: p, study: expect.objectContaining({ name: 'default' }) });
  });

  it('refuses a banned person before asking for consent; a guild ban holds in that guild only', async () => {
    await ban(t.prisma, 'op', 'u:banned', 'spam', true);
    expect(await admission(t.prisma, { externalId: 'u:banned' }, {}, KEY)).toMatchObject({ refused: true, reason: 'banned', message: expect.stringMatching(/not allowed/) });
    await acceptConsent(t.prisma, 'u:guild', 'g');
    await ban(t.prisma, guild, 'u:guild', 'rude', false);
    expect(await admission(t.prisma, { externalId: 'u:guild' }, { guildId: 'guild-a' }, KEY)).toMatchObject({ refused: true, reason: 'banned' });
    expect(await admission(t.prisma, { externalId: 'u:guild' }, { guildId: 'guild-b' }, KEY)).toMatchObject({ ok: true });
    expect(await admission(t.prisma, { externalId: 'u:guild' }, {}, KEY)).toMatchObject({ ok: true });
  });

  it('refuses a deleted person whose ban is kept under the keyed hash, and the engine will not start their session', async () => {
    await acceptConsent(t.prisma, 'u:erased', 'erased');
    await ban(t.prisma, guild, 'u:erased', 'testing', false);
    await deletePerson(t.prisma, 'u:erased', { key: KEY });
    expect(await t.prisma.participant.findUnique({ where: { discordUserId: 'u:erased' } })).toBeNull();
    expect(await admission(t.prisma, { externalId: 'u:erased' }, { guildId: 'guild-a' }, KEY)).toMatchObject({ refused: true, reason: 'banned' });
    // Only the hash under the same secret finds them; elsewhere they are a stranger again.
    expect(await admission(t.prisma, { externalId: 'u:erased' }, { guildId: 'guild-a' }, 'another-key')).toEqual({ needsConsent: true });
    expect(await admission(t.prisma, { externalId: 'u:erased' }, { guildId: 'guild-b' }, KEY)).toEqual({ needsConsent: true });
    // Even after accepting the consent text again, the engine refuses them there.
    await acceptConsent(t.prisma, 'u:erased', 'erased');
    const person = { externalId: 'u:erased', displayName: null };
    expect(await rt.engine.admission(person, { guildId: 'guild-a' })).toMatchObject({ refused: true, reason: 'banned' });
    await expect(rt.engine.start(person, 'backend', { guildId: 'guild-a' })).rejects.toMatchObject({ reason: 'banned' });
    expect(await t.prisma.session.count()).toBe(0);
  });

  it('refuses everyone while collection is paused, but asks for consent first', async () => {
    await setPaused(t.prisma, 'op', true);
    try {
      expect(await admission(t.prisma, { externalId: 'u:ok' }, {}, KEY)).toMatchObject({ refused: true, reason: 'paused', message: expect.stringMatching(/paused/) });
      expect(await admission(t.prisma, { externalId: 'u:stranger' }, {}, KEY)).toEqual({ needsConsent: true });
      await expect(rt.engine.start({ externalId: 'u:ok', displayName: 'ok' }, 'backend')).rejects.toMatchObject({ reason: 'paused' });
    } finally {
      await setPaused(t.prisma, 'op', false);
    }
    const s = await rt.engine.start({ externalId: 'u:ok', displayName: 'ok' }, 'backend', { guildId: 'guild-a' });
    expect(s.sessionId).toBeTruthy();
  });
});
