// The embedded database: the same migrations applied to PGlite persisted in a directory, reopened, locked
// against a second opener, with LISTEN/NOTIFY and clear errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../prisma/db.ts';
import { diffDatabaseToSchema, migrate, migrationStatus, readMigrationsTable } from '../../prisma/migrate.ts';
import { UniqueViolationError, toDatabaseError } from '../../prisma/errors.ts';

const parent = mkdtempSync(join(tmpdir(), 'sweetloop-pglite-'));
const dir = join(parent, 'pglite');
let db: Database;

beforeAll(async () => {
  db = await openDatabase({ pgliteDir: dir });
});

afterAll(async () => {
  await db?.close();
  rmSync(parent, { recursive: true, force: true });
});

describe('migrations on PGlite', () => {
  it('creates the database directory and migrates it', async () => {
    expect(db.kind).toBe('pglite');
    expect(db.label).toBe(`pglite:${dir}`);
    expect(existsSync(join(dir, 'PG_VERSION'))).toBe(true);
    const { applied } = await migrate(db);
    expect(applied.length).toBeGreaterThan(0);
    expect((await migrationStatus(db)).upToDate).toBe(true);
  });

  it('migrating twice is a no-op', async () => {
    const before = await readMigrationsTable(db);
    expect((await migrate(db)).applied).toEqual([]);
    expect(await readMigrationsTable(db)).toEqual(before);
  });

  it('matches schema.prisma exactly (no drift)', async () => {
    expect(await diffDatabaseToSchema(db)).toBe('');
  });

  it('refuses a second opener of the same directory with a clear error', async () => {
    await expect(openDatabase({ pgliteDir: dir })).rejects.toThrow(/already open in process \d+/);
  });

  it('reports a unique violation clearly', async () => {
    await db.prisma.participant.create({ data: { discordUserId: '111111111111111111' } });
    const err = await db.prisma.participant
      .create({ data: { discordUserId: '111111111111111111' } })
      .catch(toDatabaseError);
    expect(err).toBeInstanceOf(UniqueViolationError);
    expect((err as UniqueViolationError).fields).toEqual(['discordUserId']);
    expect((err as Error).message).toBe('duplicate value: a Participant with the same discordUserId already exists');
  });

  it('delivers notifications to listeners until they unsubscribe', async () => {
    const got: string[] = [];
    const off = await db.listen('sweetloop_test', (p) => got.push(p));
    await db.notify('sweetloop_test', 'one');
    await expect.poll(() => got).toEqual(['one']);
    await off();
    await db.notify('sweetloop_test', 'two');
    await new Promise((r) => setTimeout(r, 100));
    expect(got).toEqual(['one']);
    await expect(db.listen('Bad-Name', () => {})).rejects.toThrow(/invalid notification channel/);
  });

  it('keeps its data across close and reopen', async () => {
    await db.close();
    db = await openDatabase({ pgliteDir: dir });
    expect(await db.prisma.participant.count()).toBe(1);
    expect((await migrate(db)).applied).toEqual([]);
  });
});
