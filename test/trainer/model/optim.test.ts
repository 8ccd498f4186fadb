import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { AdamW, clipByGlobalNorm, warmupCosine } from '../../../trainer/model/optim.ts';
import { TrainStep } from '../../../trainer/model/train-step.ts';
import { useBackend } from './tiny.ts';

beforeAll(async () => useBackend('wasm'));

describe('AdamW', () => {
  it('matches hand-computed updates (bias correction, decoupled weight decay on matrices only)', () => {
    const w = tf.variable(tf.tensor2d([[1, -2]]), true, 'opt-test/w');
    const b = tf.variable(tf.tensor1d([0.5]), true, 'opt-test/b');
    const opt = new AdamW(
      new Map<string, tf.Variable>([
        ['w', w],
        ['b', b],
      ]),
      { lr: 0.1, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.01 },
    );
    // Step 1, g_w = [0.2, -0.4], g_b = [1]: m = 0.1g, v = 0.05g², m̂ = g, v̂ = g², update = g/(|g|+ε) = sign(g).
    opt.apply(
      new Map<string, tf.Tensor>([
        ['w', tf.tensor2d([[0.2, -0.4]])],
        ['b', tf.tensor1d([1])],
      ]),
    );
    // w ← w(1 − 0.1·0.01) − 0.1·sign(g)
    expect([...w.dataSync()].map((x) => +x.toFixed(6))).toEqual([
      +(1 * 0.999 - 0.1).toFixed(6),
      +(-2 * 0.999 + 0.1).toFixed(6),
    ]);
    expect(b.dataSync()[0]).toBeCloseTo(0.5 - 0.1, 6); // no decay on a bias
    // Step 2, g_w = [0.1, 0.1]:
    opt.apply(new Map([['w', tf.tensor2d([[0.1, 0.1]])]]));
    const expectStep2 = (w1: number, g1: number, g2: number) => {
      const m = 0.9 * (0.1 * g1) + 0.1 * g2;
      const v = 0.95 * (0.05 * g1 * g1) + 0.05 * g2 * g2;
      const mh = m / (1 - 0.9 ** 2);
      const vh = v / (1 - 0.95 ** 2);
      return w1 * (1 - 0.1 * 0.01) - (0.1 * mh) / (Math.sqrt(vh) + 1e-8);
    };
    const got = w.dataSync();
    expect(got[0]).toBeCloseTo(expectStep2(1 * 0.999 - 0.1, 0.2, 0.1), 5);
    expect(got[1]).toBeCloseTo(expectStep2(-2 * 0.999 + 0.1, -0.4, 0.1), 5);
    expect(b.dataSync()[0]).toBeCloseTo(0.4, 6); // no gradient → untouched
    expect(opt.step).toBe(2);
    opt.dispose();
    w.dispose();
    b.dispose();
  });

  it('warm-up then cosine decay to 0.1 × lr', () => {
    const lr = warmupCosine({ peakLr: 1e-3, warmupSteps: 4, totalSteps: 104 });
    expect([0, 1, 2, 3].map(lr)).toEqual([2.5e-4, 5e-4, 7.5e-4, 1e-3]);
    expect(lr(4)).toBeCloseTo(1e-3, 12);
    expect(lr(54)).toBeCloseTo(1e-3 * (0.1 + 0.9 * 0.5), 12); // half-way: cos(π/2) = 0
    expect(lr(104)).toBeCloseTo(1e-4, 12);
    expect(lr(500)).toBeCloseTo(1e-4, 12);
    for (let s = 4; s < 104; s++) expect(lr(s + 1)).toBeLessThan(lr(s));
  });

  it('clips by the global norm as torch does', () => {
    const g = new Map([
      ['a', tf.tensor1d([3, 0])],
      ['b', tf.tensor1d([0, 4])],
    ]);
    const { grads, norm } = clipByGlobalNorm(g, 1);
    expect(norm).toBeCloseTo(5, 6);
    expect([...grads.get('a')!.dataSync()].map((x) => +x.toFixed(6))).toEqual([0.6, 0]);
    expect(clipByGlobalNorm(g, 10).grads.get('b')!.dataSync()[1]).toBe(4);
  });

  it('gradient accumulation over micro-batches equals one step on the whole batch', () => {
    const x = tf.tensor2d([
      [1, 2],
      [3, -1],
      [0.5, 0.5],
      [-2, 1],
    ]);
    const y = tf.tensor1d([1, -1, 0.5, 2]);
    const loss = (w: tf.Variable, rows: number[]) => () =>
      tf.tidy(() => {
        const idx = tf.tensor1d(rows, 'int32');
        return tf.mean(
          tf.square(tf.sub(tf.matMul(tf.gather(x, idx), w).reshape([-1]), tf.gather(y, idx))),
        ) as tf.Scalar;
      });
    const make = (name: string) => {
      const w = tf.variable(tf.tensor2d([[0.3], [-0.2]]), true, name);
      const optimizer = new AdamW(new Map([['w', w]]), { lr: 0.05 });
      return { w, optimizer };
    };
    const whole = make('acc-test/whole');
    new TrainStep({ optimizer: whole.optimizer, maxGradNorm: 0.5 }).run(loss(whole.w, [0, 1, 2, 3]));
    const acc = make('acc-test/acc');
    const step = new TrainStep({ optimizer: acc.optimizer, maxGradNorm: 0.5, accumulationSteps: 2 });
    expect(step.run(loss(acc.w, [0, 1])).applied).toBe(false);
    expect(acc.optimizer.step).toBe(0);
    const r = step.run(loss(acc.w, [2, 3]));
    expect(r.applied).toBe(true);
    expect(r.gradNorm).toBeGreaterThan(0.5); // the clip was active
    const a = acc.w.dataSync();
    const b = whole.w.dataSync();
    expect(a[0]).toBeCloseTo(b[0]!, 6);
    expect(a[1]).toBeCloseTo(b[1]!, 6);
  });
});
