// A/B tests with real people: which arm a new session is played in, and how the arms compare.
//
// The arm is chosen per session by permuted blocks within strata: the stratum is the task (so also its kind),
// and the n-th session of an experiment on a task takes position n mod B of block floor(n / B), a seeded
// shuffle of round(share * B) candidate slots among B (B = 100 / gcd(share %, 100): 2 for 50%, 10 for 30%).
// Every session therefore has probability `share` of the candidate, and each task's sessions are split in that
// proportion as soon as a block fills. The shuffle derives from the experiment's seed and id, the task and the
// block: the same order of sessions gives the same arms. Two people starting the same task at the very same
// moment may get the same position (and so the same arm); that costs a little balance, not the probability.
//
// The person is not told which arm they are in (the channels show no policy name for an experiment session).
import type { Prisma, PrismaClient } from '../prisma/generated/client.ts';
import { runningExperiment, sessionsInStratum, type Arm, type ArmSession, type RunningExperiment } from '../prisma/experiment-store.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import { Rng } from '../tasks/random.ts';
import { wasAbandoned } from '../tasks/quality.ts';
import { meanIntervalOf, wilsonCount, type Interval } from '../tasks/stats.ts';
import { compareMeans, compareProportions, type Difference } from '../tasks/two-sample.ts';

export type { Arm };

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** Block size and candidate slots per block for a share given to the percent. */
export function blockOf(share: number): { size: number; candidates: number } {
  const pct = Math.round(share * 100);
  if (!(pct > 0 && pct < 100)) throw new RangeError(`an experiment's share must be between 1% and 99%, got ${share}`);
  const g = gcd(pct, 100);
  return { size: 100 / g, candidates: pct / g };
}

/** The arm of the `index`-th (0-based) session of an experiment in a stratum. Pure and reproducible. */
export function armFor(e: { id: string; seed: number; share: number }, stratum: string, index: number): Arm {
  if (!Number.isInteger(index) || index < 0) throw new RangeError(`armFor: index must be a whole number >= 0, got ${index}`);
  const { size, candidates } = blockOf(e.share);
  const slots: Arm[] = Array.from({ length: size }, (_, i) => (i < candidates ? 'candidate' : 'control'));
  Rng.derive(e.seed, 'experiment', e.id, stratum, Math.floor(index / size)).shuffle(slots);
  return slots[index % size]!;
}

export interface Assignment {
  experimentId: string;
  arm: Arm;
  /** The version that plays the session. */
  policy: PolicyVersion;
}

/** For a session about to start on `taskId`: its arm when an experiment runs, else null (the deployed version). */
export async function assignSession(prisma: PrismaClient | Prisma.TransactionClient, taskId: string): Promise<Assignment | null> {
  const e = await runningExperiment(prisma);
  if (!e) return null;
  const arm = armFor(e, taskId, await sessionsInStratum(prisma, e.id, taskId));
  return { experimentId: e.id, arm, policy: arm === 'candidate' ? e.candidate : e.control };
}

// ------------------------------------------------------------------------------------------- comparing arms

