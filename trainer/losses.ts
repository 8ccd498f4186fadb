// The SWEET-RL objectives and the baselines' DPO objective, as tensor functions.
//
// Notation (arXiv 2503.15478, Sec. 4): o_t is the dialogue up to turn t, a_t the agent's turn-t message of
// L_t tokens, c the training-time information (the hidden reference) that only the critic reads.
//
//   turn advantage   A(o_t, a_t, c) = (1 / L_t) * sum_l [ log pi_critic(a_t^l | o_t, c, a_t^<l)
//                                                        - log pi_ref   (a_t^l | o_t, c, a_t^<l) ]
//   critic loss      L_BT  = -log sigmoid( beta * sum_t A(chosen_t) - beta * sum_t A(rejected_t) )
//   actor loss (DPO) L_DPO = -log sigmoid( beta' * [ (log pi(a+|o) - log pi_ref(a+|o))
//                                                  - (log pi(a-|o) - log pi_ref(a-|o)) ] )
//                            + lambda_NLL * ( -log pi(a+|o) / |a+| )
//
// The 1/L_t normalisation is what keeps the actor from collapsing to short answers (paper ablation).
import * as tf from '@tensorflow/tfjs';

/**
 * Mean per-token log-ratio of each turn: the critic's advantage.
 * @param criticLogp [N, L] log-probabilities of each turn's tokens under the critic being trained
 * @param refLogp    [N, L] the same tokens under the frozen initial critic
 * @param mask       [N, L] 1 for the turn's tokens, 0 for padding
 * @returns          [N] one advantage per turn
 */
export function turnAdvantages(criticLogp: tf.Tensor2D, refLogp: tf.Tensor2D, mask: tf.Tensor2D): tf.Tensor1D {
  return tf.tidy(() => {
    const ratio = tf.mul(tf.sub(criticLogp, refLogp), mask);
    const length = tf.maximum(tf.sum(mask, 1), 1); // a turn with no tokens contributes 0, not NaN
    return tf.div(tf.sum(ratio, 1), length) as tf.Tensor1D;
  });
}

/**
 * Sums turn advantages into one score per trajectory.
 * @param advantages  [N] per-turn advantages (turnAdvantages)
 * @param trajectory  [N] int32: which trajectory (0..numTrajectories-1) each turn belongs to
 */
export function trajectoryScores(advantages: tf.Tensor1D, trajectory: tf.Tensor1D, numTrajectories: number): tf.Tensor1D {
  return tf.tidy(() => tf.unsortedSegmentSum(advantages, trajectory, numTrajectories) as tf.Tensor1D);
}

/** Bradley-Terry loss over trajectory pairs, averaged: chosen[i] should outscore rejected[i]. */
export function bradleyTerryLoss(chosen: tf.Tensor1D, rejected: tf.Tensor1D, beta: number): tf.Scalar {
  return tf.tidy(() => negLogSigmoid(tf.mul(tf.sub(chosen, rejected), beta)).mean() as tf.Scalar);
}

export interface DpoInputs {
  /** [P] summed log pi(a+|o) under the policy being trained */
  policyChosen: tf.Tensor1D;
  /** [P] summed log pi(a-|o) under the policy being trained */
  policyRejected: tf.Tensor1D;
  /** [P] the same under the frozen reference policy (constants: no gradient flows into them) */
  refChosen: tf.Tensor1D;
  refRejected: tf.Tensor1D;
  /** [P] token counts of a+, for the length-normalised NLL term */
  chosenLengths: tf.Tensor1D;
}

export interface DpoResult {
  loss: tf.Scalar;
  /** mean implicit reward margin beta' * (chosen log-ratio - rejected log-ratio), for logging */
  margin: tf.Scalar;
  /** share of pairs whose implicit reward already prefers a+ */
  accuracy: tf.Scalar;
}

/** DPO with an optional NLL term on the chosen action, averaged over pairs. */
export function dpoLoss(x: DpoInputs, beta: number, nllCoefficient: number): DpoResult {
  return tf.tidy(() => {
    const chosenRatio = tf.sub(x.policyChosen, x.refChosen);
    const rejectedRatio = tf.sub(x.policyRejected, x.refRejected);
    const logits = tf.mul(tf.sub(chosenRatio, rejectedRatio), beta);
    let loss = negLogSigmoid(logits).mean();
    if (nllCoefficient > 0) {
      const nll = tf.neg(tf.div(x.policyChosen, tf.maximum(x.chosenLengths, 1))).mean();
      loss = tf.add(loss, tf.mul(nll, nllCoefficient));
    }
    return {
      loss: loss as tf.Scalar,
      margin: logits.mean() as tf.Scalar,
      accuracy: tf.cast(tf.greater(logits, 0), 'float32').mean() as tf.Scalar,
    };
  });
}

/** Mean negative log-likelihood per token: the supervised objective of rejection fine-tuning and the starter. */
export function tokenNll(tokenLogp: tf.Tensor2D, mask: tf.Tensor2D): tf.Scalar {
  return tf.tidy(() => tf.neg(tf.div(tf.sum(tf.mul(tokenLogp, mask)), tf.maximum(tf.sum(mask), 1))) as tf.Scalar);
}

/** -log sigmoid(x), computed as softplus(-x) so that large |x| neither overflows nor loses precision. */
export function negLogSigmoid(x: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.softplus(tf.neg(x)));
}
