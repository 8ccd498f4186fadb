// Which trajectories and candidate actions are compared during training, and in which order. Pure functions:
// no tensors, no I/O. Orders never depend on database ids or row order (random UUIDs, completion order of
// parallel scoring): every list a phase batches from is sorted by content keys, so the same data and seed give
// the same updates in any database.
import { createHash } from 'node:crypto';
import { quantileSorted } from '../tasks/stats.ts';
import type { TaskContent } from '../tasks/model.ts';
import type { DialogueTurn } from '../tasks/protocol.ts';

/** A finished session read back for training (trainer/data.ts loadTrajectories): what the pairs below compare. */
export interface Trajectory {
  sessionId: string;
  taskId: string;
  task: TaskContent;
  /** Agent and human messages in order, agent first (system notices dropped). */
  turns: DialogueTurn[];
  answer: string;
  /** The evaluation's score (fraction of tests passed, or similarity). */
  score: number;
  success: boolean;
  /** Mean human rating (1-5) when the session was rated. */
  rating: number | null;
  /** What training optimises: the score, blended with the rating when so configured. */
  reward: number;
  simulated: boolean;
  policyVersionId: string | null;
}

export interface Scored {
  id: string;
  groupId: string;
  reward: number;
  /** Order key independent of database ids (a content hash); defaults to the id. */
  key?: string;
}

export interface Pair<T> {
  chosen: T;
  rejected: T;
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** A task's content key: the same task gets the same key in any database. */
export function taskKey(t: Pick<Trajectory, 'task'>): string {
  return sha(JSON.stringify([t.task.kind, t.task.description, t.task.reference]));
}

/** A trajectory's content key (dialogue, answer, reward): equal only for interchangeable trajectories. */
export function trajectoryKey(t: Pick<Trajectory, 'task' | 'turns' | 'answer' | 'reward'>): string {
  return sha(JSON.stringify([taskKey(t), t.turns.map((x) => [x.role, x.content]), t.answer, t.reward]));
}

/** Trajectories sorted by (task key, trajectory key), then session id: the order every phase starts from. */
export function canonicalOrder<T extends Trajectory>(trajectories: readonly T[]): T[] {
  const keyed = trajectories.map((t) => ({ t, k: `${taskKey(t)}:${trajectoryKey(t)}` }));
  keyed.sort((a, b) =>
    a.k < b.k ? -1 : a.k > b.k ? 1 : a.t.sessionId < b.t.sessionId ? -1 : a.t.sessionId > b.t.sessionId ? 1 : 0,
  );
  return keyed.map((x) => x.t);
}

/** Trajectories as rewardPairs takes them: grouped by task content, ordered by content. */
export function scoredTrajectories(
  trajectories: readonly Pick<Trajectory, 'sessionId' | 'task' | 'turns' | 'answer' | 'reward'>[],
): Scored[] {
  return trajectories.map((t) => ({ id: t.sessionId, groupId: taskKey(t), reward: t.reward, key: trajectoryKey(t) }));
}

const keyOf = (x: Scored) => x.key ?? x.id;
const compareKeys = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Trajectory pairs for the critic and for multi-turn DPO, as the official implementation builds them
 * (scripts/evaluate_code.py): within each task, the best trajectory (highest reward; among equals the first by
 * key) is chosen against every trajectory of the task with a strictly lower reward. Ties carry no preference.
 * `maxPairsPerGroup` keeps tasks with many sessions from dominating: the pairs kept are those with the largest
 * reward gaps, ties in the gap broken by key. Groups come in key order.
 */
export function rewardPairs<T extends Scored>(items: T[], maxPairsPerGroup: number | null = Infinity): Pair<T>[] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const g = groups.get(item.groupId);
    if (g) g.push(item);
    else groups.set(item.groupId, [item]);
  }
  const pairs: Pair<T>[] = [];
  for (const groupId of [...groups.keys()].sort(compareKeys)) {
    const group = [...groups.get(groupId)!].sort((a, b) => b.reward - a.reward || compareKeys(keyOf(a), keyOf(b)));
    const best = group[0]!;
    const inGroup: Pair<T>[] = group
      .filter((x) => x.reward < best.reward)
      .map((rejected) => ({ chosen: best, rejected }));
    inGroup.sort((p, q) => p.rejected.reward - q.rejected.reward || compareKeys(keyOf(p.rejected), keyOf(q.rejected)));
    pairs.push(...inGroup.slice(0, maxPairsPerGroup ?? Infinity));
  }
  return pairs;
}

/**
 * How many pairs rewardPairs (no cap) gives for items known only as counts by group and reward: in each group the
 * best is chosen against every item rewarded strictly lower, so the items below the group's highest reward. Lets a
 * study's progress count its critic pairs from rewards counted in the database (bot/study-progress.ts) without
 * rebuilding one item a session; test/trainer/pairs.test.ts holds it to rewardPairs(...).length.
 */
export function rewardPairCount(counts: readonly { groupId: string; reward: number; n: number }[]): number {
  const best = new Map<string, number>();
  for (const c of counts) if (c.n > 0) best.set(c.groupId, Math.max(best.get(c.groupId) ?? -Infinity, c.reward));
  return counts.reduce((a, c) => a + (c.n > 0 && c.reward < best.get(c.groupId)! ? c.n : 0), 0);
}

/**
 * The items after the first floor(share x n): the official trainer holds out the first 3 % of each pairs file for
 * evaluation (openrlhf/utils/utils.py blending_datasets) and trains on the rest. share 0: all of them.
 */
export function holdOutFirst<T>(items: readonly T[], share: number): T[] {
  return items.slice(Math.floor(items.length * share));
}

/**
 * SWEET-RL's actor pairs for one state: candidates ranked by critic advantage, then `count` pairs each of a
 * random candidate from the top half (chosen) and a random one from the bottom half (rejected).
 * With an odd number of candidates the median belongs to neither half.
 */
export function topBottomPairs<T>(
  candidates: T[],
  score: (c: T) => number,
  count: number,
  random: () => number,
): Pair<T>[] {
  if (candidates.length < 2) return [];
  const ranked = [...candidates].sort((a, b) => score(b) - score(a));
  const half = Math.floor(ranked.length / 2);
  const top = ranked.slice(0, half);
  const bottom = ranked.slice(ranked.length - half);
  const pairs: Pair<T>[] = [];
  for (let i = 0; i < count; i++) {
    const chosen = top[Math.floor(random() * top.length)]!;
    const rejected = bottom[Math.floor(random() * bottom.length)]!;
    if (score(chosen) > score(rejected)) pairs.push({ chosen, rejected });
  }
  return pairs;
}

/**
 * The pairs whose `gap` (how sure the ranker is) reaches the `quantile` of all gaps; all of them at 0. Ties at
 * the threshold are kept, so equal gaps are never split by their order.
 */
export function widestGaps<P>(pairs: readonly P[], gap: (p: P) => number, quantile: number): P[] {
  if (quantile <= 0 || pairs.length === 0) return [...pairs];
  const threshold = quantileSorted(
    pairs.map(gap).sort((a, b) => a - b),
    quantile,
  );
  return pairs.filter((p) => gap(p) >= threshold);
}
