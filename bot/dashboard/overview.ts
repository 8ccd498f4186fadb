// The dashboard's reads besides sessions: studies with their progress (bot/study-progress.ts), policy versions
// with lineage, gate evidence, A/B results (bot/experiments.ts), a leaderboard paired by task and a Bradley-Terry
// fit of people's /compare choices (tasks/bradley-terry.ts), people with their quality (moderators: their guild's
// only), and the payouts that only operators see. Training runs are runs.ts.
import { Prisma, type PrismaClient } from '../../prisma/generated/client.ts';
import { meanIntervalOf, pairedBootstrap, type Interval } from '../../tasks/stats.ts';
import { bradleyTerryTable, type BradleyTerryRow, type Judgement } from '../../tasks/bradley-terry.ts';
import { deployedPolicy } from '../../prisma/policy-store.ts';
import { studyProgress, studyVisibleTo, type StudyProgress } from '../study-progress.ts';
import { studyPayouts, studyPayTotal, type Payouts } from '../study-payouts.ts';
import { collectExperiments } from '../report/experiments.ts';
import { pseudonymizer } from '../export/pseudonym.ts';
import { hasPay } from '../../tasks/study-pay.ts';
import { activeTimeByPerson } from '../../prisma/study-stats.ts';
import type { StudyWithArms } from '../../prisma/study-store.ts';
import type { CalibrationResult } from '../report/calibration.ts';
import type { Viewer } from './access.ts';
import { consentedSql, personSql } from '../../prisma/cohorts.ts';

const asActor = (v: Viewer) => ({ operator: v.role === 'operator', guildId: v.guildId });

export async function visibleStudies(prisma: PrismaClient, viewer: Viewer): Promise<StudyWithArms[]> {
  const all = await prisma.study.findMany({
    include: { arms: { include: { policyVersion: true } } },
    orderBy: { createdAt: 'asc' },
  });
  return all.filter((s) => studyVisibleTo(s, asActor(viewer)));
}

export interface StudyView {
  study: StudyWithArms;
  progress: StudyProgress;
  /** Pay so far: answered sessions under the study's rules (null: no pay rules). */
  paidCents: number | null;
}

export async function studiesOverview(prisma: PrismaClient, viewer: Viewer): Promise<StudyView[]> {
  // Every study's reads at once: each is a handful of grouped queries, which the pool runs side by side.
  return Promise.all(
    (await visibleStudies(prisma, viewer)).map(async (study) => {
      const [progress, paidCents] = await Promise.all([studyProgress(prisma, study), studyPayTotal(prisma, study)]);
      return { study, progress, paidCents };
    }),
  );
}

/** Payouts of every study with pay rules, by platform id: operators only (the server checks the role). */
export async function allPayouts(prisma: PrismaClient): Promise<{ study: string; payouts: Payouts }[]> {
  const out: { study: string; payouts: Payouts }[] = [];
  for (const study of await prisma.study.findMany({
    include: { arms: { include: { policyVersion: true } } },
    orderBy: { createdAt: 'asc' },
  })) {
    if (hasPay(study) && study.currency) out.push({ study: study.name, payouts: await studyPayouts(prisma, study) });
  }
  return out;
}

export interface LeaderRow {
  policy: string;
  policyId: string;
  sessions: number;
  tasks: number;
  /** Mean score (fraction of tests passed, or similarity) over its tasks, each task's sessions averaged first. */
  score: Interval;
  /** Against the reference version on the tasks both played: mean paired difference, cluster bootstrap by task. */
  paired: Interval | null;
}

type Kind = 'backend' | 'frontend';
type Leaderboard = { reference: string | null; rows: LeaderRow[] };

/**
 * The leaderboards, one a task kind: every version with scored sessions of the kind, its mean score by task, and its
 * difference from the reference (the deployed version) paired by task, each with a 95% interval.
 */
