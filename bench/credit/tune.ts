// The validation grid of the credit benchmark (README.md, "Tuning"): on validation seeds (never 1-5) and
// validation tasks (train-split tasks the collection never played), (1) the critic's settings by the critic gate,
// trained alone (critic-only.ts); (2) each method's policy settings by sampled score. Runs train through the
// project's runs (seed.ts trainMethod); further actor settings of SWEET-RL and the controls reuse their run's
// ranked candidates (actor-pairs.jsonl) with the trainer's own actor phase, since the candidates do not depend on
// the actor's settings. Prints every cell and the proposed settings file; nothing is written unless --out.
//
//   npx tsx bench/credit/tune.ts [--seeds 101] [--out bench/credit/settings.json] [...bench:credit's size flags]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { PolicyVersion } from '../../prisma/generated/client.ts';
import { registerVersion } from '../../prisma/policy-store.ts';
import { actorPhase, criticGap, readActorPairs } from '../../trainer/actor.ts';
import { initBackend } from '../../trainer/model/backend.ts';
import { checkpointSha256, saveCheckpoint } from '../../trainer/model/checkpoint.ts';
import { widestGaps } from '../../trainer/pairs.ts';
import { loadModel } from '../../trainer/sequences.ts';
import { copyTokenizerFiles } from '../../trainer/versions.ts';
import { trainAndGateCritic } from './critic-only.ts';
import { readPairs } from '../../tasks/credit-states.ts';
import { gateLines, pairReadingLine, weakestKind } from './report.ts';
import {
  collectedTrajectories,
  playPolicy,
  prepareSeed,
  seedFlags,
  seedOptionsFrom,
  trainMethod,
  type PreparedSeed,
} from './seed.ts';
import { methodConfig, overridesSchema, type Method, type Overrides } from './settings.ts';

const { values: a } = parseArgs({
  options: {
    seeds: { type: 'string', default: '101' },
    ...seedFlags({ 'test-tasks': '40' }),
    only: { type: 'string', default: 'critic,rft,mtdpo,sweet,oracle' },
    dir: { type: 'string', default: 'data/bench/credit-tune' },
    // The critic's settings when the critic stage is not run (the choice of an earlier critic stage), as JSON.
    critic: { type: 'string', default: '{}' },
    // Settings every actor cell of SWEET-RL and the oracle control shares, as JSON; the default is what validation
    // seed 101 chose (half the states, 6 pairs a state, the NLL term: a quarter of the actor's cost).
    'actor-base': { type: 'string', default: '{"stateFraction":0.5,"pairsPerState":6,"nllCoefficient":1}' },
    // Critic cells to try instead of CRITIC_GRID (a JSON list of overrides), for a closer look at the critic.
    'critic-grid': { type: 'string' },
    // Cells of rejection FT and multi-turn DPO to try instead of POLICY_GRID's (JSON lists of overrides), e.g. past
    // the grid's edge when its best cell lies there.
    'rft-grid': { type: 'string' },
    'mtdpo-grid': { type: 'string' },
    // Actor cells of SWEET-RL and the oracle control to try instead of POLICY_GRID.actor (the first trains the run
    // and collects its candidates; the rest reuse them), as a JSON list of overrides.
    'actor-grid': { type: 'string' },
    // An earlier run's ranked candidates (its actor-pairs.jsonl, ranked by one method: --only names that one): every
    // actor cell trains on them, none collects; the candidates' own settings (state fraction, pairs a state) are that run's.
    'pairs-from': { type: 'string' },
    out: { type: 'string' },
    // Choose from the cells of earlier runs (their JSON lines, one file each, comma-separated) instead of running.
    merge: { type: 'string' },
  },
});

/**
 * The grid (README.md, "Tuning"): small on purpose, each cell one run on a 2-core machine. The critic's cells moved on
 * 2026-12-07 night to the paper's trajectory score and a larger beta, where v7's validation seeds passed the gate
 * (bench/HISTORY.md, "The critic's lever"); the first is v6's choice on seed 101.
 */
