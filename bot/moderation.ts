// What moderators can do besides deploying policies: pause and resume collection, ban and unban people, flag
// sessions, read statistics. Here: who may do what, and what they are told when they may not; the writes, each
// audited with who did it, are prisma/moderation-store.ts's.
import type { PrismaClient } from '../prisma/generated/client.ts';
import { closeFlag, liftBan, PAUSED_KEY, recordBan, recordFlag } from '../prisma/moderation-store.ts';
import { markedName, trainedOnErasedData } from '../prisma/policy-store.ts';
import { consentedWhere } from '../prisma/cohorts.ts';

export class ModerationError extends Error {
  override name = 'ModerationError';
}

/**
 * Who acts, and where: a Discord user in a guild (moderators act within it), an operator (everywhere), or the
 * CLI. A plain string is an actor without a guild.
 */
export interface Actor {
  id: string;
  guildId: string | null;
  /** Operators act on every guild; others only on `guildId`. */
  operator: boolean;
}

export function actorOf(a: string | Actor): Actor {
  return typeof a === 'string' ? { id: a, guildId: null, operator: true } : a;
}

export async function isPaused(prisma: PrismaClient): Promise<boolean> {
  const s = await prisma.setting.findUnique({ where: { key: PAUSED_KEY } });
  return pausedIn(s?.value);
}

/** Whether the stored value of the Setting PAUSED_KEY (absent: undefined) says collection is paused. */
export function pausedIn(value: unknown): boolean {
  return (value as { paused?: boolean } | null | undefined)?.paused === true;
}

/**
 * Bans a person and ends their active session; returns the ids of the sessions ended. `everywhere` (operators
 * only) bans from every guild; otherwise the ban holds in the actor's guild and ends only a session there.
 */
export async function ban(
  prisma: PrismaClient,
  actor: string | Actor,
  externalId: string,
  reason: string | null,
  everywhere = true,
): Promise<string[]> {
  const a = actorOf(actor);
  if (everywhere && !a.operator)
    throw new ModerationError('Only an operator can ban someone everywhere; your ban holds in this server.');
  if (!everywhere && !a.guildId) throw new ModerationError('A ban within a server needs the server.');
  return recordBan(prisma, a, externalId, { reason, guildId: everywhere ? null : a.guildId });
}

/** Lifts a ban: a moderator's in their guild, an operator's everywhere (the global ban and every guild's). */
export async function unban(prisma: PrismaClient, actor: string | Actor, externalId: string): Promise<boolean> {
  const a = actorOf(actor);
  if (!a.operator && !a.guildId) return false;
  return liftBan(prisma, a, externalId, a.operator ? null : a.guildId);
}

