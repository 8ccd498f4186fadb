// Migrations without Prisma's native engine (schema-engine.ts): applied, listed and diffed here, created in
// migrate-create.ts. It reads and writes Prisma's own layout (prisma/migrations/<timestamp>_<name>/migration.sql,
// migration_lock.toml) and bookkeeping (the _prisma_migrations table with sha256 checksums), so a machine with
// the native CLI can run `prisma migrate deploy|status` on the same database and take over.
import { readFile, readdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as Engine from '@prisma/schema-engine-wasm';
import type { Logger } from '../tasks/logger.ts';
import type { Database } from './db.ts';
import { DatabaseError } from './errors.ts';
import { NO_FILTER, openSchemaEngine, runEngine } from './schema-engine.ts';

export const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

// ---------------------------------------------------------------------------------------------------------
// Migrations directory

/** Reads the migrations directory the way the Prisma CLI does (sorted folder names, each with migration.sql). */
export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Engine.MigrationList> {
  const baseDir = resolve(dir);
  const lockPath = 'migration_lock.toml';
  const lockContent = await readFile(join(baseDir, lockPath), 'utf8').catch(() => null);
  const entries = await readdir(baseDir, { withFileTypes: true }).catch(() => []);
  const migrationDirectories: Engine.MigrationDirectory[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const content: Engine.JsResult<string, string> = await readFile(join(baseDir, entry.name, 'migration.sql'), 'utf8')
      .then((value) => ({ tag: 'ok' as const, value }))
      .catch((err: Error) => ({ tag: 'error' as const, value: err.message }));
    migrationDirectories.push({ path: entry.name, migrationFile: { path: 'migration.sql', content } });
  }
  migrationDirectories.sort((a, b) => a.path.localeCompare(b.path));
  return { baseDir, lockfile: { path: lockPath, content: lockContent }, shadowDbInitScript: '', migrationDirectories };
}

// ---------------------------------------------------------------------------------------------------------
// Commands

export interface MigrateOptions {
  migrationsDir?: string;
  schemaPath?: string;
  log?: Logger;
}

/** `prisma migrate deploy`: applies every migration not yet recorded in _prisma_migrations, in order. */
export async function migrate(db: Database, opts: MigrateOptions = {}): Promise<{ applied: string[] }> {
  const list = await loadMigrations(opts.migrationsDir);
  if (list.migrationDirectories.length === 0) throw new DatabaseError(`no migrations found in ${list.baseDir}`);
  // The engine itself holds Prisma's advisory lock while applying, so concurrent deploys (ours or the native
  // CLI's) queue up instead of racing.
  const session = await openSchemaEngine(db, opts);
  try {
    const out = await runEngine(db, () => session.engine.applyMigrations({ migrationsList: list, filters: NO_FILTER }));
    for (const name of out.appliedMigrationNames)
      opts.log?.info({ migration: name, db: db.label }, 'migration applied');
    return { applied: out.appliedMigrationNames };
  } finally {
    await session.close();
  }
}

export interface AppliedMigration {
  name: string;
  checksum: string;
  startedAt: Date;
  finishedAt: Date | null;
  rolledBackAt: Date | null;
  appliedSteps: number;
}

export interface MigrationStatus {
  /** Folders in the migrations directory, in order. */
  local: string[];
  /** Rows of _prisma_migrations, in order of start. */
  applied: AppliedMigration[];
  /** Local migrations the database has not run yet. */
  pending: string[];
  /** Migrations recorded in the database but missing locally. */
  unknown: string[];
  failed: string[];
  /** Applied migrations whose migration.sql changed since (checksum mismatch). */
  edited: string[];
  upToDate: boolean;
}

/** `prisma migrate status`, read-only: needs no shadow database. */
export async function migrationStatus(db: Database, opts: MigrateOptions = {}): Promise<MigrationStatus> {
  const list = await loadMigrations(opts.migrationsDir);
  const session = await openSchemaEngine(db, opts);
  let diag: Engine.DiagnoseMigrationHistoryOutput;
  try {
    diag = await runEngine(db, () =>
      session.engine.diagnoseMigrationHistory({
        migrationsList: list,
        optInToShadowDatabase: false,
        filters: NO_FILTER,
      }),
    );
  } finally {
    await session.close();
  }
  const applied = diag.hasMigrationsTable ? await readMigrationsTable(db) : [];
  const h = diag.history;
  const pending =
    h?.diagnostic === 'databaseIsBehind' || h?.diagnostic === 'historiesDiverge' ? h.unappliedMigrationNames : [];
  const unknown =
    h?.diagnostic === 'migrationsDirectoryIsBehind' || h?.diagnostic === 'historiesDiverge'
      ? h.unpersistedMigrationNames
      : [];
  return {
    local: list.migrationDirectories.map((d) => d.path),
    applied,
    pending,
    unknown,
    failed: diag.failedMigrationNames,
    edited: diag.editedMigrationNames,
    upToDate: !h && diag.failedMigrationNames.length === 0 && diag.hasMigrationsTable,
  };
}

export async function readMigrationsTable(db: Database): Promise<AppliedMigration[]> {
  const rows = await db.prisma.$queryRawUnsafe<
    {
      migration_name: string;
      checksum: string;
      started_at: Date;
      finished_at: Date | null;
      rolled_back_at: Date | null;
      applied_steps_count: number;
    }[]
  >(
    'SELECT migration_name, checksum, started_at, finished_at, rolled_back_at, applied_steps_count FROM "_prisma_migrations" ORDER BY started_at, migration_name',
  );
  return rows.map((r) => ({
    name: r.migration_name,
    checksum: r.checksum,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    rolledBackAt: r.rolled_back_at,
    appliedSteps: Number(r.applied_steps_count),
  }));
}

/**
 * The SQL that would take the live database to what schema.prisma describes; '' when they already match.
 * After `migrate`, a non-empty result means the migrations and the schema have drifted apart.
 */
export async function diffDatabaseToSchema(db: Database, opts: MigrateOptions = {}): Promise<string> {
  return diffToSchema(db, opts, (session) => ({
    tag: 'schemaDatasource',
    files: session.schema.files,
    configDir: dirname(session.schema.files[0]!.path),
  }));
}

/** The SQL that would take the database the migrations build to what schema.prisma describes ('' = none). */
export async function diffMigrationsToSchema(db: Database, opts: MigrateOptions = {}): Promise<string> {
  const list = await loadMigrations(opts.migrationsDir);
  return diffToSchema(db, opts, () => ({ tag: 'migrations', ...list }));
}

type EngineSession = Awaited<ReturnType<typeof openSchemaEngine>>;
type DiffSource = Parameters<EngineSession['engine']['diff']>[0]['from'];

/** Diffs `from` against schema.prisma as a script; the engine's exit code 2 means "there is a difference". */
async function diffToSchema(
  db: Database,
  opts: MigrateOptions,
  from: (session: EngineSession) => DiffSource,
): Promise<string> {
  const session = await openSchemaEngine(db, opts);
  try {
    const out = await runEngine(db, () =>
      session.engine.diff({
        from: from(session),
        to: { tag: 'schemaDatamodel', files: session.schema.files },
        script: true,
        exitCode: true,
        filters: NO_FILTER,
      }),
    );
    return out.exitCode === 2 ? (out.stdout ?? '') : '';
  } finally {
    await session.close();
  }
}
