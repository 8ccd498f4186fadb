// prisma/migrations/20261205081500_rft_phase_name: runs stored while rejection fine-tuning's phase was called
// "sft" come out of the migration naming it "rft" (trainer/rft.ts RFT_PHASE) wherever a run reads it back: its
// steps, its progress (what a resume reads), its metrics and its version's; other algorithms' rows are untouched.
import { describe, expect, it } from 'vitest';
import { databaseBeforeMigration } from '../../helpers/migration.ts';
import { RFT_PHASE } from '../../../trainer/rft.ts';
import { CRITIC_PHASE } from '../../../trainer/critic.ts';
import { ACTOR_PHASE, COLLECT_PHASE } from '../../../trainer/actor.ts';

const MIGRATION = '20261205081500_rft_phase_name';
const t = databaseBeforeMigration(MIGRATION);

describe(`migration ${MIGRATION}`, () => {
  it('renames the phase "sft" to the rft phase in steps, progress and metrics of rft runs only', async () => {
    const db = t.db;
    const q = (sql: string, ...params: unknown[]) => db.prisma.$executeRawUnsafe(sql, ...params);
    const rft = '11111111-1111-4111-8111-111111111111';
    const finished = '22222222-2222-4222-8222-222222222222';
    const sweet = '33333333-3333-4333-8333-333333333333';
    // Written with the columns of the schema as it was then (raw SQL: the client knows only today's schema).
    await q(
      `INSERT INTO "TrainingRun" (id, algorithm, config, status, progress, metrics) VALUES ($1::uuid, 'rft', '{}', 'running', $2::jsonb, $3::jsonb)`,
      rft,
      JSON.stringify({
        done: [],
        current: { phase: 'sft', step: 4, dir: '/runs/r/ckpt/sft-000004' },
        rng: { algorithm: 'mulberry32', seed: 3 },
      }),
      JSON.stringify({ sft: { loss: 1.5 } }),
    );
    await q(
      `INSERT INTO "TrainingRun" (id, algorithm, config, status, progress) VALUES ($1::uuid, 'rft', '{}', 'succeeded', $2::jsonb)`,
      finished,
      JSON.stringify({ done: ['sft'], rng: { algorithm: 'mulberry32', seed: 3 } }),
    );
    await q(
      `INSERT INTO "TrainingRun" (id, algorithm, config, status, progress, metrics) VALUES ($1::uuid, 'sweet', '{}', 'running', $2::jsonb, $3::jsonb)`,
      sweet,
      JSON.stringify({
        done: ['critic', 'collect'],
        current: { phase: 'actor', step: 2, dir: '/runs/s/ckpt/actor-000002' },
        rng: { algorithm: 'mulberry32', seed: 3 },
      }),
      JSON.stringify({ critic: { loss: 0.7 } }),
    );
    for (const step of [0, 1])
      await q(
        `INSERT INTO "TrainingStep" (id, "runId", phase, step, metrics) VALUES (gen_random_uuid(), $1::uuid, 'sft', $2, '{"loss": 2}')`,
        rft,
        step,
      );
    await q(
      `INSERT INTO "TrainingStep" (id, "runId", phase, step, metrics) VALUES (gen_random_uuid(), $1::uuid, 'critic', 0, '{"loss": 2}')`,
      sweet,
    );
    await q(
      `INSERT INTO "PolicyVersion" (id, name, algorithm, "checkpointPath", "checkpointSha256", metrics, "trainingRunId") VALUES (gen_random_uuid(), 'rft-22222222', 'rft', '/p', 'x', $1::jsonb, $2::uuid)`,
      JSON.stringify({ training: { sft: { loss: 1.2 } }, sessions: 8, gate: { verdict: 'tie' } }),
      finished,
    );

    const { applied } = await t.migrateRest();
    expect(applied[0]).toBe(MIGRATION);

    const steps = await db.prisma.trainingStep.findMany({ orderBy: [{ runId: 'asc' }, { step: 'asc' }] });
    expect(steps.map((s) => [s.runId, s.phase, s.step])).toEqual([
      [rft, RFT_PHASE, 0],
      [rft, RFT_PHASE, 1],
      [sweet, CRITIC_PHASE, 0],
    ]);
    const runs = new Map((await db.prisma.trainingRun.findMany()).map((r) => [r.id, r]));
    expect(runs.get(rft)!.progress).toEqual({
      done: [],
      current: { phase: RFT_PHASE, step: 4, dir: '/runs/r/ckpt/sft-000004' },
      rng: { algorithm: 'mulberry32', seed: 3 },
    });
    expect(runs.get(rft)!.metrics).toEqual({ [RFT_PHASE]: { loss: 1.5 } });
    expect(runs.get(finished)!.progress).toEqual({ done: [RFT_PHASE], rng: { algorithm: 'mulberry32', seed: 3 } });
    expect(runs.get(sweet)!.progress).toEqual({
      done: [CRITIC_PHASE, COLLECT_PHASE],
      current: { phase: ACTOR_PHASE, step: 2, dir: '/runs/s/ckpt/actor-000002' },
      rng: { algorithm: 'mulberry32', seed: 3 },
    });
    expect(runs.get(sweet)!.metrics).toEqual({ [CRITIC_PHASE]: { loss: 0.7 } });
    const version = await db.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'rft-22222222' } });
    expect(version.metrics).toEqual({
      training: { [RFT_PHASE]: { loss: 1.2 } },
      sessions: 8,
      gate: { verdict: 'tie' },
    });
  }, 300_000);
});
