// Interactions and gateway events already handled: a redelivered one is recognised by its id and handled once.
// Rows older than the redelivery window (minutes) are pruned now and then.
import { UniqueViolationError, toDatabaseError } from './errors.ts';
import type { PrismaClient } from './generated/client.ts';

/** Records an event as handled; false when it was handled before (a redelivery). */
export async function markProcessed(prisma: PrismaClient, id: string, kind: string): Promise<boolean> {
  try {
    await prisma.processedEvent.create({ data: { id, kind } });
    return true;
  } catch (err) {
    if (toDatabaseError(err) instanceof UniqueViolationError) return false;
    throw err;
  }
}

/** Forgets events recorded before `cutoff`; returns how many. */
export async function pruneProcessed(prisma: PrismaClient, cutoff: Date): Promise<number> {
  const r = await prisma.processedEvent.deleteMany({ where: { createdAt: { lt: cutoff } } });
  return r.count;
}
