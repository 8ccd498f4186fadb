import { describe, expect, it, beforeAll } from 'vitest';
import * as tf from '@tensorflow/tfjs';
import { bradleyTerryLoss, dpoLoss, negLogSigmoid, tokenNll, trajectoryScores, turnAdvantages } from '../../trainer/losses.ts';

const sig = (x: number) => 1 / (1 + Math.exp(-x));

beforeAll(async () => {
  await tf.setBackend('cpu');
});

describe('SWEET-RL losses against hand-computed values', () => {
  it('turn advantage is the mean per-token log-ratio over the turn tokens only', () => {
    const critic = tf.tensor2d([[-1.0, -2.0, -3.0], [-0.5, -0.5, 0]]);
    const ref = tf.tensor2d([[-1.5, -1.0, -3.5], [-1.0, -0.25, -9]]);
    const mask = tf.tensor2d([[1, 1, 1], [1, 1, 0]]);
    const adv = turnAdvantages(critic, ref, mask).arraySync();
    // turn 0: (0.5 - 1.0 + 0.5) / 3 = 0; turn 1: (0.5 - 0.25) / 2 = 0.125 (the padded -9 is ignored)
    expect(adv[0]).toBeCloseTo(0, 6);
    expect(adv[1]).toBeCloseTo(0.125, 6);
  });

  it('a turn with no tokens has advantage 0, not NaN', () => {
    const adv = turnAdvantages(tf.tensor2d([[0, 0]]), tf.tensor2d([[0, 0]]), tf.tensor2d([[0, 0]])).arraySync();
    expect(adv[0]).toBe(0);
  });

  it('trajectory score sums its turns', () => {
    const s = trajectoryScores(tf.tensor1d([0.1, 0.2, -0.3, 0.4]), tf.tensor1d([0, 0, 1, 1], 'int32'), 2).arraySync();
    expect(s[0]).toBeCloseTo(0.3, 6);
    expect(s[1]).toBeCloseTo(0.1, 6);
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
        { policyChosen: pc as unknown as tf.Tensor1D, policyRejected: tf.tensor1d([-5]), refChosen: tf.tensor1d([-5]), refRejected: tf.tensor1d([-5]), chosenLengths: tf.tensor1d([1]) },
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
    const v = tokenNll(tf.tensor2d([[-1, -3], [-2, -100]]), tf.tensor2d([[1, 1], [1, 0]])).arraySync();
    expect(v).toBeCloseTo(2, 6);
  });
});
