// Hyper-parameters of the three training algorithms. `paper` is the SWEET-RL paper's table (8B models, full
// fine-tuning); `cpu-small` is what the built-in ~1M-parameter starter policy needs to move at all on a CPU
// within minutes: a learning rate four orders of magnitude larger (a tiny model trained from scratch, not a
// pre-trained 8B one), fewer sampled candidates and fewer actor states. `paper-lora` is the paper's recipe for
// LoRA adapters on a served (8B-class) base, whose rates must be higher than full fine-tuning's.
import { z } from 'zod';
import { DEFAULT_LORA_TARGETS, isLinearModule, LINEAR_MODULES, type LinearModule } from './model/lora-modules.ts';
import { demonstratorMixSchema } from './recipes/demonstrator-mix.ts';

export const DEFAULT_MICRO_BATCH_CELLS = 2 * 1024 * 1024;

export const trainConfigSchema = z.object({
  /** Peak learning rate of the actor / policy (DPO, SFT). */
  lr: z.number().positive(),
  /** Peak learning rate of the critic. */
  criticLr: z.number().positive(),
  /** beta of the critic's Bradley-Terry loss. */
  criticBeta: z.number().positive(),
  /**
   * A trajectory's score in the critic's Bradley-Terry loss (trainer/losses.ts trajectoryAdvantages): 'token-mean'
   * (the official code) or 'turn-sum' (the paper's equation: the sum of the turns' mean log-ratios).
   */
  criticTrajectoryScore: z.enum(['token-mean', 'turn-sum']).default('token-mean'),
  /** beta' of DPO (actor and multi-turn DPO). */
  beta: z.number().positive(),
  /** NLL coefficient on the chosen action, added to DPO. */
  nllCoefficient: z.number().min(0),
  /** Pairs (critic, DPO) or dialogues (RFT) per optimizer update. */
  batchSize: z.number().int().positive(),
  /** Items per forward pass inside one update (gradient accumulation over the batch). */
  microBatch: z.number().int().positive(),
  /**
   * Memory cap of one forward pass: a micro-batch is cut earlier when its rows x (longest row's tokens)^2, the
   * size of its attention scores per head and layer, would pass this. Default 2 x 1024^2: two rows of the
   * starter's full 1,024-token window or four of 724 (see trainer/schedule.ts microBatches).
   */
  microBatchCells: z.number().int().positive().default(DEFAULT_MICRO_BATCH_CELLS),
  criticEpochs: z.number().int().positive(),
  actorEpochs: z.number().int().positive(),
  adamBeta1: z.number().min(0).max(1),
  adamBeta2: z.number().min(0).max(1),
  weightDecay: z.number().min(0),
  maxGradNorm: z.number().positive(),
  /** Share of updates spent warming up. */
  warmupRatio: z.number().min(0).max(1),
  /** Cosine decays to this times the peak. */
  minLrRatio: z.number().min(0).max(1),
  /** Share of the trajectories whose agent-turn states the actor samples candidates for (paper: 10%). */
  stateFraction: z.number().gt(0).max(1),
  /**
   * Which agent-turn states of a sampled trajectory the actor samples candidates for: 'every' one (the paper), or
   * only the 'last' (where the collected game gave its answer, unless it ran out of turns). With a policy that
   * already asks about everything, the question turns' pairs differ in wording that no test can tell apart;
   * 'last' spends the same sampling on answers (raise stateFraction to keep the number of states).
   */
  actorStates: z.enum(['every', 'last']).default('every'),
  /** Candidates sampled per state (paper: 16). */
  candidates: z.number().int().min(2),
  /** Top-half vs bottom-half pairs per state (paper: 4). */
  pairsPerState: z.number().int().positive(),
  /**
   * The actor trains only on the pairs whose critic gap (chosen minus rejected advantage) reaches this quantile of
   * the run's gaps: 0.5 drops the half the critic is least sure of. 0: every pair (the paper).
   */
  pairGapQuantile: z.number().min(0).lt(1).default(0),
  /** Sampling temperature of the candidates. */
  temperature: z.number().positive(),
  /** Longest sampled candidate, in tokens. */
  maxNewTokens: z.number().int().positive(),
  /** Trajectory pairs kept per task (largest reward gaps first); null: every pair (the official code). */
  maxPairsPerTask: z.number().int().positive().nullable(),
  /**
   * Temperature of the critic's log-probabilities when it ranks the actor's candidates. The official
   * rank_best_of_n.py asks vLLM for them at 0.5 (vLLM's sampler scales the logits first); 1: the critic's own.
   */
  rankingTemperature: z.number().positive().default(1),
  /**
   * Which tokens of a candidate the critic's mean covers: 'turn' (the message and its end-of-turn marker, what the
   * sampler's mean covers) or 'official' (rank_best_of_n.py: the assistant header tokens and the message, no end
   * marker).
   */
  rankingTokens: z.enum(['turn', 'official']).default('turn'),
  /**
   * What the critic's mean log-probability of a candidate is measured against when it ranks: 'sampler' (the
   * official rank_best_of_n.py: the sampling policy, without the hidden information) or 'initial' (the frozen
   * initial critic, with it: the turn advantage Bradley-Terry fitted, without the hidden information's own effect
   * on each message, which a small model shows as a bias by wording).
   */
  rankingReference: z.enum(['sampler', 'initial']).default('sampler'),
  /** Over-long dialogues lose their oldest tokens ('left') or their newest ('right': the official datasets). */
  truncation: z.enum(['left', 'right']).default('left'),
  /** The first update at learning rate 0 with ceil(warmupRatio x updates) warm-up updates (the official schedule). */
  warmupFromZero: z.boolean().default(false),
  /**
   * Share of each phase's training items (pairs, dialogues) held out, the first ones in their order: the official
   * trainer keeps the first 3 % of each pairs file for evaluation only (openrlhf/utils/utils.py). 0: all are trained on.
   */
  heldOutShare: z.number().min(0).lt(1).default(0),
  /** RFT: a trajectory is "successful" when its reward reaches this. */
  rftThreshold: z.number().min(0).max(1),
  /** RFT epochs over the successful trajectories. */
  sftEpochs: z.number().int().positive(),
  /**
   * Rehearsal (trainer/rehearsal.ts): every policy update (actor, multi-turn DPO, RFT) also lowers
   * `coefficient` times the NLL of `perUpdate` dialogues of the starter recipe's mix (`games` expert games and
   * their copy drills, from the run's seed). At most 2 a pass: one pass of two 1,024-token rows is what
   * microBatchCells allows. `demonstrators`: the demonstrator mix the base starter was built with, when it was
   * not the careful expert alone (replay what the starter learnt from, not another mix). null: none (the paper;
   * runs stored before it existed).
   */
  rehearsal: z
    .object({
      coefficient: z.number().min(0),
      games: z.number().int().positive(),
      perUpdate: z.number().int().min(1).max(2),
      demonstrators: demonstratorMixSchema.optional(),
    })
    .nullable()
    .default(null),
  /**
   * Train LoRA adapters instead of all parameters (merged into the published weights, or published as an adapter
   * in a run on a served base): rank r, alpha (the update is scaled by alpha / r), and which projection matrices
   * get adapters (PEFT's target_modules; unset in runs stored before: q, k, v and o).
   */
  lora: z
    .object({
      rank: z.number().int().positive(),
      alpha: z.number().positive(),
      targetModules: z.array(z.enum(LINEAR_MODULES)).min(1).optional(),
    })
    .nullable(),
  /**
   * Every policy phase (RFT, multi-turn DPO, the actor) makes exactly this many updates, its passes over the items
   * repeated or cut to fit (the critic keeps criticEpochs): compares methods at equal updates. null: the epochs.
   */
  policyUpdates: z.number().int().positive().nullable().default(null),
  /** Checkpoint every this many optimizer updates. */
  checkpointEvery: z.number().int().positive(),
  /** Stop each phase after this many updates (a smoke run); null: no limit. */
  maxSteps: z.number().int().positive().nullable(),
  seed: z.number().int(),
});

