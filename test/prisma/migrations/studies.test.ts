// prisma/migrations/20261205090139_studies: the sessions people played before studies existed join the default study (so its
// balance continues where it stood); simulated games stay outside every study.
import { describe, expect, it } from 'vitest';
import { databaseBeforeMigration } from '../../helpers/migration.ts';
import { DEFAULT_STUDY } from '../../../prisma/study-store.ts';

const MIGRATION = '20261205090139_studies';
const t = databaseBeforeMigration(MIGRATION);

describe(`migration ${MIGRATION}`, () => {
  it('creates the default study and puts the sessions of people in it, not those of simulators', async () => {
    const q = t.sql;
    const task = '11111111-1111-4111-8111-111111111111';
    const [person, sim] = ['22222222-2222-4222-8222-222222222222', '33333333-3333-4333-8333-333333333333'];
    const [mine, game] = ['44444444-4444-4444-8444-444444444444', '55555555-5555-4555-8555-555555555555'];
    await q(
      `INSERT INTO "Task" (id, kind, source, "contentHash", description, "hiddenReference") VALUES ($1::uuid, 'backend', 'builtin', 'h', 'd', 'r')`,
      task,
    );
    await q(
      `INSERT INTO "Participant" (id, "discordUserId", "updatedAt") VALUES ($1::uuid, '123456789012345678', now())`,
      person,
    );
    await q(
      `INSERT INTO "Participant" (id, "discordUserId", role, "updatedAt") VALUES ($1::uuid, 'sim:rule', 'simulated', now())`,
      sim,
    );
    await q(
      `INSERT INTO "Session" (id, "taskId", "participantId", channel, status) VALUES ($1::uuid, $2::uuid, $3::uuid, 'discord', 'answered')`,
      mine,
      task,
      person,
    );
    await q(
      `INSERT INTO "Session" (id, "taskId", "participantId", channel, simulated, status) VALUES ($1::uuid, $2::uuid, $3::uuid, 'simulated', true, 'answered')`,
      game,
      task,
      sim,
    );

    const { applied } = await t.migrateRest();
    expect(applied[0]).toBe(MIGRATION);

    const study = await t.db.prisma.study.findUniqueOrThrow({ where: { name: DEFAULT_STUDY } });
    expect(study).toMatchObject({
      perTask: null,
      status: 'open',
      consentText: null,
      consentVersion: 0,
      guildIds: [],
      channelIds: [],
    });
    const sessions = new Map((await t.db.prisma.session.findMany()).map((s) => [s.id, s.studyId]));
    expect(sessions.get(mine)).toBe(study.id);
    expect(sessions.get(game)).toBeNull();
  });
});
