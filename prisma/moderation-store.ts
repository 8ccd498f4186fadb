// The moderators' writes: collection paused or resumed, bans lifted or laid, sessions flagged and flags closed,
// the roles people act in, the share of gold checks, and the audit row each of them writes in its own
// transaction. Who may do what is decided by the callers (bot/moderation.ts, bot/gold.ts).
import { recordActiveTimes } from './active-time-store.ts';
import { randomUUID } from 'node:crypto';
import { Prisma, type PrismaClient } from './generated/client.ts';
import { SIMULATED_ROLE } from './cohorts.ts';

/** Setting keys (the Setting table): collection paused, and the share of new sessions that are gold checks. */
export const PAUSED_KEY = 'paused';
export const GOLD_SHARE_KEY = 'gold-checks';

/** Who acted, as the audit log names them: an id (a person's, or 'cli', 'quality', ...) and the guild they acted in. */
export interface AuditActor {
  id: string;
  guildId: string | null;
}

function auditActor(a: string | AuditActor): AuditActor {
  return typeof a === 'string' ? { id: a, guildId: null } : { id: a.id, guildId: a.guildId };
}

export async function audit(
  prisma: PrismaClient | Prisma.TransactionClient,
  actor: string | AuditActor,
  action: string,
  target: string | null,
  detail?: Prisma.InputJsonValue,
): Promise<void> {
  await prisma.$executeRaw(auditInsert(actor, action, target, detail));
}

/** The audit row's INSERT, for a statement that writes it with what it records (prisma/participant-store.ts). */
export function auditInsert(
  actor: string | AuditActor,
  action: string,
  target: string | null,
  detail?: Prisma.InputJsonValue,
): Prisma.Sql {
  const a = auditActor(actor);
  return Prisma.sql`INSERT INTO "AuditLog" (id, actor, action, target, "guildId", detail, "createdAt")
    VALUES (${randomUUID()}::uuid, ${a.id}, ${action}, ${target}, ${a.guildId},
      ${detail === undefined ? null : JSON.stringify(detail)}::jsonb, ${new Date()}::timestamp(3))`;
}

export async function setPaused(prisma: PrismaClient, actor: string | AuditActor, paused: boolean): Promise<void> {
  await prisma.$transaction(async (tx) => {
    const value = { paused, by: auditActor(actor).id, at: new Date().toISOString() };
    await tx.setting.upsert({ where: { key: PAUSED_KEY }, create: { key: PAUSED_KEY, value }, update: { value } });
    await audit(tx, actor, paused ? 'collection.pause' : 'collection.resume', null);
  });
}

/** Stores the share (in [0, 1], checked by the caller) of new sessions that are gold checks. */
export async function saveGoldShare(prisma: PrismaClient, actor: string, share: number): Promise<void> {
  await prisma.$transaction(async (tx) => {
    const value = { share, by: actor, at: new Date().toISOString() };
    await tx.setting.upsert({
      where: { key: GOLD_SHARE_KEY },
      create: { key: GOLD_SHARE_KEY, value },
      update: { value },
    });
    await audit(tx, actor, 'gold.share', null, { share });
  });
}

/**
 * Bans a person everywhere (`guildId` null) or in one guild, and ends their active sessions there; returns the
 * ids of the sessions ended.
 */
export async function recordBan(
  prisma: PrismaClient,
  actor: AuditActor,
  externalId: string,
  o: { reason: string | null; guildId: string | null },
): Promise<string[]> {
  const everywhere = o.guildId === null;
  return prisma.$transaction(async (tx) => {
    const now = new Date();
    const p = await tx.participant.upsert({
      where: { discordUserId: externalId },
      create: {
        discordUserId: externalId,
        ...(everywhere ? { banned: true, bannedAt: now, bannedReason: o.reason } : { bannedGuildIds: [o.guildId!] }),
      },
      update: everywhere ? { banned: true, bannedAt: now, bannedReason: o.reason } : {},
    });
    if (!everywhere && !p.bannedGuildIds.includes(o.guildId!)) {
      await tx.participant.update({ where: { id: p.id }, data: { bannedGuildIds: { push: o.guildId! } } });
    }
    const where = { participantId: p.id, status: 'active' as const, ...(everywhere ? {} : { guildId: o.guildId }) };
    const active = await tx.session.findMany({ where, select: { id: true } });
    await tx.session.updateMany({ where, data: { status: 'abandoned', endedAt: now, endReason: 'banned' } });
    await recordActiveTimes(
      tx,
      active.map((s) => s.id),
    );
    await audit(tx, actor, everywhere ? 'participant.ban' : 'participant.guild-ban', externalId, {
      reason: o.reason,
      endedSessions: active.map((s) => s.id),
    });
    return active.map((s) => s.id);
  });
}

/**
 * Lifts a ban: everywhere (`guildId` null: the global ban and every guild's) or one guild's. False when there
 * was none to lift.
 */
