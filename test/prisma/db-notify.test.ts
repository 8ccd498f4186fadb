// LISTEN/NOTIFY on Postgres: how the bot learns that the trainer deployed a policy. The listening connection
// must survive the server dropping it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

describe('listen/notify on Postgres', () => {
  it('delivers payloads to every handler of a channel, and none after unsubscribing', async () => {
    const a: string[] = [];
    const b: string[] = [];
    const offA = await t.db.listen('policy_deployed', (p) => a.push(p));
    const offB = await t.db.listen('policy_deployed', (p) => b.push(p));
    const other: string[] = [];
    const offOther = await t.db.listen('other_channel', (p) => other.push(p));
    await t.db.notify('policy_deployed', '{"version":"sweet-0001"}');
    await expect.poll(() => [a, b]).toEqual([['{"version":"sweet-0001"}'], ['{"version":"sweet-0001"}']]);
    expect(other).toEqual([]);
    await offA();
    await t.db.notify('policy_deployed', 'second');
    await expect.poll(() => b).toEqual(['{"version":"sweet-0001"}', 'second']);
    expect(a).toEqual(['{"version":"sweet-0001"}']);
    await offB();
    await offOther();
  });

  it('re-subscribes after the server terminates the listening connection', async () => {
    const got: string[] = [];
    const off = await t.db.listen('wake_trainer', (p) => got.push(p));
    const dbName = new URL(t.url).pathname.slice(1);
    const killed = await t.prisma.$queryRawUnsafe<{ n: bigint }[]>(
      `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN%'`,
      dbName,
    );
    expect(Number(killed[0]!.n)).toBe(1);
    // Keep notifying until the re-opened connection hears one: the gap while it reconnects is lost by design.
    await expect
      .poll(
        async () => {
          await t.db.notify('wake_trainer', 'ping');
          return got.length;
        },
        { timeout: 20_000, interval: 250 },
      )
      .toBeGreaterThan(0);
    await off();
  });

  it('refuses channel names that would differ between Postgres and PGlite', async () => {
    await expect(t.db.notify('Policy-Deployed', 'x')).rejects.toThrow(/invalid notification channel/);
  });
});
