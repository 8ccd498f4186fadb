// Offline evaluation of policy versions on held-out tasks with a simulated collaborator. Backend: mean share
// of tests passed (t interval) and success rate (Wilson interval). Frontend: mean similarity, and the win rate
// against another version on the same tasks (ties count half). Two versions are compared on the SAME games
// (task, sampling seed, collaborator): `comparePaired` turns the two lists of game outcomes into the paired
// differences with intervals and p-values (McNemar's exact test for success; Wilcoxon signed-rank and a
// paired bootstrap for tests passed / similarity; over tasks, not games, when a task was played more than once).
// It is pure, so the gate and the tests use it without a model.
import type { PolicyVersion, PrismaClient } from '../prisma/generated/client.ts';
import { winRate, type WinRate } from '../tasks/similarity.ts';
import type { Scorer } from '../tasks/scorer.ts';
import { simulate, type SimulateOptions, type SimulatedGame } from './simulate.ts';
import {
  formatPercent,
  clusterMeans,
  meanIntervalOf,
  pairedBootstrap,
  wilsonCount,
  type Interval,
} from '../tasks/stats.ts';
import { mcnemarPaired, wilcoxonSignedRank, type McNemarResult, type WilcoxonResult } from '../tasks/paired-tests.ts';

export interface EvaluationReport {
  version: string;
  kind: SimulateOptions['kind'];
  episodes: number;
  /** Backend: fraction of tests passed; frontend: similarity. */
  score: Interval;
  success: Interval;
  successes: number;
  meanAgentTurns: number;
  /** Per game, in episode order (the same tasks for every version evaluated with the same options). */
  scores: number[];
  against?: { version: string; report: Omit<EvaluationReport, 'against'>; winRate: WinRate };
}

/** One game's outcome as the comparison needs it; `taskId` checks that two lists are the same games. */
export interface GameOutcome {
  taskId: string;
  score: number;
  success: boolean;
  agentTurns: number;
  /** The stored session of the game, when the games were stored (the dashboard links to it). */
  sessionId?: string | null;
}

export function outcomes(games: readonly SimulatedGame[]): GameOutcome[] {
  return games.map((g) => ({
    taskId: g.taskId,
    score: g.evaluation.score,
    success: g.evaluation.success,
    agentTurns: g.agentTurns,
    sessionId: g.sessionId,
  }));
}

export function summarise(
  version: string,
  kind: SimulateOptions['kind'],
  games: readonly (SimulatedGame | GameOutcome)[],
): EvaluationReport {
  const list = games.map((g) => ('evaluation' in g ? outcomes([g])[0]! : g));
  const scores = list.map((g) => g.score);
  const successes = list.filter((g) => g.success).length;
  return {
    version,
    kind,
    episodes: list.length,
    score: meanIntervalOf(scores),
    success: wilsonCount(successes, list.length),
    successes,
    meanAgentTurns: list.reduce((a, g) => a + g.agentTurns, 0) / Math.max(1, list.length),
    scores,
  };
}

export interface PairedComparison {
  kind: SimulateOptions['kind'];
  games: number;
  /** Interval level of every interval below (the p-values do not depend on it). */
  level: number;
  a: Omit<EvaluationReport, 'against'>;
  b: Omit<EvaluationReport, 'against'>;
  /** Distinct tasks among the games: the units of the tests below when a task was played more than once. */
  tasks: number;
  /** A minus B, in success rate: bootstrap interval of the mean paired difference, and McNemar's test. */
  success: { difference: Interval; mcnemar: McNemarResult };
  /**
   * A minus B, in score (tests passed / similarity): bootstrap interval and Wilcoxon signed-rank test over the
   * tasks' mean differences (over games when each task was played once).
   */
  score: { difference: Interval; wilcoxon: WilcoxonResult; tasks: TaskTally };
  /** Share of games where A's score beats B's (ties half): the paper's frontend win rate. */
  winRate: WinRate;
}

/** Tasks on which A's mean score is above, below or equal to B's. */
export interface TaskTally {
  better: number;
  worse: number;
  equal: number;
}

