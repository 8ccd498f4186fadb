// The starter policy: what `sweetloop` serves when no POLICY_MODEL_DIR is configured. A small Llama-style model
// (about 1M parameters) trained from scratch, by supervised next-token prediction on the agent's turns only, on
// dialogues that the scripted expert agent plays against the rule-based collaborator on ColBench-mini tasks.
// It learns the game's shape (ask, then answer with the marker), each task family's function and name, and to
// copy some of the values it was told into its answer (bench/HISTORY.md, "Copying"): it is the starting point
// that human sessions and SWEET-RL improve, and a real model is one environment variable away.
//
// Recipe (version 4: ColBench-mini has one function name a template; version 3 played three): first copy
// drills alone until copying appears (a model this small shows none for ~1,500 updates), then many short expert
// games (fresh data for every update rather than epochs over a few), half on varied tasks where remembered
// values are wrong, with drills mixed in so that the copying is kept; answers without the constants' explanatory
// comments, small batches (1-2 dialogues) and many updates, and the system prompt, which every dialogue shares
// token for token, run once per update as a KV-cache prefix.
//
// Deterministic from the seed: the tasks, the games, the tokenizer, the initial weights and the batch order all
// derive from it, and tfjs' wasm and cpu kernels are single-threaded, so the same seed on the same backend
// writes the same files.
//
// The standard recipe's build from the default seed is shipped in the repository (starter-checkpoint/seed-N,
// see its README.md): a first `npm start` installs that copy in milliseconds instead of training for about 20
// minutes.
// It is used only when its manifest names exactly the recipe asked for, and every file still has its recorded
// sha256; test/trainer/recipes/shipped-starter.test.ts fails when the recipe moves away from it.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import cliProgress from 'cli-progress';
import type { Agent, ChatMessage } from '../../tasks/agent.ts';
import { MINI_TEMPLATES } from '../../tasks/mini.ts';
import { ANSWER_MARKER } from '../../tasks/protocol.ts';
import { llamaConfig, type ModelConfig } from '../model/architecture.ts';
import { chatMlTokenizerConfig, trainByteLevelBpe } from '../model/bpe-train.ts';
import { CHATML_TEMPLATE, ChatFormatter } from '../model/chat.ts';
import { checkpointSha256, saveCheckpoint } from '../model/checkpoint.ts';
import { Decoder, type KVCache } from '../model/decoder.ts';
import { seededRandom } from '../../tasks/random.ts';
import { crossEntropy } from '../model/ops.ts';
import { AdamW, warmupCosine } from '../model/optim.ts';
import { TextTokenizer, saveTokenizerFiles } from '../model/tokenizer.ts';
import { TrainStep } from '../model/train-step.ts';
import { copyDrills } from './copy-drills.ts';
import type { DemonstratorMix } from './demonstrator-mix.ts';

/** Bumped whenever the recipe changes, so an old starter directory is rebuilt rather than reused. */
export const STARTER_RECIPE_VERSION = 4;
export const STARTER_MANIFEST = 'starter.json';

/** The PolicyVersion name of a starter build: the bot registers it on first start, the trainer as `starter`. */
export function starterVersionName(sha256: string): string {
  return `starter-${sha256.slice(0, 8)}`;
}

export interface StarterSize {
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  /** Context of the model; training examples are cut to it. */
  contextLength: number;
}

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
  /** Rebuild even when the directory holds a valid starter of the same recipe. */
  force?: boolean;
  /** Install the shipped build when it is of the same recipe (default true); false always trains. */
  shipped?: boolean;
  /** 'bar': a cli-progress bar on stderr; 'lines': a line every 10%; 'none'. Default 'none'. */
  progress?: 'bar' | 'lines' | 'none';
  log?: (line: string) => void;
}

/** A copying aid as the recipe records it: the default when not given, left out when 0 or null (turned off). */
function withDefault<K extends 'variedTasks' | 'copyDrills' | 'copyDrillPhase'>(key: K, value: StarterOptions[K]): Partial<StarterRecipe> {
  const v = value === undefined ? DEFAULT_RECIPE[key] : value;
  return v ? { [key]: typeof v === 'object' ? { ...v } : v } : {};
}

