// Interactions handled once: a redelivered id is reported as seen, and old records are forgotten.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { markProcessed, pruneProcessed } from '../../prisma/event-store.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

describe('event store', () => {
  it('records an interaction once, and prunes the ones handled before the cutoff', async () => {
    expect(await markProcessed(t.prisma, 'i-1', 'interaction:2')).toBe(true);
    expect(await markProcessed(t.prisma, 'i-1', 'interaction:2')).toBe(false);
    expect(await markProcessed(t.prisma, 'i-2', 'interaction:2')).toBe(true);
    await t.prisma.processedEvent.update({
      where: { id: 'i-1' },
      data: { createdAt: new Date('2026-01-01T00:00:00Z') },
    });

    expect(await pruneProcessed(t.prisma, new Date('2026-01-02T00:00:00Z'))).toBe(1);
    expect((await t.prisma.processedEvent.findMany({ orderBy: { id: 'asc' } })).map((e) => e.id)).toEqual(['i-2']);
    // Forgotten: the same id counts as new again.
    expect(await markProcessed(t.prisma, 'i-1', 'interaction:2')).toBe(true);
  });
});