export interface CompareOptions {
  kind: SimulateOptions['kind'];
  level?: number;
  /** Seed of the bootstrap resampling (the intervals are reproducible). */
  seed?: number;
  resamples?: number;
}

/**
 * The paired comparison of two versions' outcomes on the same games (index i of both lists is one game).
 * Games of one task are not independent (they share the task, and a policy that cannot do a task fails all of
 * its games), so when a task was played more than once the task is the unit: bootstrap intervals resample whole
 * tasks, the score's Wilcoxon test ranks each task's mean difference, and McNemar's test is the clustered one
 * (tasks/stats.ts mcnemarClustered). With one game a task these are the plain game-level tests.
 */
export function comparePaired(
  a: { version: string; games: readonly GameOutcome[] },
  b: { version: string; games: readonly GameOutcome[] },
  o: CompareOptions,
): PairedComparison {
  if (a.games.length !== b.games.length)
    throw new Error(
      `comparePaired: ${a.version} played ${a.games.length} games and ${b.version} ${b.games.length}; a paired comparison needs the same games`,
    );
  if (a.games.length === 0) throw new Error('comparePaired: no games to compare');
  a.games.forEach((g, i) => {
    if (g.taskId !== b.games[i]!.taskId)
      throw new Error(
        `comparePaired: game ${i} is task ${g.taskId} for ${a.version} but ${b.games[i]!.taskId} for ${b.version}; not the same games`,
      );
  });
  const level = o.level ?? 0.95;
  const tasks = a.games.map((g) => g.taskId);
  const boot = { level, seed: o.seed ?? 1, clusters: tasks, ...(o.resamples ? { resamples: o.resamples } : {}) };
  const sa = a.games.map((g) => g.score);
  const sb = b.games.map((g) => g.score);
  const ta = clusterMeans(sa, tasks);
  const tb = clusterMeans(sb, tasks);
  const ka = a.games.map((g) => g.success);
  const kb = b.games.map((g) => g.success);
  return {
    kind: o.kind,
    games: a.games.length,
    tasks: new Set(tasks).size,
    level,
    a: summarise(a.version, o.kind, a.games),
    b: summarise(b.version, o.kind, b.games),
    success: {
      difference: pairedBootstrap(ka.map(Number), kb.map(Number), boot),
      mcnemar: mcnemarPaired(ka, kb, tasks),
    },
    score: { difference: pairedBootstrap(sa, sb, boot), wilcoxon: wilcoxonSignedRank(ta, tb), tasks: tally(ta, tb) },
    winRate: winRate(sa, sb),
  };
}

function tally(a: readonly number[], b: readonly number[], tolerance = 1e-12): TaskTally {
  const t = { better: 0, worse: 0, equal: 0 };
  a.forEach((x, i) => {
    const d = x - b[i]!;
    if (Math.abs(d) <= tolerance) t.equal++;
    else if (d > 0) t.better++;
    else t.worse++;
  });
  return t;
}

export async function evaluateVersion(
  prisma: PrismaClient,
  version: PolicyVersion,
  scorer: Scorer,
  o: SimulateOptions,
  against?: PolicyVersion,
): Promise<EvaluationReport> {
  const report = summarise(version.name, o.kind, await simulate(prisma, version, scorer, o));
  if (against) {
    const other = summarise(against.name, o.kind, await simulate(prisma, against, scorer, o));
    report.against = { version: against.name, report: other, winRate: winRate(report.scores, other.scores) };
  }
  return report;
}

/** Plays the same games (tasks, seeds, collaborator: the same options) with both versions and compares them. */
export async function compareVersions(
  prisma: PrismaClient,
  a: PolicyVersion,
  b: PolicyVersion,
  scorer: Scorer,
  o: SimulateOptions,
  level = 0.95,
): Promise<PairedComparison> {
  const ga = outcomes(await simulate(prisma, a, scorer, o));
  const gb = outcomes(await simulate(prisma, b, scorer, o));
  return comparePaired(
    { version: a.name, games: ga },
    { version: b.name, games: gb },
    { kind: o.kind, level, seed: o.seed },
  );
}

const metricName = (kind: SimulateOptions['kind']) => (kind === 'backend' ? '% tests passed' : 'similarity (%)');

