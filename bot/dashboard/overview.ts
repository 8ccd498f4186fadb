// The dashboard's reads besides sessions: studies with their progress (bot/study-progress.ts), policy versions
// with lineage, gate evidence, A/B results (bot/experiments.ts), a leaderboard paired by task and a Bradley-Terry
// fit of people's /compare choices (tasks/bradley-terry.ts), people with their quality (moderators: their guild's
// only), and the payouts that only operators see. Training runs are runs.ts.
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { meanIntervalOf, pairedBootstrap, type Interval } from '../../tasks/stats.ts';
import { bradleyTerryTable, type BradleyTerryRow, type Judgement } from '../../tasks/bradley-terry.ts';
import { createHash } from 'node:crypto';
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

const asActor = (v: Viewer) => ({ operator: v.role === 'operator', guildId: v.guildId });

export async function visibleStudies(prisma: PrismaClient, viewer: Viewer): Promise<StudyWithArms[]> {
  const all = await prisma.study.findMany({ include: { arms: { include: { policyVersion: true } } }, orderBy: { createdAt: 'asc' } });
  return all.filter((s) => studyVisibleTo(s, asActor(viewer)));
}

export interface StudyView {
  study: StudyWithArms;
  progress: StudyProgress;
  /** Pay so far: answered sessions under the study's rules (null: no pay rules). */
  paidCents: number | null;
}

export async function studiesOverview(prisma: PrismaClient, viewer: Viewer): Promise<StudyView[]> {
  const out: StudyView[] = [];
  for (const study of await visibleStudies(prisma, viewer)) {
    const [progress, paidCents] = await Promise.all([studyProgress(prisma, study), studyPayTotal(prisma, study)]);
    out.push({ study, progress, paidCents });
  }
  return out;
}

