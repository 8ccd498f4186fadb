// Opens Sweetloop's database: Postgres when a URL is given, otherwise the embedded PGlite database persisted
// in a directory. Both are reached through the same generated Prisma client (driver adapters, no native
// engine), and both offer LISTEN/NOTIFY so the bot and the trainer can wake each other up.
import { existsSync, mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import { PrismaPg } from '@prisma/adapter-pg';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaClient } from './generated/client.ts';
import type { Logger } from '../tasks/logger.ts';
import { DatabaseError, describeDatabaseError } from './errors.ts';
import { DEFAULT_POOL_SIZE } from './pool-size.ts';
import { PgListener } from './pg-listener.ts';
import { DatabaseHeldError, heldByMessage, lockDirectory } from './pglite-lock.ts';
import { SERVED_PORT, servePglite, socketDirFor, socketPathFor, type ServedDatabase } from './pglite-server.ts';

export type DatabaseKind = 'postgres' | 'pglite';

export interface PostgresConnection {
  host: string;
  port: number;
  user: string;
  password?: string;
  database: string;
  ssl?: boolean;
}

/** The driver underneath Prisma, for the migration engine and tests that need raw SQL. */
export type RawDriver =
  | { kind: 'postgres'; pool: pg.Pool; connection: PostgresConnection }
  | { kind: 'pglite'; pglite: PGlite; dir: string };

export interface Database {
  prisma: PrismaClient;
  kind: DatabaseKind;
  /** Where the data lives, safe to print (never contains a password). */
  label: string;
  raw: RawDriver;
  /** Subscribe to a NOTIFY channel (lower-case letters, digits, `_`). Resolves once listening; returns unsubscribe. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  /**
   * Embedded database opened by this process: serves it to other sweetloop commands until closed
   * (prisma/pglite-server.ts). Called by `npm start` once the database is ready; absent elsewhere.
   */
  share?(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  databaseUrl?: string | undefined;
  pgliteDir: string;
  /** Most Postgres connections the pool opens (DATABASE_POOL_SIZE); LISTEN has one more of its own. PGlite: those to its owner. */
  poolSize?: number | undefined;
  log?: Logger | undefined;
  /**
   * When another process holds the embedded database and shares it, reach it through that process (default).
   * False for the bot and the console, which share it themselves: two of them cannot run on one PGlite.
   */
  throughOwner?: boolean | undefined;
}

export async function openDatabase(opts: OpenDatabaseOptions): Promise<Database> {
  return opts.databaseUrl
    ? openPostgres(parsePostgresUrl(opts.databaseUrl), opts.poolSize ?? DEFAULT_POOL_SIZE, opts.log)
    : openPglite(opts.pgliteDir, opts.log, opts.throughOwner ?? true, opts.poolSize ?? DEFAULT_POOL_SIZE);
}

// Channel names go into LISTEN unquoted on PGlite (which folds case) and quoted on Postgres: one strict form
// keeps both identical.
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;
function checkChannel(channel: string): void {
  if (!CHANNEL.test(channel)) {
    throw new Error(
      `invalid notification channel ${JSON.stringify(channel)}: use lower-case letters, digits and _ (max 63)`,
    );
  }
}

/**
 * Splits a postgres:// URL into the separate fields pg wants. The adapter is built from fields, not from a URL,
 * because pg's URL parsing mishandles some passwords and the schema engine needs the same fields for its
 * shadow databases.
 */
export function parsePostgresUrl(url: string): PostgresConnection {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new DatabaseError(
      'DATABASE_URL is not a valid URL (expected postgres://user[:password]@host[:port]/database)',
    );
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
    throw new DatabaseError(`DATABASE_URL must start with postgres:// or postgresql://, got ${u.protocol}//`);
  }
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!database)
    throw new DatabaseError('DATABASE_URL names no database (expected postgres://user@host:port/database)');
  const sslmode = u.searchParams.get('sslmode');
  const conn: PostgresConnection = {
    // ?host=/var/run/postgresql selects a Unix socket, as libpq allows.
    host: u.searchParams.get('host') ?? (u.hostname ? decodeURIComponent(u.hostname) : '127.0.0.1'),
    port: u.port ? Number(u.port) : 5432,
    user: u.username ? decodeURIComponent(u.username) : 'postgres',
    database,
  };
  if (u.password) conn.password = decodeURIComponent(u.password);
  if (sslmode && sslmode !== 'disable' && sslmode !== 'prefer' && sslmode !== 'allow') conn.ssl = true;
  return conn;
}

export function postgresLabel(c: PostgresConnection): string {
  return `postgres://${encodeURIComponent(c.user)}@${c.host.startsWith('/') ? `[${c.host}]` : c.host}:${c.port}/${c.database}`;
}

/**
 * How long a query or a transaction may wait for one of the pool's connections before it fails. Prisma's own wait
 * for an interactive transaction (maxWait) defaults to 2 s: under load (bench:bot at 200 people on a busy 2-core
 * machine) transactions failed with P2028 "Unable to start a transaction in the given time" while single queries
 * still waited, and their people saw an internal error. One wait for both.
 */
export const CONNECT_TIMEOUT_MS = 10_000;

export function poolConfig(c: PostgresConnection, extra: pg.PoolConfig = {}): pg.PoolConfig {
  return {
    host: c.host,
    port: c.port,
    user: c.user,
    password: c.password,
    database: c.database,
    ssl: c.ssl ? { rejectUnauthorized: false } : undefined,
    application_name: 'sweetloop',
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    ...extra,
  };
}

/** The embedded database reached through the process that owns it (prisma/pglite-server.ts). */
interface ThroughOwner {
  dir: string;
  pid: number;
  command: string | null;
}

