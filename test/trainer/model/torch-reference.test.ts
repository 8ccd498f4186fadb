// The tfjs decoder against an independent PyTorch implementation of the same equations (testing/model_torch.py),
// through a saved checkpoint: checks the equations, the HF naming and the safetensors layout together.
import * as tf from '@tensorflow/tfjs';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveCheckpoint } from '../../../trainer/model/checkpoint.ts';
import { Decoder } from '../../../trainer/model/decoder.ts';
import { ids2d, tinyConfig, useBackend } from './tiny.ts';

const PY = '/usr/bin/python3';
const hasTorch = spawnSync(PY, ['-c', 'import torch, numpy'], { stdio: 'ignore' }).status === 0;
if (!hasTorch)
  console.warn('[skip] torch-reference: /usr/bin/python3 with torch and numpy not found (Debian python3-torch)');

const dir = mkdtempSync(path.join(os.tmpdir(), 'sweetloop-torch-'));
beforeAll(async () => useBackend('wasm'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!hasTorch)('decoder vs PyTorch reference', () => {
  const cases = {
    'llama, GQA, llama3 rope scaling, untied head': tinyConfig(),
    'qwen2, q/k/v bias, tied embeddings': tinyConfig({
      modelType: 'qwen2',
      qkvBias: true,
      tieWordEmbeddings: true,
      ropeScaling: { type: 'none' },
      ropeTheta: 1e6,
    }),
  };
  for (const [name, cfg] of Object.entries(cases)) {
    it(name, async () => {
      const m = new Decoder(cfg, { seed: 13, initStd: 0.3, name: 'ref' });
      // Biases start at zero: give them values so that they are really compared.
      for (const [n, v] of m.params) if (n.endsWith('.bias')) v.assign(tf.randomNormal(v.shape, 0, 0.3, 'float32', 2));
      const d = path.join(dir, cfg.modelType);
      await saveCheckpoint(d, m);
      const ids = [5, 17, 3, 36, 0, 22, 9, 9, 14, 30, 2];
      const out = JSON.parse(
        execFileSync(PY, ['testing/model_torch.py', 'logits', d, JSON.stringify(ids)], { encoding: 'utf8' }),
      );
      const ours = m.forward(ids2d([ids])).logits;
      const ref = tf.tensor(out.logits);
      const cached = tf.tensor(out.cached);
      const scale = tf.max(tf.abs(ref)).dataSync()[0]!;
      expect(tf.max(tf.abs(tf.sub(ours.reshape(ref.shape), ref))).dataSync()[0]! / scale).toBeLessThan(1e-5);
      expect(tf.max(tf.abs(tf.sub(cached, ref))).dataSync()[0]! / scale).toBeLessThan(1e-5);
      m.dispose();
    });
  }
});
