import * as tf from '@tensorflow/tfjs';
import { mkdtempSync, promises as fs, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointSha256, loadCheckpoint, loadOptimizer, saveCheckpoint } from '../../../trainer/model/checkpoint.ts';
import { AdamW } from '../../../trainer/model/optim.ts';
import { crossEntropy } from '../../../trainer/model/ops.ts';
import { readSafetensors, writeSafetensors } from '../../../trainer/model/safetensors.ts';
import { TrainStep } from '../../../trainer/model/train-step.ts';
import type { Decoder } from '../../../trainer/model/decoder.ts';
import { ids2d, tinyConfig, tinyDecoder, useBackend } from './tiny.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'sweetloop-ckpt-'));
beforeAll(async () => useBackend('wasm'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const logitsOf = (m: Decoder) => tf.tidy(() => m.forward(ids2d([[1, 2, 3, 4]])).logits.dataSync() as Float32Array);

function trainer(m: Decoder) {
  const optimizer = new AdamW(m.namedTrainableVariables(), { lr: 1e-2, weightDecay: 0.1 });
  return { optimizer, step: new TrainStep({ optimizer, maxGradNorm: 1 }) };
}
const batch = () => {
  const ids = ids2d([
    [5, 6, 7, 8, 9, 10],
    [11, 12, 13, 14, 15, 16],
  ]);
  return { input: ids.slice([0, 0], [2, 5]) as tf.Tensor2D, target: ids.slice([0, 1], [2, 5]) as tf.Tensor2D };
};

describe('Hugging Face model directories', () => {
  it('save → load gives identical logits, in the HF layout (config.json + model.safetensors)', async () => {
    const m = tinyDecoder();
    const d = path.join(dir, 'a');
    const sha = await saveCheckpoint(d, m);
    expect((await fs.readdir(d)).sort()).toEqual(['config.json', 'model.safetensors']);
    const config = JSON.parse(await fs.readFile(path.join(d, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      model_type: 'llama',
      architectures: ['LlamaForCausalLM'],
      num_key_value_heads: 2,
      tie_word_embeddings: false,
    });
    const weights = await readSafetensors(path.join(d, 'model.safetensors'));
    expect(weights.get('model.layers.1.self_attn.k_proj.weight')!.shape).toEqual([16, 32]);
    expect(weights.has('lm_head.weight')).toBe(true);
    const { model: back } = await loadCheckpoint(d);
    expect(back.config).toEqual(m.config);
    expect([...logitsOf(back)]).toEqual([...logitsOf(m)]);
    expect(await checkpointSha256(d)).toBe(sha);
    // Same content elsewhere → same hash; one changed weight → another hash.
    const d2 = path.join(dir, 'a-copy');
    expect(await saveCheckpoint(d2, back)).toBe(sha);
    const w = back.param('model.norm.weight');
    w.assign(tf.add(w, 1e-3));
    expect(await saveCheckpoint(d2, back)).not.toBe(sha);
    m.dispose();
    back.dispose();
  });

  it('loads BF16 checkpoints and ignores lm_head next to tied embeddings and rotary buffers', async () => {
    const m = tinyDecoder(tinyConfig({ tieWordEmbeddings: true }));
    const d = path.join(dir, 'bf16');
    await saveCheckpoint(d, m, { dtype: 'BF16' });
    const extra = await readSafetensors(path.join(d, 'model.safetensors'));
    extra.set('lm_head.weight', extra.get('model.embed_tokens.weight')!);
    extra.set('model.layers.0.self_attn.rotary_emb.inv_freq', { shape: [4], data: new Float32Array(4) });
    await writeSafetensors(path.join(d, 'model.safetensors'), extra, { dtype: 'BF16' });
    const { model: back } = await loadCheckpoint(d);
    const a = logitsOf(m);
    const b = logitsOf(back);
    const err = Math.max(...a.map((v, i) => Math.abs(v - b[i]!)));
    expect(err).toBeGreaterThan(0); // it really was rounded
    expect(err).toBeLessThan(0.05 * Math.max(...a.map(Math.abs)));
    m.dispose();
    back.dispose();
  });

  it('refuses checkpoints with missing, extra or misshapen tensors, naming the problem', async () => {
    const m = tinyDecoder();
    const d = path.join(dir, 'bad');
    await saveCheckpoint(d, m);
    const good = await readSafetensors(path.join(d, 'model.safetensors'));
    const variants: [string, (t: Map<string, { shape: number[]; data: Float32Array }>) => void, RegExp][] = [
      [
        'missing',
        (t) => t.delete('model.layers.1.mlp.up_proj.weight'),
        /missing 1 parameter\(s\) for this config: model.layers.1.mlp.up_proj.weight/,
      ],
      [
        'extra',
        (t) => t.set('vision_tower.proj', { shape: [1], data: new Float32Array(1) }),
        /does not use: vision_tower.proj/,
      ],
      [
        'shape',
        (t) => t.set('model.norm.weight', { shape: [31], data: new Float32Array(31) }),
        /model.norm.weight has shape \[31\], expected \[32\]/,
      ],
    ];
    for (const [, edit, re] of variants) {
      const t = new Map(good);
      edit(t);
      await writeSafetensors(path.join(d, 'model.safetensors'), t);
      await expect(loadCheckpoint(d)).rejects.toThrow(re);
    }
    await fs.writeFile(path.join(d, 'config.json'), '{"model_type": "mamba"}');
    await expect(loadCheckpoint(d)).rejects.toThrow(/config.json: unsupported model_type "mamba"/);
    m.dispose();
  });

  it('restores AdamW state by name: save, reload, continue = uninterrupted training', async () => {
    const { input, target } = batch();
    const loss = (m: Decoder) => () => crossEntropy(m.forward(input).logits, target);
    // Uninterrupted: 4 steps.
    const a = tinyDecoder(tinyConfig(), 3);
    const ta = trainer(a);
    for (let i = 0; i < 4; i++) ta.step.run(loss(a));
    // Interrupted after 2 steps, saved, reloaded into fresh objects, 2 more steps.
    const b = tinyDecoder(tinyConfig(), 3);
    const tb = trainer(b);
    for (let i = 0; i < 2; i++) tb.step.run(loss(b));
    const d = path.join(dir, 'resume');
    await saveCheckpoint(d, b, { optimizer: tb.optimizer });
    const { model: c } = await loadCheckpoint(d);
    const tc = trainer(c);
    await loadOptimizer(d, tc.optimizer);
    expect(tc.optimizer.step).toBe(2);
    for (let i = 0; i < 2; i++) tc.step.run(loss(c));
    expect([...logitsOf(c)]).toEqual([...logitsOf(a)]);
    // The optimizer file is not part of the checkpoint's identity.
    const sha = await checkpointSha256(d);
    await fs.rm(path.join(d, 'optimizer.safetensors'));
    expect(await checkpointSha256(d)).toBe(sha);
    for (const m of [a, b, c]) m.dispose();
    for (const t of [ta, tb, tc]) t.optimizer.dispose();
  });
});