export async function leaderboards(prisma: PrismaClient, viewer: Viewer): Promise<Record<Kind, Leaderboard>> {
  // Each version's mean score and count by kind and task, summed in the database in one pass over the evaluations
  // (from covering indexes on Evaluation and Session): reading every evaluation through Prisma took seconds at
  // 100,000 sessions, and a pass a kind twice the time (bench/HISTORY.md, Dashboard).
  const [cells, deployed] = await Promise.all([
    prisma.$queryRaw<{ kind: Kind; policyVersionId: string; name: string; taskId: string; mean: number; n: number }[]>`
      SELECT t.kind::text AS kind, s."policyVersionId", pv.name, s."taskId", avg(e.score)::float8 AS mean, count(*)::int AS n
      FROM "Evaluation" e JOIN "Session" s ON s.id = e."sessionId" JOIN "Task" t ON t.id = s."taskId" JOIN "PolicyVersion" pv ON pv.id = s."policyVersionId"
      WHERE s."goldSourceId" IS NULL AND (${viewer.role !== 'moderator'} OR s."guildId" = ${viewer.guildId ?? null})
      GROUP BY t.kind, s."policyVersionId", pv.name, s."taskId"`,
    deployedPolicy(prisma),
  ]);
  // The paired bootstraps (2,000 resamples over every task, a version) give the same boards for the same cells, so
  // the last boards are kept until a cell or the deployed version changes.
  const key = JSON.stringify([deployed?.id ?? null, deployed?.name ?? null, cells]);
  if (lastBoards?.key !== key)
    lastBoards = {
      key,
      boards: {
        backend: leaderboardOf(
          cells.filter((c) => c.kind === 'backend'),
          deployed,
        ),
        frontend: leaderboardOf(
          cells.filter((c) => c.kind === 'frontend'),
          deployed,
        ),
      },
    };
  return lastBoards.boards;
}

let lastBoards: { key: string; boards: Record<Kind, Leaderboard> } | undefined;

function leaderboardOf(
  cells: readonly { policyVersionId: string; name: string; taskId: string; mean: number; n: number }[],
  deployed: { id: string; name: string } | null,
): Leaderboard {
  const byPolicy = new Map<string, { name: string; tasks: Map<string, { mean: number; n: number }> }>();
  for (const c of cells) {
    const p = byPolicy.get(c.policyVersionId) ?? { name: c.name, tasks: new Map() };
    p.tasks.set(c.taskId, { mean: c.mean, n: c.n });
    byPolicy.set(c.policyVersionId, p);
  }
  const ref = deployed && byPolicy.has(deployed.id) ? byPolicy.get(deployed.id)! : null;
  const rows = [...byPolicy.entries()].map(([id, p]): LeaderRow => {
    const taskMeans = [...p.tasks.values()].map((c) => c.mean);
    let paired: Interval | null = null;
    if (ref && id !== deployed!.id) {
      const common = [...p.tasks.keys()].filter((t) => ref.tasks.has(t));
      paired = pairedBootstrap(
        common.map((t) => p.tasks.get(t)!.mean),
        common.map((t) => ref.tasks.get(t)!.mean),
        { resamples: 2000, seed: 7 },
      );
    }
    return {
      policy: p.name,
      policyId: id,
      sessions: [...p.tasks.values()].reduce((a, c) => a + c.n, 0),
      tasks: p.tasks.size,
      score: meanIntervalOf(taskMeans, 0.95, [0, 1]),
      paired,
    };
  });
  rows.sort((a, b) => b.score.estimate - a.score.estimate);
  return { reference: ref ? deployed!.name : null, rows };
}

/** The answered /compare choices that count: both versions named and different, the rater still consenting. */
const JUDGED = Prisma.sql`
  FROM "Preference" pr JOIN "Participant" r ON r.id = pr."raterId"
    JOIN "Session" sa ON sa.id = pr."sessionAId" JOIN "PolicyVersion" va ON va.id = sa."policyVersionId"
    JOIN "Session" sb ON sb.id = pr."sessionBId" JOIN "PolicyVersion" vb ON vb.id = sb."policyVersionId"
  WHERE pr.choice IN ('a', 'b', 'tie') AND r."deletedAt" IS NULL AND ${consentedSql('r')} AND va.name <> vb.name`;
/** The order they were answered in (the bootstrap's resamples depend on it). */
const JUDGED_ORDER = Prisma.sql`pr."answeredAt", pr.id`;

/**
 * People's answered /compare choices as judgements between the versions that played the two sessions, in the
 * order they were answered: one joined query (through Prisma's relations, 20,000 preferences took seconds).
 */
export async function preferenceJudgements(prisma: PrismaClient): Promise<Judgement[]> {
  const rows = await prisma.$queryRaw<{ a: string; b: string; choice: string }[]>`
    SELECT va.name AS a, vb.name AS b, pr.choice::text AS choice ${JUDGED} ORDER BY ${JUDGED_ORDER}`;
  return rows.map((r) => ({ a: r.a, b: r.b, outcome: r.choice === 'a' ? 1 : r.choice === 'b' ? 0 : 0.5 }));
}

