// prisma/migrations/20261205132135_session_consent_version: sessions started before Session.consentVersion existed
// get the newest version of their study's consent text the person had accepted by the time they started; a study
// without a text of its own (and a session outside every study) leaves it null.
import { describe, expect, it } from 'vitest';
import { databaseBeforeMigration } from '../../helpers/migration.ts';

const MIGRATION = '20261205132135_session_consent_version';
const t = databaseBeforeMigration(MIGRATION);

describe(`migration ${MIGRATION}`, () => {
  it('fills in the version accepted before each session started', async () => {
    const q = t.sql;
    const task = '11111111-1111-4111-8111-111111111111';
    const person = '22222222-2222-4222-8222-222222222222';
    const [study, plain] = ['33333333-3333-4333-8333-333333333333', '44444444-4444-4444-8444-444444444444'];
    const [early, later, noText, outside] = [
      '55555555-5555-4555-8555-555555555551',
      '55555555-5555-4555-8555-555555555552',
      '55555555-5555-4555-8555-555555555553',
      '55555555-5555-4555-8555-555555555554',
    ];
    await q(
      `INSERT INTO "Task" (id, kind, source, "contentHash", description, "hiddenReference") VALUES ($1::uuid, 'backend', 'builtin', 'h', 'd', 'r')`,
      task,
    );
    await q(
      `INSERT INTO "Participant" (id, "discordUserId", "consentGivenAt", "updatedAt") VALUES ($1::uuid, '123456789012345678', now(), now())`,
      person,
    );
    await q(
      `INSERT INTO "Study" (id, name, seed, "consentText", "consentVersion", "consentSha256", "createdBy", "updatedAt") VALUES ($1::uuid, 'pilot', 1, 'v2', 2, 's', 'cli', now())`,
      study,
    );
    await q(
      `INSERT INTO "Study" (id, name, seed, "createdBy", "updatedAt") VALUES ($1::uuid, 'plain', 1, 'cli', now())`,
      plain,
    );
    await q(
      `INSERT INTO "ConsentAcceptance" (id, "participantId", "studyId", version, sha256, "acceptedAt") VALUES (gen_random_uuid(), $1::uuid, $2::uuid, 1, 's1', '2026-11-01T10:00:00Z')`,
      person,
      study,
    );
    await q(
      `INSERT INTO "ConsentAcceptance" (id, "participantId", "studyId", version, sha256, "acceptedAt") VALUES (gen_random_uuid(), $1::uuid, $2::uuid, 2, 's2', '2026-11-03T10:00:00Z')`,
      person,
      study,
    );
    const session = (id: string, studyId: string | null, startedAt: string) =>
      q(
        `INSERT INTO "Session" (id, "taskId", "participantId", channel, status, "studyId", "startedAt") VALUES ($1::uuid, $2::uuid, $3::uuid, 'discord', 'answered', $4::uuid, $5::timestamp)`,
        id,
        task,
        person,
        studyId,
        startedAt,
      );
    await session(early, study, '2026-11-02T10:00:00');
    await session(later, study, '2026-11-04T10:00:00');
    await session(noText, plain, '2026-11-04T10:00:00');
    await session(outside, null, '2026-11-04T10:00:00');

    const { applied } = await t.migrateRest();
    expect(applied[0]).toBe(MIGRATION);

    const versions = new Map((await t.db.prisma.session.findMany()).map((s) => [s.id, s.consentVersion]));
    expect(Object.fromEntries(versions)).toEqual({ [early]: 1, [later]: 2, [noText]: null, [outside]: null });
  });
});