export async function liftBan(
  prisma: PrismaClient,
  actor: AuditActor,
  externalId: string,
  guildId: string | null,
): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const p = await tx.participant.findUnique({ where: { discordUserId: externalId } });
    if (!p) return false;
    if (guildId === null) {
      if (!p.banned && !p.bannedGuildIds.length) return false;
      await tx.participant.update({
        where: { id: p.id },
        data: { banned: false, bannedAt: null, bannedReason: null, bannedGuildIds: [] },
      });
    } else {
      if (!p.bannedGuildIds.includes(guildId)) return false;
      await tx.participant.update({
        where: { id: p.id },
        data: { bannedGuildIds: p.bannedGuildIds.filter((g) => g !== guildId) },
      });
    }
    await audit(tx, actor, 'participant.unban', externalId);
    return true;
  });
}

/** Where a moderator acts: every guild (an operator), or only the guild they act in. */
export interface FlagScope {
  everyGuild: boolean;
}

/** Flags a session; null (nothing written) when there is no such session within the actor's reach. */
export async function recordFlag(
  prisma: PrismaClient,
  actor: AuditActor & FlagScope,
  sessionId: string,
  reason: string,
): Promise<string | null> {
  return prisma.$transaction(async (tx) => {
    const session = await tx.session.findUnique({ where: { id: sessionId }, select: { id: true, guildId: true } });
    if (!session || (!actor.everyGuild && session.guildId !== actor.guildId)) return null;
    const mod = await tx.participant.upsert({
      where: { discordUserId: actor.id },
      create: { discordUserId: actor.id, role: actor.everyGuild ? 'operator' : 'moderator' },
      update: {},
    });
    const flag = await tx.moderationFlag.create({ data: { sessionId, flaggedById: mod.id, reason } });
    await audit(tx, actor, 'session.flag', sessionId, { reason, flagId: flag.id });
    return flag.id;
  });
}

/** Closes an open flag with a reason; 'missing' when there is none within the actor's reach (nothing written). */
export async function closeFlag(
  prisma: PrismaClient,
  actor: AuditActor & FlagScope,
  flagId: string,
  reason: string,
): Promise<'closed' | 'missing' | 'closed-before'> {
  return prisma.$transaction(async (tx) => {
    const flag = await tx.moderationFlag.findUnique({
      where: { id: flagId },
      include: { session: { select: { guildId: true } } },
    });
    if (!flag || (!actor.everyGuild && flag.session.guildId !== actor.guildId)) return 'missing';
    if (flag.resolvedAt) return 'closed-before';
    await tx.moderationFlag.update({
      where: { id: flagId },
      data: { resolvedAt: new Date(), resolvedBy: actor.id, resolvedReason: reason },
    });
    await audit(tx, actor, 'flag.resolve', flagId, { reason, sessionId: flag.sessionId });
    return 'closed';
  });
}

/** Records what the person is (operator or moderator) as their participant role; never demotes an operator. */
export async function recordRole(
  prisma: PrismaClient,
  externalId: string,
  role: 'operator' | 'moderator',
): Promise<void> {
  const p = await prisma.participant.findUnique({ where: { discordUserId: externalId }, select: { role: true } });
  if (p && (p.role === role || p.role === 'operator' || p.role === SIMULATED_ROLE)) return;
  await prisma.participant.upsert({
    where: { discordUserId: externalId },
    create: { discordUserId: externalId, role },
    update: { role },
  });
}

/** Sessions that unresolved moderation flags keep out of a selection, and why (the flags' reasons). */
export interface FlagExclusions {
  sessions: number;
  reasons: { reason: string; sessions: number }[];
}

/** The open flags of the sessions `where` selects (whatever their flags), as (session, reason) rows. */
export async function openFlagsAmong(
  prisma: PrismaClient,
  where: Prisma.SessionWhereInput,
): Promise<{ sessionId: string; reason: string }[]> {
  return prisma.moderationFlag.findMany({
    where: { resolvedAt: null, session: where },
    select: { sessionId: true, reason: true },
  });
}

export function flagExclusions(rows: readonly { sessionId: string; reason: string }[]): FlagExclusions {
  const byReason = new Map<string, Set<string>>();
  for (const r of rows) byReason.set(r.reason, (byReason.get(r.reason) ?? new Set()).add(r.sessionId));
  const reasons = [...byReason]
    .map(([reason, ids]) => ({ reason, sessions: ids.size }))
    .sort((a, b) => b.sessions - a.sessions || a.reason.localeCompare(b.reason));
  return { sessions: new Set(rows.map((r) => r.sessionId)).size, reasons };
}

/** One line for whoever ran an export or a training run; null when flags kept nothing out. */
export function describeFlagExclusions(x: FlagExclusions): string | null {
  if (x.sessions === 0) return null;
  const why = x.reasons.map((r) => `${r.reason} (${r.sessions})`).join('; ');
  return `${x.sessions} session(s) left out by unresolved moderation flags: ${why}. A moderator confirms or clears them on the dashboard's Flags page (/flags).`;
}
