// `sweetloop db migrate|status|diff`: the schema's migrations applied, listed (prisma/migrate.ts) and written
// (prisma/migrate-create.ts).
import type { Command } from 'commander';

// Exit codes: 0 done / up to date; 1 error; 3 `db status` found pending, failed or edited migrations;
// 4 `db diff --check` found schema changes that no migration holds yet.
export const EXIT_MIGRATIONS_PENDING = 3;
export const EXIT_SCHEMA_CHANGED = 4;

async function openConfiguredDatabase() {
  const [{ loadConfig }, { createLogger }, { openDatabase }] = await Promise.all([
    import('../config.ts'),
    import('../log.ts'),
    import('../../prisma/db.ts'),
  ]);
  const config = loadConfig();
  const log = createLogger(config);
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    pgliteDir: config.PGLITE_DIR,
    poolSize: config.DATABASE_POOL_SIZE,
    log,
  });
  return { db, log };
}

export function registerMigrationCommands(program: Command): void {
  const db = program.command('db').description('Database: apply migrations, show their status, create new ones');

  db.command('migrate')
    .description('Apply pending migrations to Postgres (DATABASE_URL) or the embedded PGlite database (PGLITE_DIR)')
    .action(async () => {
      const { db: database, log } = await openConfiguredDatabase();
      try {
        const { migrateDatabase } = await import('../../bot/bootstrap.ts');
        const applied = await migrateDatabase(database, log);
        if (applied.length === 0) console.log(`${database.label}: already up to date, nothing applied`);
        else
          console.log(
            `${database.label}: applied ${applied.length} migration(s):\n${applied.map((n) => `  ${n}`).join('\n')}`,
          );
      } finally {
        await database.close();
      }
    });

  db.command('status')
    .description(
      `Show which migrations are applied and which are pending (exit ${EXIT_MIGRATIONS_PENDING} when not up to date)`,
    )
    .action(async () => {
      const { db: database } = await openConfiguredDatabase();
      try {
        const { migrationStatus } = await import('../../prisma/migrate.ts');
        const s = await migrationStatus(database);
        console.log(`database: ${database.label} (${database.kind})`);
        const applied = new Map(s.applied.filter((a) => !a.rolledBackAt).map((a) => [a.name, a]));
        for (const name of s.local) {
          const a = applied.get(name);
          const state = s.failed.includes(name)
            ? 'FAILED'
            : s.edited.includes(name)
              ? 'applied, but migration.sql was edited since'
              : a?.finishedAt
                ? `applied ${a.finishedAt.toISOString()}`
                : 'pending';
          console.log(`  ${name}  ${state}`);
        }
        for (const name of s.unknown)
          console.log(`  ${name}  applied in the database but missing from prisma/migrations`);
        if (s.upToDate && s.edited.length === 0) {
          console.log('Database schema is up to date.');
        } else {
          const problems = [
            s.pending.length && `${s.pending.length} pending (run: sweetloop db migrate)`,
            s.failed.length && `${s.failed.length} failed`,
            s.edited.length && `${s.edited.length} edited after being applied`,
            s.unknown.length && `${s.unknown.length} unknown to this checkout`,
          ].filter(Boolean);
          console.log(
            `Not up to date: ${problems.join('; ') || 'no migrations table yet (run: sweetloop db migrate)'}.`,
          );
          process.exitCode = EXIT_MIGRATIONS_PENDING;
        }
      } finally {
        await database.close();
      }
    });

  db.command('diff')
    .description(
      'After editing prisma/schema.prisma: write the next migration (--name), or show/check what it would hold',
    )
    .option('--name <name>', 'create prisma/migrations/<timestamp>_<name>/migration.sql for the schema changes')
    .option('--check', `write nothing; exit ${EXIT_SCHEMA_CHANGED} when schema.prisma has changes no migration holds`)
    .action(async (opts: { name?: string; check?: boolean }) => {
      const { createMigration, pendingSchemaChanges } = await import('../../prisma/migrate-create.ts');
      if (opts.name && !opts.check) {
        const created = await createMigration({ name: opts.name });
        if (!created) console.log('schema.prisma matches the migrations: no migration created');
        else console.log(`created ${created.dir}/migration.sql:\n\n${created.sql}`);
        return;
      }
      const sql = await pendingSchemaChanges();
      if (!sql.trim()) {
        console.log('schema.prisma matches the migrations: nothing to migrate');
        return;
      }
      console.log(
        `-- schema.prisma has changes no migration holds yet; \`sweetloop db diff --name <name>\` would write:\n${sql}`,
      );
      if (opts.check) process.exitCode = EXIT_SCHEMA_CHANGED;
    });
}
