// DATABASE_POOL_SIZE: validated in bin/config.ts, it is the most connections the opened database's pool holds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../bin/config.ts';
import { openDatabase } from '../../prisma/db.ts';
import { DEFAULT_POOL_SIZE } from '../../prisma/pool-size.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

/** Runs `n` queries at once through Prisma and returns the most connections the pool held. */
async function connectionsFor(poolSize: number, n: number): Promise<number> {
  const config = configSchema.parse({ DATABASE_URL: t.url, DATABASE_POOL_SIZE: String(poolSize) });
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    pgliteDir: '',
    poolSize: config.DATABASE_POOL_SIZE,
  });
  try {
    if (db.raw.kind !== 'postgres') throw new Error('expected Postgres');
    const pool = db.raw.pool;
    let most = 0;
    await Promise.all(
      Array.from({ length: n }, async () => {
        await db.prisma.$queryRawUnsafe('SELECT 1 AS one FROM pg_sleep(0.2)');
        most = Math.max(most, pool.totalCount);
      }),
    );
    return most;
  } finally {
    await db.close();
  }
}

describe('DATABASE_POOL_SIZE', () => {
  it('is the most connections the pool opens', async () => {
    expect(await connectionsFor(3, 8)).toBe(3);
    expect(await connectionsFor(6, 8)).toBe(6);
  });

  it('defaults to DEFAULT_POOL_SIZE and refuses sizes Postgres would not allow', () => {
    expect(configSchema.parse({}).DATABASE_POOL_SIZE).toBe(DEFAULT_POOL_SIZE);
    expect(configSchema.safeParse({ DATABASE_POOL_SIZE: '0' }).success).toBe(false);
    expect(configSchema.safeParse({ DATABASE_POOL_SIZE: '101' }).success).toBe(false);
    expect(configSchema.safeParse({ DATABASE_POOL_SIZE: '2.5' }).success).toBe(false);
  });
});

describe('a transaction waiting for a connection', () => {
  it("waits as long as a query would (not Prisma's 2 s): a pool of one, held for 3 s", async () => {
    const db = await openDatabase({ databaseUrl: t.url, pgliteDir: '', poolSize: 1 });
    try {
      const holder = db.prisma.$transaction(async (tx) => tx.$queryRawUnsafe('SELECT 1 AS one FROM pg_sleep(3)'), {
        timeout: 10_000,
      });
      await new Promise((r) => setTimeout(r, 200));
      const t0 = Date.now();
      await db.prisma.$transaction(async (tx) => tx.$queryRawUnsafe('SELECT 1 AS one'));
      expect(Date.now() - t0).toBeGreaterThan(2_000);
      await holder;
    } finally {
      await db.close();
    }
  });
});
