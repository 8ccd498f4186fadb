// The same pipeline with the same seed gives the same numbers, in two different databases (every row id, a
// random UUID, differs, and the second database hands the sessions out in the opposite order): a small collect -> multi-turn DPO and
// SWEET-RL -> paired evaluation, run twice. The multi-turn DPO and SWEET-RL tables of bench:learning used to
// change between runs with one seed because their pairs were ordered by database ids.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { createScorer } from '../../tasks/scorer.ts';
import { compareVersions } from '../../trainer/evaluate.ts';
import { trainConfig } from '../../trainer/presets.ts';
import { createRun, executeRun, type Algorithm } from '../../trainer/runs.ts';
import { simulate } from '../../trainer/simulate.ts';
import { scratchDir, seedSessions, tinyPolicy } from './fixture.ts';

let root: string;
let policyDir: string;
const dbs: TestDatabase[] = [];

beforeAll(async () => {
  root = scratchDir('repro');
  policyDir = await tinyPolicy(join(root, 'tiny'));
}, 240_000);

afterAll(async () => {
  for (const t of dbs) await t.drop();
  if (root) rmSync(root, { recursive: true, force: true });
});

/**
 * One whole small pipeline in a fresh database; returns every number it produced. `reversed` rewrites the
 * seeded sessions' end times in reverse, so the database hands them out in the opposite order.
 */
async function pipeline(label: string, reversed: boolean) {
  const t = await createTestDatabase();
  dbs.push(t);
  await seedSessions(t.prisma, 3);
  if (reversed) {
    const rows = await t.prisma.session.findMany({
      orderBy: [{ endedAt: 'asc' }, { id: 'asc' }],
      select: { id: true, endedAt: true },
    });
    const times = rows.map((r) => r.endedAt);
    for (const [i, r] of rows.entries())
      await t.prisma.session.update({ where: { id: r.id }, data: { endedAt: times[times.length - 1 - i] } });
  }
  const zero = await t.prisma.policyVersion.create({
    data: {
      name: 'tiny',
      algorithm: 'starter',
      checkpointPath: policyDir,
      checkpointSha256: 'x',
      status: 'deployed',
      deployedAt: new Date(),
    },
  });
  const scorer = createScorer();
  try {
    const sampling = { temperature: 1, topP: 1, maxTokens: 16 };
    const collected = await simulate(t.prisma, zero, scorer, {
      kind: 'backend',
      split: 'train',
      episodes: 4,
      seed: 7,
      store: true,
      sampling,
      parallel: 2,
    });
    const versions = [];
    const steps: Record<string, unknown[]> = {};
    for (const algorithm of ['mtdpo', 'sweet'] as Algorithm[]) {
      const ctx = { prisma: t.prisma, checkpointRoot: join(root, label, algorithm), progress: 'none' as const };
      const run = await createRun(ctx, {
        algorithm,
        preset: 'cpu-small',
        train: trainConfig('cpu-small', {
          batchSize: 2,
          microBatch: 2,
          criticEpochs: 1,
          actorEpochs: 1,
          maxSteps: 2,
          candidates: 4,
          pairsPerState: 2,
          stateFraction: 0.3,
          maxNewTokens: 16,
          seed: 3,
        }),
        fromVersionId: zero.id,
        fromVersionName: zero.name,
        fromCheckpoint: policyDir,
        kind: 'backend',
        ratingWeight: 0,
        data: { source: 'both', simulatedWeight: 1, seed: 3 },
      });
      const v = await executeRun(ctx, run.id);
      versions.push(v);
      const rows = await t.prisma.trainingStep.findMany({
        where: { runId: run.id },
        orderBy: [{ phase: 'asc' }, { step: 'asc' }],
      });
      steps[algorithm] = rows.map((r) => [r.phase, r.step, r.metrics]);
    }
    const comparison = await compareVersions(t.prisma, versions[1]!, versions[0]!, scorer, {
      kind: 'backend',
      split: 'train',
      episodes: 3,
      seed: 9,
      store: false,
      sampling,
    });
    return {
      collected: collected.map((g) => [g.evaluation.score, g.agentTurns]),
      weights: versions.map((v) => v.checkpointSha256),
      steps,
      comparison: {
        a: comparison.a.scores,
        b: comparison.b.scores,
        score: comparison.score,
        success: comparison.success,
      },
    };
  } finally {
    await scorer.close();
  }
}

describe('reproducibility', () => {
  it('two runs of collect -> mtdpo, sweet -> paired evaluation with one seed, in two databases, give identical numbers', async () => {
    const first = await pipeline('one', false);
    const second = await pipeline('two', true);
    expect(second.collected).toEqual(first.collected);
    expect(second.steps).toEqual(first.steps);
    expect(second.weights).toEqual(first.weights);
    expect(second.comparison).toEqual(first.comparison);
    // Something was trained (the run did not just copy its start).
    expect(Object.values(first.steps).every((s) => s.length > 0)).toBe(true);
  }, 600_000);
});
