// The learning benchmark: starter policy -> simulated collection on ColBench-mini train tasks -> zero-shot,
// rejection fine-tuning, multi-turn DPO and SWEET-RL -> evaluation on held-out ColBench-mini test tasks with the
// rule-based simulator, every policy on the SAME games. Prints a table (success rate and % tests passed with 95%
// intervals, and each method's paired difference against zero-shot with its p-value), then a learning curve of
// the closed loop (round 1 is the table's SWEET-RL policy; each later round collects with the deployed policy,
// trains SWEET-RL from it on everything collected so far and deploys it), and one JSON line. It also says how
// often SWEET-RL's critic ranked two answer candidates as their tests do (bench/critic-check.ts). The curve is also
// drawn to <dir>/learning-curve.svg (and .png when Chromium is there).
//
//   npm run bench:learning -- [--tasks 125] [--test-tasks 144] [--episodes-per-task 3] [--eval-episodes-per-task 1]
//                             [--eval-temperature 0]
//                             [--seed 1234] [--max-steps N] [--rounds 3] [--curve-max-steps 8]
//                             [--curve-episodes-per-task 1] [--dir data/bench/learning] [--keep]
//                             [--starter-steps N] [--starter-games N] [--starter-mix expert,hasty,noisy,noise]
//                             [--train '{"temperature":0.7}'] [--methods rft,mtdpo,sweet] [--validate]
//
// Training uses the train split of the first --tasks generated tasks; the held-out games are played on the first
// --test-tasks test-split tasks of the same stream (generated further when the pool holds fewer). --validate
// chooses settings without looking at them: the same training, played instead on train-split tasks generated
// after the pool (the table then says VALIDATION). --train overrides the cpu-small preset for every training run;
// --methods trains only some baselines.
//
// Everything lives in a throwaway PGlite directory under --dir (deleted at the end unless --keep); the starter
// policy is built once under --dir/starter and reused (the shipped build is installed when the recipe is the
// standard one). Each curve round deploys its candidate without the promotion gate (the gate plays held-out
// games; choosing on them would bias the curve).
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import os from 'node:os';
import { DEFAULT_CHROMIUM_PATH } from '../tasks/render.ts';
import { openDatabase } from '../prisma/db.ts';
import { migrate } from '../prisma/migrate.ts';
import { importTasks } from '../prisma/task-store.ts';
import { generateMiniTasks } from '../tasks/mini.ts';
import type { TaskRecord } from '../tasks/model.ts';
import { initBackend } from '../trainer/model/backend.ts';
import { ensureStarterPolicy } from '../trainer/recipes/starter.ts';
import { checkCritic, formatCriticCheck } from './critic-check.ts';
import { heldOutGames } from './noise.ts';
import {
  comparePaired,
  formatDifference,
  formatP,
  outcomes,
  summarise,
  type EvaluationReport,
  type GameOutcome,
  type PairedComparison,
} from '../trainer/evaluate.ts';
import { PRESETS, trainConfig, type TrainConfig } from '../trainer/presets.ts';
import { demonstratorMixSchema } from '../trainer/recipes/demonstrator-mix.ts';
import { createRun, executeRun, type Algorithm } from '../trainer/runs.ts';
import { createScorer } from '../tasks/scorer.ts';
import { ClipImageEmbedder } from '../trainer/model/clip.ts';
import { simulate } from '../trainer/simulate.ts';
import { formatPercent, type Interval } from '../tasks/stats.ts';
import { pairedSuccessGames, pairedSuccessPower } from '../tasks/sample-size.ts';
import { registerVersion } from '../prisma/policy-store.ts';
import { deployPolicyByName } from '../prisma/deployment-store.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import { barChartSvg } from '../bot/report/svg.ts';
import { openSvgRenderer } from '../bot/report/png.ts';

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

