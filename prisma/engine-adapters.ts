// Driver adapters for the schema engine (schema-engine.ts), on Postgres and on PGlite, with what the stock adapters
// lack for it: shadow databases made and dropped by us, Postgres' one-byte "char" columns read as text, and
// scripts that are awaited.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import type { Logger } from '../tasks/logger.ts';
import type { Database, PostgresConnection } from './db.ts';
import { poolConfig } from './db.ts';
import { DatabaseError } from './errors.ts';

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
          return async (...args: unknown[]) =>
            charColumnsAsText(await (v as (...a: unknown[]) => Promise<unknown>).apply(t, args));
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

/** Runs a script through `exec` (the PGlite adapter's executeScript does not await it: errors escape and ordering is luck). */
function awaitingScripts<A extends SqlDriverAdapter>(adapter: A, exec: (script: string) => Promise<unknown>): A {
  adapter.executeScript = async (script: string) => {
    try {
      await exec(script);
    } catch (err) {
      (adapter as unknown as { onError(e: unknown): never }).onError(err);
    }
  };
  return adapter;
}

export interface EngineAdapter {
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
  // @prisma/adapter-pg runs a script split at every ';', which cuts a function body (a trigger's) in pieces: the
  // script goes to Postgres whole instead, one simple-protocol query, as Prisma's native engine sends it.
  const wholeScripts = <A extends SqlDriverAdapter>(adapter: A, pool: pg.Pool) =>
    awaitingScripts(adapter, (script) => pool.query(script));
  class Factory extends PrismaPg {
    override async connect() {
      return wholeScripts(await super.connect(), mainPool);
    }

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
      const adapter = wholeScripts(await new PrismaPg(pool).connect(), pool);
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

/** The engine's adapter factory for this database, and how to close what it opened (shadow databases included). */
export function engineAdapterFor(db: Database, log?: Logger): EngineAdapter {
  return db.raw.kind === 'postgres'
    ? postgresEngineAdapter(db.raw.connection, log)
    : pgliteEngineAdapter(db.raw.pglite);
}
