// Migrations on a real Postgres: applied in Prisma's layout and bookkeeping, idempotent, and producing exactly
// the database schema.prisma describes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase, type Database } from '../../prisma/db.ts';
import {
  MIGRATIONS_DIR,
  diffDatabaseToSchema,
  diffMigrationsToSchema,
  migrate,
  migrationStatus,
  readMigrationsTable,
} from '../../prisma/migrate.ts';

const ADMIN = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' };
const name = `sweetloop_migtest_${randomBytes(4).toString('hex')}`;
let db: Database;

async function admin(sql: string): Promise<pg.QueryResult> {
  const c = new pg.Client(ADMIN);
  await c.connect();
  try {
    return await c.query(sql);
  } finally {
    await c.end();
  }
}

const localMigrations = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

beforeAll(async () => {
  // A plain empty database (not the test helper's pre-migrated template): this file tests migrating itself.
  await admin(`CREATE DATABASE ${name}`);
  db = await openDatabase({ databaseUrl: `postgres://postgres@127.0.0.1:5432/${name}`, pgliteDir: '' });
});

afterAll(async () => {
  await db?.close();
  await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
});

describe('migrations on Postgres', () => {
  it('sees every local migration as pending on an empty database', async () => {
    const s = await migrationStatus(db);
    expect(s.local).toEqual(localMigrations);
    expect(s.pending).toEqual(localMigrations);
    expect(s.upToDate).toBe(false);
  });

  it('applies all migrations and records them as Prisma does', async () => {
    const { applied } = await migrate(db);
    expect(applied).toEqual(localMigrations);
    const rows = await readMigrationsTable(db);
    expect(rows.map((r) => r.name)).toEqual(localMigrations);
    for (const r of rows) {
      const sql = readFileSync(join(MIGRATIONS_DIR, r.name, 'migration.sql'));
      // `prisma migrate status|deploy` compare this checksum with the file: they must agree for the native CLI to take over.
      expect(r.checksum).toBe(createHash('sha256').update(sql).digest('hex'));
      expect(r.finishedAt).toBeInstanceOf(Date);
      expect(r.rolledBackAt).toBeNull();
      expect(r.appliedSteps).toBe(1);
    }
    // The columns Prisma's engine creates and reads.
    const cols = await db.prisma.$queryRawUnsafe<{ column_name: string }[]>(
      `SELECT column_name FROM information_schema.columns WHERE table_name = '_prisma_migrations' ORDER BY ordinal_position`,
    );
    expect(cols.map((c) => c.column_name)).toEqual([
      'id',
      'checksum',
      'finished_at',
      'migration_name',
      'logs',
      'rolled_back_at',
      'started_at',
      'applied_steps_count',
    ]);
  });

  it('migrating again is a no-op', async () => {
    const before = await readMigrationsTable(db);
    const { applied } = await migrate(db);
    expect(applied).toEqual([]);
    expect(await readMigrationsTable(db)).toEqual(before);
    const s = await migrationStatus(db);
    expect(s.upToDate).toBe(true);
    expect(s.pending).toEqual([]);
  });

  it('the migrated database is exactly what schema.prisma describes (no drift)', async () => {
    expect(await diffDatabaseToSchema(db)).toBe('');
    expect(await diffMigrationsToSchema(db)).toBe('');
  });

  it('the drift check notices a database that differs from the schema', async () => {
    await db.prisma.$executeRawUnsafe('DROP INDEX "Turn_sessionId_index_key"');
    try {
      const sql = await diffDatabaseToSchema(db);
      expect(sql).toMatch(/CREATE UNIQUE INDEX "Turn_sessionId_index_key"/);
    } finally {
      await db.prisma.$executeRawUnsafe(
        'CREATE UNIQUE INDEX "Turn_sessionId_index_key" ON "Turn"("sessionId", "index")',
      );
    }
    expect(await diffDatabaseToSchema(db)).toBe('');
  });

  it('leaves no shadow database behind', async () => {
    const r = await admin(`SELECT datname FROM pg_database WHERE datname LIKE 'sweetloop_shadow_%'`);
    // Only this file diffs against Postgres (the others diff on PGlite), so any left would be ours.
    expect(r.rows).toEqual([]);
  });
});
