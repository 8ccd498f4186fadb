// `sweetloop db diff`: after a schema edit the next migration is written in Prisma's layout, and afterwards
// the migrations and the schema agree again. Works on copies in a temp dir, never on prisma/.
import { afterAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIGRATIONS_DIR } from '../../prisma/migrate.ts';
import { createMigration, migrationSlug, pendingSchemaChanges } from '../../prisma/migrate-create.ts';
import { SCHEMA_PATH } from '../../prisma/schema-engine.ts';

const work = mkdtempSync(join(tmpdir(), 'sweetloop-migcreate-'));
const migrationsDir = join(work, 'migrations');
const schemaPath = join(work, 'schema.prisma');
cpSync(MIGRATIONS_DIR, migrationsDir, { recursive: true });
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('creating migrations', () => {
  it('writes the next migration for a schema change, then nothing more', async () => {
    const schema = readFileSync(SCHEMA_PATH, 'utf8').replace(/(model Participant \{\n)/, '$1  nickname String?\n');
    expect(schema).toContain('nickname String?');
    writeFileSync(schemaPath, schema);
    const before = readdirSync(migrationsDir).sort();

    const created = await createMigration({ name: 'Add nickname!', schemaPath, migrationsDir });
    expect(created).not.toBeNull();
    expect(created!.name).toMatch(/^\d{14}_add_nickname$/);
    expect(readdirSync(migrationsDir).sort()).toEqual([...before, created!.name].sort());
    expect(readFileSync(join(created!.dir, 'migration.sql'), 'utf8')).toBe(created!.sql);
    expect(created!.sql).toContain('ALTER TABLE "Participant" ADD COLUMN     "nickname" TEXT;');
    expect(readFileSync(join(migrationsDir, 'migration_lock.toml'), 'utf8')).toMatch(/^provider = "postgresql"$/m);

    // The new history now builds exactly the edited schema: nothing left to migrate.
    expect(await pendingSchemaChanges({ schemaPath, migrationsDir })).toBe('');
  });

  it('turns names into Prisma-style folder names and refuses empty ones', () => {
    expect(migrationSlug('Add rating comments')).toBe('add_rating_comments');
    expect(() => migrationSlug('  !!! ')).toThrow(/invalid migration name/);
  });
});
