import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { disposeCache, selectCacheRows, type KVCache } from '../../../trainer/model/decoder.ts';
import { crossEntropy } from '../../../trainer/model/ops.ts';
import { addLora } from '../../../trainer/model/lora.ts';
import { ids2d, maxRelDiff, tinyConfig, tinyDecoder, useBackend } from './tiny.ts';

beforeAll(async () => useBackend('wasm'));

describe('decoder forward', () => {
  it('produces [B, T, V] logits and frees every intermediate', () => {
    const m = tinyDecoder();
    const ids = ids2d([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const before = tf.memory().numTensors;
    const { logits, cache } = m.forward(ids);
    expect(logits.shape).toEqual([2, 3, 37]);
    expect(cache).toBeUndefined();
    expect(tf.memory().numTensors).toBe(before + 1);
    logits.dispose();
    m.dispose();
  });

  it('KV-cache logits equal full recomputation (prefix, then chunks, then single tokens)', () => {
    const m = tinyDecoder();
    const seq = [
      [3, 1, 4, 1, 5, 9, 2, 6, 5, 3],
      [2, 7, 1, 8, 2, 8, 1, 8, 2, 8],
    ];
    const baseline = tf.memory().numTensors;
    const full = m.forward(ids2d(seq)).logits;
    const parts: tf.Tensor[] = [];
    let cache: KVCache | undefined;
    for (const [start, len] of [
      [0, 4],
      [4, 3],
      [7, 1],
      [8, 1],
      [9, 1],
    ] as const) {
      const chunk = ids2d(seq.map((r) => r.slice(start, start + len)));
      const r = m.forward(chunk, { cache, returnCache: true });
      disposeCache(cache);
      cache = r.cache;
      parts.push(r.logits);
      expect(cache!.length).toBe(start + len);
    }
    const incremental = tf.concat(parts, 1);
    expect(maxRelDiff(incremental, full)).toBeLessThan(1e-5);
    disposeCache(cache);
    tf.dispose([incremental, full, ...parts]);
    // Only the chunk ids (made in the loop, 5 of them) and the full ids remain: the cache path leaks nothing.
    expect(tf.memory().numTensors).toBe(baseline + 6);
    m.dispose();
  });

  it('left padding and the cache give each row the logits it gets alone', () => {
    const m = tinyDecoder();
    // Row 0 is short and left-padded with id 0; its positions must not count the padding.
    const padded = ids2d([
      [0, 0, 5, 6, 7],
      [1, 2, 3, 4, 5],
    ]);
    const mask = tf.tensor2d([
      [0, 0, 1, 1, 1],
      [1, 1, 1, 1, 1],
    ]);
    const r = m.forward(padded, { attentionMask: mask, returnCache: true, lastOnly: true });
    expect(r.logits.shape).toEqual([2, 1, 37]);
    const next = m.forward(ids2d([[9], [9]]), { cache: r.cache });
    const alone0 = m.forward(ids2d([[5, 6, 7, 9]])).logits;
    const alone1 = m.forward(ids2d([[1, 2, 3, 4, 5, 9]])).logits;
    expect(maxRelDiff(r.logits.slice([0, 0, 0], [1, 1, 37]), alone0.slice([0, 2, 0], [1, 1, 37]))).toBeLessThan(1e-5);
    expect(maxRelDiff(next.logits.slice([0, 0, 0], [1, 1, 37]), alone0.slice([0, 3, 0], [1, 1, 37]))).toBeLessThan(
      1e-5,
    );
    expect(maxRelDiff(next.logits.slice([1, 0, 0], [1, 1, 37]), alone1.slice([0, 5, 0], [1, 1, 37]))).toBeLessThan(
      1e-5,
    );
    // Dropping a finished row keeps the other one's continuation exact.
    const only1 = selectCacheRows(next.cache!, [1]);
    const after = m.forward(ids2d([[4]]), { cache: only1 });
    const alone1b = m.forward(ids2d([[1, 2, 3, 4, 5, 9, 4]])).logits;
    expect(maxRelDiff(after.logits, alone1b.slice([0, 6, 0], [1, 1, 37]))).toBeLessThan(1e-5);
    for (const c of [r.cache, next.cache, only1, after.cache]) disposeCache(c);
    m.dispose();
  });

  it('rejects ids of the wrong rank and masks of the wrong shape', () => {
    const m = tinyDecoder();
    expect(() => m.forward(tf.tensor1d([1, 2], 'int32') as unknown as tf.Tensor2D)).toThrow(/\[B, T\]/);
    expect(() => m.forward(ids2d([[1, 2]]), { attentionMask: tf.ones([1, 3]) as tf.Tensor2D })).toThrow(
      /attentionMask must be \[1, 2\]/,
    );
    m.dispose();
  });

  it('names variables per instance (two models coexist)', () => {
    const a = tinyDecoder(tinyConfig(), 1, 'same');
    const b = tinyDecoder(tinyConfig(), 1, 'same');
    expect(a.prefix).not.toBe(b.prefix);
    expect(a.param('model.layers.1.mlp.down_proj.weight').name).toBe(`${a.prefix}/model.layers.1.mlp.down_proj.weight`);
    a.dispose();
    b.dispose();
  });
});

describe('finite-difference gradient check (float32)', () => {
  // Central differences f(θ+ε)-f(θ-ε) / 2ε. In float32 the rounding error of the loss (~1e-7 relative) divided
  // by ε=1e-2 gives ~1e-5; the truncation error is O(ε²)·f''' ~ 1e-4 with these weights. Tolerance: 2e-3 absolute
  // + 2% relative, and the chosen coordinates have gradients well above that, so a wrong gradient fails.
  const eps = 1e-2;

  async function check(lora: boolean) {
    const m = tinyDecoder(tinyConfig({ tieWordEmbeddings: lora }), 11);
    if (lora) {
      addLora(m, { rank: 2, alpha: 4, targetModules: ['q_proj', 'v_proj', 'down_proj'], seed: 3 });
      // B = 0 would make A's gradient zero: give B values so both get a real check.
      for (const ad of m.adapters.values()) ad.b.assign(tf.randomNormal(ad.b.shape, 0, 0.3, 'float32', 5));
    }
    const ids = ids2d([
      [1, 5, 9, 2, 33, 7],
      [0, 3, 3, 8, 12, 36],
    ]);
    const input = ids.slice([0, 0], [2, 5]) as tf.Tensor2D;
    const target = ids.slice([0, 1], [2, 5]) as tf.Tensor2D;
    const mask = tf.tensor2d([
      [1, 1, 1, 1, 1],
      [0, 1, 1, 1, 1],
    ]);
    const lossFn = () => crossEntropy(m.forward(input, { attentionMask: mask }).logits, target, mask);
    const vars = m.namedTrainableVariables();
    const { grads } = tf.variableGrads(lossFn, [...vars.values()]);
    const loss = () => tf.tidy(() => lossFn().dataSync()[0]!);
    let checked = 0;
    for (const [name, v] of vars) {
      const g = grads[v.name]!.dataSync();
      // The two coordinates with the largest gradient of each tensor (a wrong gradient is wrong there too).
      const order = [...g.keys()].sort((i, j) => Math.abs(g[j]!) - Math.abs(g[i]!)).slice(0, 2);
      for (const i of order) {
        const orig = v.dataSync().slice();
        const bump = (delta: number) => {
          const w = orig.slice();
          w[i]! += delta;
          v.assign(tf.tensor(w, v.shape));
        };
        bump(eps);
        const up = loss();
        bump(-eps);
        const down = loss();
        v.assign(tf.tensor(orig, v.shape));
        const fd = (up - down) / (2 * eps);
        expect(Math.abs(fd - g[i]!), `${name}[${i}]: analytic ${g[i]}, numeric ${fd}`).toBeLessThan(
          2e-3 + 0.02 * Math.abs(g[i]!),
        );
        checked++;
      }
    }
    expect(checked).toBe(2 * vars.size);
    m.dispose();
  }

  it('agrees with the analytic gradient for every parameter tensor (full fine-tuning)', () => check(false));
  it('agrees for LoRA adapters (tied embeddings)', () => check(true));
});
