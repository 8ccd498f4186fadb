// The database of a migration test: as a release before the migration left it (testing/database.ts
// createDatabaseBefore), made before the file's tests and dropped after them. `sql` runs one statement on it.
import { afterAll, beforeAll } from 'vitest';
import { createDatabaseBefore, type DatabaseBefore } from '../../testing/database.ts';

export interface MigrationDatabase extends DatabaseBefore {
  sql(statement: string, ...params: unknown[]): Promise<number>;
}

/** Registers the file's beforeAll/afterAll; the returned object is filled in before the first test runs. */
export function databaseBeforeMigration(migration: string): MigrationDatabase {
  const t = {
    sql: (statement: string, ...params: unknown[]) => t.db.prisma.$executeRawUnsafe(statement, ...params),
  } as MigrationDatabase;
  beforeAll(async () => {
    Object.assign(t, await createDatabaseBefore(migration));
  }, 120_000);
  afterAll(async () => {
    await t.drop?.();
  });
  return t;
}