const seed = arg('seed', 1234);
const taskCount = arg('tasks', 125);
// The paired tests take a task's games as one unit: for the same number of games, more tasks with fewer games
// each never widen the interval in expectation (the task-to-task part of the variance shrinks, the game-to-game
// part stays). 144 x 1 games cost what 72 x 2 and 24 x 6 did.
const testTaskCount = arg('test-tasks', 144);
const perTask = arg('episodes-per-task', 3);
const evalPerTask = arg('eval-episodes-per-task', 1);
// Held-out games are played greedily (temperature 0): most of the noise of sampled paired games is between the
// games of one task (bench/noise.ts), which a greedy game does not have, so each task is one deterministic pair.
// On the validation slice this narrowed SWEET-RL's interval at the same cost (bench/HISTORY.md, "Common random
// numbers and greedy held-out games"). The official evaluation samples at temperature 1. --eval-temperature 0.7
// --eval-episodes-per-task 2 --test-tasks 72 plays as the bot serves, the earlier protocol. Collection always
// samples (it needs variety).
const evalTemperature = arg('eval-temperature', 0);
if (!(evalTemperature >= 0 && evalTemperature <= 2))
  throw new Error(`--eval-temperature must be in [0, 2], got ${evalTemperature}`);
if (evalTemperature === 0 && evalPerTask !== 1) {
  throw new Error(
    `--eval-episodes-per-task ${evalPerTask} at --eval-temperature 0 would replay one greedy game ${evalPerTask} times: play more --test-tasks instead, or sample (--eval-temperature 0.7)`,
  );
}
const maxStepsArg = arg('max-steps', 0);
const starterSteps = arg('starter-steps', 0);
const starterGames = arg('starter-games', 0);
// --starter-mix expert,hasty,noisy,noise: demonstrator weights of the benchmark's own starter (see
// trainer/recipes/starter.ts); 'none' (or absent) keeps the standard recipe's careful expert alone.
const starterMixArg = arg('starter-mix', 'none');
const starterMix = (() => {
  if (starterMixArg === 'none') return undefined;
  const [expert, hasty, noisy, noise] = starterMixArg.split(',').map(Number);
  const mix = demonstratorMixSchema.safeParse({ expert, hasty, noisy, noise });
  if (!mix.success || [expert, hasty, noisy, noise].some((x) => !Number.isFinite(x)))
    throw new Error(
      `--starter-mix must be expert,hasty,noisy,noise (weights >= 0, noise in [0, 1]), got ${starterMixArg}`,
    );
  return mix.data;
})();
const rounds = arg('rounds', 3);
// Updates per phase in the curve's later rounds (0: as --max-steps), which train on all sessions so far: a cap
// that keeps the whole benchmark within 40 minutes on 2 cores.
const curveMaxSteps = arg('curve-max-steps', 8);
// Games a train task that each later curve round collects with the deployed policy (the first collection plays
// --episodes-per-task): also a cap for the 40 minutes.
const curvePerTask = arg('curve-episodes-per-task', 1);
const dir = resolve(arg('dir', 'data/bench/learning'));
const keep = process.argv.includes('--keep');
// --validate: choose settings without touching the held-out tasks. Train-split tasks generated after the pool
// (never trained on) are played in place of the test split; collection and training are the benchmark's own.
const validate = process.argv.includes('--validate');
// --train '{"temperature":0.7,...}': overrides of the cpu-small preset for every training run of the benchmark.
// Default: candidates sampled at the temperature the policy plays at (0.7, not the paper's 1.0), NLL weight 1
// on the chosen message (paper 0.01), a policy learning rate of 1e-4 (cpu-small: 3e-4) and DPO beta' 0.01
// (paper 0.1): of the settings tried on the validation slice, the ones that did SWEET-RL most good, though not
// significantly (bench/HISTORY.md, "A third of the policy learning rate" and "72 held-out tasks").
const trainOverrides = JSON.parse(
  arg('train', '{"temperature":0.7,"nllCoefficient":1,"lr":0.0001,"beta":0.01}'),
) as Partial<TrainConfig>;
// A starter built from a demonstrator mix is rehearsed on that mix (unless --train sets the rehearsal itself).
if (starterMix && !('rehearsal' in trainOverrides) && PRESETS['cpu-small'].rehearsal) {
  trainOverrides.rehearsal = { ...PRESETS['cpu-small'].rehearsal, demonstrators: starterMix };
}
// --methods rft,mtdpo,sweet: which baselines to train besides zero-shot (all three by default).
const methods = arg('methods', 'rft,mtdpo,sweet').split(',').filter(Boolean) as Algorithm[];
for (const m of methods) if (!['rft', 'mtdpo', 'sweet'].includes(m)) throw new Error(`--methods: unknown method ${m}`);
const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(0)} s`;
const log = (line: string) => console.error(`[${elapsed()}] ${line}`);

/**
 * The train split of the first --tasks generated tasks, and --test-tasks held-out ones (split 'test'): the first
 * test-split tasks of the stream, or with --validate the first train-split tasks after the pool. Task i depends
 * only on (seed, i), so a longer stream extends the pool without changing it.
 */
function benchmarkTasks(): TaskRecord[] {
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

interface CurvePoint {
  round: number;
  version: string;
  testsPassed: Interval;
  success: Interval;
  /** Simulated training sessions the round's policy was trained on (all rounds so far). */
  sessions: number;
  vsZeroShot?: { difference: Interval; p: number };
}

/** The curve as a bar chart with intervals: SVG always, PNG when Chromium is there. */
async function drawCurve(curve: readonly CurvePoint[], out: string): Promise<void> {
  const svg = barChartSvg({
    title: 'Closed loop: held-out % tests passed after each round (95% t intervals)',
    categories: curve.map((p) => `round ${p.round}`),
    series: [
      {
        name: 'SWEET-RL loop',
        values: curve.map((p) => p.testsPassed.estimate),
        lo: curve.map((p) => p.testsPassed.lo),
        hi: curve.map((p) => p.testsPassed.hi),
      },
    ],
    yLabel: '% tests passed',
    xLabel: 'round (0 = the starter)',
    format: (v) => `${(v * 100).toFixed(0)}%`,
  });
  writeFileSync(join(out, 'learning-curve.svg'), svg);
  // The same variables `sweetloop` reads (bin/config.ts); a benchmark does not import the composition root.
  const chromium = process.env.CHROMIUM_PATH || DEFAULT_CHROMIUM_PATH;
  if (!existsSync(chromium)) return;
  const renderer = await openSvgRenderer(chromium);
  try {
    writeFileSync(join(out, 'learning-curve.png'), await renderer.toPng(svg));
  } finally {
    await renderer.close();
  }
}

const backend = await initBackend();
mkdirSync(dir, { recursive: true });
const pgliteDir = join(dir, `pglite-${Date.now()}`);
const db = await openDatabase({ pgliteDir });
// Scored as `sweetloop evaluate` would be: CLIP for frontend pages when CLIP_MODEL_DIR is configured.
const clipDir = process.env.CLIP_MODEL_DIR || undefined;
const embedder = clipDir ? await ClipImageEmbedder.load(clipDir, { initBackend: false }) : undefined;
const scorer = createScorer({ embedder });
const timings: Record<string, number> = {};
const time = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
  const s = Date.now();
  try {
    return await fn();
  } finally {
    timings[label] = (Date.now() - s) / 1000;
  }
};

try {
  await migrate(db);
  const tasks = benchmarkTasks();
  await importTasks(db.prisma, tasks);
  const trainTasks = tasks.filter((t) => t.split === 'train').length;
  const testTasks = tasks.length - trainTasks;
  log(
    `${trainTasks} train and ${testTasks} ${validate ? 'VALIDATION (train-split)' : 'test'} ColBench-mini tasks; backend ${backend.name}, ${os.cpus().length} CPUs`,
  );

  const starterDir = join(dir, 'starter');
  const starter = await time('starter', () =>
    ensureStarterPolicy({
      dir: starterDir,
      seed,
      progress: 'lines',
      log,
      ...(starterSteps > 0 ? { steps: starterSteps } : {}),
      ...(starterGames > 0 ? { games: starterGames } : {}),
      ...(starterMix ? { demonstrators: starterMix } : {}),
    }),
  );
  await registerVersion(db.prisma, {
    name: 'zero-shot',
    algorithm: 'starter',
    checkpointPath: starterDir,
    checkpointSha256: starter.sha256,
  });
  const zero = await deployPolicyByName(db, 'bench', 'zero-shot');

  const collected = await time('collect', () =>
    simulate(db.prisma, zero, scorer, {
      kind: 'backend',
      split: 'train',
      episodes: trainTasks * perTask,
      seed,
      store: true,
      log,
    }),
  );
  const meanTrain = collected.reduce((a, g) => a + g.evaluation.score, 0) / collected.length;
  log(
    `collected ${collected.length} simulated sessions: mean score ${(meanTrain * 100).toFixed(1)}%, ${collected.filter((g) => g.evaluation.success).length} successes`,
  );

  const versions = [zero];
  const trainSummaries: Record<string, unknown> = {};
  let sweetRunDir: string | null = null;
  for (const algorithm of methods) {
    const ctx = { prisma: db.prisma, checkpointRoot: join(dir, 'checkpoints'), progress: 'lines' as const, log };
    try {
      const v = await time(`train:${algorithm}`, async () => {
        const run = await createRun(ctx, {
          algorithm,
          preset: 'cpu-small',
          train: trainConfig('cpu-small', {
            ...trainOverrides,
            seed,
            ...(maxStepsArg > 0 ? { maxSteps: maxStepsArg } : {}),
          }),
          fromVersionId: zero.id,
          fromVersionName: zero.name,
          fromCheckpoint: starterDir,
          kind: 'backend',
          ratingWeight: 0,
          data: { source: 'both', simulatedWeight: 1, seed },
        });
        if (algorithm === 'sweet') sweetRunDir = run.checkpointDir;
        return executeRun(ctx, run.id);
      });
      versions.push(v);
      trainSummaries[algorithm] = (v.metrics as Record<string, unknown>)?.training;
    } catch (err) {
      log(`${algorithm}: training failed: ${(err as Error).message}`);
      trainSummaries[algorithm] = { error: (err as Error).message };
    }
  }

  // Whether the critic's ranking of the actor's answer candidates agrees with the tests (bench/critic-check.ts).
  const criticCheck = sweetRunDir
    ? await time('critic-check', () => checkCritic(db.prisma, sweetRunDir!, starterDir, scorer))
    : null;
  if (criticCheck) log(formatCriticCheck(criticCheck));

  // Every policy plays the same held-out games (tasks, seeds, collaborator), so each is compared with zero-shot
  // game by game.
  const evalOptions = heldOutGames(testTasks, evalPerTask, seed, evalTemperature);
  const play = async (v: PolicyVersion): Promise<GameOutcome[]> =>
    outcomes(await simulate(db.prisma, v, scorer, evalOptions));
  const played: { version: string; games: GameOutcome[] }[] = [];
  const reports: EvaluationReport[] = [];
  for (const v of versions) {
    const games = await time(`eval:${v.name}`, () => play(v));
    played.push({ version: v.name, games });
    const r = summarise(v.name, 'backend', games);
    reports.push(r);
    log(`${v.name}: ${formatPercent(r.score)} tests passed, success ${formatPercent(r.success)}`);
  }
  const paired: (PairedComparison | null)[] = played.map((p, i) =>
    i === 0 ? null : comparePaired(p, played[0]!, { kind: 'backend', seed }),
  );
  // What these games can tell apart: McNemar's power to detect 10 points of success over zero-shot's rate.
  const plan = pairedSuccessGames({ delta: 0.1, baseline: reports[0]!.success.estimate });
  const power = pairedSuccessPower({ games: testTasks * evalPerTask, delta: 0.1, discordance: plan.discordance });

  // The closed loop: collect with the deployed policy, train SWEET-RL from it on everything collected so far,
  // deploy the candidate, measure it on the held-out games. Round 0 is the starter (zero-shot above).
  const curve: CurvePoint[] = [
    { round: 0, version: zero.name, testsPassed: reports[0]!.score, success: reports[0]!.success, sessions: 0 },
  ];
  let deployed: PolicyVersion = zero;
  // Round 1 is exactly the table's SWEET-RL policy (collected by the starter, trained from it), so it is not
  // trained twice; later rounds collect with the policy that round deployed.
  const sweetIndex = versions.findIndex((v) => v.algorithm === 'sweet');
  let firstRound = 1;
  if (rounds >= 1 && sweetIndex > 0) {
    deployed = await deployPolicyByName(db, 'bench', versions[sweetIndex]!.name);
    const c = paired[sweetIndex]!;
    curve.push({
      round: 1,
      version: deployed.name,
      testsPassed: reports[sweetIndex]!.score,
      success: reports[sweetIndex]!.success,
      sessions: collected.length,
      vsZeroShot: { difference: c.score.difference, p: c.score.wilcoxon.pValue },
    });
    firstRound = 2;
  }
  let sessionsSoFar = collected;
  const curveGames = Math.max(1, Math.round(trainTasks * curvePerTask));
  const cap = curveMaxSteps > 0 ? curveMaxSteps : maxStepsArg > 0 ? maxStepsArg : null;
  for (let round = firstRound; round <= rounds; round++) {
    try {
      const more = await time(`curve:${round}:collect`, () =>
        simulate(db.prisma, deployed, scorer, {
          kind: 'backend',
          split: 'train',
          episodes: curveGames,
          seed: seed + 1000 * round,
          store: true,
          log,
        }),
      );
      sessionsSoFar = [...sessionsSoFar, ...more];
      const ctx = {
        prisma: db.prisma,
        checkpointRoot: join(dir, 'checkpoints', `round-${round}`),
        progress: 'lines' as const,
        log,
      };
      const from = deployed;
      const trainingSessions = sessionsSoFar.length;
      const base = trainConfig('cpu-small', {
        ...trainOverrides,
        seed: seed + round,
        ...(cap ? { maxSteps: cap } : {}),
      });
      // Later rounds train on everything collected so far, but the actor samples candidates for a bounded number
      // of trajectories, so that a round's cost does not grow with the sessions: a capped actor uses maxSteps x
      // batchSize pairs, and about twice that many candidate pairs (pairsPerState a state, one state an agent
      // turn) are enough; uncapped, as many trajectories as in round 1.
      const meanTurns = sessionsSoFar.reduce((a, g) => a + g.agentTurns, 0) / trainingSessions;
      const trajectories = cap
        ? Math.ceil((2 * cap * base.batchSize) / base.pairsPerState / Math.max(1, meanTurns))
        : Math.round(base.stateFraction * collected.length);
      const v = await time(`curve:${round}:train`, async () => {
        const run = await createRun(ctx, {
          algorithm: 'sweet',
          preset: 'cpu-small',
          train: { ...base, stateFraction: Math.min(1, Math.max(1, trajectories) / trainingSessions) },
          fromVersionId: from.id,
          fromVersionName: from.name,
          fromCheckpoint: from.checkpointPath!,
          kind: 'backend',
          ratingWeight: 0,
          data: { source: 'both', simulatedWeight: 1, seed: base.seed },
        });
        return executeRun(ctx, run.id);
      });
      deployed = await deployPolicyByName(db, 'bench', v.name);
      const games = await time(`curve:${round}:eval`, () => play(deployed));
      const r = summarise(deployed.name, 'backend', games);
      const c = comparePaired({ version: deployed.name, games }, played[0]!, { kind: 'backend', seed });
      curve.push({
        round,
        version: deployed.name,
        testsPassed: r.score,
        success: r.success,
        sessions: trainingSessions,
        vsZeroShot: { difference: c.score.difference, p: c.score.wilcoxon.pValue },
      });
      log(
        `round ${round}: collected ${more.length} more sessions, deployed ${deployed.name}: ${formatPercent(r.score)} tests passed`,
      );
    } catch (err) {
      log(`round ${round}: stopped: ${(err as Error).message}`);
      break;
    }
  }

  const label = (name: string) =>
    name === 'zero-shot'
      ? 'zero-shot (starter)'
      : name.startsWith('rft')
        ? 'rejection FT'
        : name.startsWith('mtdpo')
          ? 'multi-turn DPO'
          : 'SWEET-RL';
  console.log(
    `\nColBench-mini backend, ${testTasks} ${validate ? 'VALIDATION (train-split, not held-out)' : 'held-out'} tasks x ${evalPerTask} ${evalTemperature === 0 ? 'greedy game' : `game(s) sampled at temperature ${evalTemperature}`}, rule-based simulator (95% intervals; differences are paired, against zero-shot on the same games; ${evalPerTask > 1 ? `a task's ${evalPerTask} games are one unit: ` : ''}intervals resample tasks, tests are over tasks)`,
  );
  console.log(
    `${'policy'.padEnd(22)} ${'success rate %'.padEnd(20)} ${'% tests passed'.padEnd(20)} ${'turns'.padEnd(6)} ${'Δ success (clustered McNemar)'.padEnd(34)} Δ tests passed (Wilcoxon over tasks)`,
  );
  reports.forEach((r, i) => {
    const c = paired[i];
    const dSuccess = c ? `${formatDifference(c.success.difference)} ${formatP(c.success.mcnemar.pValue)}` : '';
    const dScore = c ? `${formatDifference(c.score.difference)} ${formatP(c.score.wilcoxon.pValue)}` : '';
    console.log(
      `${label(r.version).padEnd(22)} ${formatPercent(r.success).padEnd(20)} ${formatPercent(r.score).padEnd(20)} ${r.meanAgentTurns.toFixed(2).padEnd(6)} ${dSuccess.padEnd(34)} ${dScore}`,
    );
  });
  console.log(
    `${testTasks * evalPerTask} paired games give ${(power * 100).toFixed(0)}% power to detect +10 points of success rate over zero-shot at alpha 0.05 ` +
      `(McNemar, independent-games discordance ${(plan.discordance * 100).toFixed(1)}%); 80% power needs ${plan.games} games. ` +
      (evalPerTask > 1 ? `Games of one task are correlated, so ${testTasks} tasks give less than this.` : ''),
  );
  if (criticCheck) console.log(`SWEET-RL's ${formatCriticCheck(criticCheck)}`);
  console.log(
    `\nLearning curve of the closed loop (round 1 = the SWEET-RL policy above; each later round collects ${curveGames} more sessions with the deployed policy -> SWEET-RL from it on all sessions so far -> deploy), held-out % tests passed:`,
  );
  for (const p of curve) {
    const d = p.vsZeroShot
      ? `; vs zero-shot ${formatDifference(p.vsZeroShot.difference)} points, ${formatP(p.vsZeroShot.p)}`
      : '';
    console.log(
      `  round ${p.round} (${p.version}, ${p.sessions} training sessions): ${formatPercent(p.testsPassed)}, success ${formatPercent(p.success)}${d}`,
    );
  }
  if (curve.length > 1) await drawCurve(curve, dir);
  const diff = (c: PairedComparison | null) =>
    c && {
      tasks: c.tasks,
      success: {
        difference: c.success.difference,
        p: c.success.mcnemar.pValue,
        test: c.success.mcnemar.method,
        aOnly: c.success.mcnemar.aOnly,
        bOnly: c.success.mcnemar.bOnly,
      },
      testsPassed: { difference: c.score.difference, p: c.score.wilcoxon.pValue, tasks: c.score.tasks },
    };
  console.log(
    JSON.stringify({
      bench: 'learning',
      seed,
      validate,
      trainOverrides,
      backend: backend.name,
      cpus: os.cpus().length,
      trainTasks,
      testTasks,
      collectedSessions: collected.length,
      collectedMeanScore: meanTrain,
      evalGames: testTasks * evalPerTask,
      evalTemperature,
      power: { delta: 0.1, alpha: 0.05, power, gamesFor80: plan.games, discordance: plan.discordance },
      results: reports.map((r, i) => ({
        policy: label(r.version),
        version: r.version,
        success: r.success,
        testsPassed: r.score,
        successes: r.successes,
        meanAgentTurns: r.meanAgentTurns,
        vsZeroShot: diff(paired[i]!),
      })),
      curve,
      criticCheck,
      training: trainSummaries,
      seconds: timings,
      totalSeconds: (Date.now() - t0) / 1000,
    }),
  );
} finally {
  await scorer.close();
  embedder?.dispose();
  await db.close();
  if (!keep) rmSync(pgliteDir, { recursive: true, force: true });
}
