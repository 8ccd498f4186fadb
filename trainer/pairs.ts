// Which trajectories and candidate actions are compared during training. Pure functions: no tensors, no I/O.

/** The reward a session contributes to training: the automatic score, optionally blended with the rating. */
export function blendedReward(score: number, rating: number | null | undefined, ratingWeight: number): number {
  if (ratingWeight < 0 || ratingWeight > 1) throw new RangeError(`rating weight must be in [0, 1], got ${ratingWeight}`);
  if (rating == null || ratingWeight === 0) return score;
  if (rating < 1 || rating > 5) throw new RangeError(`rating must be in 1..5, got ${rating}`);
  const ratingAsReward = (rating - 1) / 4;
  return (1 - ratingWeight) * score + ratingWeight * ratingAsReward;
}

export interface Scored {
  id: string;
  groupId: string;
  reward: number;
}

export interface Pair<T> {
  chosen: T;
  rejected: T;
}

/**
 * Trajectory pairs for the critic and for multi-turn DPO: within each task, every trajectory paired with
 * every trajectory of strictly lower reward (ties carry no preference). `maxPairsPerGroup` keeps tasks with
 * many sessions from dominating; the pairs kept are those with the largest reward gaps, which carry the
 * clearest signal, with ties in the gap broken by id so that the choice is deterministic.
 */
export function preferencePairs<T extends Scored>(items: T[], maxPairsPerGroup = Infinity): Pair<T>[] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const g = groups.get(item.groupId);
    if (g) g.push(item);
    else groups.set(item.groupId, [item]);
  }
  const pairs: Pair<T>[] = [];
  for (const groupId of [...groups.keys()].sort()) {
    const group = groups.get(groupId)!;
    const inGroup: Pair<T>[] = [];
    for (const a of group) for (const b of group) if (a.reward > b.reward) inGroup.push({ chosen: a, rejected: b });
    inGroup.sort(
      (p, q) =>
        q.chosen.reward - q.rejected.reward - (p.chosen.reward - p.rejected.reward) ||
        (p.chosen.id + p.rejected.id).localeCompare(q.chosen.id + q.rejected.id),
    );
    pairs.push(...inGroup.slice(0, maxPairsPerGroup));
  }
  return pairs;
}

/**
 * SWEET-RL's actor pairs for one state: candidates ranked by critic advantage, then `count` pairs each of a
 * random candidate from the top half (chosen) and a random one from the bottom half (rejected).
 * With an odd number of candidates the median belongs to neither half.
 */
export function topBottomPairs<T>(candidates: T[], score: (c: T) => number, count: number, random: () => number): Pair<T>[] {
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
