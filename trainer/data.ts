// The training data: finished sessions read back from the database as trajectories with a reward.
// Only data that may be used leaves here: consented, not withdrawn, not deleted, not banned, not flagged, not a
// gold check, not of a person a moderator excluded from training. A run chooses its data explicitly
// (selectTrainingData with a DataFilter: people, simulators or both with a weight, quality and rating thresholds,
// one study's sessions).
import { trajectoryKey, type Trajectory } from './pairs.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Prisma } from '../prisma/generated/client.ts';
import type { TaskKind, TaskSplit } from '../tasks/model.ts';
import { sessionReward } from '../prisma/evaluation-store.ts';
import { taskContent } from '../prisma/task-store.ts';
import { refreshQuality } from '../prisma/quality-store.ts';
import {
  describeFlagExclusions,
  flagExclusions,
  openFlagsAmong,
  type FlagExclusions,
} from '../prisma/moderation-store.ts';
import { Rng } from '../tasks/random.ts';
import { DATA_SOURCES, type DataSource } from '../prisma/data-source.ts';
import { findStudy } from '../prisma/study-store.ts';
import {
  dialogueTurnWhere,
  humanSessionWhere,
  isSimulatedSession,
  simulatedSessionWhere,
  trainingParticipantWhere,
} from '../prisma/cohorts.ts';

export type { Trajectory } from './pairs.ts';

/**
 * The filter that chooses a run's data (stored with the run). Quality and rating thresholds apply to the
 * sessions of people; a simulated collaborator has neither.
 */
export interface DataFilter {
  source: DataSource;
  /**
   * With `both`: the weight of simulated sessions relative to human ones, in (0, 1]: each simulated session is
   * kept with this probability, decided per session from `seed` (the same session is always in or out, whatever
   * else arrives). 1 keeps them all.
   */
  simulatedWeight: number;
  /** Sessions of people whose quality score (prisma/quality-store.ts) is below this are left out. */
  minQuality?: number;
  /** Human sessions whose mean rating is below this are left out, and so are unrated ones. */
  minRating?: number;
  /** Only the sessions assigned in the study of this name (never an evaluation study: see trainingStudy). */
  study?: string;
  seed: number;
}

export interface TrajectoryQuery {
  /** Weight of the human rating in the reward (0: the score alone). */
  ratingWeight: number;
  /** Whose sessions: people, simulators or both. */
  source: DataSource;
  minQuality?: number;
  minRating?: number;
  kind?: TaskKind;
  split?: TaskSplit;
  /** Only sessions that ended after this moment (the trainer's "new data" window). */
  endedAfter?: Date;
  /** Exactly these sessions (a run's data snapshot, for resuming with the same data). */
  sessionIds?: string[];
  /** Only the sessions assigned in this study (Session.studyId). */
  studyId?: string;
  /** Sessions with an unresolved moderation flag too (only to count what flags keep out). */
  includeFlagged?: boolean;
}

/**
 * The where-clause every training read shares: only finished, evaluated, usable sessions (consented, not
 * withdrawn, deleted or banned, no unresolved flag, not a gold check, the person not excluded from training), of
 * the source asked for, from people of at least `minQuality`, rated at least at all when `minRating` is set
 * (the mean is checked after reading).
 */
export function usableSessions(q: Omit<TrajectoryQuery, 'ratingWeight'>): Prisma.SessionWhereInput {
  const and: Prisma.SessionWhereInput[] = [
    {
      status: 'answered',
      evaluation: { isNot: null },
      ...(q.includeFlagged ? {} : { flags: { none: { resolvedAt: null } } }),
      // A gold check replayed a known session's agent: no policy played it.
      goldSourceId: null,
      participant: trainingParticipantWhere,
    },
  ];
  if (q.source === 'human') and.push(humanSessionWhere);
  if (q.source === 'simulated') and.push(simulatedSessionWhere);
  if (q.minQuality !== undefined)
    and.push({
      OR: [
        simulatedSessionWhere,
        { AND: [humanSessionWhere, { participant: { quality: { is: { score: { gte: q.minQuality } } } } }] },
      ],
    });
  if (q.minRating !== undefined) and.push({ OR: [simulatedSessionWhere, { ratings: { some: {} } }] });
  const where: Prisma.SessionWhereInput = { AND: and };
  if (q.kind || q.split) where.task = { ...(q.kind ? { kind: q.kind } : {}), ...(q.split ? { split: q.split } : {}) };
  if (q.endedAfter) where.endedAt = { gt: q.endedAfter };
  if (q.sessionIds) where.id = { in: q.sessionIds };
  if (q.studyId) where.studyId = q.studyId;
  return where;
}

