// Per-token log-probabilities of given continuations: log π(c_j | prompt, c_<j) for every token c_j of each
// completion. SWEET-RL's critic advantage, DPO's log-ratios and the NLL term are all built from these, so the
// tensor version stays differentiable (call it inside tf.variableGrads / a gradient tape).
//
// Layout: each row is prompt ++ completion, right-padded to the longest row. With a causal decoder, padding on
// the right is never attended by real tokens, so no attention mask is needed and positions are the plain
// 0..T-1, exactly as for the row alone. Logits at position t predict token t+1.
//
// The tokens every row starts with (the system prompt; a state's whole prompt when its candidates are scored) run
// once, as one row, and their keys/values are repeated for every row: the attention each row would get alone,
// gradients included, at a fraction of the cost (prefixCache; the starter's build uses it too,
// trainer/recipes/starter-batches.ts).
import * as tf from '@tensorflow/tfjs';
import type { Decoder, KVCache } from './decoder.ts';
import { targetLogProbs } from './ops.ts';

export interface ScoredSequence {
  /** Context token ids (at least one). */
  prompt: readonly number[];
  /** Continuation token ids whose log-probabilities are wanted (may be empty). */
  completion: readonly number[];
}

export interface CompletionLogprobs {
  /** [B, L] log π of each completion token; 0 where the row has no token (L = longest completion). */
  tokenLogprobs: tf.Tensor2D;
  /** [B, L] 1 for a real completion token, 0 for padding. */
  mask: tf.Tensor2D;
  /** [B] sum over each completion. */
  sums: tf.Tensor1D;
  /** Completion lengths, for length normalisation (SWEET-RL divides a turn's sum by its length). */
  lengths: number[];
}

function check(model: Decoder, batch: readonly ScoredSequence[]): void {
  const V = model.config.vocabSize;
  const ctx = model.config.maxPositionEmbeddings;
  batch.forEach((s, i) => {
    if (s.prompt.length === 0)
      throw new Error(`logprobs: row ${i} has an empty prompt (the first token has no context)`);
    const n = s.prompt.length + s.completion.length;
    if (n > ctx) throw new Error(`logprobs: row ${i} has ${n} tokens; the model's context is ${ctx}`);
    for (const id of [...s.prompt, ...s.completion]) {
      if (!Number.isInteger(id) || id < 0 || id >= V)
        throw new Error(`logprobs: row ${i} has token id ${id} outside 0..${V - 1}`);
    }
  });
}

/**
 * The KV cache of `prefix` run once, as one row, repeated for `rows` rows: what each row would compute for those
 * tokens itself, gradients included. Repeated by a gather of row 0, whose gradient is one segment sum (tfjs's tile
 * gradient is a slice and an add per row, which cost more than the sharing saved: bench/HISTORY.md). Call inside
 * tf.tidy or a gradient function.
 */
export function prefixCache(model: Decoder, prefix: ArrayLike<number>, rows: number): KVCache {
  const pre = model.forward(tf.tensor2d(Array.from(prefix), [1, prefix.length], 'int32'), {
    returnCache: true,
    lastOnly: true,
  }).cache!;
  const row0 = tf.zeros([rows], 'int32') as tf.Tensor1D;
  return {
    layers: pre.layers.map((l) => ({ k: tf.gather(l.k, row0), v: tf.gather(l.v, row0) })),
    mask: tf.gather(pre.mask, row0),
    count: tf.gather(pre.count, row0),
    length: prefix.length,
    batch: rows,
  };
}

/** Below this many shared tokens the prefix is not worth a forward pass of its own. */
const MIN_SHARED_PREFIX = 16;

/** How many leading tokens every row has in common, at most `limit` (and never below 0). */
export function commonPrefixLength(rows: readonly ArrayLike<number>[], limit: number): number {
  const first = rows[0]!;
  let n = Math.max(0, Math.min(limit, first.length));
  for (const row of rows) {
    let i = 0;
    while (i < n && row[i] === first[i]) i++;
    n = i;
  }
  return n;
}

/** How many leading tokens all rows share and can run once: never a row's last prompt token; 0 when too few. */
export function sharedPrefix(batch: readonly ScoredSequence[]): number {
  if (batch.length < 2) return 0;
  const n = commonPrefixLength(
    batch.map((s) => s.prompt),
    Math.min(...batch.map((s) => s.prompt.length - 1)),
  );
  return n >= MIN_SHARED_PREFIX ? n : 0;
}

