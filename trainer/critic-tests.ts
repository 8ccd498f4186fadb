// The critic against the tests, on a SWEET-RL run's own sessions: after the critic phase, does its trajectory
// score (trainer/critic.ts, the Bradley-Terry score it was trained on) order a task's sessions as their tests do?
// For every two sessions of one task whose evaluation scores differ (fraction of tests passed, or similarity),
// count those the critic orders the same way; and Spearman's correlation of critic score and test score over all
// the sessions. In-sample (the critic trained on pairs of these sessions, ordered by reward, which may blend in
// people's ratings): a critic that cannot even order its own training sessions by their tests gives the actor
// noise; one that can is not thereby shown to generalise (bench/critic-check.ts checks unseen candidates).
// Stored in the run's metrics under CRITIC_TESTS_METRIC; the dashboard's runs page shows it.
import { spearman } from '../tasks/stats.ts';

export const CRITIC_TESTS_METRIC = 'criticVsTests';

export interface CriticTestsCheck {
  [key: string]: number | null;
  sessions: number;
  /** Tasks with at least two sessions whose test scores differ. */
  tasks: number;
  /** Pairs of sessions of one task whose test scores differ. */
  pairs: number;
  /** Of those, the critic scored the session with the better tests higher. */
  agree: number;
  /** Of those, the critic scored both the same. */
  criticTies: number;
  /** (agree + criticTies / 2) / pairs; null without pairs. 0.5 is chance. */
  agreement: number | null;
  /** Spearman's rho of critic score against test score over all sessions (across tasks); null under 3 sessions or no spread. */
  spearman: number | null;
  spearmanP: number | null;
}

/** The check over sessions (task, test score) and the critic's score of each, index for index. */
export function criticAgainstTests(
  sessions: readonly { taskId: string; score: number }[],
  criticScores: readonly number[],
): CriticTestsCheck {
  if (sessions.length !== criticScores.length)
    throw new RangeError(`criticAgainstTests: ${sessions.length} sessions but ${criticScores.length} critic scores`);
  const byTask = new Map<string, number[]>();
  sessions.forEach((s, i) => byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), i]));
  let pairs = 0;
  let agree = 0;
  let criticTies = 0;
  let tasks = 0;
  for (const idx of byTask.values()) {
    let counted = false;
    for (let a = 0; a < idx.length; a++) {
      for (let b = a + 1; b < idx.length; b++) {
        const i = idx[a]!;
        const j = idx[b]!;
        const tests = sessions[i]!.score - sessions[j]!.score;
        if (tests === 0) continue;
        counted = true;
        pairs++;
        const critic = criticScores[i]! - criticScores[j]!;
        if (critic === 0) criticTies++;
        else if (Math.sign(critic) === Math.sign(tests)) agree++;
      }
    }
    if (counted) tasks++;
  }
  const rho = spearman(
    criticScores,
    sessions.map((s) => s.score),
  );
  const finite = (x: number) => (Number.isFinite(x) ? x : null);
  return {
    sessions: sessions.length,
    tasks,
    pairs,
    agree,
    criticTies,
    agreement: pairs ? (agree + criticTies / 2) / pairs : null,
    spearman: finite(rho.rho),
    spearmanP: finite(rho.pValue),
  };
}

/** One line for the run's log and the CLI. */
export function formatCriticTests(c: CriticTestsCheck): string {
  const pct = (x: number | null) => (x === null ? '—' : `${(100 * x).toFixed(1)}%`);
  return (
    `critic vs tests on the run's ${c.sessions} sessions: of ${c.pairs} same-task pairs the tests tell apart (${c.tasks} tasks), ` +
    `the critic orders ${c.agree} as the tests do (${c.criticTies} ties): ${pct(c.agreement)}; ` +
    `Spearman ${c.spearman === null ? '—' : c.spearman.toFixed(3)}${c.spearmanP === null ? '' : ` (p ${c.spearmanP.toPrecision(2)})`}`
  );
}