export async function loadTrajectories(prisma: PrismaClient, q: TrajectoryQuery): Promise<Trajectory[]> {
  const sessions = await prisma.session.findMany({
    where: usableSessions(q),
    orderBy: [{ endedAt: 'asc' }, { id: 'asc' }],
    include: {
      task: true,
      evaluation: true,
      ratings: { select: { value: true } },
      participant: { select: { role: true } },
      turns: { where: dialogueTurnWhere, orderBy: { index: 'asc' }, select: { role: true, content: true } },
    },
  });
  const out: Trajectory[] = [];
  for (const s of sessions) {
    const evaluation = s.evaluation!;
    const rating = s.ratings.length ? s.ratings.reduce((a, r) => a + r.value, 0) / s.ratings.length : null;
    if (q.minRating !== undefined && !isSimulatedSession(s, s.participant) && (rating === null || rating < q.minRating))
      continue;
    out.push({
      sessionId: s.id,
      taskId: s.taskId,
      task: taskContent(s.task),
      turns: s.turns.map((t) => ({ role: t.role as 'agent' | 'human', content: t.content })),
      answer: s.answer ?? '',
      score: evaluation.score,
      success: evaluation.success,
      rating,
      reward: sessionReward(evaluation.score, rating, q.ratingWeight),
      simulated: isSimulatedSession(s, s.participant),
      policyVersionId: s.policyVersionId,
    });
  }
  return out;
}

/** A run needs at least this many sessions (training pairs compare two sessions of a task). */
export const MIN_TRAINING_SESSIONS = 2;

/** The data filter cannot be used, or chooses too little data; the message says what to do. */
export class DataSelectionError extends Error {
  override name = 'DataSelectionError';
}

/** Rejects a malformed filter before anything is read. */
export function validateDataFilter(f: DataFilter): void {
  if (!DATA_SOURCES.includes(f.source))
    throw new DataSelectionError(`--data must be one of ${DATA_SOURCES.join(', ')}, got ${JSON.stringify(f.source)}`);
  if (!(f.simulatedWeight > 0 && f.simulatedWeight <= 1))
    throw new DataSelectionError(`--simulated-weight must be in (0, 1], got ${f.simulatedWeight}`);
  if (f.simulatedWeight < 1 && f.source !== 'both')
    throw new DataSelectionError('--simulated-weight applies only with --data both');
  if (f.minQuality !== undefined && !(f.minQuality >= 0 && f.minQuality <= 1))
    throw new DataSelectionError(`--min-quality must be in [0, 1], got ${f.minQuality}`);
  if (f.minRating !== undefined && !(f.minRating >= 1 && f.minRating <= 5))
    throw new DataSelectionError(`--min-rating must be from 1 to 5, got ${f.minRating}`);
  if ((f.minQuality !== undefined || f.minRating !== undefined) && f.source === 'simulated') {
    throw new DataSelectionError('--min-quality and --min-rating judge people: they do not apply to --data simulated');
  }
  if (!Number.isInteger(f.seed)) throw new DataSelectionError(`the data seed must be an integer, got ${f.seed}`);
  if (f.study !== undefined && !f.study.trim()) throw new DataSelectionError('--study: give the name of a study');
}

/**
 * The study a run (or the trainer service) trains on, by name: refused when there is none of that name, when it
 * is an evaluation study (split test: its sessions measure policies and are never training data), or when its
 * tasks are of another kind than the run's.
 */