/**
 * Differentiable log-probabilities of a batch of completions, in one forward pass (and one for the shared prefix).
 * The caller owns (and disposes) the returned tensors; inside tf.tidy or a gradient function they are managed as
 * usual.
 */
export function completionLogprobs(
  model: Decoder,
  batch: readonly ScoredSequence[],
  options: { padTokenId?: number; temperature?: number; sharePrefix?: boolean } = {},
): CompletionLogprobs {
  if (batch.length === 0) throw new Error('logprobs: empty batch');
  check(model, batch);
  const B = batch.length;
  const T = Math.max(...batch.map((s) => s.prompt.length + s.completion.length));
  const L = Math.max(1, ...batch.map((s) => s.completion.length));
  const pad = options.padTokenId ?? 0;

  const ids = new Int32Array(B * T).fill(pad);
  // For completion token j of row b: the flat index (b·T + position of its predictor) and the token.
  const rowsIdx = new Int32Array(B * L);
  const targets = new Int32Array(B * L);
  const mask = new Float32Array(B * L);
  batch.forEach((s, b) => {
    ids.set(s.prompt, b * T);
    ids.set(s.completion, b * T + s.prompt.length);
    for (let j = 0; j < L; j++) {
      const real = j < s.completion.length;
      // Padding slots point at the row's first position: any valid row works, the mask zeroes it.
      rowsIdx[b * L + j] = b * T + (real ? s.prompt.length + j - 1 : 0);
      targets[b * L + j] = real ? s.completion[j]! : 0;
      mask[b * L + j] = real ? 1 : 0;
    }
  });

  // The shared prefix stops before every row's last prompt token, whose logits predict its first completion token.
  const P = options.sharePrefix === false ? 0 : sharedPrefix(batch); // false: bench/prefix.ts's yardstick
  const rest = T - P;
  const restIds = P === 0 ? ids : new Int32Array(B * rest);
  if (P > 0) {
    for (let b = 0; b < B; b++) restIds.set(ids.subarray(b * T + P, (b + 1) * T), b * rest);
    for (let i = 0; i < rowsIdx.length; i++) {
      const b = Math.floor(i / L);
      rowsIdx[i] = mask[i] ? rowsIdx[i]! - b * T - P + b * rest : b * rest;
    }
  }

  return tf.tidy(() => {
    const cache = P > 0 ? prefixCache(model, ids.subarray(0, P), B) : undefined;
    const idsT = tf.tensor2d(restIds, [B, rest], 'int32');
    const { logits } = model.forward(idsT, cache ? { cache } : {});
    const V = logits.shape[2];
    const temperature = options.temperature ?? 1;
    // log-softmax(logits / T): what vLLM reports for a prompt scored at sampling temperature T
    const scaled = temperature === 1 ? logits : tf.div(logits, temperature);
    const picked = tf.gather(tf.reshape(scaled, [B * rest, V]), tf.tensor1d(rowsIdx, 'int32')); // [B·L, V]
    const maskT = tf.tensor2d(mask, [B, L]);
    const lp = tf.mul(tf.reshape(targetLogProbs(picked, tf.tensor1d(targets, 'int32')), [B, L]), maskT) as tf.Tensor2D;
    return {
      tokenLogprobs: lp,
      mask: maskT,
      sums: tf.sum(lp, 1) as tf.Tensor1D,
      lengths: batch.map((s) => s.completion.length),
    };
  });
}

/**
 * The same as plain numbers (no gradient), in batches of `batchSize` rows to bound memory. Returns, per
 * row, the log-probability of each completion token.
 */
export async function completionLogprobValues(
  model: Decoder,
  batch: readonly ScoredSequence[],
  options: { padTokenId?: number; batchSize?: number; temperature?: number; sharePrefix?: boolean } = {},
): Promise<number[][]> {
  const size = options.batchSize ?? 8;
  if (!Number.isInteger(size) || size < 1)
    throw new Error(`logprobs: batchSize must be a positive integer, got ${size}`);
  const out: number[][] = [];
  for (let start = 0; start < batch.length; start += size) {
    const chunk = batch.slice(start, start + size);
    const r = completionLogprobs(model, chunk, options);
    const data = (await r.tokenLogprobs.data()) as Float32Array;
    const L = r.tokenLogprobs.shape[1];
    chunk.forEach((s, b) => out.push(Array.from(data.subarray(b * L, b * L + s.completion.length))));
    r.tokenLogprobs.dispose();
    r.mask.dispose();
    r.sums.dispose();
  }
  return out;
}
