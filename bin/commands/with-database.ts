// Opening the configured database for a command that needs no model backend, with one wording for the
// commonest failure (a database never migrated), so every command group says it the same way.
import type { Database } from '../../prisma/db.ts';

export async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const [{ loadConfig }, { openDatabase }] = await Promise.all([import('../config.ts'), import('../../prisma/db.ts')]);
  const config = loadConfig();
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    pgliteDir: config.PGLITE_DIR,
    poolSize: config.DATABASE_POOL_SIZE,
  });
  try {
    return await fn(db);
  } catch (err) {
    const { toDatabaseError } = await import('../../prisma/errors.ts');
    const e = toDatabaseError(err);
    // P2021: the table does not exist, i.e. the database was never migrated.
    if ((e as { code?: string }).code === 'P2021') e.message += ' (run `sweetloop db migrate` first)';
    throw e;
  } finally {
    await db.close();
  }
}
