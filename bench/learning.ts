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
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import os from 'node:os';
import { openDatabase } from '../prisma/db.ts';
import { migrate } from '../prisma/migrate.ts';
import { importTasks } from '../prisma/task-store.ts';
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
import { trainConfig } from '../trainer/presets.ts';
import { createRun, executeRun } from '../trainer/runs.ts';
import { createScorer } from '../tasks/scorer.ts';
import { ClipImageEmbedder } from '../trainer/model/clip.ts';
import { simulate } from '../trainer/simulate.ts';
import { formatPercent } from '../tasks/stats.ts';
import { pairedSuccessGames, pairedSuccessPower } from '../tasks/sample-size.ts';
import { registerVersion } from '../prisma/policy-store.ts';
import { deployPolicyByName } from '../prisma/deployment-store.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import { drawCurve, type CurvePoint } from './learning-chart.ts';
import {
  benchmarkTasks,
  curveMaxSteps,
  curvePerTask,
  dir,
  evalPerTask,
  evalTemperature,
  keep,
  maxStepsArg,
  methods,
  perTask,
  rounds,
  seed,
  starterGames,
  starterMix,
  starterSteps,
  trainOverrides,
  validate,
} from './learning-options.ts';

const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(0)} s`;
const log = (line: string) => console.error(`[${elapsed()}] ${line}`);

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
