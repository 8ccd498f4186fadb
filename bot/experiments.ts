// A/B tests with real people, compared: each arm's figures on each kind of task and the differences between
// the arms, over the sessions of an A/B period of a study (Session.experimentId), or over a study's sessions
// grouped by the version that played them when the study was made with several arms. The arms themselves
// assign the sessions (bot/assign.ts), so each task's sessions are split between them: besides the comparison
// of all sessions (Welch / Fisher, tasks/two-sample.ts), the differences are also taken within each task that
// both arms played and tested paired (Wilcoxon signed-rank over those tasks).
//
// The person is not told which arm they are in (the channels show no policy name where a study has arms).
import type { Database } from '../prisma/db.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import {
  armSessions,
  latestExperiment,
  runningExperiment,
  stopArms,
  type ArmSession,
  type RunningExperiment,
  type StopRequest,
  type StopResult,
} from '../prisma/experiment-store.ts';
import type { StudyWithArms } from '../prisma/study-store.ts';
import { wasAbandoned } from '../tasks/quality.ts';
import { meanIntervalOf, wilsonCount, type Interval } from '../tasks/stats.ts';
import { wilcoxonSignedRank } from '../tasks/paired-tests.ts';
import { compareMeans, compareProportions, type Difference } from '../tasks/two-sample.ts';

export type Arm = 'control' | 'candidate';

/** The two versions compared: the control (reference) and the candidate. */
export interface ArmPair {
  control: { id: string; name: string };
  candidate: { id: string; name: string };
}

export interface ArmFigures {
  arm: Arm;
  /** The policy version that played the arm. */
  version: string;
  sessions: number;
  /** Sessions that have ended (answered, abandoned or expired). */
  ended: number;
  evaluated: number;
  success: Interval;
  /** Backend: mean fraction of tests passed. Frontend: mean similarity. */
  score: Interval;
  rating: Interval;
  /** Agent turns of the ended sessions. */
  turns: Interval;
  /** Share of ended sessions the person abandoned or let expire. */
  abandonment: Interval;
}

/** Candidate minus control within each task both arms played (evaluated sessions), averaged over those tasks. */
export interface PairedDifference {
  difference: Interval;
  /** Wilcoxon signed-rank over the tasks. */
  pValue: number;
}

export interface ArmComparison {
  kind: 'backend' | 'frontend';
  control: ArmFigures;
  candidate: ArmFigures;
  /** Candidate minus control, each with its interval and p-value. */
  differences: {
    success: Difference;
    score: Difference;
    rating: Difference;
    turns: Difference;
    abandonment: Difference;
  };
  /** The same, paired by task: `tasks` is how many tasks both arms played. */
  paired: { tasks: number; success: PairedDifference; score: PairedDifference };
}

interface Tally {
  sessions: number;
  ended: number;
  successes: number;
  evaluated: number;
  abandoned: number;
  scores: number[];
  ratings: number[];
  turns: number[];
}

function tally(sessions: readonly ArmSession[]): Tally {
  const t: Tally = {
    sessions: sessions.length,
    ended: 0,
    successes: 0,
    evaluated: 0,
    abandoned: 0,
    scores: [],
    ratings: [],
    turns: [],
  };
  for (const s of sessions) {
    if (s.status !== 'active') {
      t.ended++;
      t.turns.push(s.turnCount);
      if (wasAbandoned(s)) t.abandoned++;
    }
    if (s.evaluation) {
      t.evaluated++;
      if (s.evaluation.success) t.successes++;
      t.scores.push(s.evaluation.score);
    }
    if (s.rating !== null) t.ratings.push(s.rating);
  }
  return t;
}

function figures(arm: Arm, version: string, t: Tally): ArmFigures {
  return {
    arm,
    version,
    sessions: t.sessions,
    ended: t.ended,
    evaluated: t.evaluated,
    success: wilsonCount(t.successes, t.evaluated),
    score: meanIntervalOf(t.scores, 0.95, [0, 1]),
    rating: meanIntervalOf(t.ratings, 0.95, [1, 5]),
    turns: meanIntervalOf(t.turns, 0.95, [0, Number.POSITIVE_INFINITY]),
    abandonment: wilsonCount(t.abandoned, t.ended),
  };
}

