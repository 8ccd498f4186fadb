// The Flags page: the open moderation flags a viewer may act on (a guild moderator: their guild's sessions), each
// with its session, person (pseudonym), task, reason and whether a moderator confirmed it; and the two actions on
// one. Confirming keeps the session out of training and exports (the flag stays open, the confirmation is
// audited); clearing closes the flag, and the session counts again (prisma/moderation-store.ts closeFlag).
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { audit, closeFlag } from '../../prisma/moderation-store.ts';
import { pseudonymizer } from '../export/pseudonym.ts';
import type { Viewer } from './access.ts';

/** Flags listed on one page: the newest first. */
export const FLAGS_SHOWN = 200;
const CONFIRM = 'flag.confirm';

export interface FlagRow {
  id: string;
  sessionId: string;
  createdAt: Date;
  reason: string;
  /** Raised by the quality check, or by a moderator. */
  automatic: boolean;
  person: string;
  task: string;
  confirmed: { by: string; at: Date } | null;
}

function scope(viewer: Viewer) {
  return viewer.role === 'moderator' ? { session: { guildId: viewer.guildId } } : {};
}

export async function openFlags(prisma: PrismaClient, viewer: Viewer, salt: string): Promise<FlagRow[]> {
  const pseudo = pseudonymizer(salt);
  const flags = await prisma.moderationFlag.findMany({
    where: { resolvedAt: null, ...scope(viewer) },
    orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    take: FLAGS_SHOWN,
    include: {
      session: {
        select: {
          participant: { select: { discordUserId: true } },
          task: { select: { externalId: true, kind: true } },
        },
      },
    },
  });
  const confirmations = await prisma.auditLog.findMany({
    where: { action: CONFIRM, target: { in: flags.map((f) => f.id) } },
    orderBy: { createdAt: 'asc' },
  });
  const confirmed = new Map(confirmations.map((a) => [a.target!, { by: a.actor, at: a.createdAt }]));
  return flags.map((f) => ({
    id: f.id,
    sessionId: f.sessionId,
    createdAt: f.createdAt,
    reason: f.reason,
    automatic: f.flaggedById === null,
    person: pseudo(f.session.participant.discordUserId),
    task: `${f.session.task.kind} ${f.session.task.externalId}`,
    confirmed: confirmed.get(f.id) ?? null,
  }));
}

/** Confirms or clears an open flag in the viewer's reach; false when there is none such. */
export async function actOnFlag(
  prisma: PrismaClient,
  viewer: Viewer,
  flagId: string,
  action: 'confirm' | 'clear',
  note: string | null,
): Promise<boolean> {
  const actor = { id: viewer.actor, guildId: viewer.guildId, everyGuild: viewer.role === 'operator' };
  if (action === 'clear')
    return (await closeFlag(prisma, actor, flagId, note ?? 'cleared on the dashboard')) === 'closed';
  const flag = await prisma.moderationFlag.findFirst({
    where: { id: flagId, resolvedAt: null, ...scope(viewer) },
    select: { sessionId: true },
  });
  if (!flag) return false;
  await audit(prisma, actor, CONFIRM, flagId, { sessionId: flag.sessionId, note });
  return true;
}
