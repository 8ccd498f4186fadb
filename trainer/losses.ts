// The SWEET-RL objectives and the baselines' DPO objective, as tensor functions.
//
// Notation (arXiv 2503.15478, Sec. 4): o_t is the dialogue up to turn t, a_t the agent's turn-t message, c the
// training-time information (the hidden reference) that only the critic reads.
//
//   trajectory advantage  A(tau, c) = (1 / T) * sum over the T agent tokens of tau (all its agent turns together)
//                                     of [ log pi_critic(token | prefix, c) - log pi_ref(token | prefix, c) ]
//   critic loss      L_BT  = -log sigmoid( beta * A(chosen, c) - beta * A(rejected, c) )
//   actor loss (DPO) L_DPO = -log sigmoid( beta' * [ (log pi(a+|o) - log pi_ref(a+|o))
//                                                  - (log pi(a-|o) - log pi_ref(a-|o)) ] )
//                            + lambda_NLL * ( -log pi(a+|o) / |a+| )
//
// The trajectory's score is by default ONE mean over all its agent tokens, as the official implementation computes
// it (openrlhf DPO with --mean_log_prob over the assistant-turn mask: sum of masked log-ratios / masked tokens);
// 'turn-sum' is the paper's equation instead, the sum over turns of each turn's mean (docs/training.md,
// "Differences from the official code"). The length normalisation is what keeps the actor from collapsing to
// short answers (paper ablation).
import * as tf from '@tensorflow/tfjs';
import type { TrainConfig } from './presets.ts';

/**
 * How a trajectory's token log-ratios make its score: 'token-mean', one mean over all its agent tokens (the official
 * code); 'turn-sum', the sum over its agent turns of each turn's mean (the paper's sum over t of A(o_t, a_t, c)).
 * Under 'token-mean' a message every trajectory ends with (an answer) weighs more in a short trajectory than in a
 * long one, so lowering its tokens everywhere ranks long trajectories up (bench/HISTORY.md, "The critic's lever").
 */
export type TrajectoryScore = TrainConfig['criticTrajectoryScore'];

/**
 * The critic's score of each trajectory: the mean per-token log-ratio over ALL of its agent-turn tokens, or with
 * 'turn-sum' the sum of its turns' mean log-ratios.
 * @param criticLogp [N, L] log-probabilities of each agent turn's tokens under the critic being trained
 * @param refLogp    [N, L] the same tokens under the frozen initial critic
 * @param mask       [N, L] 1 for the turn's tokens, 0 for padding
 * @param trajectory [N] int32: which trajectory (0..numTrajectories-1) each turn belongs to
 * @returns          [numTrajectories] one score per trajectory (0 for one without agent tokens, not NaN)
 */
export function trajectoryAdvantages(
  criticLogp: tf.Tensor2D,
  refLogp: tf.Tensor2D,
  mask: tf.Tensor2D,
  trajectory: tf.Tensor1D,
  numTrajectories: number,
  score: TrajectoryScore = 'token-mean',
): tf.Tensor1D {
  return tf.tidy(() => {
    const perTurnSum = tf.sum(tf.mul(tf.sub(criticLogp, refLogp), mask), 1);
    const perTurnTokens = tf.sum(mask, 1);
    if (score === 'turn-sum')
      return tf.unsortedSegmentSum(
        tf.div(perTurnSum, tf.maximum(perTurnTokens, 1)),
        trajectory,
        numTrajectories,
      ) as tf.Tensor1D;
    const sums = tf.unsortedSegmentSum(perTurnSum, trajectory, numTrajectories);
    const tokens = tf.unsortedSegmentSum(perTurnTokens, trajectory, numTrajectories);
    return tf.div(sums, tf.maximum(tokens, 1)) as tf.Tensor1D;
  });
}

/** The same score from plain per-token log-probabilities (one candidate message, no gradient). */
export function meanLogRatio(critic: readonly number[], reference: readonly number[]): number {
  if (critic.length !== reference.length)
    throw new RangeError(`meanLogRatio: ${critic.length} against ${reference.length} tokens`);
  if (critic.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < critic.length; i++) sum += critic[i]! - reference[i]!;
  return sum / critic.length;
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

/**
 * Rejection fine-tuning's objective on a micro-batch: each dialogue's mean NLL over its agent tokens, averaged over
 * the dialogues. A dialogue weighs the same whichever micro-batch it lands in, so the batch's objective does not
 * depend on how memory splits it (a token-weighted mean within each micro-batch did). It is the official SFT
 * trainer's objective at micro-batch 1 (GPTLMLoss per sequence, averaged over the accumulation steps).
 * @param owner which dialogue (0..dialogues-1) each row of tokenLogp belongs to
 */
export function dialogueNll(
  tokenLogp: tf.Tensor2D,
  mask: tf.Tensor2D,
  owner: readonly number[],
  dialogues: number,
): tf.Scalar {
  return tf.tidy(() => {
    const idx = tf.tensor1d(owner as number[], 'int32');
    const sums = tf.unsortedSegmentSum(tf.sum(tf.mul(tokenLogp, mask), 1), idx, dialogues);
    const counts = tf.unsortedSegmentSum(tf.sum(mask, 1), idx, dialogues);
    return tf.neg(tf.mean(tf.div(sums, tf.maximum(counts, 1)))) as tf.Scalar;
  });
}

/** -log sigmoid(x), computed as softplus(-x) so that large |x| neither overflows nor loses precision. */
export function negLogSigmoid(x: tf.Tensor): tf.Tensor {
  return tf.tidy(() => tf.softplus(tf.neg(x)));
}
