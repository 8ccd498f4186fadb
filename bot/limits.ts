// How much one person may take: sessions started per day, replies per minute and characters per reply. Counted
// from the database (what was stored), so a restart forgets nothing and a refused message leaves no trace.
// The engine applies them on every channel; the numbers come from the configuration (bin/config.ts).
import type { Prisma, PrismaClient } from '../prisma/generated/client.ts';

export interface Limits {
  /** Sessions a person may start in any 24 hours. */
  sessionsPerDay: number;
  /** Replies a person may send in any minute. */
  messagesPerMinute: number;
  /** Characters in one reply (the protocol's own caps per task kind apply too; the lower one wins). */
  messageChars: number;
}

const DAY_MS = 24 * 3600_000;
const MINUTE_MS = 60_000;

/** The refusal for the person, or null when they may start another session now. */
export async function sessionLimitRefusal(
  prisma: PrismaClient | Prisma.TransactionClient,
  participantId: string,
  limits: Limits,
  now = new Date(),
): Promise<string | null> {
  const since = new Date(now.getTime() - DAY_MS);
  const started = await prisma.session.count({ where: { participantId, startedAt: { gte: since }, simulated: false } });
  if (started < limits.sessionsPerDay) return null;
  const oldest = await prisma.session.findFirst({
    where: { participantId, startedAt: { gte: since } },
    orderBy: { startedAt: 'asc' },
    select: { startedAt: true },
  });
  const freeAt = new Date((oldest?.startedAt ?? now).getTime() + DAY_MS);
  return `You have started ${started} sessions in the last 24 hours, the most one person may. You can start another after ${freeAt.toISOString().slice(0, 16).replace('T', ' ')} UTC. Thank you for all your help!`;
}

/** The refusal for the person, or null when a reply of `length` characters may be taken now. */
export async function messageLimitRefusal(
  prisma: PrismaClient,
  participantId: string,
  length: number,
  limits: Limits,
  now = new Date(),
): Promise<string | null> {
  if (length > limits.messageChars)
    return `Your message is ${length} characters long; the limit is ${limits.messageChars}. Please shorten it and send it again.`;
  const since = new Date(now.getTime() - MINUTE_MS);
  const recent = await prisma.turn.count({
    where: { role: 'human', createdAt: { gte: since }, session: { participantId } },
  });
  if (recent >= limits.messagesPerMinute)
    return `You have sent ${recent} messages in the last minute, the most one person may. Please wait a moment, then send it again.`;
  return null;
}
