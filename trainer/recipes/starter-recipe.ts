// The starter's recipe (trainer/recipes/starter.ts): its size, its settings and their defaults, the options a
// build takes and what it reports. Everything a manifest records comes from here, so a starter directory is
// reused only for exactly the recipe asked for.
import type { ChatMessage } from '../../tasks/agent.ts';
import type { DemonstratorMix } from './demonstrator-mix.ts';
import type { ModelConfig } from '../model/architecture.ts';
import type { ChatFormatter } from '../model/chat.ts';
import type { Decoder } from '../model/decoder.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';

/** Bumped whenever the recipe changes, so an old starter directory is rebuilt rather than reused. */
export const STARTER_RECIPE_VERSION = 4;
export const STARTER_MANIFEST = 'starter.json';

/** The PolicyVersion name of a starter build: the bot registers it on first start, the trainer as `starter`. */
export function starterVersionName(sha256: string): string {
  return `starter-${sha256.slice(0, 8)}`;
}

/** The model's shape (trainer/model/architecture.ts's fields of the same names), and its context. */
export type StarterSize = Pick<
  ModelConfig,
  'vocabSize' | 'hiddenSize' | 'intermediateSize' | 'numLayers' | 'numHeads' | 'numKvHeads'
> & {
  /** Context of the model; training examples are cut to it. */
  contextLength: number;
};

/**
 * The standard starter: about 1M parameters (0.21M of them the tied embedding). Sized by measurement: on one
 * wasm core a training update of 2,048 tokens takes ~1.5 s at this size and ~3.4 s at d=160 / 5 layers, and
 * the whole build must stay within minutes on a 2-core machine (the standard recipe: ~20 CPU minutes, two
 * thirds of them on copy drills).
 */
export const STARTER_SIZE: StarterSize = {
  vocabSize: 2048,
  hiddenSize: 128,
  intermediateSize: 352,
  numLayers: 4,
  numHeads: 4,
  numKvHeads: 2,
  contextLength: 1024,
};

export interface StarterRecipe {
  seed: number;
  /** Optimizer updates. */
  steps: number;
  /** Expert games played for the training set. */
  games: number;
  /**
   * Tokens (padding included) per update, not counting the prompt prefix every dialogue shares (the system
   * prompt), which is computed once per update.
   */
  tokensPerStep: number;
  peakLr: number;
  /** Fraction of the updates spent warming the learning rate up (then cosine to 0.1x). */
  warmup: number;
  /**
   * Drop the explanatory comment the expert copies onto each constant line of its answer (`X = 5  # what X
   * means`): the code is the same, and the answer the model must learn and write is about 40% shorter.
   */
  compactAnswers: boolean;
  size: StarterSize;
  /**
   * Who plays the demonstration games (absent: the careful expert alone, the standard recipe). Each game's
   * demonstrator is drawn with these weights: the careful expert (asks about every withheld fact), the hasty
   * agent (answers at once with the common guesses) and the noisy expert (skips, misreads, answers early, with
   * `noise`). A mix is meant to make "ask first or answer now" a choice the starter samples; bench/HISTORY.md
   * (Learning) measures how much reward that choice moves with the standard size (little: the starter copies
   * few of the told values, so asking pays little).
   */
  demonstrators?: DemonstratorMix;
  /**
   * Fraction of the demonstration games played on varied tasks (numbers across their ranges:
   * `generateMiniTasks({ varied })`); absent: none. With the templates' few values the model can score by
   * remembering them, and learns no copying (bench/HISTORY.md); varied tasks make copying from the dialogue the
   * only way to lower the loss.
   */
  variedTasks?: number;
  /**
   * Copy drills (trainer/recipes/copy-drills.ts) added per demonstration game (0.5: one drill for every two
   * games); absent: none. Dozens of copied tokens per drill against a handful per game.
   */
  copyDrills?: number;
  /**
   * A first phase of updates on copy drills alone (their own warm-up and cosine to `peakLr`), before the
   * `steps` updates on the games; absent: none. Measured (bench/HISTORY.md): on drills alone the starter's
   * loss sits on a plateau for ~1,500 updates before copying appears; mixed into the games it never does
   * within the build.
   */
  copyDrillPhase?: CopyDrillPhase;
}

export interface CopyDrillPhase {
  steps: number;
  peakLr: number;
  /** Drills made for the phase (a few epochs' worth: about six fill an update). */
  drills: number;
  /** Whose drills (StarterOptions.drillDialogues' name); absent: copy-drills.ts's. */
  source?: string;
  /** The gate checked after the phase (StarterOptions.drillGate's name) and the most phases it may run. */
  gate?: { name: string; attempts: number };
}

/** StarterOptions.drillGate: named, so that the manifest records which check the drill phase passed. */
export interface DrillGate {
  name: string;
  attempts: number;
  passes(policy: { model: Decoder; tokenizer: TextTokenizer; chat: ChatFormatter }): Promise<boolean>;
}

/** Drills of another shape for the copy-drill phase, named so that the manifest tells the builds apart. */
export interface DrillSource {
  name: string;
  make: (seed: number, count: number) => readonly (readonly ChatMessage[])[];
}

