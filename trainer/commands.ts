// The trainer's command actions (simulate, evaluate, train; the service, `trainer`, is service-command.ts).
// bin/commands/trainer.ts parses the options and hands over the validated settings; everything else happens here.
import { deployedPolicy } from '../prisma/policy-store.ts';
import { resolveServing } from './policies/serving.ts';
import { trainingSource, type TrainingSource } from './training-source.ts';
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import type { TaskKind, TaskSource, TaskSplit } from '../tasks/model.ts';
import { compareVersions, evaluateVersion, formatComparison, formatReport, outcomes } from './evaluate.ts';
import { isPresetName, loraRequest, PRESETS, trainConfig, type PresetName, type TrainConfig } from './presets.ts';
import { formatGateEvidence, gamesPlan, promote } from './promote.ts';
import { pairedSuccessPower } from '../tasks/sample-size.ts';
import { createRun, executeRun, type Algorithm, type RunConfig } from './runs.ts';
import { simulate } from './simulate.ts';
import { collaboratorFactory, scorer, type TrainerSettings, type TrainingDataSettings } from './settings.ts';
import { resolveVersion, type VersionContext } from './versions.ts';
import type { DataFilter } from './data.ts';
import type { DataSource } from '../prisma/data-source.ts';
import { exitOnInterrupt } from './interrupt.ts';

/** The run's data filter: the command's options over the configured defaults, seeded by SEED. */
export function dataFilterFor(
  s: Pick<TrainerSettings, 'trainingData' | 'seed'>,
  o: Partial<TrainingDataSettings> = {},
): DataFilter {
  const d = {
    ...s.trainingData,
    ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)),
  } as TrainingDataSettings;
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

