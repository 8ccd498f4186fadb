import { describe, expect, it, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import {
  bradleyTerryLoss,
  dpoLoss,
  meanLogRatio,
  negLogSigmoid,
  tokenNll,
  trajectoryAdvantages,
} from '../../trainer/losses.ts';

const sig = (x: number) => 1 / (1 + Math.exp(-x));

beforeAll(async () => {
  await tf.setBackend('cpu');
});

describe('SWEET-RL losses against hand-computed values', () => {
  it('a trajectory scores one mean log-ratio over all its agent tokens, or with turn-sum the sum of per-turn means', () => {
    // Three turns: turns 0 and 1 belong to trajectory 0, turn 2 to trajectory 1.
    const critic = tf.tensor2d([
      [-1.0, -2.0, -3.0],
      [-0.5, -0.5, 0],
      [-2.0, 0, 0],
    ]);
    const ref = tf.tensor2d([
      [-1.5, -1.0, -3.5],
      [-1.0, -0.25, -9],
      [-1.0, 0, 0],
    ]);
    const mask = tf.tensor2d([
      [1, 1, 1],
      [1, 1, 0],
      [1, 0, 0],
    ]);
    const s = trajectoryAdvantages(critic, ref, mask, tf.tensor1d([0, 0, 1], 'int32'), 2).arraySync();
    // trajectory 0: ratios 0.5, -1.0, 0.5 | 0.5, -0.25 (the padded -9 is ignored): sum 0.25 over 5 tokens = 0.05.
    // (The per-turn means would be 0 and 0.125, summing to 0.125: the official code does not do that.)
    expect(s[0]).toBeCloseTo(0.05, 6);
    // trajectory 1: one token, -2 - (-1) = -1.
    expect(s[1]).toBeCloseTo(-1, 6);
    // 'turn-sum' (the paper's equation): the per-turn means 0 and 0.125 add up to 0.125; trajectory 1 is one turn.
    const t = trajectoryAdvantages(critic, ref, mask, tf.tensor1d([0, 0, 1], 'int32'), 2, 'turn-sum').arraySync();
    expect(t[0]).toBeCloseTo(0.125, 6);
    expect(t[1]).toBeCloseTo(-1, 6);
  });

  it('a trajectory with no agent tokens scores 0, not NaN', () => {
    const s = trajectoryAdvantages(
      tf.tensor2d([[0, 0]]),
      tf.tensor2d([[0, 0]]),
      tf.tensor2d([[0, 0]]),
      tf.tensor1d([0], 'int32'),
      2,
    ).arraySync();
    expect(s).toEqual([0, 0]);
  });

  it('a candidate message scores the mean of its per-token log-ratios', () => {
    expect(meanLogRatio([-1, -2, -3], [-1.5, -1, -3.5])).toBeCloseTo(0, 12);
    expect(meanLogRatio([-0.5, -0.5], [-1, -0.25])).toBeCloseTo(0.125, 12);
    expect(meanLogRatio([], [])).toBe(0);
    expect(() => meanLogRatio([1], [])).toThrow(RangeError);
  });

  it('Bradley-Terry loss = mean of -log sigmoid(beta * (chosen - rejected))', () => {
    const loss = bradleyTerryLoss(tf.tensor1d([1.0, 0.2]), tf.tensor1d([0.0, 0.7]), 0.5).arraySync() as number;
    const expected = (-Math.log(sig(0.5 * 1.0)) - Math.log(sig(0.5 * -0.5))) / 2;
    expect(loss).toBeCloseTo(expected, 6);
  });

  it('DPO loss, margin and accuracy, with and without the NLL term', () => {
    const inputs = {
      policyChosen: tf.tensor1d([-10, -4]),
      policyRejected: tf.tensor1d([-12, -3]),
      refChosen: tf.tensor1d([-11, -4]),
      refRejected: tf.tensor1d([-11, -4]),
      chosenLengths: tf.tensor1d([5, 2]),
    };
    const beta = 0.1;
    // pair 0: (1) - (-1) = 2 -> logit 0.2; pair 1: 0 - 1 = -1 -> logit -0.1
    const dpo = -(Math.log(sig(0.2)) + Math.log(sig(-0.1))) / 2;
    const plain = dpoLoss(inputs, beta, 0);
    expect(plain.loss.arraySync()).toBeCloseTo(dpo, 6);
    expect(plain.margin.arraySync()).toBeCloseTo(0.05, 6);
    expect(plain.accuracy.arraySync()).toBeCloseTo(0.5, 6);
    const nll = (10 / 5 + 4 / 2) / 2;
    expect(dpoLoss(inputs, beta, 0.01).loss.arraySync()).toBeCloseTo(dpo + 0.01 * nll, 6);
  });

  it('gradients flow to the policy but the loss decreases when chosen gains probability', () => {
    const pc = tf.variable(tf.tensor1d([-5]));
    const f = () =>
      dpoLoss(
        {
          policyChosen: pc as unknown as tf.Tensor1D,
          policyRejected: tf.tensor1d([-5]),
          refChosen: tf.tensor1d([-5]),
          refRejected: tf.tensor1d([-5]),
          chosenLengths: tf.tensor1d([1]),
        },
        1,
        0,
      ).loss;
    const { grads } = tf.variableGrads(f);
    // d/dx -log sigmoid(x) at x = 0 is -1/2
    expect(grads[pc.name]!.arraySync()).toEqual([expect.closeTo(-0.5, 6)]);
  });

  it('negLogSigmoid is stable for large inputs', () => {
    const v = negLogSigmoid(tf.tensor1d([100, -100, 0])).arraySync() as number[];
    expect(v[0]).toBeCloseTo(0, 10);
    expect(v[1]).toBeCloseTo(100, 4);
    expect(v[2]).toBeCloseTo(Math.log(2), 6);
  });

  it('token NLL averages over unmasked tokens', () => {
    const v = tokenNll(
      tf.tensor2d([
        [-1, -3],
        [-2, -100],
      ]),
      tf.tensor2d([
        [1, 1],
        [1, 0],
      ]),
    ).arraySync();
    expect(v).toBeCloseTo(2, 6);
  });
});