/**
 * How many judgements preferenceJudgements would give, and a digest of them in its order (both versions' names and
 * the choice of each), computed in the database: the Bradley-Terry table is refitted only when the digest changes,
 * so most requests need not read the 20,000 judgements themselves (bench/HISTORY.md, Dashboard).
 */
export async function judgementsDigest(prisma: PrismaClient): Promise<{ n: number; digest: string }> {
  const [r] = await prisma.$queryRaw<{ n: number; digest: string | null }[]>`
    SELECT count(*)::int AS n, md5(coalesce(string_agg(json_build_array(va.name, vb.name, pr.choice::text)::text, ',' ORDER BY ${JUDGED_ORDER}), '')) AS digest ${JUDGED}`;
  return { n: r?.n ?? 0, digest: r?.digest ?? '' };
}

/**
 * What each training run that published a version was trained on, read from its data snapshot in the database (not
 * the snapshot itself); the runs are found in the same query, so it runs beside the page's other reads.
 */
async function runLineage(prisma: PrismaClient): Promise<Map<string, { trainedOn: number | null; filter: unknown }>> {
  const rows = await prisma.$queryRaw<
    { id: string; trainedOn: number | null; snapFilter: unknown; configFilter: unknown }[]
  >`
    SELECT id, CASE WHEN jsonb_typeof("dataSnapshot"->'sessions') = 'array' THEN jsonb_array_length("dataSnapshot"->'sessions') END AS "trainedOn",
      "dataSnapshot"->'filter' AS "snapFilter", config->'filter' AS "configFilter"
    FROM "TrainingRun" WHERE id IN (SELECT "trainingRunId" FROM "PolicyVersion" WHERE "trainingRunId" IS NOT NULL)`;
  return new Map(rows.map((r) => [r.id, { trainedOn: r.trainedOn, filter: r.snapFilter ?? r.configFilter ?? null }]));
}

// The seeded bootstrap gives the same table for the same judgements, so the last one is kept, under the digest of
// the judgements it was fitted on, until a judgement arrives or goes (500 fits over 20,000 judgements are most of
// /policies' time: bench/RESULTS.md, Dashboard). Its judgements are read only to fit it.
let lastTable: { digest: string; judgements: number; rows: BradleyTerryRow[] } | undefined;

async function bradleyTerryNow(prisma: PrismaClient): Promise<{ judgements: number; rows: BradleyTerryRow[] }> {
  const { n, digest } = await judgementsDigest(prisma);
  if (lastTable?.digest !== digest) {
    const judgements = await preferenceJudgements(prisma);
    const players = [...new Set(judgements.flatMap((j) => [j.a, j.b]))];
    // Kept under the digest read first: had a judgement arrived in between, the next request's digest differs and
    // the table is fitted again.
    lastTable = {
      digest,
      judgements: n,
      rows: players.length >= 2 ? bradleyTerryTable(players, judgements, { resamples: 500, seed: 11 }) : [],
    };
  }
  return { judgements: lastTable.judgements, rows: lastTable.rows };
}

export async function policiesOverview(prisma: PrismaClient, viewer: Viewer) {
  const [versions, bradleyTerry, boards, experiments, lineage] = await Promise.all([
    prisma.policyVersion.findMany({
      orderBy: { createdAt: 'asc' },
      include: {
        parent: { select: { name: true } },
        trainingRun: { select: { id: true } },
        _count: { select: { sessions: true } },
      },
    }),
    bradleyTerryNow(prisma),
    leaderboards(prisma, viewer),
    collectExperiments(prisma),
    runLineage(prisma),
  ]);
  return {
    versions: versions.map((v) => {
      const metrics = (v.metrics ?? {}) as { gate?: unknown };
      const run = v.trainingRun ? lineage.get(v.trainingRun.id) : undefined;
      return {
        id: v.id,
        name: v.name,
        algorithm: v.algorithm,
        kind: v.kind,
        status: v.status,
        parent: v.parent?.name ?? null,
        createdAt: v.createdAt,
        deployedAt: v.deployedAt,
        sessions: v._count.sessions,
        run: v.trainingRun
          ? { id: v.trainingRun.id, trainedOn: run?.trainedOn ?? null, filter: run?.filter ?? null }
          : null,
        gate: metrics.gate ?? null,
      };
    }),
    leaderboards: boards,
    bradleyTerry,
    experiments,
  };
}

