// prisma/migrations/*_study_arms: A/B experiments become periods of a study. Experiments stored before belong to
// the default study, their share becomes a whole percent, a running one becomes the default study's arms (so it
// keeps assigning after the upgrade), and the sessions keep the period they were played in (their arm is the
// version that played them, so Session.arm goes).
import { describe, expect, it } from 'vitest';
import { databaseBeforeMigration } from '../../helpers/migration.ts';
import { DEFAULT_STUDY } from '../../../prisma/study-store.ts';

const THIS = '_study_arms';
const t = databaseBeforeMigration(THIS);

describe('migration study_arms', () => {
  it('links old experiments to the default study, keeps their sessions, and turns a running one into the arms', async () => {
    const q = t.sql;
    const task = '11111111-1111-4111-8111-111111111111';
    const person = '22222222-2222-4222-8222-222222222222';
    const [old, running] = ['66666666-6666-4666-8666-666666666666', '77777777-7777-4777-8777-777777777777'];
    const [s1, s2, s3] = [
      '44444444-4444-4444-8444-444444444441',
      '44444444-4444-4444-8444-444444444442',
      '44444444-4444-4444-8444-444444444443',
    ];
    const v: Record<string, string> = {};
    for (const name of ['z', 'a', 'b'])
      v[name] = (
        await t.db.prisma.policyVersion.create({
          data: {
            name,
            algorithm: 'sweet',
            checkpointPath: `/c/${name}`,
            checkpointSha256: 'x',
            status: name === 'z' ? 'deployed' : 'candidate',
          },
        })
      ).id;
    await q(
      `INSERT INTO "Task" (id, kind, source, "contentHash", description, "hiddenReference") VALUES ($1::uuid, 'backend', 'builtin', 'h', 'd', 'r')`,
      task,
    );
    await q(
      `INSERT INTO "Participant" (id, "discordUserId", "updatedAt") VALUES ($1::uuid, '123456789012345678', now())`,
      person,
    );
    await q(
      `INSERT INTO "Experiment" (id, "candidateId", "controlId", share, seed, status, outcome, "startedBy", "stoppedBy", "startedAt", "stoppedAt") VALUES ($1::uuid, $2::uuid, $3::uuid, 0.3, 7, 'stopped', 'discard', 'mod', 'mod', now() - interval '2 days', now() - interval '1 day')`,
      old,
      v.a,
      v.z,
    );
    await q(
      `INSERT INTO "Experiment" (id, "candidateId", "controlId", share, seed, "startedBy") VALUES ($1::uuid, $2::uuid, $3::uuid, 0.25, 9, 'trainer')`,
      running,
      v.b,
      v.z,
    );
    const session = (id: string, e: string, arm: string, policy: string) =>
      q(
        `INSERT INTO "Session" (id, "taskId", "participantId", "policyVersionId", channel, status, "experimentId", arm) VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, 'discord', 'answered', $5::uuid, $6)`,
        id,
        task,
        person,
        policy,
        e,
        arm,
      );
    await session(s1, old, 'control', v.z!);
    await session(s2, old, 'candidate', v.a!);
    await session(s3, running, 'candidate', v.b!);

    const { applied } = await t.migrateRest();
    expect(applied[0]).toMatch(new RegExp(`${THIS}$`));

    const study = await t.db.prisma.study.findUniqueOrThrow({
      where: { name: DEFAULT_STUDY },
      include: { arms: { include: { policyVersion: true } } },
    });
    const experiments = await t.db.prisma.experiment.findMany({ orderBy: { startedAt: 'asc' } });
    expect(experiments.map((e) => [e.id, e.studyId, e.share, e.status, e.outcome])).toEqual([
      [old, study.id, 30, 'stopped', 'discard'],
      [running, study.id, 25, 'running', null],
    ]);
    // The running experiment goes on as the default study's arms; the stopped one left none.
    expect(study.arms.map((a) => [a.policyVersion.name, a.share]).sort()).toEqual([
      ['b', 25],
      ['z', 75],
    ]);
    const sessions = await t.db.prisma.session.findMany({ orderBy: { id: 'asc' } });
    expect(sessions.map((s) => [s.id, s.experimentId, s.policyVersionId])).toEqual([
      [s1, old, v.z],
      [s2, old, v.a],
      [s3, running, v.b],
    ]);
  });
});
