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
import {
  humanSessionSql,
  sharedParticipantSql,
  sharedParticipantWhere,
  simulatedSessionSql,
} from '../../prisma/cohorts.ts';
import { DATA_SOURCES, DEFAULT_DATA_SOURCE, type DataSource } from '../../prisma/data-source.ts';
import { PolicyError, resolvePolicyName } from '../../prisma/policy-store.ts';

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
  /** Who played the collaborator: people, simulators or both (default DEFAULT_DATA_SOURCE). */
  source?: DataSource;
  /** Sessions with an unresolved moderation flag are left out unless true. */
  includeFlagged?: boolean;
  /** Session statuses to export; default: only `answered` (complete trajectories). */
  statuses?: SessionStatus[];
  /**
   * Only sessions that make a training trajectory: an evaluation (the sweet-rl reward is its score) and at least
   * one agent turn.
   */
  requireTrajectory?: boolean;
  /**
   * Only tasks with at least this many selected sessions, and of each such task its first `perTask` sessions
   * (by start): the sweet-rl format's k blocks. Pages then come block by block, tasks in the same order in each.
   */
  perTask?: number;
  /** Only sessions run in one of these Discord guilds (a guild moderator's export). */
  guildIds?: string[];
  /** Only sessions assigned in this study (bot/assign.ts). */
  studyId?: string;
}

/** The collaborator source the filters ask for. */
export function sourceOf(f: ExportFilters): DataSource {
  return f.source ?? DEFAULT_DATA_SOURCE;
}

export class FilterError extends Error {}

const KINDS: readonly TaskKind[] = ['backend', 'frontend'];
const SPLITS: readonly TaskSplit[] = ['train', 'test'];
const STATUSES: readonly SessionStatus[] = ['active', 'answered', 'abandoned', 'expired'];