/** Is the person banned from sessions in this guild (everywhere, or there)? */
export function isBannedIn(
  p: { banned: boolean; bannedGuildIds: string[] },
  guildId: string | null | undefined,
): boolean {
  return p.banned || (!!guildId && p.bannedGuildIds.includes(guildId));
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function flagSession(
  prisma: PrismaClient,
  actor: string | Actor,
  sessionId: string,
  reason: string,
): Promise<string> {
  const a = actorOf(actor);
  if (!UUID.test(sessionId))
    throw new ModerationError(`"${sessionId}" is not a session id (expected a UUID, as shown by /task status).`);
  const flagId = await recordFlag(prisma, { ...a, everyGuild: a.operator }, sessionId, reason);
  // Another guild's session is "not found" for a guild moderator: they may not learn that it exists.
  if (!flagId) throw new ModerationError(`No session ${sessionId}.`);
  return flagId;
}

export interface OpenFlag {
  id: string;
  sessionId: string;
  reason: string;
  createdAt: Date;
}

/** Open (unresolved) flags, oldest first: the actor's guild's, or every guild's for an operator. */
export async function openFlags(prisma: PrismaClient, actor: string | Actor, take = 25): Promise<OpenFlag[]> {
  const a = actorOf(actor);
  return prisma.moderationFlag.findMany({
    where: { resolvedAt: null, ...(a.operator ? {} : { session: { guildId: a.guildId } }) },
    orderBy: { createdAt: 'asc' },
    take,
    select: { id: true, sessionId: true, reason: true, createdAt: true },
  });
}

/** Closes an open flag with a reason (audited); the session is exported again unless flagged otherwise. */
export async function resolveFlag(
  prisma: PrismaClient,
  actor: string | Actor,
  flagId: string,
  reason: string,
): Promise<void> {
  const a = actorOf(actor);
  if (!UUID.test(flagId)) throw new ModerationError(`"${flagId}" is not a flag id (see /mod flags).`);
  const outcome = await closeFlag(prisma, { ...a, everyGuild: a.operator }, flagId, reason);
  if (outcome === 'missing') throw new ModerationError(`No flag ${flagId}.`);
  if (outcome === 'closed-before') throw new ModerationError(`Flag ${flagId} was resolved already.`);
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
  /** Versions trained on sessions of people whose data was deleted (deployed only with an operator's force). */
  erasedDataVersions: string[];
  paused: boolean;
  /** The promotion gate's last decision, in one line (bot/report/gate.ts). */
  lastGate?: string;
}

/** Collection statistics: every guild's, or with `guildId` only the sessions and people of that guild. */
export async function stats(prisma: PrismaClient, guildId?: string | null): Promise<Stats> {
  const inGuild = guildId ? { guildId } : {};
  const people = guildId ? { sessions: { some: { guildId } } } : {};
  const [
    participants,
    consented,
    banned,
    byStatus,
    answered,
    tasks,
    evals,
    ratingAgg,
    flags,
    deployed,
    paused,
    versions,
  ] = await Promise.all([
    prisma.participant.count({ where: people }),
    prisma.participant.count({ where: { ...people, ...consentedWhere } }),
    prisma.participant.count({
      where: guildId ? { OR: [{ banned: true }, { bannedGuildIds: { has: guildId } }] } : { banned: true },
    }),
    prisma.session.groupBy({ by: ['status'], where: inGuild, _count: { _all: true } }),
    prisma.session.findMany({
      where: { ...inGuild, status: 'answered' },
      select: { task: { select: { kind: true } } },
    }),
    prisma.task.groupBy({ by: ['kind'], _count: { _all: true } }),
    prisma.evaluation.aggregate({ where: { session: inGuild }, _avg: { score: true }, _count: { _all: true } }),
    prisma.rating.aggregate({ where: { session: inGuild }, _avg: { value: true }, _count: { _all: true } }),
    prisma.moderationFlag.count({ where: { resolvedAt: null, session: inGuild } }),
    prisma.policyVersion.findFirst({ where: { status: 'deployed' }, select: { name: true, metrics: true } }),
    isPaused(prisma),
    prisma.policyVersion.findMany({
      where: { status: { not: 'removed' } },
      select: { name: true, metrics: true },
      orderBy: { createdAt: 'asc' },
    }),
  ]);
  const successes = await prisma.evaluation.count({ where: { success: true, session: inGuild } });
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
    deployedPolicy: deployed ? markedName(deployed) : null,
    erasedDataVersions: versions.filter(trainedOnErasedData).map((v) => v.name),
    paused,
  };
}

export function formatStats(s: Stats): string {
  const pct = (x: number | null) => (x === null ? '—' : `${(x * 100).toFixed(1)}%`);
  return [
    `Participants: ${s.participants} (${s.consented} consented, ${s.banned} banned)`,
    `Sessions: ${
      Object.entries(s.sessions)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none'
    }`,
    `Answered: backend ${s.answeredByKind.backend ?? 0} of ${s.tasksByKind.backend ?? 0} tasks, frontend ${s.answeredByKind.frontend ?? 0} of ${s.tasksByKind.frontend ?? 0} tasks`,
    `Mean score: ${s.meanScore === null ? '—' : s.meanScore.toFixed(3)}; success: ${pct(s.successRate)}`,
    `Ratings: ${s.ratings}, mean ${s.meanRating === null ? '—' : s.meanRating.toFixed(2)}`,
    `Open flags: ${s.flags}`,
    `Deployed policy: ${s.deployedPolicy ?? 'none'}${s.paused ? '\nCollection is PAUSED' : ''}`,
    ...(s.erasedDataVersions.length
      ? [`Trained on erased data (deploy only with an operator's force): ${s.erasedDataVersions.join(', ')}`]
      : []),
    ...(s.lastGate ? [s.lastGate] : []),
  ].join('\n');
}
