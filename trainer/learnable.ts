// Whether a run's data gives its algorithm anything to learn from, checked before the run is created, and, when
// it gives nothing, why (which tasks, which rewards) and what would. Pure: the counts come from the same
// functions the phases use (pairs.ts rewardPairs, rft.ts successfulTrajectories), so the check and the phase agree.
import { rewardPairs, scoredTrajectories, taskKey, type Trajectory } from './pairs.ts';
import { successfulTrajectories } from './rft.ts';
import type { TaskKind } from '../tasks/model.ts';

export interface LearnableOptions {
  algorithm: 'sweet' | 'mtdpo' | 'rft';
  kind: TaskKind;
  /** RFT imitates sessions rewarded at least this (TrainConfig.rftThreshold). */
  rftThreshold: number;
  /** People's judgements between two of the run's sessions (sweet's extra critic pairs). */
  preferencePairs: number;
}

/** The commands that give a fresh clone's starter something to learn on backend tasks (docs/training.md). */
export const BACKEND_QUICK_PATH = [
  'sweetloop tasks seed --mini 10',
  'sweetloop simulate --policy starter --source generated --per-task 4 --episodes 32',
  'sweetloop train --algo sweet --from starter --data both --max-steps 2',
];

const rewardText = (r: number) => String(Math.round(r * 1000) / 1000);

/** What works instead, for data that gives no pair or no success. */
function whatWorks(data: readonly Trajectory[], kind: TaskKind): string[] {
  const allZero = data.every((t) => t.reward === 0);
  const out: string[] = [];
  if (kind === 'backend' && allZero)
    out.push(
      `the starter learnt on ColBench-mini tasks and scores 0 on the built-in library: play it on those, a few games a task (${BACKEND_QUICK_PATH.join('; ')})`,
    );
  out.push(
    'more games of each task: `sweetloop simulate --policy starter --per-task 4 ...` (a task played once pairs with nothing)',
  );
  if (kind === 'backend')
    out.push(
      'frontend tasks, whose similarity differs from game to game: `sweetloop simulate --kind frontend --per-task 4 ...` then `train --kind frontend`',
    );
  out.push("a real model in the starter's seat: `sweetloop policy add NAME --gguf FILE --deploy` (docs/model.md)");
  return out;
}

/**
 * Why `data` gives `algorithm` nothing to train on, with what would, or null when it gives something. sweet and
 * mtdpo need a pair (two sessions of one task with different rewards; sweet also counts people's judgements);
 * rft needs a session rewarded at least the threshold.
 */
export function nothingToLearn(data: readonly Trajectory[], o: LearnableOptions): string | null {
  const pairs = rewardPairs(scoredTrajectories(data), Infinity).length;
  const successes = successfulTrajectories(data, o.rftThreshold).length;
  const sessions = `${data.length} ${o.kind} session(s)`;
  if (o.algorithm === 'rft') {
    if (successes > 0) return null;
    const best = Math.max(...data.map((t) => t.reward));
    const instead =
      pairs > 0
        ? [`--algo sweet or --algo mtdpo: this data gives ${pairs} pair(s)`, ...whatWorks(data, o.kind)]
        : whatWorks(data, o.kind);
    return `rft: nothing to imitate: none of the ${sessions} has reward >= ${o.rftThreshold} (the best has ${rewardText(best)}). What works: ${instead.join('; or ')}`;
  }
  if (pairs + (o.algorithm === 'sweet' ? o.preferencePairs : 0) > 0) return null;
  const byTask = new Map<string, number[]>();
  for (const t of data) byTask.set(taskKey(t), [...(byTask.get(taskKey(t)) ?? []), t.reward]);
  const once = [...byTask.values()].filter((r) => r.length === 1).length;
  const equal = byTask.size - once;
  const rewards = [...new Set(data.map((t) => t.reward))];
  const why = [
    once ? `${once} task(s) were played once` : '',
    equal ? `${equal} task(s) had every session rewarded the same` : '',
  ]
    .filter(Boolean)
    .join(', ');
  const same = rewards.length === 1 ? `; every reward is ${rewardText(rewards[0]!)}` : '';
  return (
    `${o.algorithm === 'sweet' ? 'critic' : 'mtdpo'}: no trajectory pairs: a pair is two sessions of one task with different rewards, ` +
    `and the ${sessions} over ${byTask.size} task(s) give none (${why}${same}). What works: ${whatWorks(data, o.kind).join('; or ')}`
  );
}
