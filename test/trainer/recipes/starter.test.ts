import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../../trainer/model/backend.ts';
import { LoadedPolicy } from '../../../trainer/model/loaded-policy.ts';
import * as tf from '@tensorflow/tfjs';
import { llamaConfig } from '../../../trainer/model/architecture.ts';
import { Decoder } from '../../../trainer/model/decoder.ts';
import {
  DEFAULT_RECIPE,
  batchLoss,
  compactAnswer,
  ensureStarterPolicy,
  expertDialogues,
  recipeOf,
  sharedPrefixLength,
} from '../../../trainer/recipes/starter.ts';
import type { Example, StarterOptions } from '../../../trainer/recipes/starter.ts';
import { ANSWER_MARKER, buildDialogue } from '../../../tasks/protocol.ts';
import { generateMiniTasks } from '../../../tasks/mini.ts';
import { miniMeta } from '../../../tasks/mini-model.ts';
import { miniTemplate } from '../../../tasks/mini-templates.ts';
import type { TaskRecord } from '../../../tasks/model.ts';
import { creditDrills } from '../../../tasks/credit-drills.ts';

let root: string;

beforeAll(async () => {
  await initBackend();
  root = await mkdtemp(join(tmpdir(), 'starter-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

// The real recipe (expert games on ColBench-mini, BPE, SFT on assistant tokens, HF directory) on a tiny budget.
function tinyOptions(dir: string): StarterOptions {
  return {
    dir,
    seed: 7,
    games: 6,
    steps: 8,
    tokensPerStep: 512,
    size: {
      vocabSize: 600,
      hiddenSize: 32,
      intermediateSize: 64,
      numLayers: 1,
      numHeads: 4,
      numKvHeads: 2,
      contextLength: 512,
    },
    // The standard recipe's 3,000 drill updates would dwarf this budget; the phase has a test of its own.
    copyDrillPhase: null,
  };
}

describe('starter policy', () => {
  it('trains on expert dialogues that end with an answer', async () => {
    const dialogues = await expertDialogues(7, 4);
    expect(dialogues).toHaveLength(4);
    for (const d of dialogues) {
      expect(d[0]!.role).toBe('system');
      expect(d.at(-1)!.role).toBe('assistant');
      expect(d.at(-1)!.content).toContain(ANSWER_MARKER);
    }
  });

  it('mixes demonstrators only when asked, and records the mix in the recipe', async () => {
    const mix = { expert: 1, hasty: 1, noisy: 1, noise: 0.5 };
    const dialogues = await expertDialogues(7, 30, mix);
    expect(dialogues).toHaveLength(30);
    // The hasty demonstrator answers in its first message; the careful expert never does.
    const hasty = dialogues.filter((d) => d.filter((m) => m.role === 'assistant').length === 1);
    expect(hasty.length).toBeGreaterThan(0);
    expect(hasty.length).toBeLessThan(30);
    for (const d of dialogues) expect(d.at(-1)!.content).toContain(ANSWER_MARKER);
    expect(await expertDialogues(7, 30, mix)).toEqual(dialogues);
    const careful = await expertDialogues(7, 30);
    expect(careful.every((d) => d.filter((m) => m.role === 'assistant').length > 1)).toBe(true);
    expect('demonstrators' in recipeOf({ seed: 7 })).toBe(false);
    expect(recipeOf({ seed: 7, demonstrators: mix }).demonstrators).toEqual(mix);
  });

  it('plays the asked fraction of its games on varied tasks, spread over the build, and records it and the copy drills in the recipe', async () => {
    const dialogues = await expertDialogues(7, 12, undefined, 0.5);
    // Every other game is varied: game i plays the next task of its list, in order (the answer sets that task's
    // withheld values; varied tasks draw numbers that standard ones never take).
    const pool = (varied: boolean) =>
      generateMiniTasks({ seed: 7, count: 40, varied }).filter((t) => t.split === 'train');
    const [standard, varied] = [pool(false), pool(true)];
    const sets = (answer: string, t: TaskRecord) =>
      miniMeta(t)!.withheld.every((w) =>
        answer
          .split('\n')
          .some((line) => line === `${w.key} = ${w.answer}` || line.startsWith(`${w.key} = ${w.answer} `)),
      );
    dialogues.forEach((d, i) =>
      expect(sets(d.at(-1)!.content, (i % 2 === 1 ? varied : standard)[Math.floor(i / 2)]!), `game ${i}`).toBe(true),
    );
    expect(sets(dialogues[1]!.at(-1)!.content, standard[0]!)).toBe(false);
    expect(await expertDialogues(7, 12)).toEqual(await expertDialogues(7, 12, undefined, 0));
    // The standard recipe has all three copying aids; 0 / null turn them off and leave them out of the manifest.
    expect(recipeOf({ seed: 7 })).toMatchObject({
      variedTasks: DEFAULT_RECIPE.variedTasks,
      copyDrills: DEFAULT_RECIPE.copyDrills,
      copyDrillPhase: DEFAULT_RECIPE.copyDrillPhase,
    });
    const off = recipeOf({ seed: 7, variedTasks: 0, copyDrills: 0, copyDrillPhase: null });
    expect(['variedTasks', 'copyDrills', 'copyDrillPhase'].filter((k) => k in off)).toEqual([]);
    expect(recipeOf({ seed: 7, copyDrills: 2 }).copyDrills).toBe(2);
    await expect(expertDialogues(7, 2, undefined, 1.5)).rejects.toThrow(/variedTasks must be between 0 and 1/);
  });

  it('computes the shared prompt prefix once per batch without changing the loss or its gradients', () => {
    const cfg = llamaConfig({
      vocabSize: 40,
      hiddenSize: 16,
      intermediateSize: 32,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      maxPositionEmbeddings: 64,
      tieWordEmbeddings: true,
      eosTokenIds: [1],
      padTokenId: 0,
    });
    const model = new Decoder(cfg, { name: 'prefix-check', seed: 5 });
    try {
      const shared = [3, 4, 5, 6, 7, 8];
      // Different lengths (so one row is padded); the loss covers assistant tokens only.
      const batch: Example[] = [
        { ids: [...shared, 9, 10, 11, 12, 13], train: [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1] },
        { ids: [...shared, 14, 15, 16, 17], train: [0, 0, 0, 0, 0, 0, 0, 1, 1, 1] },
      ];
      const P = sharedPrefixLength(batch);
      expect(P).toBe(6);
      // A prefix never swallows a trained token, nor the token right before the first one.
      expect(sharedPrefixLength([{ ids: [...shared, 9], train: [0, 0, 0, 1, 1, 1, 1] }, batch[0]!])).toBe(2);
      const vars = [...model.params.values()];
      const full = tf.variableGrads(batchLoss(model, batch, 0, []), vars);
      const split = tf.variableGrads(batchLoss(model, batch, 0, shared.slice(0, P)), vars);
      expect(split.value.dataSync()[0]).toBeCloseTo(full.value.dataSync()[0]!, 5);
      for (const [name, g] of Object.entries(full.grads)) {
        const diff = tf.max(tf.abs(tf.sub(g, split.grads[name]!))).dataSync()[0]!;
        const scale = tf.max(tf.abs(g)).dataSync()[0]!;
        expect(diff).toBeLessThanOrEqual(1e-5 * Math.max(scale, 1e-3));
      }
      tf.dispose([full.value, split.value, ...Object.values(full.grads), ...Object.values(split.grads)]);
    } finally {
      model.dispose();
    }
  });

  it('compacts expert answers by dropping only the constant comments', async () => {
    const [task] = generateMiniTasks({ seed: 3, count: 40, templates: ['tag-line'] }).slice(0, 1);
    const comments = miniTemplate('tag-line').facts.map((f) => f.comment);
    const answer = `${ANSWER_MARKER}\n${miniTemplate('tag-line').build('f', { SEPARATOR: ' # ', TAG_PREFIX: '#', MAX_TAGS: 3, LOWERCASE: true, EMPTY_TEXT: '#  # x' })}`;
    const [, , compact] = compactAnswer(
      [
        { role: 'system', content: 's' },
        { role: 'user', content: task!.description },
        { role: 'assistant', content: answer },
      ],
      comments,
    );
    expect(compact!.content).toContain("SEPARATOR = ' # '\n");
    expect(compact!.content).toContain("TAG_PREFIX = '#'\n");
    expect(compact!.content).toContain("EMPTY_TEXT = '#  # x'\n");
    expect(compact!.content).not.toContain('text placed between two tags');
    // Everything but the comments is kept, line for line.
    expect(compact!.content.split('\n')).toHaveLength(answer.split('\n').length);
    expect(answer.split('\n').filter((l) => !comments.some((c) => l.endsWith(c)))).toEqual(
      compact!.content.split('\n').filter((l) => !/^[A-Z_]+ = /.test(l)),
    );
  });

  it('runs a copy-drill phase before the games when the recipe has one, and records it', async () => {
    const dir = join(root, 'drill-phase');
    const phase = { steps: 3, peakLr: 1e-3, drills: 20 };
    const plain = await ensureStarterPolicy({ ...tinyOptions(join(root, 'no-drill-phase')), shipped: false });
    const built = await ensureStarterPolicy({ ...tinyOptions(dir), copyDrillPhase: phase, shipped: false });
    expect(built.report!.losses).toHaveLength(3 + 8);
    expect(built.report!.trainDialogues).toBe(plain.report!.trainDialogues + 20);
    expect(built.report!.recipe.copyDrillPhase).toEqual(phase);
    expect(JSON.parse(await readFile(join(dir, 'starter.json'), 'utf8')).recipe.copyDrillPhase).toEqual(phase);
    // The drills' words are in the tokenizer's training text too.
    expect(built.sha256).not.toBe(plain.sha256);
    await expect(
      ensureStarterPolicy({ ...tinyOptions(join(root, 'bad-phase')), copyDrillPhase: { ...phase, steps: 0 } }),
    ).rejects.toThrow(/copyDrillPhase needs/);
  });

  it('runs the copy-drill phase on the drills it is given instead of the standard ones, and records whose', async () => {
    const phase = { steps: 3, peakLr: 1e-3, drills: 20 };
    const asked: [number, number][] = [];
    const source = {
      name: 'credit-drills',
      make: (seed: number, count: number) => {
        asked.push([seed, count]);
        return creditDrills(seed, count);
      },
    };
    const generic = await ensureStarterPolicy({
      ...tinyOptions(join(root, 'generic-drills')),
      copyDrillPhase: phase,
      shipped: false,
    });
    const dir = join(root, 'credit-drills');
    const built = await ensureStarterPolicy({
      ...tinyOptions(dir),
      copyDrillPhase: phase,
      drillDialogues: source,
      shipped: false,
    });
    expect(asked).toHaveLength(1);
    expect(asked[0]![1]).toBe(20);
    expect(built.report!.trainDialogues).toBe(generic.report!.trainDialogues);
    expect(built.report!.recipe.copyDrillPhase).toEqual({ ...phase, source: 'credit-drills' });
    expect(JSON.parse(await readFile(join(dir, 'starter.json'), 'utf8')).recipe.copyDrillPhase.source).toBe(
      'credit-drills',
    );
    // Other drills, other tokens and weights: the phase trained on the drills given.
    expect(built.sha256).not.toBe(generic.sha256);
    // Not reused for a request of the standard drills (the recipes differ), nor the standard build for this one.
    expect(recipeOf({ seed: 7, copyDrillPhase: phase })).not.toEqual(
      recipeOf({ seed: 7, copyDrillPhase: phase, drillDialogues: source }),
    );
    expect(DEFAULT_RECIPE.copyDrillPhase!.source).toBeUndefined();
  });

  it('runs the drill phase again from fresh weights while its gate fails, at most `attempts` phases, and records it', async () => {
    const phase = { steps: 3, peakLr: 1e-3, drills: 20 };
    const weights = async (dir: string) =>
      createHash('sha256')
        .update(await readFile(join(dir, 'model.safetensors')))
        .digest('hex');
    const seen: number[] = [];
    const gate = (verdicts: boolean[]) => ({
      name: 'test-gate',
      attempts: 3,
      async passes(policy: { model: Decoder }) {
        seen.push([...policy.model.params.values()][0]!.dataSync()[0]!);
        return verdicts[seen.length - 1] ?? false;
      },
    });
    const plain = join(root, 'gate-none');
    await ensureStarterPolicy({ ...tinyOptions(plain), copyDrillPhase: phase, shipped: false });
    // A gate passed at once changes nothing but the recipe: the same weights as without one.
    const first = join(root, 'gate-first');
    const once = await ensureStarterPolicy({
      ...tinyOptions(first),
      copyDrillPhase: phase,
      drillGate: gate([true]),
      shipped: false,
    });
    expect(once.report!.drillAttempts).toBe(1);
    expect(await weights(first)).toBe(await weights(plain));
    // Failed once: a second phase from other initial weights, checked again.
    seen.length = 0;
    const second = join(root, 'gate-second');
    const twice = await ensureStarterPolicy({
      ...tinyOptions(second),
      copyDrillPhase: phase,
      drillGate: gate([false, true]),
      shipped: false,
    });
    expect(seen).toHaveLength(2);
    expect(seen[1]).not.toBe(seen[0]);
    expect(twice.report!.drillAttempts).toBe(2);
    expect(twice.report!.recipe.copyDrillPhase).toEqual({ ...phase, gate: { name: 'test-gate', attempts: 3 } });
    expect(JSON.parse(await readFile(join(second, 'starter.json'), 'utf8')).drillAttempts).toBe(2);
    expect(await weights(second)).not.toBe(await weights(plain));
    // Never passing: the last of `attempts` phases is kept, unchecked.
    seen.length = 0;
    const never = await ensureStarterPolicy({
      ...tinyOptions(join(root, 'gate-never')),
      copyDrillPhase: phase,
      drillGate: gate([]),
      shipped: false,
    });
    expect(seen).toHaveLength(2);
    expect(never.report!.drillAttempts).toBe(3);
  });

  it('builds a loadable checkpoint whose loss went down, reuses it, and rebuilds it identically when damaged', async () => {
    const dir = join(root, 'starter');
    const lines: string[] = [];
    const built = await ensureStarterPolicy({ ...tinyOptions(dir), progress: 'lines', log: (l) => lines.push(l) });
    expect(built.reused).toBe(false);
    const report = built.report!;
    expect(report.losses).toHaveLength(8);
    expect(report.finalLoss).toBeLessThan(report.initialLoss);
    expect(lines.some((l) => l.includes('update 8/8'))).toBe(true);

    const engine = await LoadedPolicy.load(dir);
    try {
      expect(engine.info().chatTemplate).toBe('model');
      expect(engine.model.numParameters).toBe(built.numParameters);
      const dialogue = buildDialogue(
        { kind: 'backend', description: 'I need a function. The signature of the function is: def f(x):' },
        [],
      );
      const [r] = await engine.generate([{ messages: dialogue }], { maxTokens: 8, temperature: 0 });
      expect(r!.tokenIds.length).toBeGreaterThan(0);
    } finally {
      engine.dispose();
    }

    const again = await ensureStarterPolicy(tinyOptions(dir));
    expect(again).toMatchObject({ reused: true, sha256: built.sha256 });

    // A damaged file is detected by its recorded sha256; the rebuild is bit-identical (same seed, same backend).
    const cfgPath = join(dir, 'tokenizer_config.json');
    await appendFile(cfgPath, ' ');
    const rebuilt = await ensureStarterPolicy(tinyOptions(dir));
    expect(rebuilt.reused).toBe(false);
    expect(rebuilt.sha256).toBe(built.sha256);
    expect(JSON.parse(await readFile(cfgPath, 'utf8')).chat_template).toContain('<|im_start|>');

    // A directory that is not a starter is never overwritten.
    const foreign = join(root, 'foreign');
    await mkdir(foreign);
    await writeFile(join(foreign, 'notes.txt'), 'keep me');
    await expect(ensureStarterPolicy(tinyOptions(foreign))).rejects.toThrow(/refusing to overwrite/);
    expect(await readFile(join(foreign, 'notes.txt'), 'utf8')).toBe('keep me');

    // Another seed is another recipe: rebuilt, different weights.
    const other = await ensureStarterPolicy({ ...tinyOptions(dir), seed: 8, steps: 1 });
    expect(other.reused).toBe(false);
    expect(other.sha256).not.toBe(built.sha256);
  });
});
