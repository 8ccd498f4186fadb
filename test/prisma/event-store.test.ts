// Interactions recorded by earlier versions: the old records are forgotten.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { pruneProcessed } from '../../prisma/event-store.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

describe('event store', () => {
  it('prunes the ones handled before the cutoff', async () => {
    await t.prisma.processedEvent.createMany({
      data: [
        { id: 'i-1', kind: 'interaction:2' },
        { id: 'i-2', kind: 'interaction:2' },
      ],
    });
    await t.prisma.processedEvent.update({
      where: { id: 'i-1' },
      data: { createdAt: new Date('2026-01-01T00:00:00Z') },
    });

    expect(await pruneProcessed(t.prisma, new Date('2026-01-02T00:00:00Z'))).toBe(1);
    expect((await t.prisma.processedEvent.findMany({ orderBy: { id: 'asc' } })).map((e) => e.id)).toEqual(['i-2']);
  });
});