export interface ArmFigures {
  arm: Arm;
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

export interface ArmComparison {
  kind: 'backend' | 'frontend';
  control: ArmFigures;
  candidate: ArmFigures;
  /** Candidate minus control, each with its interval and p-value. */
  differences: { success: Difference; score: Difference; rating: Difference; turns: Difference; abandonment: Difference };
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
  const t: Tally = { sessions: sessions.length, ended: 0, successes: 0, evaluated: 0, abandoned: 0, scores: [], ratings: [], turns: [] };
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

function figures(arm: Arm, t: Tally): ArmFigures {
  return {
    arm,
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

/** Each arm's figures on one kind of task, and the differences between the arms with their p-values. */
export function compareArms(sessions: readonly ArmSession[], kind: 'backend' | 'frontend'): ArmComparison {
  const of = (arm: Arm) => tally(sessions.filter((s) => s.kind === kind && s.arm === arm));
  const a = of('candidate');
  const b = of('control');
  return {
    kind,
    control: figures('control', b),
    candidate: figures('candidate', a),
    differences: {
      success: compareProportions(a.successes, a.evaluated, b.successes, b.evaluated),
      score: compareMeans(a.scores, b.scores),
      rating: compareMeans(a.ratings, b.ratings),
      turns: compareMeans(a.turns, b.turns),
      abandonment: compareProportions(a.abandoned, a.ended, b.abandoned, b.ended),
    },
  };
}

/** One comparison per kind of task that the experiment's sessions played. */
export function compareExperiment(sessions: readonly ArmSession[]): ArmComparison[] {
  return (['backend', 'frontend'] as const).filter((k) => sessions.some((s) => s.kind === k)).map((k) => compareArms(sessions, k));
}

// ------------------------------------------------------------------------------------------- showing it

const pct = (v: number) => `${(100 * v).toFixed(1)}%`;
const num = (v: number) => v.toFixed(2);

function interval(i: Interval, f: (v: number) => string): string {
  if (!Number.isFinite(i.estimate)) return '—';
  if (!Number.isFinite(i.lo)) return `${f(i.estimate)} (n=${i.n})`;
  return `${f(i.estimate)} [${f(i.lo)}, ${f(i.hi)}]`;
}

function difference(d: Difference, f: (v: number) => string): string {
  const e = d.difference;
  if (!Number.isFinite(e.estimate)) return 'difference: not enough data';
  const signed = (v: number) => (v >= 0 ? '+' : '') + f(v);
  const ci = Number.isFinite(e.lo) ? ` [${signed(e.lo)}, ${signed(e.hi)}]` : '';
  const p = Number.isFinite(d.pValue) ? `, p=${d.pValue < 0.001 ? d.pValue.toExponential(1) : d.pValue.toFixed(3)} (${d.test === 'fisher-exact' ? 'Fisher' : 'Welch t'})` : '';
  return `difference ${signed(e.estimate)}${ci}${p}`;
}

/** The rows of a comparison: [label, control, candidate, difference]. */
export function comparisonRows(c: ArmComparison): [string, string, string, string][] {
  const scoreLabel = c.kind === 'backend' ? '% tests passed' : 'similarity';
  const scoreFmt = c.kind === 'backend' ? pct : (v: number) => v.toFixed(3);
  const pts = (v: number) => `${(100 * v).toFixed(1)} pts`;
  return [
    ['success', interval(c.control.success, pct), interval(c.candidate.success, pct), difference(c.differences.success, pts)],
    [scoreLabel, interval(c.control.score, scoreFmt), interval(c.candidate.score, scoreFmt), difference(c.differences.score, c.kind === 'backend' ? pts : (v) => v.toFixed(3))],
    ['rating', interval(c.control.rating, num), interval(c.candidate.rating, num), difference(c.differences.rating, num)],
    ['agent turns', interval(c.control.turns, num), interval(c.candidate.turns, num), difference(c.differences.turns, num)],
    ['abandoned', interval(c.control.abandonment, pct), interval(c.candidate.abandonment, pct), difference(c.differences.abandonment, pts)],
  ];
}

export function describeExperiment(e: RunningExperiment): string {
  const when = e.stoppedAt ? `stopped ${e.stoppedAt.toISOString().slice(0, 16)} (${e.outcome})` : `running since ${e.startedAt.toISOString().slice(0, 16)}`;
  return `Experiment ${e.id.slice(0, 8)}: candidate **${e.candidate.name}** vs control **${e.control.name}**, ${Math.round(e.share * 100)}% of new sessions on the candidate (seed ${e.seed}); ${when} UTC.`;
}

/** The status as Discord text: per kind, each arm's figures with 95% intervals and the difference with its p-value. */
export function formatExperimentStatus(e: RunningExperiment, comparisons: readonly ArmComparison[]): string {
  const lines = [describeExperiment(e)];
  if (comparisons.length === 0) lines.push('No session has been played in it yet.');
  for (const c of comparisons) {
    lines.push('', `**${c.kind}** — control: ${c.control.sessions} session(s) (${c.control.ended} ended), candidate: ${c.candidate.sessions} session(s) (${c.candidate.ended} ended)`);
    for (const [label, control, candidate, diff] of comparisonRows(c)) lines.push(`${label}: control ${control} · candidate ${candidate} · ${diff}`);
  }
  lines.push('', '95% intervals: Wilson (proportions), Student t (means); differences are candidate minus control (Newcombe / Welch).');
  return lines.join('\n');
}
