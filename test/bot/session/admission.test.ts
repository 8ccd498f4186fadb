// The one admission rule, against a real database: consent asked, bans (everywhere, per guild, and the ban a
// deleted person keeps under the keyed hash), a pause, a study's consent versions and state; and the engine's
// start() refusing by the same rule.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../../tasks/library.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import { acceptConsent } from '../../../prisma/participant-store.ts';
import { admission } from '../../../bot/session/admission.ts';
import { sharedParticipantWhere } from '../../../prisma/cohorts.ts';
import { ban } from '../../../bot/moderation.ts';
import { setPaused } from '../../../prisma/moderation-store.ts';
import { deletePerson } from '../../../bot/privacy.ts';
import { createRuntime, type Runtime } from '../../../bot/runtime.ts';
import { createTestDatabase } from '../../../testing/database.ts';
import { scriptedAgent } from '../discord/harness.ts';
import { createStudy, setStudyConsent, setStudyStatus } from '../../../prisma/study-store.ts';

type TestDb = Awaited<ReturnType<typeof createTestDatabase>>;
const KEY = 'admission-test-key-0123456789';
const guild = { id: 'mod', guildId: 'guild-a', operator: false };

describe('admission', () => {
  let t: TestDb;
  let rt: Runtime;
  beforeAll(async () => {
    t = await createTestDatabase();
    await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 2), { split: 'train' });
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
    expect(await admission(t.prisma, { externalId: 'u:ok' }, { guildId: 'guild-a' }, KEY)).toEqual({
      ok: true,
      participant: p,
      study: expect.objectContaining({ name: 'default' }),
    });
  });

  it('asks again for consent once it was withdrawn, as exports and training read it (prisma/cohorts.ts)', async () => {
    // A row whose consent was given and later withdrawn, with both dates kept (as an older withdrawal left them):
    // the admission once looked only at consentGivenAt and admitted this person, while exports and training
    // already left their sessions out.
    const p = await acceptConsent(t.prisma, 'u:withdrawn', 'w');
    await t.prisma.participant.update({ where: { id: p.id }, data: { consentWithdrawnAt: new Date() } });
    const row = await t.prisma.participant.findUniqueOrThrow({ where: { id: p.id } });
    expect(row.consentGivenAt).not.toBeNull();
    expect(await t.prisma.participant.count({ where: { id: p.id, ...sharedParticipantWhere } })).toBe(0);
    expect(await admission(t.prisma, { externalId: 'u:withdrawn' }, { guildId: 'guild-a' }, KEY)).toEqual({
      needsConsent: true,
    });
    await acceptConsent(t.prisma, 'u:withdrawn', 'w');
    expect(await admission(t.prisma, { externalId: 'u:withdrawn' }, { guildId: 'guild-a' }, KEY)).toMatchObject({
      ok: true,
    });
  });

  it('refuses a banned person before asking for consent; a guild ban holds in that guild only', async () => {
    await ban(t.prisma, 'op', 'u:banned', 'spam', true);
    expect(await admission(t.prisma, { externalId: 'u:banned' }, {}, KEY)).toMatchObject({
      refused: true,
      reason: 'banned',
      message: expect.stringMatching(/not allowed/),
    });
    await acceptConsent(t.prisma, 'u:guild', 'g');
    await ban(t.prisma, guild, 'u:guild', 'rude', false);
    expect(await admission(t.prisma, { externalId: 'u:guild' }, { guildId: 'guild-a' }, KEY)).toMatchObject({
      refused: true,
      reason: 'banned',
    });
    expect(await admission(t.prisma, { externalId: 'u:guild' }, { guildId: 'guild-b' }, KEY)).toMatchObject({
      ok: true,
    });
    expect(await admission(t.prisma, { externalId: 'u:guild' }, {}, KEY)).toMatchObject({ ok: true });
  });

  it('refuses a deleted person whose ban is kept under the keyed hash, and the engine will not start their session', async () => {
    await acceptConsent(t.prisma, 'u:erased', 'erased');
    await ban(t.prisma, guild, 'u:erased', 'testing', false);
    await deletePerson(t.prisma, 'u:erased', { key: KEY });
    expect(await t.prisma.participant.findUnique({ where: { discordUserId: 'u:erased' } })).toBeNull();
    expect(await admission(t.prisma, { externalId: 'u:erased' }, { guildId: 'guild-a' }, KEY)).toMatchObject({
      refused: true,
      reason: 'banned',
    });
    // Only the hash under the same secret finds them; elsewhere they are a stranger again.
    expect(await admission(t.prisma, { externalId: 'u:erased' }, { guildId: 'guild-a' }, 'another-key')).toEqual({
      needsConsent: true,
    });
    expect(await admission(t.prisma, { externalId: 'u:erased' }, { guildId: 'guild-b' }, KEY)).toEqual({
      needsConsent: true,
    });
    // Even after accepting the consent text again, the engine refuses them there.
    await acceptConsent(t.prisma, 'u:erased', 'erased');
    const person = { externalId: 'u:erased', displayName: null };
    expect(await rt.engine.admission(person, { guildId: 'guild-a' })).toMatchObject({
      refused: true,
      reason: 'banned',
    });
    await expect(rt.engine.start(person, 'backend', { guildId: 'guild-a' })).rejects.toMatchObject({
      reason: 'banned',
    });
    expect(await t.prisma.session.count()).toBe(0);
  });

  it('refuses everyone while collection is paused, but asks for consent first', async () => {
    await setPaused(t.prisma, 'op', true);
    try {
      expect(await admission(t.prisma, { externalId: 'u:ok' }, {}, KEY)).toMatchObject({
        refused: true,
        reason: 'paused',
        message: expect.stringMatching(/paused/),
      });
      expect(await admission(t.prisma, { externalId: 'u:stranger' }, {}, KEY)).toEqual({ needsConsent: true });
      await expect(rt.engine.start({ externalId: 'u:ok', displayName: 'ok' }, 'backend')).rejects.toMatchObject({
        reason: 'paused',
      });
    } finally {
      await setPaused(t.prisma, 'op', false);
    }
    const s = await rt.engine.start({ externalId: 'u:ok', displayName: 'ok' }, 'backend', { guildId: 'guild-a' });
    expect(s.sessionId).toBeTruthy();
  });

  it("asks for a study's consent text, and again for each new version, before the next session; refuses while the study is paused", async () => {
    const tasks = await t.prisma.task.findMany({ where: { split: 'train' } });
    const study = await createStudy(
      t.prisma,
      'cli',
      {
        name: 'consented',
        kind: 'backend',
        split: 'train',
        perTask: 2,
        seed: 1,
        taskIds: tasks.map((x) => x.id),
        arms: [{ policyVersionId: (await t.prisma.policyVersion.findFirstOrThrow()).id, share: 100 }],
        consentText: 'Version one.',
        payPerSessionCents: null,
        bonusSuccessCents: null,
        currency: null,
        maxSessionsPerPerson: null,
        opensAt: null,
        closesAt: null,
        guildIds: ['guild-s'],
        channelIds: [],
      },
      { requireConsent: true },
    );
    const here = { guildId: 'guild-s' };
    const person = { externalId: 'u:study', displayName: 'st' };
    // A stranger, and someone who accepted only the bot's notice, are both shown the study's text, version 1.
    const v1 = { studyId: study.id, study: 'consented', version: 1, text: 'Version one.' };
    expect(await admission(t.prisma, person, here, KEY)).toEqual({ needsConsent: true, consent: v1 });
    await acceptConsent(t.prisma, 'u:study', 'st');
    expect(await rt.engine.admission(person, here)).toEqual({ needsConsent: true, consent: v1 });
    await expect(rt.engine.start(person, 'backend', here)).rejects.toMatchObject({ reason: 'no-consent' });
    await rt.engine.acceptConsent(person, v1);
    expect(await rt.engine.admission(person, here)).toMatchObject({ ok: true, study: { name: 'consented' } });
    const first = await rt.engine.start(person, 'backend', here);
    expect((await t.prisma.session.findUniqueOrThrow({ where: { id: first.sessionId } })).studyId).toBe(study.id);
    await rt.engine.stop(person.externalId);
    // A new version is asked for before the next session; the old one can no longer be accepted.
    await setStudyConsent(t.prisma, 'cli', 'consented', 'Version two.');
    const v2 = { ...v1, version: 2, text: 'Version two.' };
    expect(await rt.engine.admission(person, here)).toEqual({ needsConsent: true, consent: v2 });
    await expect(rt.engine.acceptConsent(person, v1)).rejects.toThrow(/has changed since it was shown/);
    await rt.engine.acceptConsent(person, v2);
    const accepted = await t.prisma.consentAcceptance.findMany({
      where: { studyId: study.id },
      orderBy: { version: 'asc' },
    });
    expect(accepted.map((a) => a.version)).toEqual([1, 2]);
    expect(
      await t.prisma.auditLog.count({
        where: { action: 'consent.accept', actor: 'u:study', detail: { path: ['version'], equals: 2 } },
      }),
    ).toBe(1);
    // Elsewhere (another guild) the default study applies, with the bot's notice already accepted.
    expect(await rt.engine.admission(person, { guildId: 'guild-other' })).toMatchObject({
      ok: true,
      study: { name: 'default' },
    });
    await setStudyStatus(t.prisma, 'cli', 'consented', 'paused', { requireConsent: true });
    expect(await rt.engine.admission(person, here)).toMatchObject({
      refused: true,
      reason: 'study-paused',
      message: 'This study is paused right now. Please try again later.',
    });
    await expect(rt.engine.start(person, 'backend', here)).rejects.toMatchObject({ reason: 'study-paused' });
  });

  it('on Discord, takes nobody into a study without a consent text of its own', async () => {
    const tasks = await t.prisma.task.findMany({ where: { split: 'train' } });
    await createStudy(
      t.prisma,
      'cli',
      {
        name: 'silent',
        kind: 'backend',
        split: 'train',
        perTask: 1,
        seed: 1,
        taskIds: tasks.map((x) => x.id),
        arms: [{ policyVersionId: (await t.prisma.policyVersion.findFirstOrThrow()).id, share: 100 }],
        consentText: null,
        payPerSessionCents: null,
        bonusSuccessCents: null,
        currency: null,
        maxSessionsPerPerson: null,
        opensAt: null,
        closesAt: null,
        guildIds: ['guild-q'],
        channelIds: [],
      },
      { requireConsent: false },
    );
    expect(await rt.engine.admission({ externalId: 'u:ok' }, { guildId: 'guild-q' })).toMatchObject({
      refused: true,
      reason: 'study-not-open',
      message: expect.stringMatching(/no consent text/),
    });
  });
});