export const CRITIC_GRID: Overrides[] = [
  { criticLr: 1e-4, criticBeta: 1, criticEpochs: 4 },
  { criticLr: 1e-4, criticBeta: 1, criticEpochs: 4, criticTrajectoryScore: 'turn-sum' },
  { criticLr: 1e-4, criticBeta: 10, criticEpochs: 4, criticTrajectoryScore: 'turn-sum' },
  { criticLr: 3e-4, criticBeta: 10, criticEpochs: 4, criticTrajectoryScore: 'turn-sum' },
];
// Moved on 2026-12-07 afternoon to where validation seed 101's best cells lay, past cpu-small's rates
// (bench/HISTORY.md, "The prompt's shared tokens run once"); the actor's cells assume --actor-base's default.
export const POLICY_GRID: Record<'rft' | 'mtdpo' | 'actor', Overrides[]> = {
  rft: [
    { lr: 1e-3, sftEpochs: 8 },
    { lr: 1e-3, sftEpochs: 32 },
    { lr: 3e-3, sftEpochs: 8 },
    { lr: 3e-3, sftEpochs: 16 },
  ],
  mtdpo: [
    { lr: 3e-4, actorEpochs: 3 },
    { lr: 1e-3, actorEpochs: 1 },
    { lr: 1e-3, actorEpochs: 3 },
    { lr: 1e-3, actorEpochs: 8 },
  ],
  // SWEET-RL's actor and the oracle control: the first cell is the run's own, the rest reuse its candidates.
  actor: [
    { lr: 1e-3, actorEpochs: 1 },
    { lr: 1e-3, actorEpochs: 2 },
    { lr: 3e-3, actorEpochs: 1 },
    { lr: 3e-4, actorEpochs: 3 },
    { lr: 1e-3, actorEpochs: 2, pairGapQuantile: 0.5 },
  ],
};

const t0 = Date.now();
const log = (line: string) => console.error(`[${((Date.now() - t0) / 1000).toFixed(0)} s] ${line}`);
const only = new Set(String(a.only).split(','));
if (a['pairs-from'] && ['critic', 'rft', 'mtdpo', 'sweet', 'oracle'].filter((m) => only.has(m)).length !== 1)
  throw new Error(
    "--pairs-from holds one ranker's candidates: name the one method they were ranked for in --only (sweet or oracle)",
  );

/** A grid flag's cells (a JSON list of overrides, at least one). */
const gridFrom = (flag: string): Overrides[] => z.array(overridesSchema).min(1).parse(JSON.parse(flag));

/** An actor trained on a finished run's ranked candidates with other settings (trainer/actor.ts actorPhase). */
async function actorFromPairs(p: PreparedSeed, pairsFile: string, o: Overrides, label: string): Promise<PolicyVersion> {
  const cfg = methodConfig(o, p.o.seed);
  const pairs = widestGaps(await readActorPairs(pairsFile), criticGap, cfg.pairGapQuantile);
  const m = await loadModel(p.starterDir, `tune-${label}-${Date.now()}`, true);
  try {
    const phase = actorPhase(m, pairs, cfg);
    for (let s = 0; s < phase.totalSteps; s++) await phase.step(s);
    phase.dispose();
    const out = resolve(join(p.o.dir, 'tune', label));
    await saveCheckpoint(out, m.model);
    await copyTokenizerFiles(p.starterDir, out);
    return registerVersion(p.db.prisma, {
      name: label,
      algorithm: 'sweet',
      checkpointPath: out,
      checkpointSha256: await checkpointSha256(out),
    });
  } finally {
    m.model.dispose();
  }
}

