// bench:learning's flags, read and checked before anything runs, and the tasks they pick; bench/learning.ts runs it.
import { resolve } from 'node:path';
import { PRESETS, type TrainConfig } from '../trainer/presets.ts';
import { demonstratorMixSchema } from '../trainer/recipes/demonstrator-mix.ts';
import type { Algorithm } from '../trainer/runs.ts';
import { generateMiniTasks } from '../tasks/mini.ts';
import type { TaskRecord } from '../tasks/model.ts';

function arg(name: string, fallback: number): number;
function arg(name: string, fallback: string): string;
function arg(name: string, fallback: number | string): number | string {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = process.argv[i + 1];
  if (v === undefined) throw new Error(`--${name} needs a value`);
  if (typeof fallback === 'number') {
    const n = Number(v);
    if (!Number.isFinite(n)) throw new Error(`--${name} must be a number, got ${v}`);
    return n;
  }
  return v;
}

export const seed = arg('seed', 1234);
const taskCount = arg('tasks', 125);
// The paired tests take a task's games as one unit: for the same number of games, more tasks with fewer games
// each never widen the interval in expectation (the task-to-task part of the variance shrinks, the game-to-game
// part stays). 144 x 1 games cost what 72 x 2 and 24 x 6 did.
const testTaskCount = arg('test-tasks', 144);
export const perTask = arg('episodes-per-task', 3);
export const evalPerTask = arg('eval-episodes-per-task', 1);
// Held-out games are played greedily (temperature 0): most of the noise of sampled paired games is between the
// games of one task (bench/noise.ts), which a greedy game does not have, so each task is one deterministic pair.
// On the validation slice this narrowed SWEET-RL's interval at the same cost (bench/HISTORY.md, "Common random
// numbers and greedy held-out games"). The official evaluation samples at temperature 1. --eval-temperature 0.7
// --eval-episodes-per-task 2 --test-tasks 72 plays as the bot serves, the earlier protocol. Collection always
// samples (it needs variety).
export const evalTemperature = arg('eval-temperature', 0);
if (!(evalTemperature >= 0 && evalTemperature <= 2))
  throw new Error(`--eval-temperature must be in [0, 2], got ${evalTemperature}`);
if (evalTemperature === 0 && evalPerTask !== 1) {
  throw new Error(
    `--eval-episodes-per-task ${evalPerTask} at --eval-temperature 0 would replay one greedy game ${evalPerTask} times: play more --test-tasks instead, or sample (--eval-temperature 0.7)`,
  );
}
export const maxStepsArg = arg('max-steps', 0);
export const starterSteps = arg('starter-steps', 0);
export const starterGames = arg('starter-games', 0);
// --starter-mix expert,hasty,noisy,noise: demonstrator weights of the benchmark's own starter (see
// trainer/recipes/starter.ts); 'none' (or absent) keeps the standard recipe's careful expert alone.
const starterMixArg = arg('starter-mix', 'none');
export const starterMix = (() => {
  if (starterMixArg === 'none') return undefined;
  const [expert, hasty, noisy, noise] = starterMixArg.split(',').map(Number);
  const mix = demonstratorMixSchema.safeParse({ expert, hasty, noisy, noise });
  if (!mix.success || [expert, hasty, noisy, noise].some((x) => !Number.isFinite(x)))
    throw new Error(
      `--starter-mix must be expert,hasty,noisy,noise (weights >= 0, noise in [0, 1]), got ${starterMixArg}`,
    );
  return mix.data;
})();
export const rounds = arg('rounds', 3);
// Updates per phase in the curve's later rounds (0: as --max-steps), which train on all sessions so far: a cap
// that keeps the whole benchmark within 40 minutes on 2 cores.
export const curveMaxSteps = arg('curve-max-steps', 8);
// Games a train task that each later curve round collects with the deployed policy (the first collection plays
// --episodes-per-task): also a cap for the 40 minutes.
export const curvePerTask = arg('curve-episodes-per-task', 1);
export const dir = resolve(arg('dir', 'data/bench/learning'));
export const keep = process.argv.includes('--keep');
// --validate: choose settings without touching the held-out tasks. Train-split tasks generated after the pool
// (never trained on) are played in place of the test split; collection and training are the benchmark's own.
export const validate = process.argv.includes('--validate');
// --train '{"temperature":0.7,...}': overrides of the cpu-small preset for every training run of the benchmark.
// Default: candidates sampled at the temperature the policy plays at (0.7, not the paper's 1.0), NLL weight 1
// on the chosen message (paper 0.01), a policy learning rate of 1e-4 (cpu-small: 3e-4) and DPO beta' 0.01
// (paper 0.1): of the settings tried on the validation slice, the ones that did SWEET-RL most good, though not
// significantly (bench/HISTORY.md, "A third of the policy learning rate" and "72 held-out tasks").
export const trainOverrides = JSON.parse(
  arg('train', '{"temperature":0.7,"nllCoefficient":1,"lr":0.0001,"beta":0.01}'),
) as Partial<TrainConfig>;
// A starter built from a demonstrator mix is rehearsed on that mix (unless --train sets the rehearsal itself).
if (starterMix && !('rehearsal' in trainOverrides) && PRESETS['cpu-small'].rehearsal) {
  trainOverrides.rehearsal = { ...PRESETS['cpu-small'].rehearsal, demonstrators: starterMix };
}
// --methods rft,mtdpo,sweet: which baselines to train besides zero-shot (all three by default).
export const methods = arg('methods', 'rft,mtdpo,sweet').split(',').filter(Boolean) as Algorithm[];
for (const m of methods) if (!['rft', 'mtdpo', 'sweet'].includes(m)) throw new Error(`--methods: unknown method ${m}`);

/**
 * The train split of the first --tasks generated tasks, and --test-tasks held-out ones (split 'test'): the first
 * test-split tasks of the stream, or with --validate the first train-split tasks after the pool. Task i depends
 * only on (seed, i), so a longer stream extends the pool without changing it.
 */
export function benchmarkTasks(): TaskRecord[] {
  if (!Number.isInteger(testTaskCount) || testTaskCount < 1)
    throw new Error(`--test-tasks must be a positive integer, got ${testTaskCount}`);
  const train = generateMiniTasks({ seed, count: taskCount }).filter((t) => t.split === 'train');
  const heldOut = (t: TaskRecord, i: number) => (validate ? i >= taskCount && t.split === 'train' : t.split === 'test');
  // Generate until enough held-out tasks are there (about one task in five is test-split).
  for (let count = taskCount + 5 * testTaskCount; ; count *= 2) {
    const held = generateMiniTasks({ seed, count }).filter(heldOut).slice(0, testTaskCount);
    if (held.length === testTaskCount) return [...train, ...held.map((t) => ({ ...t, split: 'test' as const }))];
  }
}