export type TrainConfig = z.infer<typeof trainConfigSchema>;

/** The paper's table (8B models, full fine-tuning). */
const PAPER = {
  lr: 2e-7,
  criticLr: 2e-7,
  criticBeta: 0.1,
  criticTrajectoryScore: 'token-mean',
  beta: 0.1,
  nllCoefficient: 0.01,
  batchSize: 8,
  microBatch: 2,
  microBatchCells: DEFAULT_MICRO_BATCH_CELLS,
  criticEpochs: 4,
  actorEpochs: 1,
  adamBeta1: 0.9,
  adamBeta2: 0.95,
  weightDecay: 0,
  maxGradNorm: 1.0,
  warmupRatio: 0.03,
  minLrRatio: 0.1,
  stateFraction: 0.1,
  actorStates: 'every',
  candidates: 16,
  pairsPerState: 4,
  pairGapQuantile: 0,
  temperature: 1.0,
  maxNewTokens: 1024,
  maxPairsPerTask: 64,
  rankingTemperature: 1,
  rankingTokens: 'turn',
  rankingReference: 'sampler',
  truncation: 'left',
  warmupFromZero: false,
  heldOutShare: 0,
  rftThreshold: 1,
  sftEpochs: 1,
  rehearsal: null,
  lora: null,
  checkpointEvery: 20,
  maxSteps: null,
  policyUpdates: null,
  seed: 1234,
} as const satisfies TrainConfig;