const backend = await initBackend();
type Cell = {
  seed: number;
  method: string;
  overrides: Overrides;
  sampledScore?: number;
  sampledSuccess?: number;
  gate?: number;
  greedyPath?: string;
  keyContrast?: number;
};
const cells: Cell[] = a.merge
  ? String(a.merge)
      .split(',')
      .flatMap(
        (f) =>
          (
            JSON.parse(
              readFileSync(f, 'utf8')
                .split('\n')
                .find((l) => l.startsWith('{"bench":"credit-tune"'))!,
            ) as { cells: Cell[] }
          ).cells,
      )
  : [];
const seedsToRun = a.merge ? [] : String(a.seeds).split(',').map(Number);
let criticChoice: Overrides = overridesSchema.parse(JSON.parse(String(a.critic)));
const actorBase: Overrides = overridesSchema.parse(JSON.parse(String(a['actor-base'])));
for (const seed of seedsToRun) {
  const dir = resolve(join(String(a.dir), `seed-${seed}`));
  mkdirSync(dir, { recursive: true });
  log(
    `validation seed ${seed}, backend ${backend.name}, load ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  const p = await prepareSeed(seedOptionsFrom(a, { seed, dir, evalSplit: 'validation', log }));
  try {
    const record = async (method: string, overrides: Overrides, v: PolicyVersion) => {
      const r = await playPolicy(p, v);
      cells.push({
        seed,
        method,
        overrides,
        sampledScore: r.sampled.score.estimate,
        sampledSuccess: r.sampled.success.estimate,
        greedyPath: r.greedy.path,
        keyContrast: r.states.keyContrast,
      });
      // The state reading beside the score: an aggregate that did not move may hide a change of play.
      const byState = Object.entries(r.states.byState)
        .map(
          ([s, m]) =>
            `${s}: U ${m.useful.toFixed(2)} R ${m.repeated.toFixed(2)} X ${m.useless.toFixed(2)} A ${m.answer.toFixed(2)}`,
        )
        .join('; ');
      const { earlier, last } = r.states.repeatAfterTwo;
      log(
        `${method} ${JSON.stringify(overrides)}: key contrast ${r.states.keyContrast.toFixed(3)} nats; ${byState}; after 2 values R = the key told first ${earlier.toFixed(2)} + last ${last.toFixed(2)}, U by the key left ${Object.entries(
          r.states.usefulAfterTwoByKey,
        )
          .map(([k, u]) => `${k} ${u.toFixed(2)}`)
          .join(', ')}`,
      );
      log(
        `${method} ${JSON.stringify(overrides)}: sampled score ${(r.sampled.score.estimate * 100).toFixed(1)} %, success ${(r.sampled.success.estimate * 100).toFixed(1)} %, greedy ${r.greedy.path}`,
      );
    };
    await record('starter', {}, p.zero);
    if (only.has('critic')) {
      const grid = a['critic-grid'] ? gridFrom(String(a['critic-grid'])) : CRITIC_GRID;
      for (const o of grid) {
        const g = await trainAndGateCritic(p, o);
        // Chosen by the weaker kind of pair (report.ts gatePasses): the pooled accuracy hides a critic right on one kind only.
        cells.push({
          seed,
          method: 'critic',
          overrides: { ...o, rankingReference: 'sampler' },
          gate: weakestKind(g.gate),
        });
        cells.push({
          seed,
          method: 'critic',
          overrides: { ...o, rankingReference: 'initial' },
          gate: weakestKind(g.gateInitial),
        });
        for (const line of [
          ...gateLines(`${JSON.stringify(o)}, against the sampler`, g.gate),
          ...gateLines(`${JSON.stringify(o)}, against the initial critic`, g.gateInitial),
        ])
          log(line);
        log(
          `critic ${JSON.stringify(o)}: gate ${g.gate.withinStateAccuracy.toFixed(3)} (useful>repeated ${g.gate.byKind.usefulOverRepeated.accuracy.toFixed(3)}, answer>again ${g.gate.byKind.answerOverQuestion.accuracy.toFixed(3)}), ${g.pairs} pairs, ${g.updates} updates, last batch accuracy ${g.trainAccuracy.toFixed(2)}; the initial critic's key contrast in its view ${g.initialKeyContrast.toFixed(3)} nats`,
        );
      }
      const best = cells.filter((c) => c.method === 'critic').sort((x, y) => y.gate! - x.gate!)[0]!;
      criticChoice = best.overrides;
    }
    for (const m of ['rft', 'mtdpo'] as const) {
      if (!only.has(m)) continue;
      const flag = a[`${m}-grid`];
      const grid = flag ? gridFrom(String(flag)) : POLICY_GRID[m];
      for (const o of grid) await record(m, o, (await trainMethod(p, m, o)).version);
    }
    for (const m of ['sweet', 'oracle'] as Method[]) {
      if (!only.has(m)) continue;
      const grid = a['actor-grid'] ? gridFrom(String(a['actor-grid'])) : POLICY_GRID.actor;
      const [first, ...rest] = grid as [Overrides, ...Overrides[]];
      const base = { ...(m === 'sweet' ? criticChoice : {}), ...actorBase };
      let pairsFile: string;
      let actorCells = rest;
      if (a['pairs-from']) {
        // The candidates do not depend on the actor's settings: every cell, the first too, trains on the given ones.
        pairsFile = resolve(String(a['pairs-from']));
        actorCells = [first, ...rest];
      } else {
        const run = await trainMethod(p, m, { ...base, ...first });
        await record(m, { ...base, ...first }, run.version);
        pairsFile = join(run.runDir, 'actor-pairs.jsonl');
      }
      // What the actor learns from, state by state (tasks/credit-states.ts readPairs), beside what each cell learnt.
      const sessions = new Map(
        (await collectedTrajectories(p)).map((t) => [t.sessionId, { ...t, reference: t.task.reference }]),
      );
      log(`${m} candidates: ${pairReadingLine(readPairs(await readActorPairs(pairsFile), sessions, p.o.design))}`);
      for (const [i, o] of actorCells.entries())
        await record(m, { ...base, ...o }, await actorFromPairs(p, pairsFile, { ...base, ...o }, `${m}-cell-${i + 1}`));
    }
  } finally {
    await p.close();
  }
}

