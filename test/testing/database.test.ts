// testing/database.ts: a test database is a copy of the migrated template, and a template dropped under a
// running process (by a checkout with other migrations testing at the same time) is built again.
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase } from '../../testing/database.ts';

const ADMIN = process.env.TEST_POSTGRES_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

describe('test databases', () => {
  it('copies the template, and builds it again when another run dropped it', async () => {
    const first = await createTestDatabase();
    const c = new pg.Client({ connectionString: ADMIN });
    await c.connect();
    try {
      const templates = (await c.query("SELECT datname FROM pg_database WHERE datname LIKE 'sweetloop\\_tmpl\\_%'"))
        .rows as { datname: string }[];
      expect(templates.length).toBeGreaterThan(0);
      // Without FORCE, as the other run drops it: a copy being made elsewhere this instant makes Postgres refuse.
      for (const t of templates) {
        for (let attempt = 0; ; attempt++) {
          try {
            await c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(t.datname)}`);
            break;
          } catch (err) {
            if (attempt >= 50 || !/being accessed by other users/.test((err as Error).message)) throw err;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      }
    } finally {
      await c.end();
    }
    const second = await createTestDatabase();
    expect(await second.db.prisma.task.count()).toBe(0);
    await first.drop();
    await second.drop();
  }, 120_000);
});