export async function simulateCommand(
  db: Database,
  s: TrainerSettings,
  o: {
    policy: string;
    tasks: TaskSplit;
    episodes: number;
    kind: TaskKind;
    source?: TaskSource;
    perTask?: number;
    seed?: number;
  },
): Promise<void> {
  const version = await resolveVersion(versionContext(db, s), o.policy);
  const sc = await scorer(s);
  try {
    const games = await simulate(db.prisma, version, sc, {
      kind: o.kind,
      split: o.tasks,
      episodes: o.episodes,
      ...(o.source ? { source: o.source } : {}),
      ...(o.perTask ? { perTask: o.perTask } : {}),
      seed: o.seed ?? s.seed,
      store: true,
      collaborator: await collaboratorFactory(s),
      log: (l) => console.error(l),
    });
    const ok = games.filter((g) => g.evaluation.success).length;
    const mean = games.reduce((a, g) => a + g.evaluation.score, 0) / games.length;
    console.log(
      `stored ${games.length} simulated ${o.kind} sessions of ${version.name} on ${o.tasks} tasks: mean score ${(mean * 100).toFixed(1)}%, ${ok} successes`,
    );
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
  if (o.compare && (o.policy || o.against))
    throw new Error('evaluate: give either --compare A B or --policy (with --against), not both');
  if (o.compare && o.compare.length !== 2)
    throw new Error(`evaluate --compare needs exactly two versions, got ${o.compare.length}`);
  if (!o.compare && !o.policy) throw new Error('evaluate: give --policy <version> or --compare <A> <B>');
  const ctx = versionContext(db, s);
  const sc = await scorer(s);
  try {
    const options = {
      kind: o.kind,
      split: o.tasks,
      episodes: o.episodes,
      seed: o.seed ?? s.seed,
      store: false,
      collaborator: await collaboratorFactory(s),
    };
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
  /** LoRA alpha (default 2 x rank) and target projections (default the preset's, or q/k/v/o). */
  loraAlpha?: number;
  loraTargets?: string[];
  /** Peak learning rates of the policy (actor, DPO, SFT) and the critic; epochs of the policy phase and the critic. */
  lr?: number;
  criticLr?: number;
  epochs?: number;
  criticEpochs?: number;
}

/** The preset with the command's overrides (rates, epochs, steps, seed; LoRA comes from the training source). */
export function trainOverrides(
  s: Pick<TrainerSettings, 'seed'>,
  o: Pick<TrainCommandOptions, 'maxSteps' | 'lr' | 'criticLr' | 'epochs' | 'criticEpochs'>,
): Partial<TrainConfig> {
  return {
    seed: s.seed,
    ...(o.maxSteps !== undefined ? { maxSteps: o.maxSteps } : {}),
    ...(o.lr !== undefined ? { lr: o.lr } : {}),
    ...(o.criticLr !== undefined ? { criticLr: o.criticLr } : {}),
    ...(o.epochs !== undefined ? { actorEpochs: o.epochs, sftEpochs: o.epochs } : {}),
    ...(o.criticEpochs !== undefined ? { criticEpochs: o.criticEpochs } : {}),
  };
}

export function presetOf(name: string): PresetName {
  if (!isPresetName(name)) throw new Error(`unknown preset "${name}" (${Object.keys(PRESETS).join(', ')})`);
  return name;
}

/** Creates a run from a decided training source (trainer/training-source.ts). */
export async function createRunFrom(
  db: Database,
  s: TrainerSettings,
  o: TrainCommandOptions,
  src: Extract<TrainingSource, { ok: true }>,
  log: (l: string) => void,
): Promise<string> {
  const preset = presetOf(o.preset);
  const data = dataFilterFor(s, {
    ...(o.data ? { source: o.data } : {}),
    simulatedWeight: o.simulatedWeight,
    minQuality: o.minQuality,
    minRating: o.minRating,
    study: o.study,
  } as Partial<TrainingDataSettings>);
  let servedBy: RunConfig['servedBy'];
  if (src.endpointVersionId) {
    const endpoint = await db.prisma.policyVersion.findUniqueOrThrow({ where: { id: src.endpointVersionId } });
    servedBy = { ...(await resolveServing(db.prisma, endpoint)), endpointVersionId: src.endpointVersionId };
  }
  const cfg: RunConfig = {
    algorithm: o.algo,
    preset,
    train: trainConfig(preset, { ...trainOverrides(s, o), lora: src.lora }),
    fromVersionId: src.fromId,
    fromVersionName: src.fromName,
    fromCheckpoint: src.baseDir,
    ...(servedBy ? { servedBy } : {}),
    ...(src.continueAdapter ? { fromAdapter: src.continueAdapter } : {}),
    kind: o.kind,
    ratingWeight: s.ratingWeight,
    data,
    preferences: o.preferences ?? s.usePreferences,
  };
  const run = await createRun({ prisma: db.prisma, checkpointRoot: s.checkpointRoot, log }, cfg, {
    refuseUnlearnable: true,
  });
  log(
    `training run ${run.id} (${o.algo}, preset ${preset}) ${src.summary}; resume it after an interruption with: sweetloop train --resume ${run.id}`,
  );
  return run.id;
}

/**
 * `sweetloop train`. With `interruptible` (the command line, not the service, which has its own stop), Ctrl-C
 * prints what the run kept and the command that resumes it, and exits (trainer/interrupt.ts).
 */
export async function trainCommand(
  db: Database,
  s: TrainerSettings,
  o: TrainCommandOptions,
  run: { interruptible?: boolean } = {},
): Promise<PolicyVersion> {
  const abort = new AbortController();
  let runId = o.resume;
  const release = run.interruptible
    ? exitOnInterrupt({ prisma: db.prisma, runId: () => runId ?? null, abort, close: () => db.close() })
    : () => {};
  try {
    return await train(db, s, o, abort.signal, (id) => (runId = id));
  } catch (err) {
    // Stopped by the person: the work failing under a closing database is no news. The handler says what was
    // kept and exits (within its 3 + 3 s bounds); nothing else may print or exit first.
    if (abort.signal.aborted) await new Promise((r) => setTimeout(r, 10_000));
    throw err;
  } finally {
    release();
  }
}

async function train(
  db: Database,
  s: TrainerSettings,
  o: TrainCommandOptions,
  signal: AbortSignal,
  created: (runId: string) => void,
): Promise<PolicyVersion> {
  const ctx = {
    prisma: db.prisma,
    checkpointRoot: s.checkpointRoot,
    progress: s.progress,
    log: (l: string) => console.error(l),
    signal,
  };
  let runId = o.resume;
  if (!runId) {
    const lora = loraRequest(PRESETS[presetOf(o.preset)].lora, o);
    const from = await resolveVersion(versionContext(db, s), o.from);
    // A person named the version: one trained on erased data is refused (naming a clean ancestor), not replaced.
    const src = await trainingSource(db.prisma, from, {
      onErased: 'refuse',
      lora: lora.spec,
      loraExplicit: lora.explicit,
      defaultMaxLoraRank: s.maxLoraRank,
    });
    if (!src.ok) throw new Error(src.reason);
    runId = await createRunFrom(db, s, o, src, (l) => console.error(l));
    created(runId);
  }
  const version = await executeRun(ctx, runId);
  console.log(
    `candidate policy version ${version.name} (sha256 ${version.checkpointSha256}) at ${version.checkpointPath}`,
  );
  if (o.promote) await gate(db, s, version.name, o.kind, o.evalEpisodes);
  return version;
}

export async function gate(
  db: Database,
  s: TrainerSettings,
  candidate: string,
  kind: TaskKind,
  episodes?: number,
): Promise<void> {
  const { games, plan } = gamesPlan(
    await deployedPolicy(db.prisma),
    { effect: s.promotionEffect, alpha: s.promotionAlpha, power: s.promotionPower },
    episodes,
  );
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
      play: async (v) =>
        outcomes(
          await simulate(db.prisma, v, sc, {
            kind,
            split: 'test',
            episodes: games,
            seed: s.seed,
            store: false,
            collaborator,
          }),
        ),
    });
    console.log(formatGateEvidence(r.evidence));
  } finally {
    await sc.close();
  }
}
