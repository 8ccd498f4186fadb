// Writes Session.activeMs, a session's active time (tasks/study-pay.ts activeMs over its start, turns and end), once
// it has ended: study pay, progress and the dashboard's people page then read one number a session instead of every
// turn (prisma/study-stats.ts sessionTimes reads the column, and the moments only where it is still null).
import { Prisma, type PrismaClient } from './generated/client.ts';
import { MOMENTS, activeMsOf } from './study-stats.ts';

type Tx = Prisma.TransactionClient;

/** Sessions whose time one call computes at most (the startup fill repeats until none is left). */
const BATCH = 5_000;

/**
 * Records the active time of the given ended sessions (of every ended session without one when `ids` is omitted,
 * BATCH at a time); returns how many were written. A session still active is left alone.
 */
export async function recordActiveTimes(prisma: PrismaClient | Tx, ids?: readonly string[]): Promise<number> {
  if (ids && ids.length === 0) return 0;
  let written = 0;
  for (;;) {
    const which = ids ? Prisma.sql`s.id = ANY(${[...ids]}::uuid[])` : Prisma.sql`s."activeMs" IS NULL`;
    const rows = await prisma.$queryRaw<{ id: string; moments: string }[]>`
      SELECT s.id, ${MOMENTS} AS moments FROM "Session" s
      WHERE ${which} AND s."endedAt" IS NOT NULL ORDER BY s.id LIMIT ${BATCH}`;
    if (rows.length) {
      // Each id's row is locked in id order before the write, so two processes filling at once wait, not deadlock.
      await prisma.$executeRaw`
        WITH locked AS (SELECT id FROM "Session" WHERE id = ANY(${rows.map((r) => r.id)}::uuid[]) ORDER BY id FOR UPDATE)
        UPDATE "Session" s SET "activeMs" = v.ms
        FROM (SELECT unnest(${rows.map((r) => r.id)}::uuid[]) AS id, unnest(${rows.map((r) => activeMsOf(r.moments))}::int[]) AS ms) v
        WHERE s.id = v.id AND s.id IN (SELECT id FROM locked)`;
    }
    written += rows.length;
    if (ids || rows.length < BATCH) return written;
  }
}
