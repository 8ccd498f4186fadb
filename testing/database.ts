// Throwaway Postgres databases for tests.
//
//   const t = await createTestDatabase();   // fresh, randomly named, fully migrated database
//   t.prisma.participant.create(...)         // the Prisma client (same as t.db.prisma)
//   t.db                                     // the Database of prisma/db.ts (listen/notify, raw pool, label)
//   t.url                                    // postgres:// URL of it (for child processes: DATABASE_URL=t.url)
//   await t.drop();                          // closes the client and drops the database WITH (FORCE); idempotent
//
// Typical use: `let t; beforeAll(async () => { t = await createTestDatabase(); }); afterAll(() => t?.drop());`
// Server: postgres://postgres@127.0.0.1:5432 (trust auth), or TEST_POSTGRES_URL (any database on the server
// to connect to for admin work). Speed: the migrations run once per migrations-directory content into a
// template database (sweetloop_tmpl_<hash>); each test database is a copy of it (CREATE DATABASE ... TEMPLATE),
// so it carries the same _prisma_migrations rows as a migrated one. Test databases left by killed runs are
// dropped after 6 hours by the next run.
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase, parsePostgresUrl, poolConfig, type Database, type PostgresConnection } from '../prisma/db.ts';
import { migrate, MIGRATIONS_DIR } from '../prisma/migrate.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';

/**
 * Each test database's pool: smaller than DATABASE_POOL_SIZE's default, because test workers (and, on a shared
 * machine, several checkouts' suites) open databases at once on one Postgres of 100 connections.
 */
const TEST_POOL_SIZE = 10;

export interface TestDatabase {
  url: string;
  db: Database;
  prisma: PrismaClient;
  drop(): Promise<void>;
}

const ADMIN_URL = process.env.TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

function admin(): PostgresConnection {
  return parsePostgresUrl(ADMIN_URL);
}

function urlFor(conn: PostgresConnection, database: string): string {
  const auth = encodeURIComponent(conn.user) + (conn.password ? `:${encodeURIComponent(conn.password)}` : '');
  return `postgres://${auth}@${conn.host}:${conn.port}/${database}`;
}

async function withAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client(poolConfig(admin()));
  try {
    await c.connect();
  } catch (err) {
    throw new Error(
      `test database: cannot reach Postgres at ${admin().host}:${admin().port} (${(err as Error).message}). ` +
        'Start it (see .ci/run) or set TEST_POSTGRES_URL.',
    );
  }
  try {
    return await fn(c);
  } finally {
    await c.end().catch(() => {});
  }
}

/**
 * Whether the Postgres the tests use answers (test/preflight.ts asks before `npm test`): null when it does, else
 * where it looked and why it failed.
 */
export async function testPostgresProblem(): Promise<{ server: string; fromEnv: boolean; error: string } | null> {
  const c = new pg.Client(poolConfig(admin()));
  try {
    await c.connect();
    await c.query('SELECT 1');
    return null;
  } catch (err) {
    return {
      server: `${admin().host}:${admin().port}`,
      fromEnv: !!process.env.TEST_POSTGRES_URL,
      error: (err as Error).message,
    };
  } finally {
    await c.end().catch(() => {});
  }
}

function migrationsHash(): string {
  const h = createHash('sha256');
  for (const entry of readdirSync(MIGRATIONS_DIR).sort()) {
    const p = join(MIGRATIONS_DIR, entry, 'migration.sql');
    try {
      if (!statSync(join(MIGRATIONS_DIR, entry)).isDirectory()) continue;
      h.update(entry).update('\0').update(readFileSync(p)).update('\0');
    } catch {
      // A folder without migration.sql: the engine will complain when it migrates; nothing to hash.
    }
  }
  return h.digest('hex').slice(0, 16);
}

let templateReady: Promise<string> | null = null;

const ABANDONED_AFTER_MS = 6 * 3600_000;