export function formatReport(r: EvaluationReport): string {
  const metric = metricName(r.kind);
  const lines = [
    `${r.version} on ${r.episodes} ${r.kind} games (95% intervals):`,
    `  ${metric}: ${formatPercent(r.score)}`,
    `  success rate: ${formatPercent(r.success)} (${r.successes}/${r.episodes})`,
    `  agent turns per game: ${r.meanAgentTurns.toFixed(2)}`,
  ];
  if (r.against) {
    const w = r.against.winRate;
    lines.push(
      `  against ${r.against.version}: its ${metric} ${formatPercent(r.against.report.score)}, success ${formatPercent(r.against.report.success)}`,
      `  win rate vs ${r.against.version}: ${(w.winRate * 100).toFixed(1)} [${(w.ci95[0] * 100).toFixed(1)}, ${(w.ci95[1] * 100).toFixed(1)}] (${w.wins} wins, ${w.ties} ties, ${w.losses} losses)`,
    );
  }
  return lines.join('\n');
}

/** "+3.1 [-1.2, 7.4]" percentage points. */
export function formatDifference(i: Interval, digits = 1): string {
  const f = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(digits)}`;
  if (!Number.isFinite(i.lo)) return `${f(i.estimate)} (n=${i.n})`;
  return `${f(i.estimate)} [${f(i.lo)}, ${f(i.hi)}]`;
}

export function formatP(p: number): string {
  return p < 0.001 ? 'p < 0.001' : `p = ${p.toFixed(3)}`;
}

/** The comparison as a table: each policy with intervals, then the paired differences A - B with p-values. */
export function formatComparison(c: PairedComparison): string {
  const pct = `${Math.round(c.level * 100)}%`;
  const metric = metricName(c.kind);
  const width = Math.max(8, c.a.version.length, c.b.version.length, 'A - B'.length) + 2;
  const row = (label: string, success: string, score: string, extra = '') =>
    `  ${label.padEnd(width)}${success.padEnd(30)}${score.padEnd(30)}${extra}`.trimEnd();
  const w = c.winRate;
  const byTask = c.tasks < c.games;
  const unit = byTask ? 'tasks' : 'games';
  const lines = [
    `${c.a.version} (A) vs ${c.b.version} (B) on the same ${c.games} ${c.kind} games${byTask ? ` of ${c.tasks} tasks (intervals and tests over tasks)` : ''} (${pct} intervals):`,
    row('', 'success rate %', metric, 'agent turns'),
    row(
      c.a.version,
      `${formatPercent(c.a.success)} (${c.a.successes})`,
      formatPercent(c.a.score),
      c.a.meanAgentTurns.toFixed(2),
    ),
    row(
      c.b.version,
      `${formatPercent(c.b.success)} (${c.b.successes})`,
      formatPercent(c.b.score),
      c.b.meanAgentTurns.toFixed(2),
    ),
    row('A - B', `${formatDifference(c.success.difference)} points`, `${formatDifference(c.score.difference)} points`),
    row(
      'p-value',
      `${formatP(c.success.mcnemar.pValue)} McNemar${byTask ? ' (clustered)' : ''}`,
      `${formatP(c.score.wilcoxon.pValue)} Wilcoxon`,
    ),
    ...(byTask
      ? [
          `  tasks where A's mean ${c.kind === 'backend' ? 'score' : 'similarity'} is higher: ${c.score.tasks.better}, lower: ${c.score.tasks.worse}, equal: ${c.score.tasks.equal}`,
        ]
      : []),
    `  discordant games: A only ${c.success.mcnemar.aOnly}, B only ${c.success.mcnemar.bOnly}; ${c.score.wilcoxon.zeros} ${unit} with equal ${byTask ? 'mean ' : ''}${c.kind === 'backend' ? 'scores' : 'similarity'}`,
    `  win rate of A over B: ${(w.winRate * 100).toFixed(1)} [${(w.ci95[0] * 100).toFixed(1)}, ${(w.ci95[1] * 100).toFixed(1)}] (${w.wins} wins, ${w.ties} ties, ${w.losses} losses)`,
  ];
  return lines.join('\n');
}
