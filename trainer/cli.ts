// The trainer's command actions (simulate, evaluate, train, trainer). bin/commands/trainer.ts
// parses the options and hands over the validated settings; everything else happens here.
import { checkpointOf, deployedPolicy } from '../prisma/policy-store.ts';
import { trainingBaseOf } from './policies/serving.ts';
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import type { TaskKind, TaskSplit } from '../tasks/model.ts';
import { compareVersions, evaluateVersion, formatComparison, formatReport, outcomes } from './evaluate.ts';
import { isPresetName, trainConfig, type TrainConfig } from './presets.ts';
import { formatGateEvidence, gamesPlan, promote } from './promote.ts';
import { pairedSuccessPower } from '../tasks/stats.ts';
import { DEFAULT_SAMPLING } from './rollout.ts';
import { createRun, executeRun, unfinishedRuns, type Algorithm, type RunConfig } from './runs.ts';
import { createScorer, type Scorer } from '../tasks/scorer.ts';
import { simulate, RULE_SIMULATOR, type CollaboratorFactory } from './simulate.ts';
import { resolveVersion, type VersionContext } from './versions.ts';
import { trainingStudy, usableSessions, type DataFilter } from './data.ts';
import type { DataSource } from '../prisma/data-source.ts';
import { runService } from './service.ts';

export interface TrainerSettings {
  checkpointRoot: string;
  seed: number;
  ratingWeight: number;
  /** The promotion gate: significance level, non-inferiority margin on the score (0: must be better). */
  promotionAlpha: number;
  promotionMargin: number;
  /** Difference in success rate the gate's games count is sized to detect, and with which power. */
  promotionEffect: number;
  promotionPower: number;
  /** Percent (1-99) of new sessions a candidate that passes the gate gets in an A/B experiment with people instead of being deployed; 0: deploy. */
  promotionHumanAbShare: number;
  minNewSessions: number;
  pollSeconds: number;
  bwrapPath: string;
  pythonPath: string;
  chromiumPath: string;
  /** Hugging Face CLIP directory for the paper's frontend metric; unset: the weight-free pixel metric. */
  clipModelDir?: string;
  llmSimulator?: { url: string; model: string; key?: string };
  progress: 'bar' | 'lines' | 'none';
  /** The data runs train on unless `sweetloop train` says otherwise (TRAINER_DATA and its companions). */
  trainingData: TrainingDataSettings;
  /** sweet runs: people's pairwise preferences are extra critic pairs unless `sweetloop train` says otherwise. */
  usePreferences: boolean;
}

export interface TrainingDataSettings {
  source: DataSource;
  /** With `both`: the share of simulated sessions kept, in (0, 1]. */
  simulatedWeight: number;
  minQuality?: number;
  minRating?: number;
  /** Only this study's sessions (TRAINER_STUDY, `sweetloop train --study`). */
  study?: string;
}

/** The run's data filter: the command's options over the configured defaults, seeded by SEED. */
export function dataFilterFor(s: Pick<TrainerSettings, 'trainingData' | 'seed'>, o: Partial<TrainingDataSettings> = {}): DataFilter {
  const d = { ...s.trainingData, ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) } as TrainingDataSettings;
  // A weight configured for `both` means nothing to a run on one source; the command asked for that source.
  const simulatedWeight = d.source === 'both' ? d.simulatedWeight : 1;
  return {
    source: d.source,
    simulatedWeight,
    ...(d.minQuality !== undefined ? { minQuality: d.minQuality } : {}),
    ...(d.minRating !== undefined ? { minRating: d.minRating } : {}),
    ...(d.study !== undefined ? { study: d.study } : {}),
    seed: s.seed,
  };
}

function versionContext(db: Database, s: TrainerSettings): VersionContext {
  return { prisma: db.prisma, checkpointRoot: s.checkpointRoot, seed: s.seed, log: (l) => console.error(l) };
}

/**
 * The simulated collaborator: `builtin` the rule-based one, `llm` the one behind SIMULATOR_LLM_URL (an error when
 * none is configured), `configured` the LLM one when configured, else the rule-based one.
 */
export async function collaboratorFactory(s: TrainerSettings, which: 'configured' | 'builtin' | 'llm' = 'configured'): Promise<CollaboratorFactory> {
  if (which === 'builtin' || (which === 'configured' && !s.llmSimulator)) return RULE_SIMULATOR;
  if (!s.llmSimulator) throw new Error('the LLM simulator is not configured: set SIMULATOR_LLM_URL and SIMULATOR_LLM_MODEL');
  const { createLlmCollaborator } = await import('../tasks/llm-simulator.ts');
  const llm = s.llmSimulator;
  return { name: `llm:${llm.model}`, create: (task) => createLlmCollaborator(task, { url: llm.url, model: llm.model, ...(llm.key ? { key: llm.key } : {}) }) };
}

