// The grouped reads behind a study's progress and pay and the people page (bot/study-progress.ts,
// bot/study-payouts.ts, bot/dashboard/overview.ts): counts summed in the database; active time as stored
// (Session.activeMs, prisma/active-time-store.ts), its median and per-person sums computed in the database; and,
// for sessions without a stored time, the moments (its start, every turn, its end) as one row a session, for
// tasks/study-pay.ts activeMs, which stays the only definition of active time. Reading every session with its turns
// through Prisma took seconds a page at 100,000 sessions (bench/RESULTS.md, Dashboard).
import { Prisma, type PrismaClient, type SessionStatus } from './generated/client.ts';
import { activeMs } from '../tasks/study-pay.ts';

type Tx = Prisma.TransactionClient;

/** Which sessions: all of them, narrowed by each field given. */
export interface SessionSelector {
  studyId?: string;
  statuses?: readonly SessionStatus[];
  participantIds?: readonly string[];
  /** A moderator's guild: only the sessions played there (null: those played outside any guild). */
  guildId?: string | null;
}

function whereSql(w: SessionSelector): Prisma.Sql {
  const parts: Prisma.Sql[] = [Prisma.sql`TRUE`];
  if (w.studyId !== undefined) parts.push(Prisma.sql`s."studyId" = ${w.studyId}::uuid`);
  if (w.statuses) parts.push(Prisma.sql`s.status::text = ANY(${[...w.statuses]}::text[])`);
  if (w.participantIds) parts.push(Prisma.sql`s."participantId" = ANY(${[...w.participantIds]}::uuid[])`);
  if (w.guildId !== undefined) parts.push(Prisma.sql`s."guildId" IS NOT DISTINCT FROM ${w.guildId}`);
  return Prisma.join(parts, ' AND ');
}

/** Epoch milliseconds of a timestamp column, as JavaScript's Date keeps it (sub-millisecond digits dropped). */
const ms = (col: Prisma.Sql) => Prisma.sql`floor(extract(epoch FROM ${col}) * 1000)::bigint::text`;

/** A moment as the stored columns hold it (timestamp without zone, in UTC), whatever the server's TimeZone. */
const utc = (d: Date) => Prisma.sql`(${d.toISOString()}::timestamptz AT TIME ZONE 'UTC')`;

export interface SessionTime {
  id: string;
  participantId: string;
  /** The person's platform id (Discord id). */
  externalId: string;
  status: SessionStatus;
  /** Whether the answer succeeded; null before it was scored, or without an answer. */
  success: boolean | null;
  /** tasks/study-pay.ts activeMs over the session's start, each turn and its end. */
  activeMs: number;
}

/**
 * A session's moments (its start, each turn, its end) as one text of epoch milliseconds, for the session `s`: an
 * index on Turn (sessionId, createdAt) reads them without the turns' rows.
 */
export const MOMENTS = Prisma.sql`concat_ws(',', ${ms(Prisma.sql`s."startedAt"`)}, (SELECT string_agg(${ms(Prisma.sql`tu."createdAt"`)}, ',') FROM "Turn" tu WHERE tu."sessionId" = s.id), ${ms(Prisma.sql`s."endedAt"`)})`;

/** tasks/study-pay.ts activeMs of MOMENTS' text. */
export const activeMsOf = (moments: string | null): number =>
  activeMs((moments ?? '').split(',').filter(Boolean).map(Number));

/**
 * Each selected session's active time: as stored when it ended (prisma/active-time-store.ts), else (active, or
 * ended before the column existed) from its moments, which the database joins into one row a session.
 */
export async function sessionTimes(prisma: PrismaClient | Tx, where: SessionSelector): Promise<SessionTime[]> {
  const rows = await prisma.$queryRaw<
    {
      id: string;
      participantId: string;
      externalId: string;
      status: SessionStatus;
      success: boolean | null;
      activeMs: number | null;
      moments: string | null;
    }[]
  >`
    SELECT s.id, s."participantId", p."discordUserId" AS "externalId", s.status::text AS status, e.success, s."activeMs",
      CASE WHEN s."activeMs" IS NULL THEN ${MOMENTS} END AS moments
    FROM "Session" s JOIN "Participant" p ON p.id = s."participantId" LEFT JOIN "Evaluation" e ON e."sessionId" = s.id
    WHERE ${whereSql(where)}`;
  return rows.map((r) => ({
    id: r.id,
    participantId: r.participantId,
    externalId: r.externalId,
    status: r.status,
    success: r.success,
    activeMs: r.activeMs ?? activeMsOf(r.moments),
  }));
}

/**
 * The selected sessions without a stored active time (active, or not filled yet), each computed by activeMsOf from
 * its moments: the only ones whose time comes back one a session.
 */
async function unstoredTimes(
  prisma: PrismaClient | Tx,
  where: SessionSelector,
): Promise<{ id: string; activeMs: number }[]> {
  const rows = await prisma.$queryRaw<{ id: string; moments: string | null }[]>`
    SELECT s.id, ${MOMENTS} AS moments FROM "Session" s WHERE ${whereSql(where)} AND s."activeMs" IS NULL`;
  return rows.map((r) => ({ id: r.id, activeMs: activeMsOf(r.moments) }));
}

/**
 * The median of the selected sessions' active minutes (as sessionTimes gives them), null when none is selected: the
 * linear interpolation between the middle two of tasks/stats.ts quantileSorted at 0.5, which is percentile_cont in
 * float8 (the same operations in the same order, so the same double). Stored times are ranked in the database; the
 * unstored ones (unstoredTimes) go back in as an array, and are left out of the stored ones by id should their time
 * be written in between. Reading one row a session took over a second a study at 100,000 sessions
 * (bench/HISTORY.md, Dashboard).
 */