/** Test databases of runs that were killed before drop(): their names carry their creation time. */
async function dropAbandoned(c: pg.Client): Promise<void> {
  const rows = (await c.query("SELECT datname FROM pg_database WHERE datname LIKE 'sweetloop\\_test\\_%'")).rows as {
    datname: string;
  }[];
  for (const { datname } of rows) {
    const created = parseInt(datname.split('_')[2] ?? '', 36);
    if (Number.isFinite(created) && Date.now() - created > ABANDONED_AFTER_MS) {
      await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`).catch(() => {});
    }
  }
}

/** Builds (once per migrations content, across processes) the migrated template database. */
function ensureTemplate(): Promise<string> {
  templateReady ??= (async () => {
    const name = `sweetloop_tmpl_${migrationsHash()}`;
    const exists = async (c: pg.Client, n: string) =>
      (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [n])).rowCount === 1;
    await withAdmin(async (c) => {
      await dropAbandoned(c);
      if (await exists(c, name)) return;
      // Several test files start at once: one builds, the others wait on the lock and then find it.
      const key = parseInt(name.slice(-8), 16) | 0;
      await c.query('SELECT pg_advisory_lock(7770001, $1)', [key]);
      try {
        if (await exists(c, name)) return;
        const building = `${name}_b${randomBytes(3).toString('hex')}`;
        await c.query(`CREATE DATABASE ${pg.escapeIdentifier(building)}`);
        try {
          const db = await openDatabase({
            databaseUrl: urlFor(admin(), building),
            pgliteDir: '',
            poolSize: TEST_POOL_SIZE,
          });
          try {
            await migrate(db);
          } finally {
            await db.close();
          }
          // Renamed only when complete, so a half-built template is never copied.
          await c.query(`ALTER DATABASE ${pg.escapeIdentifier(building)} RENAME TO ${pg.escapeIdentifier(name)}`);
        } catch (err) {
          await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(building)} WITH (FORCE)`).catch(() => {});
          throw err;
        }
        // Templates of older migration sets are dead weight; one still being copied elsewhere just stays.
        const old = await c.query(
          "SELECT datname FROM pg_database WHERE datname LIKE 'sweetloop\\_tmpl\\_%' AND datname <> $1",
          [name],
        );
        for (const row of old.rows as { datname: string }[]) {
          await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(row.datname)}`).catch(() => {});
        }
      } finally {
        await c.query('SELECT pg_advisory_unlock(7770001, $1)', [key]).catch(() => {});
      }
    });
    return name;
  })();
  templateReady.catch(() => {
    templateReady = null;
  });
  return templateReady;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  let template = await ensureTemplate();
  const name = `sweetloop_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await withAdmin(async (c) => {
    // Copying needs the template idle; another file's copy in the same instant makes Postgres refuse, so retry.
    // A checkout with other migrations (a second worktree testing at the same time) drops templates not its own:
    // then this one is built again.
    for (let attempt = 0, rebuilt = 0; ; attempt++) {
      try {
        await c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)}`);
        return;
      } catch (err) {
        if (rebuilt < 3 && /template database .* does not exist/.test((err as Error).message)) {
          rebuilt++;
          templateReady = null;
          template = await ensureTemplate();
          continue;
        }
        if (attempt >= 50 || !/being accessed by other users/.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  });
  const url = urlFor(admin(), name);
  let db: Database;
  try {
    db = await openDatabase({ databaseUrl: url, pgliteDir: '', poolSize: TEST_POOL_SIZE });
  } catch (err) {
    await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`)).catch(
      () => {},
    );
    throw err;
  }
  let dropped: Promise<void> | null = null;
  return {
    url,
    db,
    prisma: db.prisma,
    drop: () =>
      (dropped ??= (async () => {
        await db.close().catch(() => {});
        await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
      })()),
  };
}

export interface DatabaseBefore {
  db: Database;
  /** Applies the named migration and any after it, as `migrate` would on a database stored before them. */
  migrateRest(): ReturnType<typeof migrate>;
  drop(): Promise<void>;
}

/**
 * A fresh database migrated up to, not including, the first migration whose folder name ends with `suffix`:
 * the database as a version released before that migration left it, for tests of a migration that rewrites rows.
 */
export async function createDatabaseBefore(suffix: string): Promise<DatabaseBefore> {
  const entries = readdirSync(MIGRATIONS_DIR).sort();
  const target = entries.find((e) => e.endsWith(suffix));
  if (!target) throw new Error(`no migration ending in ${suffix} under ${MIGRATIONS_DIR}`);
  const before = mkdtempSync(join(tmpdir(), 'sweetloop-migrations-before-'));
  for (const e of entries)
    if (e < target && statSync(join(MIGRATIONS_DIR, e)).isDirectory())
      cpSync(join(MIGRATIONS_DIR, e), join(before, e), { recursive: true });
  const name = `sweetloop_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await withAdmin((c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`));
  const db = await openDatabase({ databaseUrl: urlFor(admin(), name), pgliteDir: '', poolSize: TEST_POOL_SIZE });
  await migrate(db, { migrationsDir: before });
  rmSync(before, { recursive: true, force: true });
  return {
    db,
    migrateRest: () => migrate(db),
    drop: async () => {
      await db.close().catch(() => {});
      await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
    },
  };
}
