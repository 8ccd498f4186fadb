// Migrations without Prisma's native engine: the same schema engine, compiled to WebAssembly, driven through
// driver adapters. It reads and writes Prisma's own layout (prisma/migrations/<timestamp>_<name>/migration.sql,
// migration_lock.toml) and bookkeeping (the _prisma_migrations table with sha256 checksums), so a machine with
// the native CLI can run `prisma migrate deploy|status` on the same database and take over.
import { readFile, readdir, mkdir, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type * as Engine from '@prisma/schema-engine-wasm';
import type { Logger } from '../tasks/logger.ts';
import type { Database, PostgresConnection } from './db.ts';
import { poolConfig } from './db.ts';
import { DatabaseError, describeDatabaseError } from './errors.ts';

const here = dirname(fileURLToPath(import.meta.url));
export const SCHEMA_PATH = join(here, 'schema.prisma');
export const MIGRATIONS_DIR = join(here, 'migrations');
const NO_FILTER: Engine.SchemaFilter = { externalTables: [], externalEnums: [] };

// ---------------------------------------------------------------------------------------------------------
// Loading the engine

type EngineModule = typeof import('@prisma/schema-engine-wasm/schema_engine_bg');
let engineModule: Promise<{ mod: EngineModule; version: string; source: string }> | null = null;
const engineTimers = new Set<NodeJS.Timeout>();
let liveEngines = 0;

// The project's lib settings (ES2023 + node) do not declare WebAssembly; the little used here is typed locally.
interface WasmModule {
  readonly __wasmModule: unique symbol;
}
interface WasmApi {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  instantiate(m: WasmModule, imports: Record<string, Record<string, unknown>>): Promise<{ exports: Record<string, unknown> }>;
  Module: {
    imports(m: WasmModule): { module: string; name: string; kind: string }[];
    exports(m: WasmModule): { name: string; kind: string }[];
  };
}
const Wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

/**
 * The npm package's loader imports the .wasm file as an ES module, which Node 20 cannot do; we instantiate it
 * ourselves. The Prisma CLI ships the engine build of its own release (prisma/build/schema_engine_bg.wasm),
 * while the newest @prisma/schema-engine-wasm on the registry is a later commit: when the CLI's build has the
 * same wasm-bindgen interface, use it, so that generated SQL is exactly what `prisma migrate dev` of the
 * installed CLI would write.
 */
export function loadEngine(): Promise<{ mod: EngineModule; version: string; source: string }> {
  engineModule ??= (async () => {
    const require = createRequire(import.meta.url);
    const mod = (await import('@prisma/schema-engine-wasm/schema_engine_bg')) as EngineModule;
    const pkgWasm = join(dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg')), 'schema_engine_bg.wasm');
    let cliWasm: string | null = null;
    try {
      cliWasm = join(dirname(require.resolve('prisma/package.json')), 'build', 'schema_engine_bg.wasm');
    } catch {
      cliWasm = null;
    }
    const pkgModule = await Wasm.compile(readFileSync(pkgWasm));
    let chosen = pkgModule;
    let source = '@prisma/schema-engine-wasm';
    if (cliWasm) {
      try {
        const cliModule = await Wasm.compile(readFileSync(cliWasm));
        if (sameInterface(cliModule, pkgModule)) {
          chosen = cliModule;
          source = 'prisma CLI bundle';
        }
      } catch {
        // Missing or unreadable: the package's build serves.
      }
    }
    // The engine reports Rust panics through this global; without it a panic would surface as a TypeError.
    const g = globalThis as { PRISMA_WASM_PANIC_REGISTRY?: { message: string; set_message(m: string): void } };
    g.PRISMA_WASM_PANIC_REGISTRY ??= {
      message: '',
      set_message(m: string) {
        this.message = `RuntimeError: ${m}`;
      },
    };
    const imports: Record<string, unknown> = { ...mod };
    // The engine's timers must not outlive it (they would keep the process alive after a CLI command).
    for (const name of Object.keys(mod)) {
      if (name.startsWith('__wbg_setTimeout_')) {
        const original = (mod as unknown as Record<string, (f: () => void, ms: number) => NodeJS.Timeout>)[name]!;
        imports[name] = (fn: () => void, ms: number) => {
          const t: NodeJS.Timeout = original(() => {
            engineTimers.delete(t);
            fn();
          }, ms);
          engineTimers.add(t);
          return t;
        };
      }
    }
    const instance = await Wasm.instantiate(chosen, { './schema_engine_bg.js': imports });
    const exports = instance.exports as unknown as { __wbindgen_start?: () => void };
    mod.__wbg_set_wasm(instance.exports);
    exports.__wbindgen_start?.();
    return { mod, version: mod.version(), source };
  })();
  return engineModule;
}

function sameInterface(a: WasmModule, b: WasmModule): boolean {
  const sig = (m: WasmModule) =>
    JSON.stringify([
      Wasm.Module.imports(m).map((i) => `${i.module}:${i.name}:${i.kind}`).sort(),
      Wasm.Module.exports(m).map((e) => `${e.name}:${e.kind}`).sort(),
    ]);
  return sig(a) === sig(b);
}

// ---------------------------------------------------------------------------------------------------------
// Driver adapters for the engine

// The engine's schema describer reads catalog columns of Postgres' internal one-byte "char" type (OID 18),
// which neither driver adapter maps. Its values arrive as one-character strings: presenting the column as text
// (OID 25) is exact.
const PG_CHAR_OID = 18;
const PG_TEXT_OID = 25;
function charColumnsAsText<T>(res: T): T {
  for (const r of Array.isArray(res) ? res : [res]) {
    for (const f of (r as { fields?: { dataTypeID: number }[] } | undefined)?.fields ?? []) {
      if (f.dataTypeID === PG_CHAR_OID) f.dataTypeID = PG_TEXT_OID;
    }
  }
  return res;
}

class CharAsTextClient extends pg.Client {
  // pg.Client#query has many overloads (callback, promise, submittable); fix the result whichever is used.
  override query(...args: unknown[]): never {
    const i = args.findIndex((a) => typeof a === 'function');
    if (i >= 0) {
      const cb = args[i] as (err: Error | null, res: unknown) => void;
      args[i] = (err: Error | null, res: unknown) => cb(err, err ? res : charColumnsAsText(res));
    }
    const ret = (super.query as (...a: unknown[]) => unknown)(...args);
    if (ret && typeof (ret as Promise<unknown>).then === 'function' && i < 0) {
      return (ret as Promise<unknown>).then(charColumnsAsText) as never;
    }
    return ret as never;
  }
}

function charFixedPglite(db: PGlite): PGlite {
  const wrapQueryable = <Q extends object>(target: Q): Q =>
    new Proxy(target, {
      get(t, prop) {
        const v = Reflect.get(t, prop, t) as unknown;
        if (prop === 'query') {
          return async (...args: unknown[]) => charColumnsAsText(await (v as (...a: unknown[]) => Promise<unknown>).apply(t, args));
        }
        if (prop === 'transaction') {
          return (cb: (tx: object) => Promise<unknown>) =>
            (v as (cb: (tx: object) => Promise<unknown>) => Promise<unknown>).call(t, (tx) => cb(wrapQueryable(tx)));
        }
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    });
  return wrapQueryable(db);
}

/** The PGlite adapter's executeScript does not await the script: errors escape and ordering is luck. */
function awaitingScripts(adapter: SqlDriverAdapter, exec: (script: string) => Promise<unknown>): SqlDriverAdapter {
  adapter.executeScript = async (script: string) => {
    try {
      await exec(script);
    } catch (err) {
      (adapter as unknown as { onError(e: unknown): never }).onError(err);
    }
  };
  return adapter;
}

interface EngineAdapter {
  factory: SqlMigrationAwareDriverAdapterFactory;
  close(): Promise<void>;
}

function quoteIdent(name: string): string {
  return pg.escapeIdentifier(name);
}

function postgresEngineAdapter(conn: PostgresConnection, log?: Logger): EngineAdapter {
  const mainPool = new pg.Pool({ ...poolConfig(conn, { max: 2 }), Client: CharAsTextClient });
  mainPool.on('error', () => {});
  const shadows = new Set<string>();
  const adminQuery = async (sql: string) => {
    const c = new pg.Client(poolConfig(conn));
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end().catch(() => {});
    }
  };
  class Factory extends PrismaPg {
    override async connectToShadowDb() {
      // The engine replays the migrations into a scratch database to learn what they produce. Made here, with a
      // random name, and dropped WITH (FORCE) once its pool is closed: the engine never drops it itself.
      const name = `sweetloop_shadow_${randomBytes(6).toString('hex')}`;
      try {
        await adminQuery(`CREATE DATABASE ${quoteIdent(name)}`);
      } catch (err) {
        throw new DatabaseError(
          `cannot create a shadow database on ${conn.host}:${conn.port} (the role needs CREATEDB to diff or create migrations): ${(err as Error).message}`,
          { cause: err },
        );
      }
      shadows.add(name);
      log?.debug({ shadow: name }, 'shadow database created');
      const pool = new pg.Pool({ ...poolConfig({ ...conn, database: name }, { max: 2 }), Client: CharAsTextClient });
      pool.on('error', () => {});
      const adapter = await new PrismaPg(pool).connect();
      const dispose = adapter.dispose.bind(adapter);
      adapter.dispose = async () => {
        await dispose();
        await pool.end().catch(() => {});
        await dropShadow(name);
      };
      return adapter;
    }
  }
  const dropShadow = async (name: string) => {
    if (!shadows.delete(name)) return;
    await adminQuery(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`).catch((err) =>
      log?.warn({ err: (err as Error).message, shadow: name }, 'could not drop shadow database'),
    );
  };
  return {
    factory: new Factory(mainPool),
    close: async () => {
      await mainPool.end().catch(() => {});
      for (const name of [...shadows]) await dropShadow(name);
    },
  };
}

function pgliteEngineAdapter(db: PGlite): EngineAdapter {
  const shadows = new Set<PGlite>();
  const fixed = charFixedPglite(db);
  const factory: SqlMigrationAwareDriverAdapterFactory = {
    provider: 'postgres',
    adapterName: '@prisma/adapter-pglite',
    connect: async () => awaitingScripts(await new PrismaPGlite(fixed).connect(), (s) => db.exec(s)),
    connectToShadowDb: async () => {
      // In memory, and closed when the engine lets go of it (the adapter's own shadow is never closed).
      const shadow = await PGlite.create();
      shadows.add(shadow);
      const adapter = awaitingScripts(await new PrismaPGlite(charFixedPglite(shadow)).connect(), (s) => shadow.exec(s));
      adapter.dispose = async () => {
        if (shadows.delete(shadow)) await shadow.close();
      };
      return adapter;
    },
  };
  return {
    factory,
    close: async () => {
      for (const s of [...shadows]) {
        shadows.delete(s);
        await s.close().catch(() => {});
      }
    },
  };
}

function engineAdapterFor(db: Database, log?: Logger): EngineAdapter {
  return db.raw.kind === 'postgres' ? postgresEngineAdapter(db.raw.connection, log) : pgliteEngineAdapter(db.raw.pglite);
}

export interface SchemaEngineSession {
  engine: Engine.SchemaEngine;
  schema: Engine.SchemasContainer;
  close(): Promise<void>;
}

/** Starts the engine against a database; the schema (default prisma/schema.prisma) sets datasource and namespaces. */
export async function openSchemaEngine(db: Database, opts: { schemaPath?: string; log?: Logger } = {}): Promise<SchemaEngineSession> {
  const { mod } = await loadEngine();
  const schemaPath = resolve(opts.schemaPath ?? SCHEMA_PATH);
  const content = await readFile(schemaPath, 'utf8');
  const adapter = engineAdapterFor(db, opts.log);
  const log = opts.log;
  // The engine is chatty: its lines go out at debug level only.
  const onLog = (line: string) => log?.debug({ engine: line }, 'schema engine');
  let engine: Engine.SchemaEngine;
  try {
    engine = await mod.SchemaEngine.new({ datamodels: [[schemaPath, content]] }, onLog, bindMigrationAwareSqlAdapterFactory(adapter.factory));
  } catch (err) {
    await adapter.close();
    throw engineError(err, db);
  }
  liveEngines++;
  let closed = false;
  return {
    engine,
    schema: { files: [{ path: schemaPath, content }] },
    close: async () => {
      if (closed) return;
      closed = true;
      engine.free();
      await adapter.close();
      if (--liveEngines === 0) {
        for (const t of engineTimers) clearTimeout(t);
        engineTimers.clear();
      }
    },
  };
}

function engineError(err: unknown, db?: Database): Error {
  const e = err as Error & { code?: string };
  if (e instanceof DatabaseError) return e;
  if (e?.name === 'SchemaConnectorError' || e?.code) {
    // Engine messages carry a Rust span trace after the first line; keep what a person can read.
    const first = String(e.message).split('\n   0: ')[0]!.trim();
    return new DatabaseError(`schema engine: ${first}${db ? ` (${db.label})` : ''}`, { cause: err });
  }
  return new DatabaseError(describeDatabaseError(err, db ? { label: db.label } : {}), { cause: err });
}

async function runEngine<T>(db: Database | undefined, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw engineError(err, db);
  }
}

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
    for (const name of out.appliedMigrationNames) opts.log?.info({ migration: name, db: db.label }, 'migration applied');
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
      session.engine.diagnoseMigrationHistory({ migrationsList: list, optInToShadowDatabase: false, filters: NO_FILTER }),
    );
  } finally {
    await session.close();
  }
  const applied = diag.hasMigrationsTable ? await readMigrationsTable(db) : [];
  const h = diag.history;
  const pending = h?.diagnostic === 'databaseIsBehind' || h?.diagnostic === 'historiesDiverge' ? h.unappliedMigrationNames : [];
  const unknown = h?.diagnostic === 'migrationsDirectoryIsBehind' || h?.diagnostic === 'historiesDiverge' ? h.unpersistedMigrationNames : [];
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
    { migration_name: string; checksum: string; started_at: Date; finished_at: Date | null; rolled_back_at: Date | null; applied_steps_count: number }[]
  >('SELECT migration_name, checksum, started_at, finished_at, rolled_back_at, applied_steps_count FROM "_prisma_migrations" ORDER BY started_at, migration_name');
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
  return diffToSchema(db, opts, (session) => ({ tag: 'schemaDatasource', files: session.schema.files, configDir: dirname(session.schema.files[0]!.path) }));
}

/** The SQL that would take the database the migrations build to what schema.prisma describes ('' = none). */
export async function diffMigrationsToSchema(db: Database, opts: MigrateOptions = {}): Promise<string> {
  const list = await loadMigrations(opts.migrationsDir);
  return diffToSchema(db, opts, () => ({ tag: 'migrations', ...list }));
}

type EngineSession = Awaited<ReturnType<typeof openSchemaEngine>>;
type DiffSource = Parameters<EngineSession['engine']['diff']>[0]['from'];

/** Diffs `from` against schema.prisma as a script; the engine's exit code 2 means "there is a difference". */
async function diffToSchema(db: Database, opts: MigrateOptions, from: (session: EngineSession) => DiffSource): Promise<string> {
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

/** Prisma's folder-name rule for `migrate dev --name`: the engine prefixes the UTC timestamp. */
export function migrationSlug(name: string): string {
  const slug = name
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 200);
  if (!slug) throw new DatabaseError(`invalid migration name ${JSON.stringify(name)}: use letters, digits and _`);
  return slug;
}

export interface CreatedMigration {
  name: string;
  dir: string;
  sql: string;
}

/**
 * `prisma migrate dev --create-only --name <name>`: writes the next migration for the changes in schema.prisma,
 * or returns null when the migrations already produce that schema. It works on a scratch in-memory database
 * (migrations replayed, then diffed), so it touches neither Postgres nor the local PGlite data.
 */
export async function createMigration(opts: MigrateOptions & { name: string; draft?: boolean }): Promise<CreatedMigration | null> {
  const slug = migrationSlug(opts.name);
  const migrationsDir = resolve(opts.migrationsDir ?? MIGRATIONS_DIR);
  await mkdir(migrationsDir, { recursive: true });
  const list = await loadMigrations(migrationsDir);
  return withScratchDatabase(async (db) => {
    const session = await openSchemaEngine(db, opts);
    try {
      const { engine } = session;
      if (list.migrationDirectories.length > 0) {
        await runEngine(db, () => engine.applyMigrations({ migrationsList: list, filters: NO_FILTER }));
      }
      // devDiagnostic replays the history on a shadow database and caches the result, which createMigration
      // needs: the wasm engine cannot open a shadow database from createMigration itself.
      const diag = await runEngine(db, () => engine.devDiagnostic({ migrationsList: list, filters: NO_FILTER }));
      if (diag.action.tag === 'reset') throw new DatabaseError(`the migrations directory is inconsistent: ${diag.action.reason}`);
      const out = await runEngine(db, () =>
        engine.createMigration({
          draft: opts.draft ?? false,
          migrationName: slug,
          migrationsList: list,
          schema: session.schema,
          filters: NO_FILTER,
        }),
      );
      if (out.migrationScript === null) return null;
      const dir = join(migrationsDir, out.generatedMigrationName);
      await mkdir(dir, { recursive: false });
      await writeFile(join(dir, `migration.${out.extension}`), out.migrationScript, 'utf8');
      await writeFile(
        join(migrationsDir, 'migration_lock.toml'),
        `# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "${out.connectorType}"\n`,
        'utf8',
      );
      opts.log?.info({ migration: out.generatedMigrationName }, 'migration created');
      return { name: out.generatedMigrationName, dir, sql: out.migrationScript };
    } finally {
      await session.close();
    }
  });
}

/**
 * Runs fn on a throwaway in-memory PGlite database: schema work that must not touch anyone's data (creating
 * a migration, checking the migrations against schema.prisma) happens there.
 */
export async function withScratchDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const scratch = await PGlite.create();
  const db: Database = {
    prisma: null as never, // the engine talks to the driver directly; no client is needed
    kind: 'pglite',
    label: 'pglite:memory (scratch)',
    raw: { kind: 'pglite', pglite: scratch, dir: 'memory://' },
    listen: () => Promise.reject(new Error('the scratch database has no listeners')),
    notify: () => Promise.reject(new Error('the scratch database has no listeners')),
    close: () => scratch.close(),
  };
  try {
    return await fn(db);
  } finally {
    await scratch.close();
  }
}

/** The SQL a new migration would hold for the current schema.prisma ('' = the migrations are complete). */
export async function pendingSchemaChanges(opts: MigrateOptions = {}): Promise<string> {
  return withScratchDatabase((db) => diffMigrationsToSchema(db, opts));
}
