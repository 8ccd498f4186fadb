// What moderators can do besides deploying policies: pause and resume collection, ban and unban people, flag
// sessions, read statistics. Every action is written to the audit log with who did it.
import type { Prisma, PrismaClient } from '../prisma/generated/client.ts';

export const PAUSED_KEY = 'paused';

export class ModerationError extends Error {
  override name = 'ModerationError';
}

export async function audit(prisma: PrismaClient | Prisma.TransactionClient, actor: string, action: string, target: string | null, detail?: Prisma.InputJsonValue): Promise<void> {
  await prisma.auditLog.create({ data: { actor, action, target, ...(detail !== undefined ? { detail } : {}) } });
}

export async function isPaused(prisma: PrismaClient): Promise<boolean> {
  const s = await prisma.setting.findUnique({ where: { key: PAUSED_KEY } });
  return (s?.value as { paused?: boolean } | null)?.paused === true;
}

export async function setPaused(prisma: PrismaClient, actor: string, paused: boolean): Promise<void> {
  await prisma.$transaction(async (tx) => {
    const value = { paused, by: actor, at: new Date().toISOString() };
    await tx.setting.upsert({ where: { key: PAUSED_KEY }, create: { key: PAUSED_KEY, value }, update: { value } });
    await audit(tx, actor, paused ? 'collection.pause' : 'collection.resume', null);
  });
}

/** Bans a person and ends their active session; returns the ids of the sessions ended. */
export async function ban(prisma: PrismaClient, actor: string, externalId: string, reason: string | null): Promise<string[]> {
  return prisma.$transaction(async (tx) => {
    const p = await tx.participant.upsert({
      where: { discordUserId: externalId },
      create: { discordUserId: externalId, banned: true, bannedAt: new Date(), bannedReason: reason },
      update: { banned: true, bannedAt: new Date(), bannedReason: reason },
    });
    const active = await tx.session.findMany({ where: { participantId: p.id, status: 'active' }, select: { id: true } });
    await tx.session.updateMany({
      where: { participantId: p.id, status: 'active' },
      data: { status: 'abandoned', endedAt: new Date(), endReason: 'banned' },
    });
    await audit(tx, actor, 'participant.ban', externalId, { reason, endedSessions: active.map((s) => s.id) });
    return active.map((s) => s.id);
  });
}

export async function unban(prisma: PrismaClient, actor: string, externalId: string): Promise<boolean> {
  return prisma.$transaction(async (tx) => {
    const p = await tx.participant.findUnique({ where: { discordUserId: externalId } });
    if (!p?.banned) return false;
    await tx.participant.update({ where: { id: p.id }, data: { banned: false, bannedAt: null, bannedReason: null } });
    await audit(tx, actor, 'participant.unban', externalId);
    return true;
  });
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function flagSession(prisma: PrismaClient, actor: string, sessionId: string, reason: string): Promise<string> {
  if (!UUID.test(sessionId)) throw new ModerationError(`"${sessionId}" is not a session id (expected a UUID, as shown by /task status).`);
  return prisma.$transaction(async (tx) => {
    const session = await tx.session.findUnique({ where: { id: sessionId }, select: { id: true } });
    if (!session) throw new ModerationError(`No session ${sessionId}.`);
    const mod = await tx.participant.upsert({ where: { discordUserId: actor }, create: { discordUserId: actor, role: 'moderator' }, update: {} });
    const flag = await tx.moderationFlag.create({ data: { sessionId, flaggedById: mod.id, reason } });
    await audit(tx, actor, 'session.flag', sessionId, { reason, flagId: flag.id });
    return flag.id;
  });
}

export interface Stats {
  participants: number;
  consented: number;
  banned: number;
  sessions: Record<string, number>;
  answeredByKind: Record<string, number>;
  tasksByKind: Record<string, number>;
  meanScore: number | null;
  successRate: number | null;
  meanRating: number | null;
  ratings: number;
  flags: number;
  deployedPolicy: string | null;
  paused: boolean;
}

export async function stats(prisma: PrismaClient): Promise<Stats> {
  const [participants, consented, banned, byStatus, answered, tasks, evals, ratingAgg, flags, deployed, paused] = await Promise.all([
    prisma.participant.count(),
    prisma.participant.count({ where: { consentGivenAt: { not: null } } }),
    prisma.participant.count({ where: { banned: true } }),
    prisma.session.groupBy({ by: ['status'], _count: { _all: true } }),
    prisma.session.findMany({ where: { status: 'answered' }, select: { task: { select: { kind: true } } } }),
    prisma.task.groupBy({ by: ['kind'], _count: { _all: true } }),
    prisma.evaluation.aggregate({ _avg: { score: true }, _count: { _all: true } }),
    prisma.rating.aggregate({ _avg: { value: true }, _count: { _all: true } }),
    prisma.moderationFlag.count({ where: { resolvedAt: null } }),
    prisma.policyVersion.findFirst({ where: { status: 'deployed' }, select: { name: true } }),
    isPaused(prisma),
  ]);
  const successes = await prisma.evaluation.count({ where: { success: true } });
  const answeredByKind: Record<string, number> = { backend: 0, frontend: 0 };
  for (const s of answered) answeredByKind[s.task.kind] = (answeredByKind[s.task.kind] ?? 0) + 1;
  return {
    participants,
    consented,
    banned,
    sessions: Object.fromEntries(byStatus.map((s) => [s.status, s._count._all])),
    answeredByKind,
    tasksByKind: Object.fromEntries(tasks.map((t) => [t.kind, t._count._all])),
    meanScore: evals._avg.score,
    successRate: evals._count._all ? successes / evals._count._all : null,
    meanRating: ratingAgg._avg.value,
    ratings: ratingAgg._count._all,
    flags,
    deployedPolicy: deployed?.name ?? null,
    paused,
  };
}

export function formatStats(s: Stats): string {
  const pct = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(1)}%`);
  return [
    `Participants: ${s.participants} (${s.consented} consented, ${s.banned} banned)`,
    `Sessions: ${Object.entries(s.sessions).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'}`,
    `Answered: backend ${s.answeredByKind.backend ?? 0} of ${s.tasksByKind.backend ?? 0} tasks, frontend ${s.answeredByKind.frontend ?? 0} of ${s.tasksByKind.frontend ?? 0} tasks`,
    `Mean score: ${s.meanScore === null ? '—' : s.meanScore.toFixed(3)}; success: ${pct(s.successRate)}`,
    `Ratings: ${s.ratings}, mean ${s.meanRating === null ? '—' : s.meanRating.toFixed(2)}`,
    `Open flags: ${s.flags}`,
    `Deployed policy: ${s.deployedPolicy ?? 'none'}${s.paused ? '\nCollection is PAUSED' : ''}`,
  ].join('\n');
}
