// The report's "trained on" section: each trained version's data source and filter read back from its run, and
// the pooled comparison of versions trained on human against simulated data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import {
  collectTrainedVersions,
  compareSources,
  trainingDataMarkdown,
  type TrainedVersion,
} from '../../../bot/report/training-data.ts';
import type { GroupReport } from '../../../bot/report/aggregate.ts';
import { wilsonCount } from '../../../tasks/stats.ts';
import { markTrainedOnErasedData } from '../../../prisma/privacy-store.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

function group(policy: string, collaborator: 'human' | 'simulated', successes: number, evaluated: number): GroupReport {
  return {
    policy,
    kind: 'backend',
    collaborator,
    sessions: evaluated,
    answered: evaluated,
    evaluated,
    successRate: wilsonCount(successes, evaluated),
  } as GroupReport;
}

describe('trained on people or simulators', () => {
  it("reads each version's source, filter and counts from its run", async () => {
    for (const [name, data, counts] of [
      [
        'h-1',
        { source: 'human', simulatedWeight: 1, minQuality: 0.7, seed: 1 },
        { human: 12, simulated: 0, simulatedLeftOut: 0 },
      ],
      ['s-1', { source: 'simulated', simulatedWeight: 1, seed: 1 }, { human: 0, simulated: 40, simulatedLeftOut: 0 }],
      // A run from before data filters, as prisma/migrations/*_run_data_source left it: its source, no counts.
      ['old', { source: 'both', simulatedWeight: 1, seed: 1 }, null],
    ] as const) {
      const run = await t.prisma.trainingRun.create({
        data: {
          algorithm: 'rft',
          config: { data },
          ...(counts ? { dataSnapshot: { filter: data, counts, sessions: [] } } : {}),
          status: 'succeeded',
        },
      });
      await t.prisma.policyVersion.create({
        data: { name, algorithm: 'rft', checkpointPath: '/x', trainingRunId: run.id },
      });
    }
    await t.prisma.policyVersion.create({ data: { name: 'untrained', algorithm: 'starter', checkpointPath: '/x' } });
    const v = await collectTrainedVersions(t.prisma);
    expect(v.map((x) => [x.policy, x.source, x.sessions])).toEqual([
      ['h-1', 'human', { human: 12, simulated: 0 }],
      ['s-1', 'simulated', { human: 0, simulated: 40 }],
      ['old', 'both', null],
    ]);
    const md = trainingDataMarkdown(v, []);
    expect(md).toContain('| h-1 | rft | human | 12 / 0 | quality >= 0.7 |');
    expect(md).toContain('| old | rft | both | - | - |');
    expect(md).not.toContain('erased');

    // A version whose run used a deleted person's session is marked (prisma/privacy-store.ts marks it).
    const s1 = await t.prisma.policyVersion.findUniqueOrThrow({
      where: { name: 's-1' },
      include: { trainingRun: true },
    });
    await t.prisma.trainingRun.update({
      where: { id: s1.trainingRunId! },
      data: { dataSnapshot: { ...(s1.trainingRun!.dataSnapshot as object), sessions: [{ id: 'gone', reward: 1 }] } },
    });
    expect(await markTrainedOnErasedData(t.prisma, ['gone'])).toEqual(['s-1']);
    const marked = trainingDataMarkdown(await collectTrainedVersions(t.prisma), []);
    expect(marked).toContain('| s-1 [trained on erased data] | rft | simulated | 0 / 40 | - |');
    expect(marked).toContain('| h-1 | rft | human |');
    expect(marked).toMatch(/\[trained on erased data\]: trained on sessions of a person whose data was deleted since/);
  });

  it('pools success by training source, per kind of collaborator, with the difference and its p-value', () => {
    const versions: TrainedVersion[] = [
      {
        policy: 'h-1',
        algorithm: 'rft',
        source: 'human',
        filter: { source: 'human', simulatedWeight: 1, seed: 1 },
        sessions: null,
        trainedOnErasedData: false,
      },
      {
        policy: 'h-2',
        algorithm: 'rft',
        source: 'human',
        filter: { source: 'human', simulatedWeight: 1, seed: 1 },
        sessions: null,
        trainedOnErasedData: false,
      },
      {
        policy: 's-1',
        algorithm: 'rft',
        source: 'simulated',
        filter: { source: 'simulated', simulatedWeight: 1, seed: 1 },
        sessions: null,
        trainedOnErasedData: false,
      },
    ];
    const groups = [
      group('h-1', 'human', 6, 10),
      group('h-2', 'human', 9, 10),
      group('s-1', 'human', 5, 20),
      group('h-1', 'simulated', 3, 10),
      group('starter', 'human', 1, 10),
    ];
    const [people, sims] = compareSources(versions, groups);
    expect(people!.collaborator).toBe('human');
    expect(people!.human.estimate).toBeCloseTo(15 / 20, 12);
    expect(people!.simulated.estimate).toBeCloseTo(5 / 20, 12);
    expect(people!.difference.difference.estimate).toBeCloseTo(0.5, 12);
    expect(people!.difference.pValue).toBeLessThan(0.01);
    expect(sims!.simulated.n).toBe(0);
    expect(Number.isNaN(sims!.difference.pValue)).toBe(true);
    expect(trainingDataMarkdown(versions, [people!, sims!])).toMatch(
      /\| people \| 75\.0% \[[\d.]+%, [\d.]+%\] \(n=20\) \| 25\.0% .* \| 50\.0 pts \[[\d.]+, [\d.]+\] \| 0\.00\d \|/,
    );
  });
});
