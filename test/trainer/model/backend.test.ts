// The same model on the patched wasm backend and on tfjs's reference cpu backend, in one process.
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { initBackend } from '../../../trainer/model/backend.ts';
import { Decoder } from '../../../trainer/model/decoder.ts';
import { crossEntropy } from '../../../trainer/model/ops.ts';
import { ids2d, tinyConfig, useBackend } from './tiny.ts';

interface Run {
  logits: Float32Array;
  loss: number;
  grads: Map<string, Float32Array>;
}

function runOn(weights: Map<string, { shape: number[]; data: Float32Array }>): Run {
  const m = new Decoder(tinyConfig({ tieWordEmbeddings: true }), { weights, name: 'cmp' });
  const ids = ids2d([
    [0, 0, 4, 8, 15, 16, 23],
    [1, 2, 3, 5, 8, 13, 21],
  ]);
  const mask = tf.tensor2d([
    [0, 0, 1, 1, 1, 1, 1],
    [1, 1, 1, 1, 1, 1, 1],
  ]);
  const input = ids.slice([0, 0], [2, 6]) as tf.Tensor2D;
  const target = ids.slice([0, 1], [2, 6]) as tf.Tensor2D;
  const lmask = mask.slice([0, 1], [2, 6]) as tf.Tensor2D;
  const logits = m
    .forward(input, { attentionMask: mask.slice([0, 0], [2, 6]) as tf.Tensor2D })
    .logits.dataSync() as Float32Array;
  const vars = m.namedTrainableVariables();
  const { value, grads } = tf.variableGrads(
    () =>
      crossEntropy(
        m.forward(input, { attentionMask: mask.slice([0, 0], [2, 6]) as tf.Tensor2D }).logits,
        target,
        lmask,
      ),
    [...vars.values()],
  );
  const out = new Map<string, Float32Array>();
  for (const [name, v] of vars) out.set(name, grads[v.name]!.dataSync() as Float32Array);
  const loss = value.dataSync()[0]!;
  m.dispose();
  return { logits, loss, grads: out };
}

const rel = (a: Float32Array, b: Float32Array) => {
  let d = 0;
  let s = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    s = Math.max(s, Math.abs(b[i]!));
  }
  return d / s;
};

describe('wasm and cpu backends', () => {
  it('agree on logits within 1e-5 relative, and on the loss gradient (embedding gradient included)', async () => {
    await useBackend('cpu');
    const init = new Decoder(tinyConfig({ tieWordEmbeddings: true }), { seed: 21, initStd: 0.3, name: 'init' });
    const weights = init.weightTensors();
    init.dispose();
    const cpu = runOn(weights);
    await useBackend('wasm');
    const wasm = runOn(weights);
    expect(rel(wasm.logits, cpu.logits)).toBeLessThan(1e-5);
    expect(Math.abs(wasm.loss - cpu.loss) / cpu.loss).toBeLessThan(1e-5);
    for (const [name, g] of cpu.grads) expect(rel(wasm.grads.get(name)!, g), name).toBeLessThan(1e-4);
  });

  it('the cached transposed weights never serve stale values after a variable is assigned', async () => {
    await useBackend('wasm');
    const x = tf.tensor2d([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const w = tf.variable(
      tf.tensor2d([
        [1, 0, 0],
        [0, 1, 0],
      ]),
      true,
      'cache-test/w',
    );
    const xwT = () => tf.tidy(() => [...tf.matMul(x, w, false, true).dataSync()]);
    for (let i = 0; i < 3; i++) expect(xwT()).toEqual([1, 2, 4, 5]); // second call onwards: from the cache
    w.assign(
      tf.tensor2d([
        [0, 0, 1],
        [1, 1, 1],
      ]),
    );
    for (let i = 0; i < 3; i++) expect(xwT()).toEqual([3, 6, 6, 15]);
    w.dispose();
    x.dispose();
  });

  it('a forced backend that is unavailable fails loudly', async () => {
    await expect(initBackend('tensorflow')).rejects.toThrow(
      /TFJS_BACKEND=tensorflow, but native TensorFlow is unavailable/,
    );
  });

  it('patched wasm kernels match cpu: float one-hot, segment sum, transposed and batched matmul', async () => {
    const cases = () =>
      tf.tidy(() => {
        const a = tf.randomNormal([2, 3, 5, 6], 0, 1, 'float32', 1);
        const b = tf.randomNormal([2, 3, 7, 6], 0, 1, 'float32', 2);
        const c = tf.randomNormal([5, 4], 0, 1, 'float32', 3);
        const seg = tf.unsortedSegmentSum(
          tf.tensor2d([
            [1, 2],
            [3, 4],
            [5, 6],
            [7, 8],
          ]),
          tf.tensor1d([2, 0, 2, 9], 'int32'),
          4,
        );
        return [
          tf.oneHot(tf.tensor1d([2, 0, 1], 'int32'), 4, 1, 0, 'float32'),
          seg,
          tf.matMul(a, b, false, true),
          tf.matMul(a, tf.randomNormal([4, 6], 0, 1, 'float32', 4), false, true),
          tf.matMul(c, a.reshape([6, 5, 6]), true, false),
          tf.matMul(a.reshape([6, 5, 6]), a.reshape([6, 5, 6]), true, false),
        ].map((t) => t.dataSync() as Float32Array);
      });
    await useBackend('cpu');
    const ref = cases();
    await useBackend('wasm');
    const got = cases();
    expect([...got[0]!]).toEqual([0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0]);
    expect([...got[1]!]).toEqual([3, 4, 0, 0, 6, 8, 0, 0]);
    for (let i = 2; i < ref.length; i++) expect(rel(got[i]!, ref[i]!)).toBeLessThan(1e-6);
    expect(() => tf.matMul(tf.ones([2, 3, 4]), tf.ones([2, 5, 4]))).toThrow(/inner shapes/);
  });
});