/** Payouts of every study with pay rules, by platform id: operators only (the server checks the role). */
export async function allPayouts(prisma: PrismaClient): Promise<{ study: string; payouts: Payouts }[]> {
  const out: { study: string; payouts: Payouts }[] = [];
  for (const study of await prisma.study.findMany({ include: { arms: { include: { policyVersion: true } } }, orderBy: { createdAt: 'asc' } })) {
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

/**
 * The leaderboard: every version with scored sessions of `kind`, its mean score by task, and its difference from
 * the reference (the deployed version) paired by task, each with a 95% interval.
 */
export async function leaderboard(prisma: PrismaClient, viewer: Viewer, kind: 'backend' | 'frontend'): Promise<{ reference: string | null; rows: LeaderRow[] }> {
  // Each version's mean score and count by task, summed in the database: reading every evaluation through
  // Prisma took seconds at 100,000 sessions (bench/RESULTS.md, Dashboard).
  const cells = await prisma.$queryRaw<{ policyVersionId: string; name: string; taskId: string; mean: number; n: number }[]>`
    SELECT s."policyVersionId", pv.name, s."taskId", avg(e.score)::float8 AS mean, count(*)::int AS n
    FROM "Evaluation" e JOIN "Session" s ON s.id = e."sessionId" JOIN "Task" t ON t.id = s."taskId" JOIN "PolicyVersion" pv ON pv.id = s."policyVersionId"
    WHERE t.kind = ${kind}::"TaskKind" AND s."goldSourceId" IS NULL AND (${viewer.role !== 'moderator'} OR s."guildId" = ${viewer.guildId ?? null})
    GROUP BY s."policyVersionId", pv.name, s."taskId"`;
  const byPolicy = new Map<string, { name: string; tasks: Map<string, { mean: number; n: number }> }>();
  for (const c of cells) {
    const p = byPolicy.get(c.policyVersionId) ?? { name: c.name, tasks: new Map() };
    p.tasks.set(c.taskId, { mean: c.mean, n: c.n });
    byPolicy.set(c.policyVersionId, p);
  }
  const deployed = await deployedPolicy(prisma);
  const ref = deployed && byPolicy.has(deployed.id) ? byPolicy.get(deployed.id)! : null;
  const rows = [...byPolicy.entries()].map(([id, p]): LeaderRow => {
    const taskMeans = [...p.tasks.values()].map((c) => c.mean);
    let paired: Interval | null = null;
    if (ref && id !== deployed!.id) {
      const common = [...p.tasks.keys()].filter((t) => ref.tasks.has(t));
      paired = pairedBootstrap(common.map((t) => p.tasks.get(t)!.mean), common.map((t) => ref.tasks.get(t)!.mean), { resamples: 2000, seed: 7 });
    }
    return { policy: p.name, policyId: id, sessions: [...p.tasks.values()].reduce((a, c) => a + c.n, 0), tasks: p.tasks.size, score: meanIntervalOf(taskMeans, 0.95, [0, 1]), paired };
  });
  rows.sort((a, b) => b.score.estimate - a.score.estimate);
  return { reference: ref ? deployed!.name : null, rows };
}

/**
 * People's answered /compare choices as judgements between the versions that played the two sessions, in the
 * order they were answered: one joined query (through Prisma's relations, 20,000 preferences took seconds).
 */
export async function preferenceJudgements(prisma: PrismaClient): Promise<Judgement[]> {
  const rows = await prisma.$queryRaw<{ a: string; b: string; choice: string }[]>`
    SELECT va.name AS a, vb.name AS b, pr.choice::text AS choice
    FROM "Preference" pr JOIN "Participant" r ON r.id = pr."raterId"
      JOIN "Session" sa ON sa.id = pr."sessionAId" JOIN "PolicyVersion" va ON va.id = sa."policyVersionId"
      JOIN "Session" sb ON sb.id = pr."sessionBId" JOIN "PolicyVersion" vb ON vb.id = sb."policyVersionId"
    WHERE pr.choice IN ('a', 'b', 'tie') AND r."deletedAt" IS NULL AND r."consentWithdrawnAt" IS NULL AND va.name <> vb.name
    ORDER BY pr."answeredAt", pr.id`;
  return rows.map((r) => ({ a: r.a, b: r.b, outcome: r.choice === 'a' ? 1 : r.choice === 'b' ? 0 : 0.5 }));
}

/** What each training run was trained on, read from its data snapshot in the database (not the snapshot itself). */
async function runLineage(prisma: PrismaClient, runIds: string[]): Promise<Map<string, { trainedOn: number | null; filter: unknown }>> {
  if (!runIds.length) return new Map();
  const rows = await prisma.$queryRaw<{ id: string; trainedOn: number | null; snapFilter: unknown; configFilter: unknown }[]>`
    SELECT id, CASE WHEN jsonb_typeof("dataSnapshot"->'sessions') = 'array' THEN jsonb_array_length("dataSnapshot"->'sessions') END AS "trainedOn",
      "dataSnapshot"->'filter' AS "snapFilter", config->'filter' AS "configFilter"
    FROM "TrainingRun" WHERE id = ANY(${runIds}::uuid[])`;
  return new Map(rows.map((r) => [r.id, { trainedOn: r.trainedOn, filter: r.snapFilter ?? r.configFilter ?? null }]));
}

// The seeded bootstrap gives the same table for the same judgements, so the last one is kept until a judgement
// arrives or goes (500 fits over 20,000 judgements are most of /policies' time: bench/RESULTS.md, Dashboard).
let lastTable: { key: string; rows: BradleyTerryRow[] } | undefined;

function bradleyTerryOf(players: string[], judgements: readonly Judgement[]): BradleyTerryRow[] {
  const h = createHash('sha256').update(players.join('\n'));
  for (const j of judgements) h.update(`\n${j.a}\t${j.b}\t${j.outcome}`);
  const key = h.digest('hex');
  if (lastTable?.key !== key) lastTable = { key, rows: bradleyTerryTable(players, judgements, { resamples: 500, seed: 11 }) };
  return lastTable.rows;
}

export async function policiesOverview(prisma: PrismaClient, viewer: Viewer) {
  const [versions, judgements, backend, frontend, experiments] = await Promise.all([
    prisma.policyVersion.findMany({
      orderBy: { createdAt: 'asc' },
      include: { parent: { select: { name: true } }, trainingRun: { select: { id: true } }, _count: { select: { sessions: true } } },
    }),
    preferenceJudgements(prisma),
    leaderboard(prisma, viewer, 'backend'),
    leaderboard(prisma, viewer, 'frontend'),
    collectExperiments(prisma),
  ]);
  const lineage = await runLineage(prisma, versions.flatMap((v) => (v.trainingRun ? [v.trainingRun.id] : [])));
  const players = [...new Set(judgements.flatMap((j) => [j.a, j.b]))];
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
        run: v.trainingRun ? { id: v.trainingRun.id, trainedOn: run?.trainedOn ?? null, filter: run?.filter ?? null } : null,
        gate: metrics.gate ?? null,
      };
    }),
    leaderboards: { backend, frontend },
    bradleyTerry: { judgements: judgements.length, rows: players.length >= 2 ? bradleyTerryOf(players, judgements) : [] },
    experiments,
  };
}

