// Trains the starter policy (trainer/recipes/starter.ts): tokenizer, model, an optional copy-drill phase, then
// the games; writes a Hugging Face directory and its manifest.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { progressBar } from '../../tasks/progress-bar.ts';
import type { ChatMessage } from '../../tasks/agent.ts';
import { seededRandom } from '../../tasks/random.ts';
import { llamaConfig, type ModelConfig } from '../model/architecture.ts';
import { chatMlTokenizerConfig, trainByteLevelBpe } from '../model/bpe-train.ts';
import { CHATML_TEMPLATE, ChatFormatter } from '../model/chat.ts';
import { saveCheckpoint } from '../model/checkpoint.ts';
import { Decoder } from '../model/decoder.ts';
import { AdamW, warmupCosine } from '../model/optim.ts';
import { TextTokenizer, saveTokenizerFiles } from '../model/tokenizer.ts';
import { TrainStep } from '../model/train-step.ts';
import { copyDrills } from './copy-drills.ts';
import {
  batchLoss,
  encodeDialogue,
  makeBatches,
  sharedPrefixLength,
  shuffle,
  type Example,
} from './starter-batches.ts';
import { compactAnswers, recipeGameDialogues } from './starter-data.ts';
import {
  recipeOf,
  STARTER_MANIFEST,
  STARTER_RECIPE_VERSION,
  type StarterOptions,
  type StarterReport,
} from './starter-recipe.ts';

export async function sha256File(path: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(path))
    .digest('hex');
}