export const DEFAULT_RECIPE: Omit<StarterRecipe, 'seed'> = {
  steps: 1200,
  games: 1200,
  tokensPerStep: 512,
  peakLr: 2e-3,
  warmup: 0.05,
  compactAnswers: true,
  size: STARTER_SIZE,
  // Since recipe 3: learn to copy first (drills alone until copying appears), then the games, half of them on
  // varied tasks and with drills mixed in so that copying is still used and kept. bench/HISTORY.md, "Copying".
  variedTasks: 0.5,
  copyDrills: 0.5,
  copyDrillPhase: { steps: 3000, peakLr: 1e-3, drills: 6000 },
};

export interface StarterReport {
  recipe: StarterRecipe;
  numParameters: number;
  trainTokens: number;
  trainDialogues: number;
  /** Mean assistant-token loss of the first and last 10% of updates. */
  initialLoss: number;
  finalLoss: number;
  losses: number[];
  /** Wall-clock seconds of the build. */
  seconds: number;
  /** CPU seconds this process used (user + system): the figure that does not depend on other load. */
  cpuSeconds: number;
  backend: string;
  /** Drill phases run (StarterOptions.drillGate): 1 when the first passed its gate; absent without a gate. */
  drillAttempts?: number;
}

export interface StarterOptions {
  /** Output directory (a Hugging Face model directory). */
  dir: string;
  seed: number;
  steps?: number;
  games?: number;
  tokensPerStep?: number;
  peakLr?: number;
  size?: Partial<StarterSize>;
  /** A mix of demonstrators (see StarterRecipe.demonstrators); absent: the careful expert alone. */
  demonstrators?: DemonstratorMix;
  /** See StarterRecipe.variedTasks. */
  variedTasks?: number;
  /** See StarterRecipe.copyDrills. */
  copyDrills?: number;
  /** See StarterRecipe.copyDrillPhase; null: none (the standard recipe has one). */
  copyDrillPhase?: CopyDrillPhase | null;
  /** Training dialogues to use instead of playing expert games (each ends with an assistant message). */
  dialogues?: readonly (readonly ChatMessage[])[];
  /**
   * The copy-drill phase's drills, instead of copy-drills.ts's (a task family whose answers copy in another
   * shape, e.g. values looked up by key); as many as copyDrillPhase.drills says; its name is recorded in the
   * recipe as copyDrillPhase.source. Ignored without a phase.
   */
  drillDialogues?: DrillSource;
  /**
   * A check of the model after the drill phase (e.g. that it reads which keys were told); when it fails, the phase
   * runs again from fresh weights drawn from the seed, up to `attempts` phases in all (the last is kept either way).
   * Ignored without a phase. A plateau that more updates do not leave is left by a new start (bench/HISTORY.md,
   * "A drill phase that reads the state on every seed").
   */
  drillGate?: DrillGate;
  /** Rebuild even when the directory holds a valid starter of the same recipe. */
  force?: boolean;
  /** Install the shipped build when it is of the same recipe (default true); false always trains. */
  shipped?: boolean;
  /** 'bar': a cli-progress bar on stderr; 'lines': a line every 10%; 'none'. Default 'none'. */
  progress?: 'bar' | 'lines' | 'none';
  log?: (line: string) => void;
}

/** A copying aid as the recipe records it: the default when not given, left out when 0 or null (turned off). */
function withDefault<K extends 'variedTasks' | 'copyDrills' | 'copyDrillPhase'>(
  key: K,
  value: StarterOptions[K],
): Partial<StarterRecipe> {
  const v = value === undefined ? DEFAULT_RECIPE[key] : value;
  return v ? { [key]: typeof v === 'object' ? { ...v } : v } : {};
}

/** The full recipe the options ask for (defaults filled in): what a starter's manifest records. */
export function recipeOf(options: Omit<StarterOptions, 'dir'>): StarterRecipe {
  const recipe: StarterRecipe = {
    seed: options.seed,
    steps: options.steps ?? DEFAULT_RECIPE.steps,
    games: options.games ?? DEFAULT_RECIPE.games,
    tokensPerStep: options.tokensPerStep ?? DEFAULT_RECIPE.tokensPerStep,
    peakLr: options.peakLr ?? DEFAULT_RECIPE.peakLr,
    warmup: DEFAULT_RECIPE.warmup,
    compactAnswers: DEFAULT_RECIPE.compactAnswers,
    size: { ...DEFAULT_RECIPE.size, ...options.size },
    ...(options.demonstrators ? { demonstrators: { ...options.demonstrators } } : {}),
    // 0 / null turn the standard recipe's copying aids off (small test builds); they are then left out.
    ...withDefault('variedTasks', options.variedTasks),
    ...withDefault('copyDrills', options.copyDrills),
    ...withDefault('copyDrillPhase', options.copyDrillPhase),
  };
  if (recipe.copyDrillPhase && options.drillDialogues) recipe.copyDrillPhase.source = options.drillDialogues.name;
  if (recipe.copyDrillPhase && options.drillGate)
    recipe.copyDrillPhase.gate = { name: options.drillGate.name, attempts: options.drillGate.attempts };
  return recipe;
}