export async function peopleOverview(prisma: PrismaClient, viewer: Viewer, salt: string) {
  const pseudo = pseudonymizer(salt);
  const people = await prisma.participant.findMany({
    where: { role: { not: 'simulated' }, deletedAt: null, ...(viewer.role === 'moderator' ? { sessions: { some: { guildId: viewer.guildId } } } : {}) },
    include: { quality: true, trainingExclusion: true },
  });
  // Sessions and active time (tasks/study-pay.ts activeMs) over the sessions the viewer may see, summed by person in
  // the database (one row a session took most of a second at 100,000 sessions: bench/HISTORY.md, Dashboard).
  const times = await activeTimeByPerson(prisma, { participantIds: people.map((p) => p.id), ...(viewer.role === 'moderator' ? { guildId: viewer.guildId } : {}) });
  const rows = people.map((p) => ({
    activeMinutes: (times.get(p.id)?.activeMs ?? 0) / 60_000,
    id: p.id,
    person: pseudo(p.discordUserId),
    role: p.role,
    sessions: times.get(p.id)?.sessions ?? 0,
    score: p.quality && Number.isFinite(p.quality.score) ? p.quality.score : null,
    signals: (p.quality?.signals ?? {}) as Record<string, number>,
    excluded: p.trainingExclusion ? { reason: p.trainingExclusion.reason, at: p.trainingExclusion.createdAt } : null,
    banned: p.banned,
  }));
  rows.sort((a, b) => (a.score ?? 2) - (b.score ?? 2) || a.person.localeCompare(b.person));
  return rows;
}

/** Whether a moderator may act on this person (they played in the moderator's guild). */
export async function personInScope(prisma: PrismaClient, viewer: Viewer, participantId: string): Promise<{ discordUserId: string } | null> {
  const p = await prisma.participant.findFirst({
    where: { id: participantId, deletedAt: null, ...(viewer.role === 'moderator' ? { sessions: { some: { guildId: viewer.guildId } } } : {}) },
    select: { discordUserId: true },
  });
  return p;
}

/** A stored calibration result with the nulls JSON made of NaN turned back into NaN (no interval, no value). */
function calibrationFrom(json: unknown): CalibrationResult {
  const r = json as CalibrationResult;
  const iv = (i: { estimate: number | null; lo: number | null; hi: number | null; n: number }) => ({ estimate: i.estimate ?? NaN, lo: i.lo ?? NaN, hi: i.hi ?? NaN, n: i.n });
  return { ...r, rows: r.rows.map((row) => ({ ...row, people: iv(row.people), simulator: iv(row.simulator), difference: iv(row.difference) })) };
}

/** The latest calibration (`sweetloop study calibrate`) of each study the viewer sees. */
export async function calibrationsOverview(prisma: PrismaClient, viewer: Viewer): Promise<{ id: string; createdAt: Date; result: CalibrationResult }[]> {
  const studies = await visibleStudies(prisma, viewer);
  const out: { id: string; createdAt: Date; result: CalibrationResult }[] = [];
  for (const s of studies) {
    const c = await prisma.studyCalibration.findFirst({ where: { studyId: s.id }, orderBy: { createdAt: 'desc' } });
    if (c) out.push({ id: c.id, createdAt: c.createdAt, result: calibrationFrom(c.result) });
  }
  return out;
}

/** One stored calibration, if its study is visible to the viewer. */
export async function calibrationById(prisma: PrismaClient, viewer: Viewer, id: string): Promise<CalibrationResult | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  const c = await prisma.studyCalibration.findUnique({ where: { id }, include: { study: { select: { guildIds: true, channelIds: true } } } });
  if (!c || !studyVisibleTo(c.study, asActor(viewer))) return null;
  return calibrationFrom(c.result);
}
