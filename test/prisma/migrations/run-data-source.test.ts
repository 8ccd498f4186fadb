// prisma/migrations/*_run_data_source: runs stored with the old includeSimulated flag get the data filter they
// trained with, so trainer/runs.ts resumes them and the report names their source.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../../../prisma/db.ts';
import { MIGRATIONS_DIR, migrate } from '../../../prisma/migrate.ts';

const ADMIN = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' };
const name = `sweetloop_migtest_${randomBytes(4).toString('hex')}`;
const THIS = readdirSync(MIGRATIONS_DIR).find((d) => d.endsWith('_run_data_source'))!;
const before = mkdtempSync(join(tmpdir(), 'sweetloop-migrations-'));
let db: Database;

async function admin(sql: string): Promise<void> {
  const c = new pg.Client(ADMIN);
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  // The migrations up to (not including) this one: the database as a run stored before it left it.
  for (const entry of readdirSync(MIGRATIONS_DIR)) if (entry < THIS) cpSync(join(MIGRATIONS_DIR, entry), join(before, entry), { recursive: true });
  await admin(`CREATE DATABASE ${name}`);
  db = await openDatabase({ databaseUrl: `postgres://postgres@127.0.0.1:5432/${name}`, pgliteDir: '' });
  await migrate(db, { migrationsDir: before });
});

afterAll(async () => {
  await db?.close();
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  rmSync(before, { recursive: true, force: true });
});

async function storeRun(config: object): Promise<string> {
  const id = randomUUID();
  await db.prisma.$executeRaw`INSERT INTO "TrainingRun" ("id", "algorithm", "config") VALUES (${id}::uuid, 'rft', ${JSON.stringify(config)}::jsonb)`;
  return id;
}

describe('migration run_data_source', () => {
  it('rewrites includeSimulated into the data filter the run used, and keeps a filter already stored', async () => {
    const train = { seed: 11, batchSize: 2 };
    const both = await storeRun({ algorithm: 'rft', train, includeSimulated: true });
    const people = await storeRun({ algorithm: 'rft', train, includeSimulated: false });
    const filter = { source: 'simulated', simulatedWeight: 1, minRating: 4, seed: 5 };
    const filtered = await storeRun({ algorithm: 'rft', train, includeSimulated: true, data: filter });
    const current = await storeRun({ algorithm: 'rft', train, data: { source: 'human', simulatedWeight: 1, seed: 11 } });

    expect(await migrate(db)).toEqual({ applied: [THIS] });

    const config = async (id: string) => (await db.prisma.trainingRun.findUniqueOrThrow({ where: { id } })).config;
    expect(await config(both)).toEqual({ algorithm: 'rft', train, data: { source: 'both', simulatedWeight: 1, seed: 11 } });
    expect(await config(people)).toEqual({ algorithm: 'rft', train, data: { source: 'human', simulatedWeight: 1, seed: 11 } });
    expect(await config(filtered)).toEqual({ algorithm: 'rft', train, data: filter });
    expect(await config(current)).toEqual({ algorithm: 'rft', train, data: { source: 'human', simulatedWeight: 1, seed: 11 } });
  });
});