export async function peopleOverview(prisma: PrismaClient, viewer: Viewer, salt: string) {
  const pseudo = pseudonymizer(salt);
  const guild = viewer.role === 'moderator' ? { guildId: viewer.guildId } : {};
  // The people (a moderator: those who played in their guild) with their quality and exclusion in one joined query,
  // and beside it their sessions and active time (tasks/study-pay.ts activeMs) over the sessions the viewer may see,
  // summed by person in the database: Prisma's findMany with its relations, and one row a session, took most of a
  // second at 100,000 sessions (bench/HISTORY.md, Dashboard). The sums cover everyone with such a session; only
  // the people listed are looked up.
  const [people, times] = await Promise.all([
    prisma.$queryRaw<
      {
        id: string;
        discordUserId: string;
        role: string;
        banned: boolean;
        score: number | null;
        signals: unknown;
        reason: string | null;
        excludedAt: Date | null;
        excluded: boolean;
      }[]
    >`
      SELECT p.id, p."discordUserId", p.role::text AS role, p.banned, q.score, q.signals, x.reason, x."createdAt" AS "excludedAt", x."participantId" IS NOT NULL AS excluded
      FROM "Participant" p LEFT JOIN "ParticipantQuality" q ON q."participantId" = p.id LEFT JOIN "TrainingExclusion" x ON x."participantId" = p.id
      WHERE ${personSql('p')}
        AND (${viewer.role !== 'moderator'} OR EXISTS (SELECT 1 FROM "Session" s WHERE s."participantId" = p.id AND s."guildId" IS NOT DISTINCT FROM ${viewer.guildId ?? null}))`,
    activeTimeByPerson(prisma, guild),
  ]);
  const rows = people.map((p) => ({
    activeMinutes: (times.get(p.id)?.activeMs ?? 0) / 60_000,
    id: p.id,
    person: pseudo(p.discordUserId),
    role: p.role,
    sessions: times.get(p.id)?.sessions ?? 0,
    score: p.score !== null && Number.isFinite(p.score) ? p.score : null,
    signals: (p.signals ?? {}) as Record<string, number>,
    excluded: p.excluded ? { reason: p.reason, at: p.excludedAt! } : null,
    banned: p.banned,
  }));
  rows.sort((a, b) => (a.score ?? 2) - (b.score ?? 2) || a.person.localeCompare(b.person));
  return rows;
}

/** Whether a moderator may act on this person (they played in the moderator's guild). */
export async function personInScope(
  prisma: PrismaClient,
  viewer: Viewer,
  participantId: string,
): Promise<{ discordUserId: string } | null> {
  const p = await prisma.participant.findFirst({
    where: {
      id: participantId,
      deletedAt: null,
      ...(viewer.role === 'moderator' ? { sessions: { some: { guildId: viewer.guildId } } } : {}),
    },
    select: { discordUserId: true },
  });
  return p;
}

/** A stored calibration result with the nulls JSON made of NaN turned back into NaN (no interval, no value). */
function calibrationFrom(json: unknown): CalibrationResult {
  const r = json as CalibrationResult;
  const iv = (i: { estimate: number | null; lo: number | null; hi: number | null; n: number }) => ({
    estimate: i.estimate ?? NaN,
    lo: i.lo ?? NaN,
    hi: i.hi ?? NaN,
    n: i.n,
  });
  return {
    ...r,
    rows: r.rows.map((row) => ({
      ...row,
      people: iv(row.people),
      simulator: iv(row.simulator),
      difference: iv(row.difference),
    })),
  };
}

/** The latest calibration (`sweetloop study calibrate`) of each study the viewer sees. */
export async function calibrationsOverview(
  prisma: PrismaClient,
  viewer: Viewer,
): Promise<{ id: string; createdAt: Date; result: CalibrationResult }[]> {
  const studies = await visibleStudies(prisma, viewer);
  const out: { id: string; createdAt: Date; result: CalibrationResult }[] = [];
  for (const s of studies) {
    const c = await prisma.studyCalibration.findFirst({ where: { studyId: s.id }, orderBy: { createdAt: 'desc' } });
    if (c) out.push({ id: c.id, createdAt: c.createdAt, result: calibrationFrom(c.result) });
  }
  return out;
}

/** One stored calibration, if its study is visible to the viewer. */
export async function calibrationById(
  prisma: PrismaClient,
  viewer: Viewer,
  id: string,
): Promise<CalibrationResult | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  const c = await prisma.studyCalibration.findUnique({
    where: { id },
    include: { study: { select: { guildIds: true, channelIds: true } } },
  });
  if (!c || !studyVisibleTo(c.study, asActor(viewer))) return null;
  return calibrationFrom(c.result);
}
