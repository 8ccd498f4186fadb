// Numerics shared by the decoder's users (losses, log-probabilities).

import * as tf from '@tensorflow/tfjs';

/**
 * log softmax over the last axis with a fused gradient: dx = dy - softmax(x) · Σ dy.
 * tfjs differentiates tf.logSoftmax through logSumExp's generic graph (max, sub, exp, sum, log and their
 * gradients), which is slow on every backend and the largest cost of a small model's loss over a big vocabulary.
 */
export const logSoftmax: (x: tf.Tensor) => tf.Tensor = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  const y = tf.sub(x, tf.logSumExp(x, -1, true));
  save([y]);
  return {
    value: y,
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.sub(dy, tf.mul(tf.exp(saved[0]!), tf.sum(dy, -1, true))),
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]) as (x: tf.Tensor) => tf.Tensor;

/** log p(target) per position. logits [..., V], targets [...] int32 → [...]. Differentiable. */
export function targetLogProbs(logits: tf.Tensor, targets: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const V = logits.shape[logits.shape.length - 1]!;
    const logp = logSoftmax(logits);
    return tf.sum(tf.mul(logp, tf.oneHot(tf.cast(targets, 'int32'), V, 1, 0, 'float32')), -1);
  });
}

/**
 * Mean next-token cross-entropy over the positions where `mask` is 1.
 * logits [B,T,V] predict targets [B,T] (already shifted by the caller); mask [B,T] float (default all ones).
 */
export function crossEntropy(logits: tf.Tensor3D, targets: tf.Tensor2D, mask?: tf.Tensor2D): tf.Scalar {
  return tf.tidy(() => {
    const lp = targetLogProbs(logits, targets);
    if (!mask) return tf.neg(tf.mean(lp)) as tf.Scalar;
    const m = tf.cast(mask, 'float32');
    return tf.div(tf.neg(tf.sum(tf.mul(lp, m))), tf.maximum(tf.sum(m), 1)) as tf.Scalar;
  });
}