const mean = (xs: readonly number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;

function pairedDifference(candidate: readonly number[], control: readonly number[]): PairedDifference {
  return {
    difference: meanIntervalOf(
      candidate.map((x, i) => x - control[i]!),
      0.95,
      [-1, 1],
    ),
    pValue: candidate.length ? wilcoxonSignedRank(candidate, control).pValue : NaN,
  };
}

/** Per task that both arms played (evaluated sessions): each arm's mean score and success rate, candidate minus control. */
function pairedByTask(sessions: readonly ArmSession[], pair: ArmPair): ArmComparison['paired'] {
  const byTask = new Map<string, { control: ArmSession[]; candidate: ArmSession[] }>();
  for (const s of sessions) {
    if (!s.evaluation) continue;
    const arm = s.policyVersionId === pair.candidate.id ? 'candidate' : 'control';
    const t = byTask.get(s.taskId) ?? { control: [], candidate: [] };
    t[arm].push(s);
    byTask.set(s.taskId, t);
  }
  const both = [...byTask.values()].filter((t) => t.control.length > 0 && t.candidate.length > 0);
  const score = (list: ArmSession[]) => mean(list.map((s) => s.evaluation!.score));
  const success = (list: ArmSession[]) => mean(list.map((s) => (s.evaluation!.success ? 1 : 0)));
  return {
    tasks: both.length,
    success: pairedDifference(
      both.map((t) => success(t.candidate)),
      both.map((t) => success(t.control)),
    ),
    score: pairedDifference(
      both.map((t) => score(t.candidate)),
      both.map((t) => score(t.control)),
    ),
  };
}

/** Each arm's figures on one kind of task, and the differences between the arms with their p-values. */
export function compareArms(
  sessions: readonly ArmSession[],
  kind: 'backend' | 'frontend',
  pair: ArmPair,
): ArmComparison {
  const ofKind = sessions.filter(
    (s) => s.kind === kind && (s.policyVersionId === pair.control.id || s.policyVersionId === pair.candidate.id),
  );
  const a = tally(ofKind.filter((s) => s.policyVersionId === pair.candidate.id));
  const b = tally(ofKind.filter((s) => s.policyVersionId === pair.control.id));
  return {
    kind,
    control: figures('control', pair.control.name, b),
    candidate: figures('candidate', pair.candidate.name, a),
    differences: {
      success: compareProportions(a.successes, a.evaluated, b.successes, b.evaluated),
      score: compareMeans(a.scores, b.scores),
      rating: compareMeans(a.ratings, b.ratings),
      turns: compareMeans(a.turns, b.turns),
      abandonment: compareProportions(a.abandoned, a.ended, b.abandoned, b.ended),
    },
    paired: pairedByTask(ofKind, pair),
  };
}

/** One comparison per kind of task that the two arms played. */
export function compareExperiment(sessions: readonly ArmSession[], pair: ArmPair): ArmComparison[] {
  const played = sessions.filter(
    (s) => s.policyVersionId === pair.control.id || s.policyVersionId === pair.candidate.id,
  );
  return (['backend', 'frontend'] as const)
    .filter((k) => played.some((s) => s.kind === k))
    .map((k) => compareArms(played, k, pair));
}

// ------------------------------------------------------------------------------------------- a study's arms

export interface ArmsStatus {
  study: StudyWithArms;
  /** The A/B period compared: the running one, else (when the study compares no arms of its own) the latest. */
  experiment: RunningExperiment | null;
  comparisons: ArmComparison[];
}

/** The reference arm of a study made with several arms: the deployed version, else the largest share, else by name. */
function referenceFirst(arms: StudyWithArms['arms']): StudyWithArms['arms'] {
  const deployed = (a: StudyWithArms['arms'][number]) => (a.policyVersion.status === 'deployed' ? 1 : 0);
  return [...arms].sort(
    (a, b) =>
      deployed(b) - deployed(a) || b.share - a.share || a.policyVersion.name.localeCompare(b.policyVersion.name),
  );
}

/** How a study's arms compare (see the file's comment); no comparison when it has had no arms to compare. */
export async function armsStatus(prisma: PrismaClient, study: StudyWithArms): Promise<ArmsStatus> {
  const running = await runningExperiment(prisma, study.id);
  if (!running && study.arms.length > 1) {
    const [reference, ...others] = referenceFirst(study.arms).map((a) => a.policyVersion);
    const sessions = await armSessions(prisma, { studyId: study.id });
    return {
      study,
      experiment: null,
      comparisons: others.flatMap((o) => compareExperiment(sessions, { control: reference!, candidate: o })),
    };
  }
  const e = running ?? (await latestExperiment(prisma, study.id));
  if (!e) return { study, experiment: null, comparisons: [] };
  return {
    study,
    experiment: e,
    comparisons: compareExperiment(await armSessions(prisma, { experimentId: e.id }), {
      control: e.control,
      candidate: e.candidate,
    }),
  };
}

/** The figures a comparison stopped with, kept in its audit entry (estimates and p-values per kind). */
export function summaryForAudit(comparisons: readonly ArmComparison[]): Record<string, unknown>[] {
  // JSON has no NaN (an arm without data): stored as null.
  const v = (x: number) => (Number.isFinite(x) ? x : null);
  return comparisons.map((c) => ({
    kind: c.kind,
    control: c.control.version,
    candidate: c.candidate.version,
    sessions: { control: c.control.sessions, candidate: c.candidate.sessions },
    success: {
      control: v(c.control.success.estimate),
      candidate: v(c.candidate.success.estimate),
      p: v(c.differences.success.pValue),
    },
    score: {
      control: v(c.control.score.estimate),
      candidate: v(c.candidate.score.estimate),
      p: v(c.differences.score.pValue),
    },
    pairedByTask: {
      tasks: c.paired.tasks,
      success: v(c.paired.success.difference.estimate),
      successP: v(c.paired.success.pValue),
      score: v(c.paired.score.difference.estimate),
      scoreP: v(c.paired.score.pValue),
    },
  }));
}

/** Stops a study's comparison of arms (prisma/experiment-store.ts stopArms), its audit entry holding the final figures. */
export async function stopStudyArms(
  db: Database,
  actor: string,
  study: StudyWithArms,
  r: StopRequest,
): Promise<StopResult> {
  const status = await armsStatus(db.prisma, study);
  const live = !status.experiment || status.experiment.status === 'running';
  return stopArms(db, actor, study.name, r, { figures: live ? summaryForAudit(status.comparisons) : [] });
}