export const PRESETS = {
  paper: PAPER,
  // The paper's recipe scaled for a ~1M-parameter model on CPU: only what differs is written here.
  'cpu-small': {
    ...PAPER,
    lr: 3e-4,
    criticLr: 1e-3,
    criticBeta: 1,
    microBatch: 4,
    candidates: 8,
    maxNewTokens: 200,
    maxPairsPerTask: 8,
    sftEpochs: 2,
    checkpointEvery: 5,
    // A model this small forgets its copying and its code under preference updates (bench/HISTORY.md).
    rehearsal: { coefficient: 1, games: 400, perUpdate: 2 },
  },
  // LoRA adapters on a pre-trained base (what the trainer service trains on an endpoint's --base-model-dir):
  // adapters need a rate about ten times full fine-tuning's. 5e-6 is the LoRA DPO rate of the Zephyr-7B recipe
  // (huggingface/alignment-handbook recipes/zephyr-7b-beta/dpo/config_qlora.yaml; its full DPO used 5e-7), used
  // here for the actor, the critic and RFT alike. Not tuned on Sweetloop's data: change it with --lr / --critic-lr.
  'paper-lora': {
    ...PAPER,
    lr: 5e-6,
    criticLr: 5e-6,
    lora: { rank: 16, alpha: 32, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] },
  },
} as const satisfies Record<string, TrainConfig>;

export type PresetName = keyof typeof PRESETS;

export function isPresetName(name: string): name is PresetName {
  return Object.hasOwn(PRESETS, name);
}

/** A preset with overrides, validated (a bad override is a clear error, not a silent NaN in training). */
export function trainConfig(preset: PresetName, overrides: Partial<TrainConfig> = {}): TrainConfig {
  const merged = {
    ...PRESETS[preset],
    ...Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)),
  };
  const parsed = trainConfigSchema.safeParse(merged);
  if (!parsed.success) {
    throw new Error(
      `invalid training configuration: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  return parsed.data;
}

/** LoRA options of a command (`train --lora --lora-alpha --lora-targets`). */
export interface LoraFlags {
  lora?: number;
  loraAlpha?: number;
  loraTargets?: string[];
}

/**
 * The LoRA settings a run asks for: the flags over the preset's (alpha defaults to 2 x rank when the rank is
 * given, targets to the preset's or q/k/v/o). `explicit`: a flag was given (trainer/training-source.ts refuses
 * to silently ignore one). An alpha or targets without any rank is an error.
 */
export function loraRequest(
  preset: TrainConfig['lora'],
  f: LoraFlags,
): { spec: { rank: number; alpha: number; targetModules: LinearModule[] } | null; explicit: boolean } {
  const explicit = f.lora !== undefined || f.loraAlpha !== undefined || f.loraTargets !== undefined;
  const rank = f.lora ?? preset?.rank;
  if (rank === undefined) {
    if (explicit)
      throw new Error('--lora-alpha and --lora-targets need --lora RANK (or a preset with LoRA, such as paper-lora)');
    return { spec: null, explicit };
  }
  const bad = (f.loraTargets ?? []).filter((t) => !isLinearModule(t));
  if (bad.length)
    throw new Error(`unknown LoRA target module(s) ${bad.join(', ')} (known: ${LINEAR_MODULES.join(', ')})`);
  if (f.loraTargets && f.loraTargets.length === 0) throw new Error('--lora-targets needs at least one module');
  const alpha = f.loraAlpha ?? (f.lora !== undefined ? 2 * f.lora : preset!.alpha);
  const targetModules = (f.loraTargets as LinearModule[] | undefined) ?? [
    ...(preset?.targetModules ?? DEFAULT_LORA_TARGETS),
  ];
  return { spec: { rank, alpha, targetModules }, explicit };
}