/** Trains the starter policy and writes it to options.dir (replacing what was there). */
export async function buildStarterPolicy(options: StarterOptions): Promise<StarterReport> {
  const recipe = recipeOf(options);
  const log = options.log ?? (() => {});
  await checkStarterDir(options.dir);
  const started = Date.now();
  const cpuStart = process.cpuUsage();
  const rand = seededRandom(recipe.seed, 0x5747);

  if (!options.dialogues)
    log(`starter: playing ${recipe.games} expert games on ColBench-mini tasks (seed ${recipe.seed})`);
  const dialogues = options.dialogues ? compactAnswers(options.dialogues, recipe) : await recipeGameDialogues(recipe);
  if (dialogues.length === 0) throw new Error('starter: no training dialogues');
  const phase = recipe.copyDrillPhase;
  if (
    phase &&
    !(
      Number.isInteger(phase.steps) &&
      phase.steps > 0 &&
      phase.peakLr > 0 &&
      Number.isInteger(phase.drills) &&
      phase.drills > 0
    )
  ) {
    throw new Error('starter: copyDrillPhase needs integer steps > 0, peakLr > 0 and integer drills > 0');
  }
  const phaseDialogues = phase ? (options.drillDialogues?.make ?? copyDrills)(recipe.seed ^ 0x7068, phase.drills) : [];

  // Tokenizer: byte-level BPE learnt from the same dialogues, rendered as the model will see them.
  const chat = new ChatFormatter(CHATML_TEMPLATE);
  const rendered = [...dialogues, ...phaseDialogues].map((d) => chat.format(d));
  const tokenizerJson = trainByteLevelBpe(rendered, { vocabSize: recipe.size.vocabSize });
  const tokenizerConfig = chatMlTokenizerConfig(CHATML_TEMPLATE, { model_max_length: recipe.size.contextLength });
  const tok = new TextTokenizer({
    tokenizerJson: tokenizerJson as unknown as Record<string, unknown>,
    tokenizerConfig,
  });
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
  // A drill phase whose gate fails (StarterOptions.drillGate) runs again from fresh weights; attempt 0 is the
  // recipe's own initialisation, so a build without a gate is unchanged.
  const initSeed = (attempt: number) => (attempt === 0 ? recipe.seed : (recipe.seed + 0x9e3779b1 * attempt) >>> 0);
  const fresh = (attempt: number) => {
    const model = new Decoder(config, {
      name: attempt === 0 ? 'starter' : `starter-${attempt}`,
      seed: initSeed(attempt),
    });
    const optimizer = new AdamW(model.params, {
      lr: (() => {
        const games = warmupCosine({
          peakLr: recipe.peakLr,
          warmupSteps: Math.max(1, Math.round(recipe.steps * recipe.warmup)),
          totalSteps: recipe.steps,
        });
        if (!phase) return games;
        const drills = warmupCosine({
          peakLr: phase.peakLr,
          warmupSteps: Math.max(1, Math.round(phase.steps * recipe.warmup)),
          totalSteps: phase.steps,
        });
        return (step: number) => (step < drillSteps ? drills(step) : games(step - drillSteps));
      })(),
      beta1: 0.9,
      beta2: 0.95,
      weightDecay: 0.01,
    });
    return { model, optimizer, trainer: new TrainStep({ optimizer, maxGradNorm: 1.0 }) };
  };
  let { model, optimizer, trainer } = fresh(0);
  let drillAttempts = 1;
  const gate = phase ? options.drillGate : undefined;
  log(
    `starter: ${model.numParameters.toLocaleString('en')} parameters, ${examples.length} dialogues, ${trainTokens.toLocaleString('en')} tokens, ` +
      `${drillSteps ? `${drillSteps} updates on ${drillExamples.length} ${recipe.copyDrillPhase?.source ?? 'copy'} drills, then ` : ''}${recipe.steps} updates of ~${recipe.tokensPerStep} tokens after a shared prefix of ${prefix.length}`,
  );

  const bar =
    options.progress === 'bar'
      ? progressBar(process.stderr, 'starter policy [{bar}] {value}/{total} updates | loss {loss} | {left}')
      : undefined;
  bar?.start(totalSteps, 0, { loss: '-' });

  const losses: number[] = [];
  let queue: Example[][] = [];
  try {
    for (let step = 0; step < totalSteps; step++) {
      if (step === drillSteps && gate && drillAttempts < gate.attempts) {
        if (!(await gate.passes({ model, tokenizer: tok, chat }))) {
          log(`starter: drill gate "${gate.name}" failed after drill phase ${drillAttempts}; again from fresh weights`);
          trainer.dispose();
          optimizer.dispose();
          model.dispose();
          ({ model, optimizer, trainer } = fresh(drillAttempts++));
          losses.length = 0;
          queue = [];
          step = -1;
          continue;
        }
      }
      if (step === drillSteps) queue = [];
      if (queue.length === 0)
        queue = shuffle(
          makeBatches(step < drillSteps ? drillExamples : examples, recipe.tokensPerStep, prefix.length, rand),
          rand,
        );
      const batch = queue.pop()!;
      const { loss } = trainer.run(batchLoss(model, batch, tok.padTokenId, prefix));
      if (!Number.isFinite(loss)) throw new Error(`starter: loss became ${loss} at update ${step}`);
      losses.push(loss);
      bar?.update(step + 1, { loss: loss.toFixed(3) });
      if (
        options.progress === 'lines' &&
        ((step + 1) % Math.max(1, Math.round(totalSteps / 10)) === 0 || step + 1 === totalSteps)
      ) {
        log(
          `starter: update ${step + 1}/${totalSteps}, loss ${loss.toFixed(3)}, ${((Date.now() - started) / 1000).toFixed(0)} s`,
        );
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
      ...(gate ? { drillAttempts } : {}),
    };

    await checkStarterDir(options.dir);
    await rm(options.dir, { recursive: true, force: true });
    await saveCheckpoint(options.dir, model);
    await saveTokenizerFiles(options.dir, tokenizerJson, tokenizerConfig);
    const files: Record<string, string> = {};
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
      files[f] = await sha256File(join(options.dir, f));
    const { writeFileAtomic } = await import('../model/safetensors.ts');
    await writeFileAtomic(
      join(options.dir, STARTER_MANIFEST),
      // Only deterministic facts: the manifest is hashed with the checkpoint, so no wall-clock time here.
      JSON.stringify(
        {
          recipeVersion: STARTER_RECIPE_VERSION,
          ...report,
          seconds: undefined,
          cpuSeconds: undefined,
          losses: undefined,
          files,
        },
        null,
        2,
      ) + '\n',
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
export async function checkStarterDir(dir: string): Promise<void> {
  if (!existsSync(dir)) return;
  const entries = await readdir(dir);
  if (entries.length > 0 && !entries.includes(STARTER_MANIFEST)) {
    throw new Error(
      `starter: ${dir} is not empty and holds no starter policy (${STARTER_MANIFEST}); refusing to overwrite it`,
    );
  }
}
