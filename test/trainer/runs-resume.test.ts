// A training run interrupted part-way (the stand-in for a kill: the process stops between two checkpoints and
// loses the updates since the last one) and resumed ends with the same weights as an uninterrupted run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TestDatabase } from '../../testing/database.ts';
import { readSafetensors } from '../../trainer/model/safetensors.ts';
import { trainConfig } from '../../trainer/presets.ts';
import { createRun, executeRun, RunInterrupted, type Algorithm, type RunConfig } from '../../trainer/runs.ts';
import { runWorld } from './fixture.ts';

let t: TestDatabase;
let root: string;
let policyDir: string;
let fromId: string;

beforeAll(async () => {
  ({ t, root, policyDir, fromId } = await runWorld('runs'));
}, 240_000);

afterAll(async () => {
  await t?.drop();
  if (root) rmSync(root, { recursive: true, force: true });
});

function config(algorithm: Algorithm): RunConfig {
  return {
    algorithm,
    preset: 'cpu-small',
    train: trainConfig('cpu-small', {
      batchSize: 2,
      microBatch: 2,
      criticEpochs: 2,
      actorEpochs: 2,
      sftEpochs: 3,
      checkpointEvery: 2,
      candidates: 4,
      pairsPerState: 2,
      stateFraction: 0.5,
      maxNewTokens: 24,
      rftThreshold: 0.5,
      seed: 3,
    }),
    fromVersionId: fromId,
    fromVersionName: 'tiny',
    fromCheckpoint: policyDir,
    kind: 'backend',
    ratingWeight: 0,
    data: { source: 'both', simulatedWeight: 1, seed: 3 },
  };
}

async function weights(dir: string) {
  return readSafetensors(join(dir, 'model.safetensors'));
}

describe.each(['rft', 'mtdpo', 'sweet'] as const)('%s run resumed after an interruption', (algorithm) => {
  it('ends with the same weights as an uninterrupted run, and records its steps', async () => {
    const ctx = { prisma: t.prisma, checkpointRoot: join(root, algorithm), progress: 'none' as const };
    const straight = await executeRun(ctx, (await createRun(ctx, config(algorithm))).id);

    const run = await createRun(ctx, config(algorithm));
    // 3 updates: one after the checkpoint at 2, lost as a kill would lose it.
    await expect(executeRun({ ...ctx, stopAfterSteps: 3 }, run.id)).rejects.toBeInstanceOf(RunInterrupted);
    const mid = await t.prisma.trainingRun.findUniqueOrThrow({ where: { id: run.id } });
    expect(mid.status).toBe('running');
    expect((mid.progress as { current?: { step: number }; done: string[] }).current?.step ?? 0).toBeGreaterThan(0);
    const resumed = await executeRun(ctx, run.id);

    const a = await weights(straight.checkpointPath!);
    const b = await weights(resumed.checkpointPath!);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    let maxDiff = 0;
    for (const [k, x] of a) {
      const y = b.get(k)!.data;
      for (let i = 0; i < x.data.length; i++) maxDiff = Math.max(maxDiff, Math.abs(x.data[i]! - y[i]!));
    }
    expect(maxDiff).toBeLessThanOrEqual(1e-6);
    // Training changed the policy.
    const base = await weights(policyDir);
    let moved = 0;
    for (const [k, x] of base)
      for (let i = 0; i < x.data.length; i++) moved = Math.max(moved, Math.abs(x.data[i]! - a.get(k)!.data[i]!));
    expect(moved).toBeGreaterThan(0);

    const done = await t.prisma.trainingRun.findUniqueOrThrow({
      where: { id: run.id },
      include: { steps: true, policyVersions: true },
    });
    expect(done.status).toBe('succeeded');
    expect(done.steps.length).toBeGreaterThan(0);
    expect(done.policyVersions[0]!.status).toBe('candidate');
    expect(done.policyVersions[0]!.algorithm).toBe(algorithm);
    expect(done.policyVersions[0]!.checkpointSha256).toMatch(/^[0-9a-f]{64}$/);
    expect((done.dataSnapshot as { sessions: unknown[] }).sessions.length).toBe(8);
    if (algorithm === 'sweet') {
      // The trained critic's advantage of every agent turn of the run's sessions, stored for the dashboard; the
      // resumed run stores the same ones as the uninterrupted run.
      const advantages = async (runId: string) =>
        new Map(
          (await t.prisma.criticAdvantage.findMany({ where: { trainingRunId: runId } })).map((a) => [
            a.turnId,
            a.advantage,
          ]),
        );
      const [first, again] = [await advantages(straight.trainingRunId!), await advantages(run.id)];
      const ids = (done.dataSnapshot as { sessions: { id: string }[] }).sessions.map((s) => s.id);
      // Every session gets advantages for its last agent turns: all of them, or those the critic's window kept.
      const agentTurns = await t.prisma.turn.findMany({
        where: { role: 'agent', sessionId: { in: ids } },
        orderBy: { index: 'asc' },
      });
      for (const id of ids) {
        const scored = agentTurns.filter((x) => x.sessionId === id).map((x) => first.has(x.id));
        expect(scored.at(-1), id).toBe(true);
        expect(scored.slice(scored.indexOf(true)).every(Boolean), id).toBe(true);
      }
      expect(first.size).toBeLessThanOrEqual(agentTurns.length);
      expect([...again.keys()].sort()).toEqual([...first.keys()].sort());
      for (const [turn, a] of first) expect(again.get(turn)!).toBeCloseTo(a, 4);
      expect([...first.values()].some((a) => Math.abs(a) > 1e-6)).toBe(true);
      // The critic against the tests on the run's sessions, stored in the run's metrics (and the version's), the
      // same after the resume as without it.
      const check = (m: unknown) => (m as { criticVsTests?: Record<string, number | null> }).criticVsTests;
      const straightRun = await t.prisma.trainingRun.findUniqueOrThrow({ where: { id: straight.trainingRunId! } });
      expect(check(done.metrics)).toMatchObject({ sessions: 8 });
      expect(check(done.metrics)!.pairs).toBeGreaterThan(0);
      expect(check(done.metrics)!.agreement).toBeGreaterThanOrEqual(0);
      expect(check(done.metrics)!.agreement).toBeLessThanOrEqual(1);
      expect(check(done.metrics)).toEqual(check(straightRun.metrics));
      expect(check((done.policyVersions[0]!.metrics as { training: unknown }).training)).toEqual(check(done.metrics));
    }
  }, 600_000);
});