/** The scorer for simulate/evaluate/train; with `clipModelDir` frontend pages are compared by CLIP, whose weights it frees on close. */
export async function scorer(s: TrainerSettings): Promise<Scorer> {
  // withTrainer has already initialised the tfjs backend, so the embedder must not pick another one.
  const embedder = s.clipModelDir ? await (await import('./model/clip.ts')).ClipImageEmbedder.load(s.clipModelDir, { initBackend: false }) : undefined;
  const sc = createScorer({ bwrapPath: s.bwrapPath, pythonPath: s.pythonPath, chromiumPath: s.chromiumPath, embedder });
  return {
    evaluate: (task, answer) => sc.evaluate(task, answer),
    async close() {
      try {
        await sc.close();
      } finally {
        embedder?.dispose();
      }
    },
  };
}

export async function simulateCommand(db: Database, s: TrainerSettings, o: { policy: string; tasks: TaskSplit; episodes: number; kind: TaskKind; seed?: number }): Promise<void> {
  const version = await resolveVersion(versionContext(db, s), o.policy);
  const sc = await scorer(s);
  try {
    const games = await simulate(db.prisma, version, sc, {
      kind: o.kind,
      split: o.tasks,
      episodes: o.episodes,
      seed: o.seed ?? s.seed,
      store: true,
      collaborator: await collaboratorFactory(s),
      log: (l) => console.error(l),
    });
    const ok = games.filter((g) => g.evaluation.success).length;
    const mean = games.reduce((a, g) => a + g.evaluation.score, 0) / games.length;
    console.log(`stored ${games.length} simulated ${o.kind} sessions of ${version.name} on ${o.tasks} tasks: mean score ${(mean * 100).toFixed(1)}%, ${ok} successes`);
  } finally {
    await sc.close();
  }
}

export interface EvalCommandOptions {
  /** One version to evaluate, or `compare` two on the same games. */
  policy?: string;
  compare?: string[];
  tasks: TaskSplit;
  episodes: number;
  kind: TaskKind;
  against?: string;
  seed?: number;
  json?: boolean;
}

export async function evaluateCommand(db: Database, s: TrainerSettings, o: EvalCommandOptions): Promise<void> {
  if (o.compare && (o.policy || o.against)) throw new Error('evaluate: give either --compare A B or --policy (with --against), not both');
  if (o.compare && o.compare.length !== 2) throw new Error(`evaluate --compare needs exactly two versions, got ${o.compare.length}`);
  if (!o.compare && !o.policy) throw new Error('evaluate: give --policy <version> or --compare <A> <B>');
  const ctx = versionContext(db, s);
  const sc = await scorer(s);
  try {
    const options = { kind: o.kind, split: o.tasks, episodes: o.episodes, seed: o.seed ?? s.seed, store: false, collaborator: await collaboratorFactory(s) };
    if (o.compare) {
      const [a, b] = [await resolveVersion(ctx, o.compare[0]!), await resolveVersion(ctx, o.compare[1]!)];
      const c = await compareVersions(db.prisma, a, b, sc, options);
      console.log(o.json ? JSON.stringify(c) : formatComparison(c));
      return;
    }
    const version = await resolveVersion(ctx, o.policy!);
    const against = o.against ? await resolveVersion(ctx, o.against) : undefined;
    const report = await evaluateVersion(db.prisma, version, sc, options, against);
    console.log(o.json ? JSON.stringify(report) : formatReport(report));
  } finally {
    await sc.close();
  }
}

export interface TrainCommandOptions {
  algo: Algorithm;
  from: string;
  preset: string;
  kind: TaskKind;
  maxSteps?: number;
  resume?: string;
  lora?: number;
  promote?: boolean;
  /** Games per version in the promotion gate; unset: chosen by the power analysis (PROMOTION_EFFECT, PROMOTION_POWER). */
  evalEpisodes?: number;
  /** The data (default: TRAINER_DATA and its companions). */
  data?: DataSource;
  simulatedWeight?: number;
  minQuality?: number;
  minRating?: number;
  /** Only this study's answered sessions (default: TRAINER_STUDY); an evaluation study is refused. */
  study?: string;
  /** sweet: use people's pairwise preferences as extra critic pairs (default: TRAINER_USE_PREFERENCES). */
  preferences?: boolean;
}

