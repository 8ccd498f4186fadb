// prisma/migrations/*_run_data_source: runs stored with the old includeSimulated flag get the data filter they
// trained with, so trainer/runs.ts resumes them and the report names their source.
import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { databaseBeforeMigration } from '../../helpers/migration.ts';

const THIS = '_run_data_source';
const t = databaseBeforeMigration(THIS);

async function storeRun(config: object): Promise<string> {
  const id = randomUUID();
  await t.db.prisma
    .$executeRaw`INSERT INTO "TrainingRun" ("id", "algorithm", "config") VALUES (${id}::uuid, 'rft', ${JSON.stringify(config)}::jsonb)`;
  return id;
}

describe('migration run_data_source', () => {
  it('rewrites includeSimulated into the data filter the run used, and keeps a filter already stored', async () => {
    const train = { seed: 11, batchSize: 2 };
    const both = await storeRun({ algorithm: 'rft', train, includeSimulated: true });
    const people = await storeRun({ algorithm: 'rft', train, includeSimulated: false });
    const filter = { source: 'simulated', simulatedWeight: 1, minRating: 4, seed: 5 };
    const filtered = await storeRun({ algorithm: 'rft', train, includeSimulated: true, data: filter });
    const current = await storeRun({
      algorithm: 'rft',
      train,
      data: { source: 'human', simulatedWeight: 1, seed: 11 },
    });

    // This migration first; later ones (the rft phase name) leave these rows alone.
    expect((await t.migrateRest()).applied[0]).toMatch(new RegExp(`${THIS}$`));

    const config = async (id: string) => (await t.db.prisma.trainingRun.findUniqueOrThrow({ where: { id } })).config;
    expect(await config(both)).toEqual({
      algorithm: 'rft',
      train,
      data: { source: 'both', simulatedWeight: 1, seed: 11 },
    });
    expect(await config(people)).toEqual({
      algorithm: 'rft',
      train,
      data: { source: 'human', simulatedWeight: 1, seed: 11 },
    });
    expect(await config(filtered)).toEqual({ algorithm: 'rft', train, data: filter });
    expect(await config(current)).toEqual({
      algorithm: 'rft',
      train,
      data: { source: 'human', simulatedWeight: 1, seed: 11 },
    });
  });
});
