// What the credit benchmark reports of a policy's games (README.md, "Measures"), besides the greedy paths
// (tasks/credit-states.ts): sampled success and score with intervals clustered by task, and what each
// training phase did (updates, summed learning rate). Pure functions over played games and stored steps.
import type { PlayedGame } from '../../tasks/credit-states.ts';
import { clusterMeans, meanIntervalOf, oneSampleT, type Interval, type MeanDifferenceTest } from '../../tasks/stats.ts';

export interface SampledSummary {
  /** Mean over tasks of each task's mean, with a Student-t interval over the task means (the task the unit). */
  success: Interval;
  score: Interval;
  games: number;
  tasks: number;
}

/** Sampled games (several a task) summarised with the task as the unit: games of one task are not independent. */
export function sampledSummary(games: readonly PlayedGame[]): SampledSummary {
  const clusters = games.map((g) => g.taskId);
  const clustered = (xs: number[]) => meanIntervalOf(clusterMeans(xs, clusters), 0.95, [0, 1]);
  return {
    success: clustered(games.map((g) => (g.success ? 1 : 0))),
    score: clustered(games.map((g) => g.score)),
    games: games.length,
    tasks: new Set(clusters).size,
  };
}

/** A phase's updates and the sum of their learning rates (how far it could move the weights), from its steps. */
export function phaseEffort(
  steps: readonly { phase: string; metrics: unknown }[],
): Record<string, { updates: number; lrSum: number }> {
  const out: Record<string, { updates: number; lrSum: number }> = {};
  for (const s of steps) {
    const e = (out[s.phase] ??= { updates: 0, lrSum: 0 });
    e.updates++;
    e.lrSum += Number((s.metrics as { lr?: number } | null)?.lr ?? 0);
  }
  return out;
}

/** Per-seed differences a - b (one number a seed) tested across seeds: the seed is the unit. */
export function acrossSeeds(a: readonly number[], b: readonly number[]): MeanDifferenceTest {
  if (a.length !== b.length) throw new Error(`acrossSeeds: ${a.length} seeds against ${b.length}`);
  return oneSampleT(a.map((x, i) => x - b[i]!));
}
