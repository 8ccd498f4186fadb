// Which sessions may leave the database, streamed in pages so that memory stays flat however many there are.
//
// Privacy rules applied to every selection, whatever the filters say:
// - the session's participant is not deleted, and has given consent that was not withdrawn. Participants with the
//   role `simulated` are rule-based or LLM collaborators, never people: they need no consent, but their sessions
//   are left out unless simulated sessions are asked for;
// - a rating leaves only when its rater passes the same test (a withdrawn rater's ratings stay behind even on a
//   session that is exported).
// Paging is by keyset on (startedAt, id), never OFFSET: each page is one index range scan, whatever its depth.
import { Prisma, type PrismaClient } from '../../prisma/generated/client.ts';
import type { SessionStatus, TaskKind, TaskSplit } from '../../prisma/generated/enums.ts';

export interface ExportFilters {
  /** Sessions started at or after this instant. */
  since?: Date;
  /** Sessions started strictly before this instant. */
  until?: Date;
  kind?: TaskKind;
  /** Policy version name (or id) that played the agent. */
  policy?: string;
  /** Mean of the visible human ratings >= this; unrated sessions are then left out. */
  minRating?: number;
  split?: TaskSplit;
  /** Simulated collaborators' sessions are left out unless true. */
  includeSimulated?: boolean;
  /** Sessions with an unresolved moderation flag are left out unless true. */
  includeFlagged?: boolean;
  /** Session statuses to export; default: only `answered` (complete trajectories). */
  statuses?: SessionStatus[];
  /** Only sessions that carry a reward (the sweet-rl format needs one). */
  requireReward?: boolean;
}

export class FilterError extends Error {}

const KINDS: readonly TaskKind[] = ['backend', 'frontend'];
const SPLITS: readonly TaskSplit[] = ['train', 'test'];
const STATUSES: readonly SessionStatus[] = ['active', 'answered', 'abandoned', 'expired'];