/** Rejects contradictory or malformed filters before any query runs. */
export function validateFilters(f: ExportFilters): void {
  for (const [name, d] of [
    ['since', f.since],
    ['until', f.until],
  ] as const) {
    if (d !== undefined && (!(d instanceof Date) || Number.isNaN(d.getTime())))
      throw new FilterError(`--${name}: not a valid date`);
  }
  if (f.since && f.until && f.since.getTime() >= f.until.getTime())
    throw new FilterError('--since must be before --until');
  if (f.kind !== undefined && !KINDS.includes(f.kind))
    throw new FilterError(`--kind: expected one of ${KINDS.join(', ')}`);
  if (f.split !== undefined && !SPLITS.includes(f.split))
    throw new FilterError(`--split: expected one of ${SPLITS.join(', ')}`);
  if (f.minRating !== undefined && !(Number.isFinite(f.minRating) && f.minRating >= 1 && f.minRating <= 5)) {
    throw new FilterError('--min-rating: expected a number from 1 to 5');
  }
  if (f.policy !== undefined && f.policy.trim() === '') throw new FilterError('--policy: empty name');
  if (f.source !== undefined && !DATA_SOURCES.includes(f.source))
    throw new FilterError(`--source: expected one of ${DATA_SOURCES.join(', ')}`);
  if (f.perTask !== undefined && !(Number.isInteger(f.perTask) && f.perTask >= 1))
    throw new FilterError('--per-task: expected a whole number of at least 1');
  if (f.studyId !== undefined && !UUID.test(f.studyId)) throw new FilterError('study: not a study id');
  if (f.statuses !== undefined) {
    if (f.statuses.length === 0) throw new FilterError('--status: give at least one status');
    for (const s of f.statuses)
      if (!STATUSES.includes(s))
        throw new FilterError(`--status: unknown status "${s}" (expected ${STATUSES.join(', ')})`);
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The --policy filter as a version's name (prisma/policy-store.ts resolvePolicyName: `starter`, `deployed`, a name
 * or an id); a misspelt one would otherwise export nothing, silently.
 */
export async function resolvePolicyFilter(prisma: PrismaClient, f: ExportFilters): Promise<ExportFilters> {
  if (f.policy === undefined) return f;
  try {
    return { ...f, policy: (await resolvePolicyName(prisma, f.policy)).name };
  } catch (err) {
    if (err instanceof PolicyError) throw new FilterError(`--policy: ${err.message}`);
    throw err;
  }
}

/** One condition of a selection, with what it asks in words (for saying which one left a selection empty). */
interface Condition {
  label: string;
  sql: Prisma.Sql;
}

/** The selection's conditions, in the order an empty selection is explained (the broadest first). */
function conditions(f: ExportFilters): Condition[] {
  const statuses = f.statuses ?? ['answered'];
  const conds: Condition[] = [
    { label: 'of consented, not withdrawn, not deleted participants', sql: sharedParticipantSql('p') },
    // Compared as the enum (not as text) so the planner's estimate lets keyset pages walk the startedAt index.
    {
      label: `with status ${statuses.join(' or ')}${f.statuses ? '' : ' (the default, --status adds others)'}`,
      sql: Prisma.sql`s."status" IN (${Prisma.join(statuses.map((st) => Prisma.sql`${st}::"SessionStatus"`))})`,
    },
  ];
  const source = sourceOf(f);
  const sourceLabel = `played by ${source === 'human' ? 'people' : source === 'simulated' ? 'simulated collaborators' : 'people or simulators'} (--source ${source})`;
  if (source === 'human') conds.push({ label: sourceLabel, sql: humanSessionSql('s', 'p') });
  if (source === 'simulated') conds.push({ label: sourceLabel, sql: simulatedSessionSql('s', 'p') });
  if (f.studyId) conds.push({ label: 'in the study', sql: Prisma.sql`s."studyId" = ${f.studyId}::uuid` });
  if (f.guildIds)
    conds.push({
      label: 'in your guilds',
      sql: f.guildIds.length ? Prisma.sql`s."guildId" IN (${Prisma.join(f.guildIds)})` : Prisma.sql`false`,
    });
  if (f.since)
    conds.push({
      label: `started since ${f.since.toISOString()} (--since)`,
      sql: Prisma.sql`s."startedAt" >= ${f.since}`,
    });
  if (f.until)
    conds.push({
      label: `started before ${f.until.toISOString()} (--until)`,
      sql: Prisma.sql`s."startedAt" < ${f.until}`,
    });
  if (f.kind) conds.push({ label: `of ${f.kind} tasks (--kind)`, sql: Prisma.sql`t."kind" = ${f.kind}::"TaskKind"` });
  if (f.split)
    conds.push({ label: `of the ${f.split} split (--split)`, sql: Prisma.sql`t."split" = ${f.split}::"TaskSplit"` });
  if (f.policy)
    conds.push({
      label: `played by ${f.policy} (--policy)`,
      sql: Prisma.sql`(pv."name" = ${f.policy} OR pv."id"::text = ${f.policy})`,
    });
  if (f.requireTrajectory) {
    conds.push({
      label: 'scored, with at least one agent turn (a sweet-rl trajectory)',
      sql: Prisma.sql`EXISTS (SELECT 1 FROM "Evaluation" ev WHERE ev."sessionId" = s."id") AND EXISTS (SELECT 1 FROM "Turn" tu WHERE tu."sessionId" = s."id" AND tu."role" = 'agent')`,
    });
  }
  if (f.minRating !== undefined) {
    conds.push({
      label: `rated at least ${f.minRating} on average (--min-rating; unrated sessions are left out)`,
      sql: Prisma.sql`(SELECT avg(r."value") FROM "Rating" r JOIN "Participant" rp ON rp."id" = r."raterId"
      WHERE r."sessionId" = s."id" AND ${sharedParticipantSql('rp')}) >= ${f.minRating}`,
    });
  }
  // Last, so that an explanation counts the sessions flags kept out among those every other filter chose.
  if (!f.includeFlagged)
    conds.push({ label: 'without an unresolved moderation flag (--include-flagged keeps them)', sql: UNFLAGGED });
  return conds;
}

const UNFLAGGED = Prisma.sql`NOT EXISTS (SELECT 1 FROM "ModerationFlag" mf WHERE mf."sessionId" = s."id" AND mf."resolvedAt" IS NULL)`;

function whereClause(f: ExportFilters): Prisma.Sql {
  return Prisma.join(
    conditions(f).map((c) => c.sql),
    ' AND ',
  );
}

const FROM = Prisma.sql`FROM "Session" s
  JOIN "Participant" p ON p."id" = s."participantId"
  JOIN "Task" t ON t."id" = s."taskId"
  LEFT JOIN "PolicyVersion" pv ON pv."id" = s."policyVersionId"`;

/**
 * The selected sessions with their page keys: (startedAt, id) normally; with `perTask` K, (block, task's first
 * start, task id), where block j holds the j-th session of every task that has at least K.
 */
function selection(f: ExportFilters): Prisma.Sql {
  const base = Prisma.sql`SELECT s."id", s."taskId", t."kind"::text AS kind, s."startedAt" ${FROM} WHERE ${whereClause(f)}`;
  if (f.perTask === undefined) {
    return Prisma.sql`SELECT b."id", b.kind, b."startedAt" AS k1, b."id"::text AS k2, ''::text AS k3 FROM (${base}) b`;
  }
  return Prisma.sql`SELECT w."id", w.kind, w.first AS k1, w."taskId"::text AS k2, lpad(w.rn::text, 10, '0') AS k3 FROM (
      SELECT b.*, row_number() OVER (PARTITION BY b."taskId" ORDER BY b."startedAt", b."id") AS rn,
        count(*) OVER (PARTITION BY b."taskId") AS n, min(b."startedAt") OVER (PARTITION BY b."taskId") AS first
      FROM (${base}) b) w
    WHERE w.n >= ${f.perTask} AND w.rn <= ${f.perTask}`;
}

/** How many sessions the filters select (for the progress bar and the dataset card). */
export async function countSessions(prisma: PrismaClient, f: ExportFilters): Promise<number> {
  validateFilters(f);
  const rows = await prisma.$queryRaw<{ n: bigint }[]>(Prisma.sql`SELECT count(*) AS n FROM (${selection(f)}) x`);
  return Number(rows[0]?.n ?? 0);
}

export interface SelectionStep {
  /** What this step asks (the first step: every stored session). */
  label: string;
  /** Sessions left after it and every step before. */
  sessions: number;
}

/** The sessions left after each filter in turn, then the k-blocks: what an empty export says about itself. */
export async function selectionSteps(prisma: PrismaClient, f: ExportFilters): Promise<SelectionStep[]> {
  validateFilters(f);
  const count = async (where: Prisma.Sql) =>
    Number(
      (await prisma.$queryRaw<{ n: bigint }[]>(Prisma.sql`SELECT count(*) AS n ${FROM} WHERE ${where}`))[0]?.n ?? 0,
    );
  const conds = conditions(f);
  const steps: SelectionStep[] = [{ label: 'stored', sessions: await count(Prisma.sql`true`) }];
  for (let i = 1; i <= conds.length; i++)
    steps.push({
      label: conds[i - 1]!.label,
      sessions: await count(
        Prisma.join(
          conds.slice(0, i).map((c) => c.sql),
          ' AND ',
        ),
      ),
    });
  if (f.perTask !== undefined)
    steps.push({
      label: `in tasks with at least ${f.perTask} such sessions (--per-task ${f.perTask})`,
      sessions: await countSessions(prisma, f),
    });
  return steps;
}

/** Steps in one line, up to the first that left nothing: "5 sessions stored; 5 with status answered; 0 of backend tasks (--kind)". */
export function describeSteps(steps: readonly SelectionStep[], unit = 'session(s)'): string {
  const stop = steps.findIndex((s) => s.sessions === 0);
  return steps
    .slice(0, stop < 0 ? steps.length : stop + 1)
    .map((s, i) => (i === 0 ? `${s.sessions} ${unit} ${s.label}` : `${s.sessions} ${s.label}`))
    .join('; ');
}

/** The sessions every other filter selects that an unresolved moderation flag keeps out, with the flags' reasons. */
export async function flaggedOut(
  prisma: PrismaClient,
  f: ExportFilters,
): Promise<{ sessionId: string; reason: string }[]> {
  validateFilters(f);
  if (f.includeFlagged) return [];
  return prisma.$queryRaw<{ sessionId: string; reason: string }[]>(Prisma.sql`
    SELECT DISTINCT s."id"::text AS "sessionId", mf."reason" ${FROM}
    JOIN "ModerationFlag" mf ON mf."sessionId" = s."id" AND mf."resolvedAt" IS NULL
    WHERE ${whereClause({ ...f, includeFlagged: true })}`);
}

/**
 * With `perTask` K: the tasks that have selected sessions but fewer than K, which the k blocks leave out (a study
 * stopped early, or slots still running). 0 without `perTask`.
 */
export async function partialTasks(prisma: PrismaClient, f: ExportFilters): Promise<number> {
  validateFilters(f);
  if (f.perTask === undefined) return 0;
  const rows = await prisma.$queryRaw<{ n: bigint }[]>(Prisma.sql`
    SELECT count(*) AS n FROM (
      SELECT t."id" ${FROM} WHERE ${whereClause(f)} GROUP BY t."id" HAVING count(*) < ${f.perTask}
    ) x`);
  return Number(rows[0]?.n ?? 0);
}

/** The task kinds among the selected sessions (the sweet-rl format takes one kind per file). */
export async function selectedKinds(prisma: PrismaClient, f: ExportFilters): Promise<TaskKind[]> {
  validateFilters(f);
  const rows = await prisma.$queryRaw<{ kind: TaskKind }[]>(
    Prisma.sql`SELECT DISTINCT x.kind FROM (${selection(f)}) x ORDER BY x.kind`,
  );
  return rows.map((r) => r.kind);
}

interface Cursor {
  k1: Date;
  k2: string;
  k3: string;
}

/**
 * Ids of the selected sessions, page by page: in (startedAt, id) order, or with `perTask` block by block (the
 * tasks in the same order in every block).
 */
export async function* selectSessionIdPages(
  prisma: PrismaClient,
  f: ExportFilters,
  pageSize = 500,
): AsyncGenerator<string[]> {
  validateFilters(f);
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new FilterError('page size must be a positive integer');
  const perTask = f.perTask !== undefined;
  let cursor: Cursor | undefined;
  for (;;) {
    // Keyset paging: normally over (startedAt, id), which walks the startedAt index; per task over the block key.
    const after = !cursor
      ? Prisma.empty
      : perTask
        ? Prisma.sql`WHERE (x.k3, x.k1, x.k2) > (${cursor.k3}, ${cursor.k1}, ${cursor.k2})`
        : Prisma.sql`WHERE (x.k1, x."id") > (${cursor.k1}, ${cursor.k2}::uuid)`;
    const order = perTask ? Prisma.sql`ORDER BY x.k3, x.k1, x.k2` : Prisma.sql`ORDER BY x.k1, x."id"`;
    const rows = await prisma.$queryRaw<{ id: string; k1: Date; k2: string; k3: string }[]>(
      Prisma.sql`SELECT x."id"::text AS id, x.k1, x.k2, x.k3 FROM (${selection(f)}) x ${after} ${order} LIMIT ${pageSize}`,
    );
    if (rows.length === 0) return;
    yield rows.map((r) => r.id);
    const last = rows[rows.length - 1]!;
    cursor = { k1: last.k1, k2: last.k2, k3: last.k3 };
    if (rows.length < pageSize) return;
  }
}

function fullInclude() {
  return {
    task: true,
    participant: { select: { discordUserId: true, role: true } },
    policyVersion: { select: { id: true, name: true, algorithm: true, status: true } },
    turns: { orderBy: { index: 'asc' }, include: { tokens: true } },
    evaluation: true,
    ratings: {
      where: { rater: sharedParticipantWhere },
      orderBy: { createdAt: 'asc' },
      include: { rater: { select: { discordUserId: true } } },
    },
    flags: { orderBy: { createdAt: 'asc' } },
  } satisfies Prisma.SessionInclude;
}

export type FullSession = Prisma.SessionGetPayload<{ include: ReturnType<typeof fullInclude> }>;

/** Every selected session with what an export needs (task, turns, evaluation, visible ratings, flags). */
export async function* streamSessions(
  prisma: PrismaClient,
  f: ExportFilters,
  pageSize = 500,
): AsyncGenerator<FullSession[]> {
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
    ratings: { where: { rater: sharedParticipantWhere }, select: { value: true } },
    turns: { select: { role: true } },
  } satisfies Prisma.SessionSelect;
}

export type SessionSummary = Prisma.SessionGetPayload<{ select: ReturnType<typeof summarySelect> }>;

/** The light view the report aggregates: no texts, only what the statistics need. */
export async function* streamSessionSummaries(
  prisma: PrismaClient,
  f: ExportFilters,
  pageSize = 2000,
): AsyncGenerator<SessionSummary[]> {
  for await (const ids of selectSessionIdPages(prisma, f, pageSize)) {
    yield await prisma.session.findMany({ where: { id: { in: ids } }, select: summarySelect() });
  }
}