// The choice: per method, the cell with the best mean sampled score over the validation seeds (the critic: the
// best mean gate). A SWEET-RL cell's overrides carry its seed's critic choice, so cells that differ only there
// are different cells.
const choose = (method: string, by_: 'sampledScore' | 'gate' = 'sampledScore'): Overrides => {
  const by = new Map<string, { o: Overrides; scores: number[] }>();
  for (const c of cells.filter((x) => x.method === method)) {
    const k = JSON.stringify(c.overrides);
    (by.get(k) ?? by.set(k, { o: c.overrides, scores: [] }).get(k)!).scores.push(c[by_]!);
  }
  const ranked = [...by.values()]
    .map((v) => ({ o: v.o, mean: v.scores.reduce((s, x) => s + x, 0) / v.scores.length }))
    .sort((x, y) => y.mean - x.mean);
  return ranked[0]?.o ?? {};
};
const sweet = { ...choose('sweet'), ...(cells.some((c) => c.method === 'critic') ? choose('critic', 'gate') : {}) };
const settings = {
  note: `Chosen by bench/credit/tune.ts on validation seeds ${a.seeds} (validation tasks, sampled score; the critic by the critic gate), ${new Date().toISOString()}.`,
  chosenOn: `validation seeds ${a.seeds}`,
  methods: { rft: choose('rft'), mtdpo: choose('mtdpo'), sweet, oracle: choose('oracle'), random: { ...sweet } },
};
console.log(
  JSON.stringify({
    bench: 'credit-tune',
    seeds: a.seeds,
    cells,
    settings,
    seconds: (Date.now() - t0) / 1000,
    cpuSeconds: process.cpuUsage().user / 1e6,
  }),
);
console.log(JSON.stringify(settings, null, 2));
if (a.out) writeFileSync(resolve(String(a.out)), JSON.stringify(settings, null, 2) + '\n');
