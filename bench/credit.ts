// The credit-assignment benchmark with a known optimum (design: bench/credit/README.md; tasks/credit.ts).
// Starter from the documented mixture -> one collection -> rejection FT, multi-turn DPO and SWEET-RL through the
// project's own training runs -> every policy on the same held-out tasks, one greedy game each -> paired tests,
// move shares, and the SWEET-RL critic's per-turn advantages against the true value of each move.
//
//   npm run bench:credit -- [--seed 1] [--tasks 120] [--episodes-per-task 3] [--test-tasks 100]
//                           [--starter-games 1500] [--starter-steps 500] [--starter-vocab 512] [--starter-drill-steps 0]
//                           [--starter-from DIR] [--design v2|v1] [--dir data/bench/credit] [--keep]
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { openDatabase } from '../prisma/db.ts';
import { migrate } from '../prisma/migrate.ts';
import { importTasks } from '../prisma/task-store.ts';
import { deployPolicyByName, registerVersion } from '../prisma/policy-store.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import { classifyMoves, createCreditScorer, CREDIT_DESIGNS, demonstratorSuccess, generateCreditTasks, scoreCreditGame, trueMoveValue, type CreditDesign, type CreditMove } from '../tasks/credit.ts';
import { spearman } from '../tasks/stats.ts';
import { meanLogRatio } from '../trainer/losses.ts';
import { initBackend } from '../trainer/model/backend.ts';
import { buildCreditStarter, checkCreditStarter, copyStarter, CREDIT_COLLABORATOR, CREDIT_DRILL_PHASE, CREDIT_STARTER_SIZE, formatStarterCheck } from './credit-starter.ts';
import { checkpointSha256 } from '../trainer/model/checkpoint.ts';
import { comparePaired, outcomes, summarise, type PairedComparison } from '../trainer/evaluate.ts';
import { trainConfig } from '../trainer/presets.ts';
import { createRun, executeRun, type Algorithm } from '../trainer/runs.ts';
import { simulate, type SimulatedGame } from '../trainer/simulate.ts';
import { Critic } from '../trainer/critic.ts';
import { turnLogprobValues } from '../trainer/sequences.ts';
import type { Trajectory } from '../trainer/data.ts';