export async function trainingStudy(
  prisma: PrismaClient,
  name: string,
  kind: TaskKind,
): Promise<{ id: string; name: string }> {
  const s = await findStudy(prisma, name);
  if (!s) {
    const known = (
      await prisma.study.findMany({ select: { name: true }, orderBy: { createdAt: 'asc' }, take: 20 })
    ).map((x) => x.name);
    throw new DataSelectionError(
      `--study: no study named "${name}"${known.length ? ` (known: ${known.join(', ')})` : ''}`,
    );
  }
  if (s.split === 'test')
    throw new DataSelectionError(
      `--study: "${name}" is an evaluation study (split test): its sessions measure policies and are never trained on`,
    );
  if (s.kind && s.kind !== kind)
    throw new DataSelectionError(`--study: "${name}" has only ${s.kind} tasks; train it with --kind ${s.kind}`);
  return { id: s.id, name: s.name };
}

/**
 * Is this simulated session in the data at weight w? A fixed draw per key and seed; the key is the trajectory's
 * content (trajectoryKey), not its random id, so the same data gives the same choice in any database.
 */
export function keepsSimulated(key: string, weight: number, seed: number): boolean {
  return weight >= 1 || Rng.derive(seed, 'simulated-weight', key).next() < weight;
}

export interface TrainingSelection {
  trajectories: Trajectory[];
  filter: DataFilter;
  counts: { human: number; simulated: number; simulatedLeftOut: number };
  /** Sessions the filter chose that unresolved moderation flags kept out, and why. */
  flagged: FlagExclusions;
}

function describeFilter(f: DataFilter): string {
  const parts = [
    f.minQuality !== undefined ? `quality >= ${f.minQuality}` : '',
    f.minRating !== undefined ? `rating >= ${f.minRating}` : '',
  ].filter(Boolean);
  return `${f.study !== undefined ? ` in study "${f.study}"` : ''}${parts.length ? ` with ${parts.join(' and ')}` : ''}`;
}

/**
 * A run's training data: the usable sessions the filter chooses, quality scores brought up to date first (so
 * a session whose replies pasted the reference is flagged, and left out, before it can be used). Throws
 * DataSelectionError when fewer than MIN_TRAINING_SESSIONS remain.
 */
export async function selectTrainingData(
  prisma: PrismaClient,
  q: { ratingWeight: number; kind: TaskKind; split?: TaskSplit },
  f: DataFilter,
): Promise<TrainingSelection> {
  validateDataFilter(f);
  const study = f.study !== undefined ? await trainingStudy(prisma, f.study, q.kind) : null;
  if (f.source !== 'simulated') await refreshQuality(prisma);
  const query = {
    ratingWeight: q.ratingWeight,
    source: f.source,
    kind: q.kind,
    split: q.split ?? 'train',
    ...(study ? { studyId: study.id } : {}),
    ...(f.minQuality !== undefined ? { minQuality: f.minQuality } : {}),
    ...(f.minRating !== undefined ? { minRating: f.minRating } : {}),
  };
  const loaded = await loadTrajectories(prisma, query);
  const flagged = flagExclusions(await openFlagsAmong(prisma, usableSessions({ ...query, includeFlagged: true })));
  const trajectories = loaded.filter(
    (t) => !t.simulated || keepsSimulated(trajectoryKey(t), f.simulatedWeight, f.seed),
  );
  const simulated = trajectories.filter((t) => t.simulated).length;
  const counts = {
    human: trajectories.length - simulated,
    simulated,
    simulatedLeftOut: loaded.length - trajectories.length,
  };
  if (trajectories.length < MIN_TRAINING_SESSIONS) {
    const n = trajectories.length;
    const what = f.source === 'both' ? '' : `${f.source} `;
    const advice =
      f.source === 'human'
        ? 'collect more sessions with people, lower --min-quality/--min-rating, or train on --data both or --data simulated'
        : f.source === 'simulated'
          ? 'play more with `sweetloop simulate`, or train on --data both'
          : 'collect more first (sweetloop simulate ...)';
    const flags = describeFlagExclusions(flagged);
    throw new DataSelectionError(
      `only ${n} usable ${what}${q.kind} training session(s)${describeFilter(f)}; a run needs at least ${MIN_TRAINING_SESSIONS}: ${advice}${flags ? `. ${flags}` : ''}`,
    );
  }
  return { trajectories, filter: f, counts, flagged };
}