/** Rejects contradictory or malformed filters before any query runs. */
export function validateFilters(f: ExportFilters): void {
  for (const [name, d] of [['since', f.since], ['until', f.until]] as const) {
    if (d !== undefined && (!(d instanceof Date) || Number.isNaN(d.getTime()))) throw new FilterError(`--${name}: not a valid date`);
  }
  if (f.since && f.until && f.since.getTime() >= f.until.getTime()) throw new FilterError('--since must be before --until');
  if (f.kind !== undefined && !KINDS.includes(f.kind)) throw new FilterError(`--kind: expected one of ${KINDS.join(', ')}`);
  if (f.split !== undefined && !SPLITS.includes(f.split)) throw new FilterError(`--split: expected one of ${SPLITS.join(', ')}`);
  if (f.minRating !== undefined && !(Number.isFinite(f.minRating) && f.minRating >= 1 && f.minRating <= 5)) {
    throw new FilterError('--min-rating: expected a number from 1 to 5');
  }
  if (f.policy !== undefined && f.policy.trim() === '') throw new FilterError('--policy: empty name');
  if (f.statuses !== undefined) {
    if (f.statuses.length === 0) throw new FilterError('--status: give at least one status');
    for (const s of f.statuses) if (!STATUSES.includes(s)) throw new FilterError(`--status: unknown status "${s}" (expected ${STATUSES.join(', ')})`);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A misspelt --policy would otherwise export nothing, silently. */
export async function assertPolicyExists(prisma: PrismaClient, policy: string | undefined): Promise<void> {
  if (policy === undefined) return;
  const found = await prisma.policyVersion.findFirst({
    where: UUID.test(policy) ? { OR: [{ name: policy }, { id: policy }] } : { name: policy },
    select: { id: true },
  });
  if (!found) {
    const known = (await prisma.policyVersion.findMany({ select: { name: true }, orderBy: { createdAt: 'asc' }, take: 20 })).map((p) => p.name);
    throw new FilterError(`--policy: no policy version named "${policy}"${known.length ? ` (known: ${known.join(', ')})` : ' (none exist yet)'}`);
  }
}

/** SQL condition: this participant's data may leave (see the rules at the top). */
function visibleParticipant(alias: string): Prisma.Sql {
  const a = Prisma.raw(alias);
  return Prisma.sql`(${a}."deletedAt" IS NULL AND ((${a}."consentGivenAt" IS NOT NULL AND ${a}."consentWithdrawnAt" IS NULL) OR ${a}."role" = 'simulated'))`;
}

/** The same rule for Prisma's typed queries (ratings' raters). */
export const visibleParticipantWhere = {
  deletedAt: null,
  OR: [{ consentGivenAt: { not: null }, consentWithdrawnAt: null }, { role: 'simulated' as const }],
} satisfies Prisma.ParticipantWhereInput;

function whereClause(f: ExportFilters): Prisma.Sql {
  const statuses = f.statuses ?? ['answered'];
  const conds: Prisma.Sql[] = [
    visibleParticipant('p'),
    // Compared as the enum (not as text) so the planner's estimate lets keyset pages walk the startedAt index.
    Prisma.sql`s."status" IN (${Prisma.join(statuses.map((st) => Prisma.sql`${st}::"SessionStatus"`))})`,
  ];
  if (!f.includeSimulated) conds.push(Prisma.sql`s."simulated" = false AND p."role" <> 'simulated'`);
  if (!f.includeFlagged) {
    conds.push(Prisma.sql`NOT EXISTS (SELECT 1 FROM "ModerationFlag" mf WHERE mf."sessionId" = s."id" AND mf."resolvedAt" IS NULL)`);
  }
  if (f.since) conds.push(Prisma.sql`s."startedAt" >= ${f.since}`);
  if (f.until) conds.push(Prisma.sql`s."startedAt" < ${f.until}`);
  if (f.kind) conds.push(Prisma.sql`t."kind" = ${f.kind}::"TaskKind"`);
  if (f.split) conds.push(Prisma.sql`t."split" = ${f.split}::"TaskSplit"`);
  if (f.policy) conds.push(Prisma.sql`(pv."name" = ${f.policy} OR pv."id"::text = ${f.policy})`);
  if (f.requireReward) conds.push(Prisma.sql`s."reward" IS NOT NULL`);
  if (f.minRating !== undefined) {
    conds.push(Prisma.sql`(SELECT avg(r."value") FROM "Rating" r JOIN "Participant" rp ON rp."id" = r."raterId"
      WHERE r."sessionId" = s."id" AND ${visibleParticipant('rp')}) >= ${f.minRating}`);
  }
  return Prisma.join(conds, ' AND ');
}

const FROM = Prisma.sql`FROM "Session" s
  JOIN "Participant" p ON p."id" = s."participantId"
  JOIN "Task" t ON t."id" = s."taskId"
  LEFT JOIN "PolicyVersion" pv ON pv."id" = s."policyVersionId"`;

/** How many sessions the filters select (for the progress bar and the dataset card). */
export async function countSessions(prisma: PrismaClient, f: ExportFilters): Promise<number> {
  validateFilters(f);
  const rows = await prisma.$queryRaw<{ n: bigint }[]>(Prisma.sql`SELECT count(*) AS n ${FROM} WHERE ${whereClause(f)}`);
  return Number(rows[0]?.n ?? 0);
}

interface Cursor {
  startedAt: Date;
  id: string;
}

/** Ids of the selected sessions, page by page, in (startedAt, id) order. */
export async function* selectSessionIdPages(prisma: PrismaClient, f: ExportFilters, pageSize = 500): AsyncGenerator<string[]> {
  validateFilters(f);
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new FilterError('page size must be a positive integer');
  let cursor: Cursor | undefined;
  for (;;) {
    const after = cursor ? Prisma.sql`AND (s."startedAt", s."id") > (${cursor.startedAt}, ${cursor.id}::uuid)` : Prisma.empty;
    const rows = await prisma.$queryRaw<{ id: string; startedAt: Date }[]>(
      Prisma.sql`SELECT s."id"::text AS id, s."startedAt" AS "startedAt" ${FROM} WHERE ${whereClause(f)} ${after}
        ORDER BY s."startedAt", s."id" LIMIT ${pageSize}`,
    );
    if (rows.length === 0) return;
    yield rows.map((r) => r.id);
    const last = rows[rows.length - 1]!;
    cursor = { startedAt: last.startedAt, id: last.id };
    if (rows.length < pageSize) return;
  }
}

function fullInclude() {
  return {
    task: true,
    participant: { select: { discordUserId: true, role: true } },
    policyVersion: { select: { id: true, name: true, algorithm: true, status: true } },
    turns: { orderBy: { index: 'asc' } },
    evaluation: true,
    ratings: {
      where: { rater: visibleParticipantWhere },
      orderBy: { createdAt: 'asc' },
      include: { rater: { select: { discordUserId: true } } },
    },
    flags: { orderBy: { createdAt: 'asc' } },
  } satisfies Prisma.SessionInclude;
}

export type FullSession = Prisma.SessionGetPayload<{ include: ReturnType<typeof fullInclude> }>;

/** Every selected session with what an export needs (task, turns, evaluation, visible ratings, flags). */
export async function* streamSessions(prisma: PrismaClient, f: ExportFilters, pageSize = 500): AsyncGenerator<FullSession[]> {
  for await (const ids of selectSessionIdPages(prisma, f, pageSize)) {
    const rows = await prisma.session.findMany({ where: { id: { in: ids } }, include: fullInclude() });
    const byId = new Map(rows.map((r) => [r.id, r]));
    // A session deleted between the two queries is simply skipped.
    yield ids.map((id) => byId.get(id)).filter((r): r is FullSession => r !== undefined);
  }
}

function summarySelect() {
  return {
    id: true,
    taskId: true,
    simulated: true,
    status: true,
    reward: true,
    task: { select: { kind: true } },
    participant: { select: { role: true } },
    policyVersion: { select: { name: true, createdAt: true } },
    evaluation: { select: { score: true, success: true, testsPassed: true, testsTotal: true, metric: true } },
    ratings: { where: { rater: visibleParticipantWhere }, select: { value: true } },
    turns: { select: { role: true } },
  } satisfies Prisma.SessionSelect;
}

export type SessionSummary = Prisma.SessionGetPayload<{ select: ReturnType<typeof summarySelect> }>;

/** The light view the report aggregates: no texts, only what the statistics need. */
export async function* streamSessionSummaries(prisma: PrismaClient, f: ExportFilters, pageSize = 2000): AsyncGenerator<SessionSummary[]> {
  for await (const ids of selectSessionIdPages(prisma, f, pageSize)) {
    yield await prisma.session.findMany({ where: { id: { in: ids } }, select: summarySelect() });
  }
}