export async function medianActiveMinutes(prisma: PrismaClient | Tx, where: SessionSelector): Promise<number | null> {
  const extra = await unstoredTimes(prisma, where);
  const [r] = await prisma.$queryRaw<{ median: number | null }[]>`
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY m) AS median FROM (
      SELECT s."activeMs"::float8 / 60000 AS m FROM "Session" s
      WHERE ${whereSql(where)} AND s."activeMs" IS NOT NULL AND s.id <> ALL(${extra.map((t) => t.id)}::uuid[])
      UNION ALL SELECT x::float8 / 60000 FROM unnest(${extra.map((t) => t.activeMs)}::float8[]) x) t`;
  return r?.median ?? null;
}

/**
 * Each person's selected sessions, counted, and their active time summed (milliseconds, as sessionTimes gives them):
 * stored times summed in the database (whole milliseconds, so the sum is exact), the unstored ones' moments read in
 * the same statement and added here. People without a selected session are absent.
 */
export async function activeTimeByPerson(
  prisma: PrismaClient | Tx,
  where: SessionSelector,
): Promise<Map<string, { sessions: number; activeMs: number }>> {
  const rows = await prisma.$queryRaw<
    { participantId: string; n: number; ms: number | null; moments: string | null }[]
  >`
    SELECT s."participantId", count(*)::int AS n, sum(s."activeMs")::float8 AS ms, NULL::text AS moments FROM "Session" s
    WHERE ${whereSql(where)} GROUP BY 1
    UNION ALL
    SELECT s."participantId", 0, NULL, ${MOMENTS} FROM "Session" s WHERE ${whereSql(where)} AND s."activeMs" IS NULL`;
  const out = new Map<string, { sessions: number; activeMs: number }>();
  for (const r of rows) {
    const p = out.get(r.participantId) ?? { sessions: 0, activeMs: 0 };
    p.sessions += r.n;
    p.activeMs += r.moments === null ? (r.ms ?? 0) : activeMsOf(r.moments);
    out.set(r.participantId, p);
  }
  return out;
}

/** A study's active and answered sessions counted by task, version and status. */
export async function studySessionCells(
  prisma: PrismaClient,
  studyId: string,
): Promise<{ taskId: string; policyVersionId: string | null; status: 'active' | 'answered'; n: number }[]> {
  return prisma.$queryRaw`
    SELECT s."taskId", s."policyVersionId", s.status::text AS status, count(*)::int AS n FROM "Session" s
    WHERE s."studyId" = ${studyId}::uuid AND s.status IN ('active', 'answered') GROUP BY 1, 2, 3`;
}

/** Different people with a session of the study running now. */
export async function studyPeopleActive(prisma: PrismaClient, studyId: string): Promise<number> {
  const [r] = await prisma.$queryRaw<
    { n: number }[]
  >`SELECT count(DISTINCT "participantId")::int AS n FROM "Session" WHERE "studyId" = ${studyId}::uuid AND status = 'active'`;
  return r?.n ?? 0;
}

/** The study's answered sessions with a reward, counted by task and reward (what trainer/pairs.ts rewardPairs reads). */
export async function studyRewardCounts(
  prisma: PrismaClient,
  studyId: string,
): Promise<{ taskId: string; reward: number; n: number }[]> {
  return prisma.$queryRaw`
    SELECT "taskId", reward, count(*)::int AS n FROM "Session"
    WHERE "studyId" = ${studyId}::uuid AND status = 'answered' AND reward IS NOT NULL GROUP BY 1, 2`;
}

/**
 * The study's answered sessions: how many, and how many of them answered (ended, else started) in (from, to]; and
 * when its first session of any status started.
 */
export async function studyAnsweredCounts(
  prisma: PrismaClient,
  studyId: string,
  window: { from: Date; to: Date },
): Promise<{ answered: number; recent: number; firstStartedAt: Date | null }> {
  const [r] = await prisma.$queryRaw<{ answered: number; recent: number; first: Date | null }[]>`
    SELECT count(*) FILTER (WHERE status = 'answered')::int AS answered,
      count(*) FILTER (WHERE status = 'answered' AND coalesce("endedAt", "startedAt") > ${utc(window.from)} AND coalesce("endedAt", "startedAt") <= ${utc(window.to)})::int AS recent,
      min("startedAt") AS first
    FROM "Session" WHERE "studyId" = ${studyId}::uuid`;
  return { answered: r?.answered ?? 0, recent: r?.recent ?? 0, firstStartedAt: r?.first ?? null };
}

/** The study's answered sessions (live, and kept without text for people who were erased) counted by success. */
export async function studyPayCounts(
  prisma: PrismaClient,
  studyId: string,
): Promise<{ success: boolean | null; n: number }[]> {
  // Planned serially, Postgres merges the two index-only scans (the study's sessions and the evaluations, both in
  // session id order); planned in parallel, it hashes every evaluation in three processes, which on a 2-core machine
  // with the page's other queries in flight took several times as long (bench/HISTORY.md, Dashboard). The setting
  // lasts for this transaction only.
  return prisma.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT set_config('max_parallel_workers_per_gather', '0', true)`;
    return tx.$queryRaw<{ success: boolean | null; n: number }[]>`
    SELECT success, sum(n)::int AS n FROM (
      SELECT e.success, count(*) AS n FROM "Session" s LEFT JOIN "Evaluation" e ON e."sessionId" = s.id
      WHERE s."studyId" = ${studyId}::uuid AND s.status = 'answered' GROUP BY 1
      UNION ALL
      SELECT success, count(*) AS n FROM "ErasedStudySession" WHERE "studyId" = ${studyId}::uuid GROUP BY 1
    ) c GROUP BY 1`;
  });
}
