import * as tf from '@tensorflow/tfjs';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addLora, loadLora, mergeLora, saveLora } from '../../../trainer/model/lora.ts';
import { AdamW, warmupCosine } from '../../../trainer/model/optim.ts';
import { crossEntropy } from '../../../trainer/model/ops.ts';
import { TrainStep } from '../../../trainer/model/train-step.ts';
import type { Decoder } from '../../../trainer/model/decoder.ts';
import { ids2d, maxRelDiff, tinyConfig, tinyDecoder, useBackend } from './tiny.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sweetloop-lora-'));
beforeAll(async () => useBackend('wasm'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const probe = () => ids2d([[3, 1, 4, 1, 5, 9, 2, 6]]);
const seqs = ids2d([
  [1, 2, 3, 4, 5, 6, 7, 8, 9],
  [9, 8, 7, 6, 5, 4, 3, 2, 1],
]);
const input = seqs.slice([0, 0], [2, 8]) as tf.Tensor2D;
const target = seqs.slice([0, 1], [2, 8]) as tf.Tensor2D;
const lossOf = (m: Decoder) => () => crossEntropy(m.forward(input).logits, target);

describe('LoRA', () => {
  it('zero-initialised B leaves the logits exactly unchanged; training moves only the adapters', async () => {
    const m = tinyDecoder();
    const before = m.forward(probe()).logits;
    addLora(m, { rank: 4, alpha: 8, targetModules: ['q_proj', 'v_proj', 'gate_proj'] });
    expect(m.adapters.size).toBe(6);
    const same = m.forward(probe()).logits;
    expect([...same.dataSync()]).toEqual([...before.dataSync()]);
    const trainable = m.namedTrainableVariables();
    expect([...trainable.keys()].every((k) => /\.lora_[AB]\.weight$/.test(k))).toBe(true);
    const base = m.param('model.layers.0.self_attn.q_proj.weight').dataSync().slice();
    const opt = new AdamW(trainable, { lr: 1e-2 });
    const step = new TrainStep({ optimizer: opt });
    const first = step.run(lossOf(m)).loss;
    let last = first;
    for (let i = 0; i < 20; i++) last = step.run(lossOf(m)).loss;
    expect(last).toBeLessThan(first);
    expect([...m.param('model.layers.0.self_attn.q_proj.weight').dataSync()]).toEqual([...base]);
    const adapted = m.forward(probe()).logits;
    expect(maxRelDiff(adapted, before)).toBeGreaterThan(1e-3);

    // Saved in PEFT layout and loaded onto a fresh copy of the base: same logits.
    await saveLora(dir, m);
    const fresh = tinyDecoder();
    await loadLora(dir, fresh);
    expect(maxRelDiff(fresh.forward(probe()).logits, adapted)).toBeLessThan(1e-6);
    // Merged into the base weights: same function without adapters.
    mergeLora(m);
    expect(m.adapters.size).toBe(0);
    expect(maxRelDiff(m.forward(probe()).logits, adapted)).toBeLessThan(1e-5);
    opt.dispose();
    m.dispose();
    fresh.dispose();
  });

  it('refuses unknown target modules', () => {
    const m = tinyDecoder();
    expect(() => addLora(m, { rank: 2, alpha: 2, targetModules: ['qkv'] })).toThrow(/unknown LoRA target module "qkv"/);
    m.dispose();
  });
});

describe('training memory', () => {
  for (const mode of ['full', 'lora'] as const) {
    it(`stays flat over many steps (${mode} fine-tuning, accumulation, clipping, schedule)`, () => {
      const m = tinyDecoder(tinyConfig(), 5);
      if (mode === 'lora') addLora(m, { rank: 2, alpha: 4 });
      const opt = new AdamW(m.namedTrainableVariables(), {
        lr: warmupCosine({ peakLr: 5e-3, warmupSteps: 2, totalSteps: 20 }),
        weightDecay: 0.01,
      });
      const step = new TrainStep({ optimizer: opt, maxGradNorm: 1, accumulationSteps: 2 });
      const losses: number[] = [];
      let counts: number[] = [];
      for (let i = 0; i < 30; i++) {
        const r = step.run(lossOf(m));
        losses.push(r.loss);
        if (r.applied) counts.push(tf.memory().numTensors);
      }
      expect(counts.length).toBe(15);
      counts = counts.slice(1); // after the first update every tensor that persists exists
      expect(new Set(counts).size, `numTensors after each update: ${counts.join(', ')}`).toBe(1);
      expect(losses.at(-1)!).toBeLessThan(losses[0]!);
      opt.dispose();
      m.dispose();
    });
  }

  it('alpha scales the update as alpha / r, and the targets choose which weights get adapters', () => {
    const delta = (alpha: number, targetModules: string[]) => {
      const m = tinyDecoder();
      const before = new Map([...m.params].map(([k, v]) => [k, v.dataSync().slice()]));
      addLora(m, { rank: 4, alpha, targetModules, seed: 7 });
      for (const ad of m.adapters.values()) ad.b.assign(tf.onesLike(ad.b));
      const adapted = [...m.adapters.keys()].sort();
      mergeLora(m);
      const changed = new Map(
        [...m.params]
          .filter(([k, v]) => v.dataSync().some((x, i) => x !== before.get(k)![i]))
          .map(([k, v]) => [k, [...v.dataSync()].map((x, i) => x - before.get(k)![i]!)]),
      );
      m.dispose();
      return { adapted, changed };
    };
    const a4 = delta(4, ['q_proj', 'down_proj']);
    const a8 = delta(8, ['q_proj', 'down_proj']);
    expect(a4.adapted.length).toBe(2 * tinyConfig().numLayers);
    expect(a4.adapted.every((m) => /\.(q_proj|down_proj)$/.test(m))).toBe(true);
    // Only the targeted weights move.
    expect([...a4.changed.keys()].every((k) => /\.(q_proj|down_proj)\.weight$/.test(k))).toBe(true);
    expect(a4.changed.size).toBe(a4.adapted.length);
    // Same A (seeded) and B: doubling alpha at the same rank doubles the update.
    for (const [k, d4] of a4.changed) {
      const d8 = a8.changed.get(k)!;
      d4.forEach((x, i) => expect(d8[i]!).toBeCloseTo(2 * x, 4));
    }
  });
});