const { values: a } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    tasks: { type: 'string', default: '120' },
    'episodes-per-task': { type: 'string', default: '3' },
    'test-tasks': { type: 'string', default: '100' },
    'starter-games': { type: 'string', default: '1500' },
    'starter-steps': { type: 'string', default: '500' },
    'starter-vocab': { type: 'string', default: '512' },
    'starter-drill-steps': { type: 'string', default: '0' },
    // A starter already built by bench/credit-starter.ts with this seed and these settings, used instead of
    // building it again (the build is most of a seed's time); its manifest's recipe is printed and recorded.
    'starter-from': { type: 'string' },
    'max-steps': { type: 'string', default: '0' },
    dir: { type: 'string', default: 'data/bench/credit' },
    // The family's design (bench/credit/README.md): v2 by default; v1 as it was first designed.
    design: { type: 'string', default: 'v2' },
    keep: { type: 'boolean', default: false },
  },
});
const int = (name: keyof typeof a) => {
  const n = Number(a[name]);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number, got ${a[name]}`);
  return n;
};
const seed = int('seed');
const taskCount = int('tasks');
const perTask = int('episodes-per-task');
const testCount = int('test-tasks');
const starterGames = int('starter-games');
const starterSteps = int('starter-steps');
const starterVocab = int('starter-vocab');
// A copy-drill phase for the starter (CREDIT_DRILL_PHASE with this many updates); 0, the design's default: none.
const drillSteps = int('starter-drill-steps');
const drillPhase = drillSteps ? { ...CREDIT_DRILL_PHASE, steps: drillSteps } : null;
const maxSteps = int('max-steps');
const design = a.design as CreditDesign;
if (!CREDIT_DESIGNS.includes(design)) throw new Error(`--design must be one of ${CREDIT_DESIGNS.join(', ')}, got ${a.design}`);
const dir = resolve(join(String(a.dir), `seed-${seed}`));
const t0 = Date.now();
const log = (line: string) => console.error(`[${((Date.now() - t0) / 1000).toFixed(0)} s] ${line}`);
const seconds: Record<string, number> = {};
async function time<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const s = Date.now();
  try {
    return await fn();
  } finally {
    seconds[label] = (Date.now() - s) / 1000;
  }
}

/** Settings of every run, fixed in bench/credit/README.md before any comparison. */
const train = (s: number) => trainConfig('cpu-small', { rehearsal: null, maxNewTokens: 48, temperature: 1, seed: s, ...(maxSteps ? { maxSteps } : {}) });
const COLLABORATOR = CREDIT_COLLABORATOR;

const backend = await initBackend();
mkdirSync(dir, { recursive: true });
const pgliteDir = join(dir, `pglite-${Date.now()}`);
const db = await openDatabase({ pgliteDir });
const scorer = createCreditScorer({ design });
try {
  await migrate(db);
  const trainTasks = generateCreditTasks({ seed, count: taskCount, split: 'train', design });
  const testTasks = generateCreditTasks({ seed, count: testCount, split: 'test', design });
  await importTasks(db.prisma, [...trainTasks, ...testTasks]);
  log(`design ${design}: ${trainTasks.length} train, ${testTasks.length} held-out credit tasks; backend ${backend.name}; load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);

  // 1. The starter: supervised on the demonstrator's games (its own train-split task stream).
  const starterDir = join(dir, 'starter');
  const starter = await time('starter', () => a['starter-from'] ? copyStarter(resolve(String(a['starter-from'])), starterDir, log) : buildCreditStarter({ dir: starterDir, seed, games: starterGames, steps: starterSteps, size: { ...CREDIT_STARTER_SIZE, vocabSize: starterVocab }, drillPhase, design, log }));
  // The premise: the starter plays the demonstrator's mixture and copies what it was told (checked, not assumed).
  const starterCheck = await time('starter-check', () => checkCreditStarter(starterDir, testTasks, seed + 13, design));
  for (const line of formatStarterCheck(starterCheck)) log(line);
  await registerVersion(db.prisma, { name: 'zero-shot', algorithm: 'starter', checkpointPath: starterDir, checkpointSha256: await checkpointSha256(starterDir) });
  const zero = await deployPolicyByName(db, 'bench', 'zero-shot');

  // 2. One collection, sampled at temperature 1: the data every method trains on.
  const collected = await time('collect', () =>
    simulate(db.prisma, zero, scorer, { kind: 'backend', split: 'train', episodes: trainTasks.length * perTask, seed, store: true, collaborator: COLLABORATOR, sampling: { temperature: 1, topP: 1, maxTokens: 48 }, log }),
  );
  log(`collected ${collected.length} sessions: ${collected.filter((g) => g.evaluation.success).length} successes, mean score ${(collected.reduce((s, g) => s + g.evaluation.score, 0) / collected.length).toFixed(3)}`);

  // 3. The methods, each from the starter on the same sessions.
  const versions: PolicyVersion[] = [zero];
  let criticDir: string | null = null;
  for (const algorithm of ['rft', 'mtdpo', 'sweet'] as Algorithm[]) {
    const ctx = { prisma: db.prisma, checkpointRoot: join(dir, 'checkpoints'), progress: 'lines' as const, log };
    try {
      const v = await time(`train:${algorithm}`, async () => {
        const run = await createRun(ctx, { algorithm, preset: 'cpu-small', train: train(seed), fromVersionId: zero.id, fromVersionName: zero.name, fromCheckpoint: starterDir, kind: 'backend', ratingWeight: 0, data: { source: 'both', simulatedWeight: 1, seed } });
        const published = await executeRun(ctx, run.id);
        if (algorithm === 'sweet') criticDir = join(run.checkpointDir!, 'critic');
        return published;
      });
      versions.push(v);
    } catch (err) {
      log(`${algorithm}: training failed: ${(err as Error).message}`);
    }
  }

  // 4. Held-out, greedy, every policy on the same tasks.
  const heldOut = { kind: 'backend' as const, split: 'test' as const, episodes: testTasks.length, seed: seed + 7, store: false, collaborator: COLLABORATOR, sampling: { temperature: 0, topP: 1, maxTokens: 48 } };
  const label = (v: PolicyVersion) => (v.name === 'zero-shot' ? 'zero-shot' : v.algorithm === 'rft' ? 'rejection FT' : v.algorithm === 'mtdpo' ? 'multi-turn DPO' : 'SWEET-RL');
  const played: { policy: string; version: string; games: SimulatedGame[] }[] = [];
  for (const v of versions) played.push({ policy: label(v), version: v.name, games: await time(`eval:${label(v)}`, () => simulate(db.prisma, v, scorer, heldOut)) });

  const tasksById = new Map((await db.prisma.task.findMany({ where: { split: 'test' } })).map((t) => [t.id, t.hiddenReference]));
  const moveShares = (games: SimulatedGame[]) => {
    const count: Record<CreditMove, number> = { useful: 0, repeated: 0, useless: 0, answer: 0 };
    let obtained = 0;
    for (const g of games) {
      const moves = classifyMoves(tasksById.get(g.taskId)!, g.turns);
      for (const m of moves) count[m.move]++;
      obtained += scoreCreditGame(tasksById.get(g.taskId)!, g.turns).score; // the values obtained: v2's score, whatever the design
    }
    const q = count.useful + count.repeated + count.useless;
    return { valuesObtained: obtained / games.length, useful: count.useful / Math.max(1, q), useless: count.useless / Math.max(1, q), repeated: count.repeated / Math.max(1, q), questions: q };
  };
  const cmp = (x: (typeof played)[number], y: (typeof played)[number]): PairedComparison =>
    comparePaired({ version: x.version, games: outcomes(x.games) }, { version: y.version, games: outcomes(y.games) }, { kind: 'backend', seed });
  const brief = (c: PairedComparison) => ({ success: { difference: c.success.difference.estimate, ci: [c.success.difference.lo, c.success.difference.hi], p: c.success.mcnemar.pValue, aOnly: c.success.mcnemar.aOnly, bOnly: c.success.mcnemar.bOnly }, score: { difference: c.score.difference.estimate, ci: [c.score.difference.lo, c.score.difference.hi], p: c.score.wilcoxon.pValue, tasks: c.score.tasks } });
  const results = played.map((p, i) => {
    const r = summarise(p.version, 'backend', outcomes(p.games));
    return { policy: p.policy, version: p.version, success: r.success.estimate, successCi: [r.success.lo, r.success.hi], score: r.score.estimate, meanAgentTurns: r.meanAgentTurns, ...moveShares(p.games), vsZeroShot: i === 0 ? null : brief(cmp(p, played[0]!)) };
  });
  const sw = played.find((p) => p.policy === 'SWEET-RL');
  const md = played.find((p) => p.policy === 'multi-turn DPO');
  const sweetVsMtdpo = sw && md ? brief(cmp(sw, md)) : null;

  // 5. The critic's per-turn advantages against the true value of each move, on fresh sampled starter games.
  let critic: { spearman: ReturnType<typeof spearman>; meanAdvantage: Record<string, number>; turns: number } | null = null;
  if (criticDir) {
    critic = await time('critic-check', async () => {
      const games = await simulate(db.prisma, zero, scorer, { ...heldOut, seed: seed + 11, sampling: { temperature: 1, topP: 1, maxTokens: 48 } });
      const taskRows = new Map((await db.prisma.task.findMany({ where: { split: 'test' } })).map((t) => [t.id, t]));
      const trajectories: Trajectory[] = games.map((g, i) => {
        const t = taskRows.get(g.taskId)!;
        return { sessionId: `check-${i}`, taskId: g.taskId, task: { kind: 'backend', description: t.description, reference: t.hiddenReference, testCases: [] }, turns: g.turns.map((x) => ({ role: x.role, content: x.content })), answer: '', score: g.evaluation.score, success: g.evaluation.success, rating: null, reward: g.evaluation.score, simulated: true, policyVersionId: null };
      });
      const c = await Critic.load(starterDir, criticDir!);
      try {
        const examples = await c.prepare(trajectories);
        const current = await turnLogprobValues(c.model, examples.map((e) => e.seq), c.current.tokenizer.padTokenId);
        const byId = new Map(trajectories.map((t) => [t.sessionId, t]));
        const adv: number[] = [];
        const truth: number[] = [];
        const perMove: Record<string, number[]> = {};
        examples.forEach((e, i) => {
          const t = byId.get(e.sessionId)!;
          const moves = classifyMoves(t.task.reference, t.turns);
          if (moves.length !== e.refTurnLogp.length) return; // a turn cut by the context: leave the game out
          moves.forEach((m, j) => {
            const x = meanLogRatio(current[i]![j]!, e.refTurnLogp[j]!);
            adv.push(x);
            truth.push(trueMoveValue(m));
            (perMove[m.move] ??= []).push(x);
          });
        });
        const meanAdvantage = Object.fromEntries(Object.entries(perMove).map(([k, v]) => [k, v.reduce((s, x) => s + x, 0) / v.length]));
        return { spearman: spearman(adv, truth), meanAdvantage, turns: adv.length };
      } finally {
        c.dispose();
      }
    });
  }

  const pct = (x: number) => `${(x * 100).toFixed(1)}`;
  console.log(`\nCredit family (design ${design}), seed ${seed}: ${testTasks.length} held-out tasks x 1 greedy game. Optimum: success 100 %, score 100 %, 4 messages. Starter's demonstrator: success ${pct(demonstratorSuccess())} % (exact).`);
  console.log('policy            success %            score %  values obtained %  useful/useless/repeated % of questions  msgs  Δ success vs zero-shot (McNemar)  Δ score (Wilcoxon)');
  for (const r of results) {
    const d = r.vsZeroShot ? `${pct(r.vsZeroShot.success.difference)} p=${r.vsZeroShot.success.p.toFixed(3)}`.padEnd(34) + `${pct(r.vsZeroShot.score.difference)} p=${r.vsZeroShot.score.p.toFixed(3)}` : '';
    console.log(`${r.policy.padEnd(17)} ${`${pct(r.success)} [${pct(r.successCi[0]!)}, ${pct(r.successCi[1]!)}]`.padEnd(20)} ${pct(r.score).padEnd(8)} ${pct(r.valuesObtained).padEnd(18)} ${`${pct(r.useful)}/${pct(r.useless)}/${pct(r.repeated)}`.padEnd(39)} ${r.meanAgentTurns.toFixed(2).padEnd(5)} ${d}`);
  }
  for (const line of formatStarterCheck(starterCheck)) console.log(line);
  if (sweetVsMtdpo) console.log(`SWEET-RL − multi-turn DPO: success ${pct(sweetVsMtdpo.success.difference)} (p=${sweetVsMtdpo.success.p.toFixed(3)}), score ${pct(sweetVsMtdpo.score.difference)} (p=${sweetVsMtdpo.score.p.toFixed(3)})`);
  if (critic) console.log(`critic advantage vs true move value: Spearman ${critic.spearman.rho.toFixed(3)} (n=${critic.spearman.n} turns, p=${critic.spearman.pValue.toExponential(2)}); mean advantage by move ${JSON.stringify(critic.meanAdvantage)}`);
  console.log(
    JSON.stringify({
      bench: 'credit',
      design,
      seed,
      backend: backend.name,
      cpus: os.cpus().length,
      loadavgEnd: os.loadavg(),
      trainTasks: trainTasks.length,
      testTasks: testTasks.length,
      collectedSessions: collected.length,
      collectedSuccesses: collected.filter((g) => g.evaluation.success).length,
      demonstratorSuccess: demonstratorSuccess(),
      starter: { steps: starterSteps, games: starterGames, vocabSize: starterVocab, drillPhase, from: a['starter-from'] ?? null, recipe: starter.recipe, loss: [starter.initialLoss, starter.finalLoss], check: starterCheck },
      optimum: { success: 1, score: 1, messages: 4 },
      results,
      sweetVsMtdpo,
      critic,
      seconds,
      totalSeconds: (Date.now() - t0) / 1000,
    }),
  );
} finally {
  await scorer.close();
  await db.close();
  if (!a.keep) rmSync(pgliteDir, { recursive: true, force: true });
}
