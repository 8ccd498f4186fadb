// Interactions handled, as earlier versions recorded them (a row each). Discord's own refusal of a second
// acknowledgement now tells a redelivery (bot/discord/context.ts ack), so nothing writes here; the rows left are
// pruned now and then.
import type { PrismaClient } from './generated/client.ts';

/** Forgets events recorded before `cutoff`; returns how many. */
export async function pruneProcessed(prisma: PrismaClient, cutoff: Date): Promise<number> {
  const r = await prisma.processedEvent.deleteMany({ where: { createdAt: { lt: cutoff } } });
  return r.count;
}
