// The interactions already handled, so that one Discord delivers again is not handled twice (bot/services.ts).
import type { PrismaClient } from './generated/client.ts';
import { UniqueViolationError, toDatabaseError } from './errors.ts';

/** Records an interaction as handled; false when it was recorded before (a redelivery). */
export async function markProcessed(prisma: PrismaClient, id: string, kind: string): Promise<boolean> {
  try {
    await prisma.processedEvent.create({ data: { id, kind } });
    return true;
  } catch (err) {
    if (toDatabaseError(err) instanceof UniqueViolationError) return false;
    throw err;
  }
}

/** Forgets the interactions handled before `cutoff`; returns how many. */
export async function pruneProcessed(prisma: PrismaClient, cutoff: Date): Promise<number> {
  return (await prisma.processedEvent.deleteMany({ where: { createdAt: { lt: cutoff } } })).count;
}
