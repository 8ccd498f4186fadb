// The starter build's examples and batches (trainer/recipes/starter.ts): dialogues encoded segment by segment
// with the assistant's tokens marked, batches of similar length, and the loss with the shared system prompt run
// once per update as a KV-cache prefix.
import * as tf from '@tensorflow/tfjs';
import type { ChatMessage } from '../../tasks/agent.ts';
import type { ChatFormatter } from '../model/chat.ts';
import type { Decoder } from '../model/decoder.ts';
import { commonPrefixLength, prefixCache } from '../model/logprobs.ts';
import { crossEntropy } from '../model/ops.ts';
import type { TextTokenizer } from '../model/tokenizer.ts';

export interface Example {
  ids: number[];
  /** 1 where ids[t] is an assistant token the model must predict (so the loss at t-1 counts). */
  train: number[];
}

export function encodeDialogue(
  chat: ChatFormatter,
  tok: TextTokenizer,
  dialogue: readonly ChatMessage[],
  ctx: number,
): Example | null {
  const ids: number[] = [];
  const train: number[] = [];
  for (const seg of chat.segments(dialogue)) {
    // Segment by segment, as generation sees it: the prompt is encoded alone, then the model continues.
    const part = tok.encode(seg.text);
    ids.push(...part);
    for (let i = 0; i < part.length; i++) train.push(seg.train ? 1 : 0);
  }
  if (ids.length > ctx) {
    ids.length = ctx;
    train.length = ctx;
  }
  if (!train.some((t, i) => t === 1 && i > 0)) return null;
  return { ids, train };
}

/** Groups examples of similar length into batches of about `tokensPerStep` padded tokens after the shared prefix. */
export function makeBatches(
  examples: Example[],
  tokensPerStep: number,
  prefixLength: number,
  rand: () => number,
): Example[][] {
  const order = examples
    .map((e, i) => ({ e, key: e.ids.length + rand() * 0.5, i }))
    .sort((a, b) => a.key - b.key || a.i - b.i);
  const batches: Example[][] = [];
  let cur: Example[] = [];
  for (const { e } of order) {
    const longest = Math.max(e.ids.length, ...cur.map((x) => x.ids.length));
    if (cur.length > 0 && (longest - prefixLength) * (cur.length + 1) > tokensPerStep) {
      batches.push(cur);
      cur = [];
    }
    cur.push(e);
  }
  if (cur.length) batches.push(cur);
  return batches;
}

export function shuffle<T>(xs: T[], rand: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/**
 * The token prefix every example starts with (the rendered system prompt), cut back so that no trained token
 * and not the first token of any example's rest falls inside it: the loss at the boundary is then never lost.
 */
export function sharedPrefixLength(examples: readonly Example[]): number {
  const limit = Math.min(
    ...examples.map((e) => {
      const firstTrained = e.train.indexOf(1);
      return Math.min(firstTrained >= 0 ? firstTrained - 1 : Infinity, e.ids.length - 2);
    }),
  );
  return commonPrefixLength(
    examples.map((e) => e.ids),
    limit,
  );
}

export function batchLoss(model: Decoder, batch: Example[], pad: number, prefix: readonly number[]): () => tf.Scalar {
  const B = batch.length;
  const P = prefix.length;
  const T = Math.max(...batch.map((e) => e.ids.length)) - 1 - P;
  const inputs = new Int32Array(B * T).fill(pad);
  const targets = new Int32Array(B * T);
  const mask = new Float32Array(B * T);
  batch.forEach((e, b) => {
    for (let t = 0; P + t + 1 < e.ids.length; t++) {
      inputs[b * T + t] = e.ids[P + t]!;
      targets[b * T + t] = e.ids[P + t + 1]!;
      mask[b * T + t] = e.train[P + t + 1]!;
    }
  });
  return () => {
    // The shared prefix runs once, as one row, and its keys/values are repeated for every row of the batch:
    // the same attention the full sequences would get (and gradients flow through it), at a fraction of the
    // cost. Right padding: causal attention never lets a real token see the padding after it.
    const cache = P > 0 ? prefixCache(model, prefix, B) : undefined;
    const { logits } = model.forward(tf.tensor2d(inputs, [B, T], 'int32'), cache ? { cache } : {});
    return crossEntropy(logits, tf.tensor2d(targets, [B, T], 'int32'), tf.tensor2d(mask, [B, T]));
  };
}