export async function trainCommand(db: Database, s: TrainerSettings, o: TrainCommandOptions): Promise<PolicyVersion> {
  const ctx = { prisma: db.prisma, checkpointRoot: s.checkpointRoot, progress: s.progress, log: (l: string) => console.error(l) };
  let runId = o.resume;
  if (!runId) {
    if (!isPresetName(o.preset)) throw new Error(`unknown preset "${o.preset}" (cpu-small or paper)`);
    const from = await resolveVersion(versionContext(db, s), o.from);
    const base = await trainingBaseOf(db.prisma, from);
    if (base.servedBy && o.lora === undefined) throw new Error(`"${from.name}" is served by an endpoint: train a LoRA adapter for it with --lora <rank>`);
    const data = dataFilterFor(s, { ...(o.data ? { source: o.data } : {}), simulatedWeight: o.simulatedWeight, minQuality: o.minQuality, minRating: o.minRating, study: o.study } as Partial<TrainingDataSettings>);
    const overrides: Partial<TrainConfig> = { seed: s.seed };
    if (o.maxSteps !== undefined) overrides.maxSteps = o.maxSteps;
    if (o.lora !== undefined) overrides.lora = { rank: o.lora, alpha: 2 * o.lora };
    const cfg: RunConfig = {
      algorithm: o.algo,
      preset: o.preset,
      train: trainConfig(o.preset, overrides),
      fromVersionId: from.id,
      fromVersionName: from.name,
      fromCheckpoint: base.dir,
      ...(base.servedBy ? { servedBy: base.servedBy } : {}),
      kind: o.kind,
      ratingWeight: s.ratingWeight,
      data,
      preferences: o.preferences ?? s.usePreferences,
    };
    const run = await createRun(ctx, cfg);
    runId = run.id;
    console.error(`training run ${run.id} (${o.algo}, preset ${o.preset}); resume it after an interruption with: sweetloop train --resume ${run.id}`);
  }
  const version = await executeRun(ctx, runId);
  console.log(`candidate policy version ${version.name} (sha256 ${version.checkpointSha256}) at ${version.checkpointPath}`);
  if (o.promote) await gate(db, s, version.name, o.kind, o.evalEpisodes);
  return version;
}

async function gate(db: Database, s: TrainerSettings, candidate: string, kind: TaskKind, episodes?: number): Promise<void> {
  const { games, plan } = gamesPlan(await deployedPolicy(db.prisma), { effect: s.promotionEffect, alpha: s.promotionAlpha, power: s.promotionPower }, episodes);
  const power = pairedSuccessPower({ games, delta: plan.delta, discordance: plan.discordance, alpha: plan.alpha });
  console.error(
    `promotion gate: ${games} games a version${episodes === undefined ? ' (chosen by the power analysis)' : ' (--eval-episodes)'}; ` +
      `power ${(power * 100).toFixed(0)}% to detect ${(plan.delta * 100).toFixed(0)} points of success rate at alpha ${plan.alpha} ` +
      `(McNemar, assumed discordance ${(plan.discordance * 100).toFixed(1)}%; ${plan.games} games give ${(plan.power * 100).toFixed(0)}%)`,
  );
  const sc = await scorer(s);
  const collaborator = await collaboratorFactory(s);
  try {
    const r = await promote(db, candidate, {
      gate: { alpha: s.promotionAlpha, margin: s.promotionMargin },
      kind,
      plan,
      seed: s.seed,
      ...(s.promotionHumanAbShare > 0 ? { humanAb: { share: s.promotionHumanAbShare / 100 } } : {}),
      play: async (v) => outcomes(await simulate(db.prisma, v, sc, { kind, split: 'test', episodes: games, seed: s.seed, store: false, collaborator })),
    });
    console.log(formatGateEvidence(r.evidence));
  } finally {
    await sc.close();
  }
}

export async function serviceCommand(db: Database, s: TrainerSettings, o: { algo: Algorithm; preset: string; kind: TaskKind; evalEpisodes?: number }): Promise<void> {
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  const data = dataFilterFor(s);
  // A misnamed or evaluation study stops the service at its start rather than at every poll.
  const study = data.study !== undefined ? await trainingStudy(db.prisma, data.study, o.kind) : null;
  await runService({
    db,
    minNewSessions: s.minNewSessions,
    pollSeconds: s.pollSeconds,
    signal: controller.signal,
    log: (l) => console.error(`trainer: ${l}`),
    countNewSessions: (after) =>
      db.prisma.session.count({
        where: usableSessions({
          source: data.source,
          ...(data.minQuality !== undefined ? { minQuality: data.minQuality } : {}),
          ...(data.minRating !== undefined ? { minRating: data.minRating } : {}),
          kind: o.kind,
          split: 'train',
          ...(study ? { studyId: study.id } : {}),
          ...(after ? { endedAfter: after } : {}),
        }),
      }),
    cycle: async () => {
      const [unfinished] = await unfinishedRuns(db.prisma);
      const version = unfinished
        ? await trainCommand(db, s, { algo: o.algo, from: 'deployed', preset: o.preset, kind: o.kind, resume: unfinished.id })
        : await trainCommand(db, s, { algo: o.algo, from: 'deployed', preset: o.preset, kind: o.kind });
      await gate(db, s, version.name, o.kind, o.evalEpisodes);
    },
  });
}