/**
 * Through the owner every connection waits its turn for the one PGlite session, as the owner's own queries do (with
 * no time limit in-process): a busy moment (`simulate` storing 32 games, measured) queued a transaction past the
 * 10 s of CONNECT_TIMEOUT_MS with a pool of 2. Longer waits for a connection and a transaction's start, there only.
 */
const THROUGH_OWNER_WAIT_MS = 120_000;

async function openPostgres(
  conn: PostgresConnection,
  poolSize: number,
  log?: Logger,
  owner?: ThroughOwner,
): Promise<Database> {
  const label = owner
    ? `pglite:${owner.dir} (through process ${owner.pid}${owner.command ? `, \`${owner.command}\`` : ''})`
    : postgresLabel(conn);
  const pool = new pg.Pool(
    poolConfig(conn, { max: poolSize, ...(owner ? { connectionTimeoutMillis: THROUGH_OWNER_WAIT_MS } : {}) }),
  );
  // An idle client losing its connection emits 'error' on the pool; without a handler that kills the process.
  pool.on('error', (err) => log?.warn({ err: err.message, db: label }, 'idle Postgres connection lost'));
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await pool.end().catch(() => {});
    throw new DatabaseError(
      describeDatabaseError(err, { label, hint: 'Check DATABASE_URL and that Postgres is running.' }),
      { cause: err },
    );
  }
  const adapter = new PrismaPg(pool, {
    onPoolError: (err) => log?.warn({ err: err.message }, 'Postgres pool error'),
    onConnectionError: (err) => log?.warn({ err: err.message }, 'Postgres connection error'),
  });
  const prisma = new PrismaClient({
    adapter,
    transactionOptions: { maxWait: owner ? THROUGH_OWNER_WAIT_MS : CONNECT_TIMEOUT_MS },
  });
  const listener = new PgListener(poolConfig(conn), label, log);
  let closed = false;
  return {
    prisma,
    // Through the owner the data is still PGlite's (one session shared by all: see listen below).
    kind: owner ? 'pglite' : 'postgres',
    label,
    raw: { kind: 'postgres', pool, connection: conn },
    listen: (channel, onPayload) => {
      checkChannel(channel);
      // Every connection to the owner is the same PGlite session: its notifications reach the owner, not us, and
      // an UNLISTEN would end the owner's. Notifications are hints and listeners poll anyway: subscribe to none.
      if (owner) return Promise.resolve(async () => {});
      return listener.listen(channel, onPayload);
    },
    notify: async (channel, payload) => {
      checkChannel(channel);
      await pool.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await listener.close();
      await prisma.$disconnect();
      await pool.end();
    },
  };
}

/**
 * The embedded database held by another process: reached through it when it shares it (and `throughOwner`),
 * otherwise refused with a message that says who holds it and what to do.
 */
async function openHeld(
  held: DatabaseHeldError,
  throughOwner: boolean,
  poolSize: number,
  log?: Logger,
): Promise<Database> {
  const { dir, pid, command } = held;
  const sharing = existsSync(socketPathFor(dir));
  if (!sharing || !throughOwner || pid === process.pid)
    throw new DatabaseError(heldByMessage(dir, pid, command, pid === process.pid, { sharing }), { cause: held });
  const conn = { host: socketDirFor(dir), port: SERVED_PORT, user: 'postgres', database: 'template1' };
  try {
    const db = await openPostgres(conn, poolSize, log, { dir, pid, command });
    log?.debug({ dir, pid }, 'embedded database reached through the process that owns it');
    return db;
  } catch (err) {
    // It stopped (or is stopping) between the lock and the socket.
    throw new DatabaseError(`${heldByMessage(dir, pid, command, false)} (${(err as Error).message})`, { cause: err });
  }
}

async function openPglite(
  dirOption: string,
  log: Logger | undefined,
  throughOwner: boolean,
  poolSize: number,
): Promise<Database> {
  const dir = resolve(dirOption);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new DatabaseError(
      `cannot create the embedded database directory ${dir} (PGLITE_DIR): ${(err as Error).message}`,
      { cause: err },
    );
  }
  let unlock: () => void;
  try {
    unlock = lockDirectory(dir);
  } catch (err) {
    if (err instanceof DatabaseHeldError) return openHeld(err, throughOwner, poolSize, log);
    throw err;
  }
  let pglite: PGlite;
  try {
    pglite = await PGlite.create(dir);
  } catch (err) {
    unlock();
    throw new DatabaseError(`cannot open the embedded database at ${dir} (PGLITE_DIR): ${(err as Error).message}`, {
      cause: err,
    });
  }
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
  log?.debug({ dir }, 'embedded PGlite database open');
  let closed = false;
  let served: ServedDatabase | null = null;
  return {
    prisma,
    kind: 'pglite',
    label: `pglite:${dir}`,
    raw: { kind: 'pglite', pglite, dir },
    listen: async (channel, onPayload) => {
      checkChannel(channel);
      const off = await pglite.listen(channel, (payload) => {
        try {
          onPayload(payload);
        } catch (err) {
          log?.error({ err, channel }, 'notification handler failed');
        }
      });
      let done = false;
      return async () => {
        if (done || closed) return;
        done = true;
        await off();
      };
    },
    notify: async (channel, payload) => {
      checkChannel(channel);
      await pglite.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    share: async () => {
      if (!closed && !served) served = await servePglite(pglite, dir, { log });
    },
    close: async () => {
      if (closed) return;
      closed = true;
      try {
        await served?.close();
        await prisma.$disconnect();
        await pglite.close();
      } finally {
        unlock();
      }
    },
  };
}