/** The full recipe the options ask for (defaults filled in): what a starter's manifest records. */
export function recipeOf(options: Omit<StarterOptions, 'dir'>): StarterRecipe {
  return {
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
}

/** Plays the expert against the rule-based collaborator on ColBench-mini tasks; returns full dialogues. */
export async function expertDialogues(seed: number, games: number, mix?: DemonstratorMix, variedTasks = 0): Promise<ChatMessage[][]> {
  const [{ generateMiniTasks }, { createExpertAgent, createNonAskingAgent }, { createRuleSimulator }, { playEpisode, buildDialogue }] = await Promise.all([
    import('../../tasks/mini.ts'),
    import('../../tasks/expert.ts'),
    import('../../tasks/simulator.ts'),
    import('../../tasks/protocol.ts'),
  ]);
  // Train-split tasks only: the test split is what the starter is evaluated on. Task i depends only on (seed, i),
  // so drawing more and keeping the train ones is still deterministic.
  if (!(variedTasks >= 0 && variedTasks <= 1)) throw new Error(`starter: variedTasks must be between 0 and 1, got ${variedTasks}`);
  const trainTasks = (n: number, varied: boolean) =>
    generateMiniTasks({ seed, count: Math.ceil(n * 1.5) + 10, varied })
      .filter((t) => t.split === 'train')
      .slice(0, n);
  const nVaried = Math.round(games * variedTasks);
  // Varied and standard games alternate evenly, so that every stretch of the build sees both.
  const varied = trainTasks(nVaried, true);
  const standard = trainTasks(games - nVaried, false);
  const tasks = Array.from({ length: games }, (_, i) => {
    const v = Math.floor(((i + 1) * nVaried) / games) - Math.floor((i * nVaried) / games);
    return v ? varied.shift()! : standard.shift()!;
  });
  const expert = createExpertAgent({ tasks, name: 'expert' });
  // Each game's demonstrator: the careful expert, or one drawn from the mix.
  let demonstrator = (): Agent => expert;
  if (mix) {
    const total = mix.expert + mix.hasty + mix.noisy;
    if (!(total > 0) || [mix.expert, mix.hasty, mix.noisy].some((w) => !(w >= 0))) throw new Error('starter: demonstrator weights must be >= 0 with a positive sum');
    const hasty = createNonAskingAgent({ tasks, name: 'hasty' });
    const noisy = createExpertAgent({ tasks, noise: mix.noise, seed: seed ^ 0x6e6f, name: 'noisy' });
    const draw = seededRandom(seed, 0x6d6978);
    demonstrator = () => {
      const u = draw() * total;
      return u < mix.expert ? expert : u < mix.expert + mix.hasty ? hasty : noisy;
    };
  }
  const out: ChatMessage[][] = [];
  for (const task of tasks) {
    const episode = await playEpisode({ task, agent: demonstrator(), collaborator: createRuleSimulator(task) });
    out.push(buildDialogue(task, episode.turns));
  }
  return out;
}

export interface Example {
  ids: number[];
  /** 1 where ids[t] is an assistant token the model must predict (so the loss at t-1 counts). */
  train: number[];
}

function encodeDialogue(chat: ChatFormatter, tok: TextTokenizer, dialogue: readonly ChatMessage[], ctx: number): Example | null {
  const ids: number[] = [];
  const train: number[] = [];
  for (const seg of chat.segments(dialogue)) {
    // Segment by segment, as generation sees it: the prompt is encoded alone, then the model continues.
    const part = tok.encode(seg.text);
    ids.push(...part);
    for (let i = 0; i < part.length; i++) train.push(seg.train ? 1 : 0);
  }
  if (ids.length > ctx) {
    ids.length = ctx;
    train.length = ctx;
  }
  if (!train.some((t, i) => t === 1 && i > 0)) return null;
  return { ids, train };
}

/** Groups examples of similar length into batches of about `tokensPerStep` padded tokens after the shared prefix. */
function makeBatches(examples: Example[], tokensPerStep: number, prefixLength: number, rand: () => number): Example[][] {
  const order = examples.map((e, i) => ({ e, key: e.ids.length + rand() * 0.5, i })).sort((a, b) => a.key - b.key || a.i - b.i);
  const batches: Example[][] = [];
  let cur: Example[] = [];
  for (const { e } of order) {
    const longest = Math.max(e.ids.length, ...cur.map((x) => x.ids.length));
    if (cur.length > 0 && (longest - prefixLength) * (cur.length + 1) > tokensPerStep) {
      batches.push(cur);
      cur = [];
    }
    cur.push(e);
  }
  if (cur.length) batches.push(cur);
  return batches;
}

function shuffle<T>(xs: T[], rand: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/**
 * The token prefix every example starts with (the rendered system prompt), cut back so that no trained token
 * and not the first token of any example's rest falls inside it: the loss at the boundary is then never lost.
 */
export function sharedPrefixLength(examples: readonly Example[]): number {
  const first = examples[0]!.ids;
  let n = first.length;
  for (const e of examples) {
    let i = 0;
    while (i < n && i < e.ids.length && e.ids[i] === first[i]) i++;
    n = i;
    const firstTrained = e.train.indexOf(1);
    if (firstTrained >= 0) n = Math.min(n, firstTrained - 1);
    n = Math.min(n, e.ids.length - 2);
  }
  return Math.max(0, n);
}

export function batchLoss(model: Decoder, batch: Example[], pad: number, prefix: readonly number[]): () => tf.Scalar {
  const B = batch.length;
  const P = prefix.length;
  const T = Math.max(...batch.map((e) => e.ids.length)) - 1 - P;
  const inputs = new Int32Array(B * T).fill(pad);
  const targets = new Int32Array(B * T);
  const mask = new Float32Array(B * T);
  batch.forEach((e, b) => {
    for (let t = 0; P + t + 1 < e.ids.length; t++) {
      inputs[b * T + t] = e.ids[P + t]!;
      targets[b * T + t] = e.ids[P + t + 1]!;
      mask[b * T + t] = e.train[P + t + 1]!;
    }
  });
  return () => {
    // The shared prefix runs once, as one row, and its keys/values are repeated for every row of the batch:
    // the same attention the full sequences would get (and gradients flow through it), at a fraction of the
    // cost. Right padding: causal attention never lets a real token see the padding after it.
    let cache: KVCache | undefined;
    if (P > 0) {
      const pre = model.forward(tf.tensor2d([...prefix], [1, P], 'int32'), { returnCache: true, lastOnly: true }).cache!;
      cache = {
        layers: pre.layers.map((l) => ({ k: tf.tile(l.k, [B, 1, 1, 1]), v: tf.tile(l.v, [B, 1, 1, 1]) })),
        mask: tf.tile(pre.mask, [B, 1]),
        count: tf.tile(pre.count, [B]),
        length: P,
        batch: B,
      };
    }
    const { logits } = model.forward(tf.tensor2d(inputs, [B, T], 'int32'), cache ? { cache } : {});
    return crossEntropy(logits, tf.tensor2d(targets, [B, T], 'int32'), tf.tensor2d(mask, [B, T]));
  };
}

/**
 * The expert's answer without the comment it copies onto each constant line (`NAME = value  # meaning`),
 * matched exactly against the template's own comments, so a value that contains `#` is never touched.
 */
export function compactAnswer(dialogue: readonly ChatMessage[], comments: readonly string[]): ChatMessage[] {
  return dialogue.map((m) => {
    if (m.role !== 'assistant' || !m.content.includes(ANSWER_MARKER)) return m;
    const lines = m.content.split('\n').map((line) => {
      const c = comments.find((comment) => line.endsWith(`  # ${comment}`));
      return c === undefined ? line : line.slice(0, line.length - c.length - 4);
    });
    return { ...m, content: lines.join('\n') };
  });
}

/** The dialogues as the recipe trains on them: answers compacted when it says so. */
function compactAnswers(dialogues: readonly (readonly ChatMessage[])[], recipe: Pick<StarterRecipe, 'compactAnswers'>): readonly (readonly ChatMessage[])[] {
  if (!recipe.compactAnswers) return dialogues;
  const comments = MINI_TEMPLATES.flatMap((t) => t.facts.map((f) => f.comment));
  return dialogues.map((d) => compactAnswer(d, comments));
}

/**
 * The game phase's dialogues of a recipe: its expert games (part on varied tasks), the copy drills mixed in
 * after them, answers compacted. The trainer's rehearsal (trainer/rehearsal.ts) replays the same mix.
 */
export async function recipeGameDialogues(
  recipe: Pick<StarterRecipe, 'seed' | 'games' | 'demonstrators' | 'variedTasks' | 'copyDrills' | 'compactAnswers'>,
): Promise<readonly (readonly ChatMessage[])[]> {
  let dialogues: readonly (readonly ChatMessage[])[] = await expertDialogues(recipe.seed, recipe.games, recipe.demonstrators, recipe.variedTasks);
  if (recipe.copyDrills) {
    if (!(recipe.copyDrills > 0)) throw new Error(`starter: copyDrills must be > 0, got ${recipe.copyDrills}`);
    dialogues = [...dialogues, ...copyDrills(recipe.seed, Math.round(recipe.games * recipe.copyDrills))];
  }
  return compactAnswers(dialogues, recipe);
}

async function sha256File(path: string): Promise<string> {
  return createHash('sha256').update(await readFile(path)).digest('hex');
}

/** Trains the starter policy and writes it to options.dir (replacing what was there). */
export async function buildStarterPolicy(options: StarterOptions): Promise<StarterReport> {
  const recipe = recipeOf(options);
  const log = options.log ?? (() => {});
  await checkStarterDir(options.dir);
  const started = Date.now();
  const cpuStart = process.cpuUsage();
  const rand = seededRandom(recipe.seed, 0x5747);

  if (!options.dialogues) log(`starter: playing ${recipe.games} expert games on ColBench-mini tasks (seed ${recipe.seed})`);
  const dialogues = options.dialogues ? compactAnswers(options.dialogues, recipe) : await recipeGameDialogues(recipe);
  if (dialogues.length === 0) throw new Error('starter: no training dialogues');
  const phase = recipe.copyDrillPhase;
  if (phase && !(Number.isInteger(phase.steps) && phase.steps > 0 && phase.peakLr > 0 && Number.isInteger(phase.drills) && phase.drills > 0)) {
    throw new Error('starter: copyDrillPhase needs integer steps > 0, peakLr > 0 and integer drills > 0');
  }
  const phaseDialogues = phase ? copyDrills(recipe.seed ^ 0x7068, phase.drills) : [];

  // Tokenizer: byte-level BPE learnt from the same dialogues, rendered as the model will see them.
  const chat = new ChatFormatter(CHATML_TEMPLATE);
  const rendered = [...dialogues, ...phaseDialogues].map((d) => chat.format(d));
  const tokenizerJson = trainByteLevelBpe(rendered, { vocabSize: recipe.size.vocabSize });
  const tokenizerConfig = chatMlTokenizerConfig(CHATML_TEMPLATE, { model_max_length: recipe.size.contextLength });
  const tok = new TextTokenizer({ tokenizerJson: tokenizerJson as unknown as Record<string, unknown>, tokenizerConfig });
  log(`starter: tokenizer with ${tok.vocabSize} tokens`);

  const encode = (ds: readonly (readonly ChatMessage[])[]) =>
    ds.map((d) => encodeDialogue(chat, tok, d, recipe.size.contextLength + 1)).filter((e): e is Example => e !== null);
  const examples = encode(dialogues);
  const drillExamples = encode(phaseDialogues);
  if (examples.length === 0) throw new Error('starter: no dialogue has an assistant turn to learn from');
  const trainTokens = [...examples, ...drillExamples].reduce((n, e) => n + e.ids.length, 0);
  const prefix = examples[0]!.ids.slice(0, sharedPrefixLength([...examples, ...drillExamples]));
  const drillSteps = phase?.steps ?? 0;
  const totalSteps = drillSteps + recipe.steps;

  const config: ModelConfig = llamaConfig({
    vocabSize: tok.vocabSize,
    hiddenSize: recipe.size.hiddenSize,
    intermediateSize: recipe.size.intermediateSize,
    numLayers: recipe.size.numLayers,
    numHeads: recipe.size.numHeads,
    numKvHeads: recipe.size.numKvHeads,
    maxPositionEmbeddings: recipe.size.contextLength,
    tieWordEmbeddings: true,
    eosTokenIds: [tok.tokenToId('<|im_end|>')!],
    padTokenId: tok.padTokenId,
  });
  const model = new Decoder(config, { name: 'starter', seed: recipe.seed });
  const optimizer = new AdamW(model.params, {
    lr: (() => {
      const games = warmupCosine({ peakLr: recipe.peakLr, warmupSteps: Math.max(1, Math.round(recipe.steps * recipe.warmup)), totalSteps: recipe.steps });
      if (!phase) return games;
      const drills = warmupCosine({ peakLr: phase.peakLr, warmupSteps: Math.max(1, Math.round(phase.steps * recipe.warmup)), totalSteps: phase.steps });
      return (step: number) => (step < drillSteps ? drills(step) : games(step - drillSteps));
    })(),
    beta1: 0.9,
    beta2: 0.95,
    weightDecay: 0.01,
  });
  const trainer = new TrainStep({ optimizer, maxGradNorm: 1.0 });
  log(
    `starter: ${model.numParameters.toLocaleString('en')} parameters, ${examples.length} dialogues, ${trainTokens.toLocaleString('en')} tokens, ` +
      `${drillSteps ? `${drillSteps} updates on ${drillExamples.length} copy drills, then ` : ''}${recipe.steps} updates of ~${recipe.tokensPerStep} tokens after a shared prefix of ${prefix.length}`,
  );

  const bar =
    options.progress === 'bar'
      ? new cliProgress.SingleBar(
          { format: 'starter policy [{bar}] {value}/{total} updates | loss {loss} | {eta_formatted} left', stream: process.stderr, hideCursor: true },
          cliProgress.Presets.shades_classic,
        )
      : undefined;
  bar?.start(totalSteps, 0, { loss: '-' });

  const losses: number[] = [];
  let queue: Example[][] = [];
  try {
    for (let step = 0; step < totalSteps; step++) {
      if (step === drillSteps) queue = [];
      if (queue.length === 0) queue = shuffle(makeBatches(step < drillSteps ? drillExamples : examples, recipe.tokensPerStep, prefix.length, rand), rand);
      const batch = queue.pop()!;
      const { loss } = trainer.run(batchLoss(model, batch, tok.padTokenId, prefix));
      if (!Number.isFinite(loss)) throw new Error(`starter: loss became ${loss} at update ${step}`);
      losses.push(loss);
      bar?.update(step + 1, { loss: loss.toFixed(3) });
      if (options.progress === 'lines' && ((step + 1) % Math.max(1, Math.round(totalSteps / 10)) === 0 || step + 1 === totalSteps)) {
        log(`starter: update ${step + 1}/${totalSteps}, loss ${loss.toFixed(3)}, ${((Date.now() - started) / 1000).toFixed(0)} s`);
      }
      // Lets other work on this thread (a progress bar's timer, a bot's heartbeat) run between updates.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    bar?.stop();

    const tenth = Math.max(1, Math.floor(losses.length / 10));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const report: StarterReport = {
      recipe,
      numParameters: model.numParameters,
      trainTokens,
      trainDialogues: examples.length + drillExamples.length,
      initialLoss: mean(losses.slice(0, tenth)),
      finalLoss: mean(losses.slice(-tenth)),
      losses,
      seconds: (Date.now() - started) / 1000,
      cpuSeconds: (() => {
        const u = process.cpuUsage(cpuStart);
        return (u.user + u.system) / 1e6;
      })(),
      backend: tf.getBackend(),
    };

    await checkStarterDir(options.dir);
    await rm(options.dir, { recursive: true, force: true });
    await saveCheckpoint(options.dir, model);
    await saveTokenizerFiles(options.dir, tokenizerJson, tokenizerConfig);
    const files: Record<string, string> = {};
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']) files[f] = await sha256File(join(options.dir, f));
    const { writeFileAtomic } = await import('../model/safetensors.ts');
    await writeFileAtomic(
      join(options.dir, STARTER_MANIFEST),
      // Only deterministic facts: the manifest is hashed with the checkpoint, so no wall-clock time here.
      JSON.stringify({ recipeVersion: STARTER_RECIPE_VERSION, ...report, seconds: undefined, cpuSeconds: undefined, losses: undefined, files }, null, 2) + '\n',
    );
    log(
      `starter: loss ${report.initialLoss.toFixed(3)} -> ${report.finalLoss.toFixed(3)} in ${report.seconds.toFixed(1)} s ` +
        `(${report.cpuSeconds.toFixed(1)} CPU s); written to ${options.dir}`,
    );
    return report;
  } finally {
    bar?.stop();
    trainer.dispose();
    optimizer.dispose();
    model.dispose();
  }
}

/** Throws (before any work, deleting nothing) when dir holds anything but a starter policy. */
async function checkStarterDir(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  const entries = await readdir(dir);
  if (entries.length > 0 && !entries.includes(STARTER_MANIFEST)) {
    throw new Error(`starter: ${dir} is not empty and holds no starter policy (${STARTER_MANIFEST}); refusing to overwrite it`);
  }
}

export interface EnsureResult {
  /** True when nothing was trained: the directory already held the starter, or the shipped copy was installed. */
  reused: boolean;
  /** True when the shipped copy was installed. */
  shipped?: boolean;
  sha256: string;
  numParameters: number;
  report?: StarterReport;
}

/**
 * Reuses the starter in options.dir when its manifest names the same recipe and every file still has the
 * sha256 recorded at build time; otherwise (missing, other recipe, a changed or truncated file) builds it.
 */
export async function ensureStarterPolicy(options: StarterOptions): Promise<EnsureResult> {
  const recipe = recipeOf(options);
  if (!options.force && !options.dialogues) {
    const reason = await verifyStarter(options.dir, recipe);
    if (reason === null) {
      const manifest = JSON.parse(await readFile(join(options.dir, STARTER_MANIFEST), 'utf8')) as { numParameters: number };
      return { reused: true, sha256: await checkpointSha256(options.dir), numParameters: manifest.numParameters };
    }
    const shippedDir = shippedStarterDir(recipe.seed);
    if (options.shipped !== false && (await verifyStarter(shippedDir, recipe)) === null) {
      const numParameters = await installStarter(shippedDir, options.dir);
      options.log?.(`starter: installed the shipped starter (recipe ${STARTER_RECIPE_VERSION}, seed ${recipe.seed}) into ${options.dir}`);
      return { reused: true, shipped: true, sha256: await checkpointSha256(options.dir), numParameters };
    }
    options.log?.(`starter: building (${reason})`);
  }
  const report = await buildStarterPolicy(options);
  return { reused: false, sha256: await checkpointSha256(options.dir), numParameters: report.numParameters, report };
}

/** Where the repository ships the standard recipe's build for a seed (it may ship none for that seed). */
export function shippedStarterDir(seed: number): string {
  return join(dirname(fileURLToPath(import.meta.url)), 'starter-checkpoint', `seed-${seed}`);
}

/**
 * Copies a verified starter (its manifest and the files it lists, nothing else) into dir, replacing the
 * starter there; refuses a directory holding anything else. Copied beside dir and renamed into place, so an
 * interrupted copy never looks like a starter. Returns the starter's parameter count.
 */
async function installStarter(from: string, dir: string): Promise<number> {
  await checkStarterDir(dir);
  const manifest = JSON.parse(await readFile(join(from, STARTER_MANIFEST), 'utf8')) as { numParameters: number; files: Record<string, string> };
  const staging = `${dir}.tmp-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  for (const f of [...Object.keys(manifest.files), STARTER_MANIFEST]) await copyFile(join(from, f), join(staging, f));
  await rm(dir, { recursive: true, force: true });
  await rename(staging, dir);
  return manifest.numParameters;
}

/** null when dir holds a valid starter of this recipe, else why not. */
export async function verifyStarter(dir: string, recipe: StarterRecipe): Promise<string | null> {
  const manifestPath = join(dir, STARTER_MANIFEST);
  if (!existsSync(manifestPath)) return `no starter policy at ${dir}`;
  let manifest: { recipeVersion?: number; recipe?: StarterRecipe; files?: Record<string, string> };
  try {
    manifest = JSON.parse(await readFile(manifestPath, 'utf8'));
  } catch {
    return `${manifestPath} is unreadable`;
  }
  if (manifest.recipeVersion !== STARTER_RECIPE_VERSION || JSON.stringify(manifest.recipe) !== JSON.stringify(recipe)) {
    return 'the existing starter was built with another recipe or seed';
  }
  for (const [file, sha] of Object.entries(manifest.files ?? {})) {
    const p = join(dir, file);
    if (!existsSync(p)) return `${file} is missing`;
    if ((await sha256File(p)) !== sha) return `${file} does not match its recorded sha256`;
  }
  if (!manifest.files || Object.keys(manifest.files).length < 4) return 'the manifest lists no files';
  return null;
}

/**
 * The initial policy's directory: POLICY_MODEL_DIR when configured (checked to exist), else the starter under
 * CHECKPOINT_DIR/starter, built on first use and reused afterwards.
 */
export async function resolveInitialPolicy(options: {
  policyModelDir?: string | undefined;
  checkpointDir: string;
  seed: number;
  progress?: StarterOptions['progress'];
  log?: (line: string) => void;
}): Promise<{ dir: string; source: 'configured' | 'starter'; sha256: string }> {
  if (options.policyModelDir) {
    if (!existsSync(join(options.policyModelDir, 'config.json'))) {
      throw new Error(`POLICY_MODEL_DIR=${options.policyModelDir} is not a Hugging Face model directory (no config.json)`);
    }
    return { dir: options.policyModelDir, source: 'configured', sha256: await checkpointSha256(options.policyModelDir) };
  }
  const dir = join(options.checkpointDir, 'starter');
  const r = await ensureStarterPolicy({
    dir,
    seed: options.seed,
    ...(options.progress ? { progress: options.progress } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  return { dir, source: 'starter', sha256: r.sha256 };
}
