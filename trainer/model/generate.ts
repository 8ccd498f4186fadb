// Batched autoregressive generation with the decoder's KV cache.
//
// Prompts of different lengths are left-padded into one batch; the decoder's attention mask hides the padding
// and derives positions from it, so a row generates exactly what it would alone. Rows that finish (EOS, a stop
// string, their token budget) are dropped from the cache, so the batch shrinks as it goes. Sampling happens in
// JavaScript on the last position's logits: temperature, nucleus (top-p), greedy at temperature 0. Each row
// draws from its own seeded stream (seed, row index), so a seeded batch is reproducible, and row i of a batch
// samples the same tokens as the same prompt sent alone with the same seed at index i. With `seeds`, row i
// draws the stream of seeds[i] alone, whatever else shares its batch: a game played in batches then samples as
// it would alone, and two policies playing it draw the same random numbers.
import { seededRandom } from '../../tasks/random.ts';
import * as tf from '@tensorflow/tfjs';
import { disposeCache, selectCacheRows } from './decoder.ts';
import type { Decoder, KVCache } from './decoder.ts';
import type { TextTokenizer } from './tokenizer.ts';
import { StopMatcher } from './stop-strings.ts';

export interface GenerateOptions {
  /** Most new tokens per row (default 256). The context limit (max_position_embeddings) also ends a row. */
  maxTokens?: number;
  /** Softmax temperature; 0 means greedy (default 1). */
  temperature?: number;
  /** Nucleus sampling: keep the smallest set of tokens whose probability reaches topP (default 1 = all). */
  topP?: number;
  /** Generation ends when the decoded text contains one of these; the text is cut before it. */
  stop?: readonly string[];
  /** Seed of the sampling streams; unset: a random seed. */
  seed?: number;
  /** One seed a prompt (overrides `seed`): row i samples as prompts[i] would alone with seed seeds[i]. */
  seeds?: readonly number[];
  /** false: every row's prompt runs on its own even when rows repeat one (bench/prefix.ts's yardstick). */
  sharePrompts?: boolean;
  /** Token ids that end a row (default: the tokenizer's end-of-sequence ids). */
  eosTokenIds?: readonly number[];
  /** Polled between steps; when true, unfinished rows end with finishReason 'cancelled'. */
  shouldStop?: () => boolean;
}

export type FinishReason = 'eos' | 'stop' | 'length' | 'cancelled';

export interface GenerationResult {
  /** Generated token ids, including the EOS token or the token that completed a stop string. */
  tokenIds: number[];
  /** Decoded completion: without the EOS token, cut before a stop string. */
  text: string;
  finishReason: FinishReason;
  /** Which stop string ended the row (finishReason 'stop'). */
  stopString?: string;
  /** log p(token) under the model's own distribution (temperature 1, no top-p) for each of tokenIds. */
  tokenLogprobs: number[];
  promptTokens: number;
}

// ---------------------------------------------------------------------------------------------------------
// Seeded sampling

/** log softmax of one row, in float64. */
function logSoftmaxRow(logits: Float32Array, offset: number, V: number): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < V; i++) if (logits[offset + i]! > max) max = logits[offset + i]!;
  let sum = 0;
  for (let i = 0; i < V; i++) sum += Math.exp(logits[offset + i]! - max);
  const lse = max + Math.log(sum);
  const out = new Float64Array(V);
  for (let i = 0; i < V; i++) out[i] = logits[offset + i]! - lse;
  return out;
}

/** sampleToken's scratch: the tempered weights of the last call. */
let weights = new Float64Array(0);

/**
 * The ids of a distribution handed over in descending order of probability (llama.cpp's, ties in no particular
 * order) as sampleToken's `order`: ties put in order of id, the only sorting left, where sorting all ids for
 * every token took most of the llama.cpp engine's main thread with logprobs on. Undefined when the entries are
 * not in descending order or do not cover exactly the ids below `vocab` (ids at or above it are skipped).
 */
export function descendingOrder(entries: Iterable<readonly [number, number]>, vocab: number): number[] | undefined {
  const ids: number[] = [];
  const ps: number[] = [];
  for (const [id, p] of entries) {
    if (id >= vocab) continue;
    if (ps.length > 0 && p > ps[ps.length - 1]!) return undefined;
    ids.push(id);
    ps.push(p);
  }
  if (ids.length !== vocab) return undefined;
  const seen = new Uint8Array(vocab);
  for (const id of ids) {
    if (seen[id]) return undefined;
    seen[id] = 1;
  }
  for (let i = 0; i < ids.length; ) {
    let j = i + 1;
    while (j < ids.length && ps[j] === ps[i]) j++;
    if (j - i > 1) {
      const run = ids.slice(i, j).sort((a, b) => a - b);
      for (let k = i; k < j; k++) ids[k] = run[k - i]!;
    }
    i = j;
  }
  return ids;
}

/**
 * Picks a token from log-probabilities with temperature and top-p; greedy at temperature 0. `order`, when the
 * caller has it, is every id in descending order of logp with ties by id (llama.cpp hands its distribution over
 * sorted): the same draw without sorting the vocabulary again for every token.
 */
export function sampleToken(
  logp: Float64Array,
  temperature: number,
  topP: number,
  rand: () => number,
  order?: readonly number[],
): number {
  const V = logp.length;
  if (temperature <= 0) {
    let best = 0;
    for (let i = 1; i < V; i++) if (logp[i]! > logp[best]!) best = i;
    return best;
  }
  let max = -Infinity;
  for (let i = 0; i < V; i++) if (logp[i]! > max) max = logp[i]!;
  // One buffer for every call (the function is synchronous): a new one a token was the llama.cpp engine's
  // main source of garbage with logprobs on.
  if (weights.length < V) weights = new Float64Array(V);
  const p = weights;
  let total = 0;
  for (let i = 0; i < V; i++) total += p[i] = Math.exp((logp[i]! - max) / temperature);
  let nucleus: readonly number[] | undefined;
  let n = V;
  if (topP < 1) {
    // Sorted by probability, ties by id, so the nucleus does not depend on the sort's stability.
    if (order && order.length !== V)
      throw new Error(`sampleToken: order has ${order.length} ids for a vocabulary of ${V}`);
    nucleus = order ?? Array.from({ length: V }, (_, i) => i).sort((a, b) => p[b]! - p[a]! || a - b);
    let cum = 0;
    let keep = 0;
    while (keep < V && cum < topP * total) cum += p[nucleus[keep++]!]!;
    n = Math.max(1, keep);
    total = cum;
  }
  let r = rand() * total;
  const ids = nucleus ?? null;
  for (let j = 0; j < n; j++) {
    const id = ids ? ids[j]! : j;
    r -= p[id]!;
    if (r < 0) return id;
  }
  // Rounding left r a hair above zero: the last candidate with any mass.
  for (let j = n - 1; j >= 0; j--) {
    const id = ids ? ids[j]! : j;
    if (p[id]! > 0) return id;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------------------

function validate(options: GenerateOptions): Required<Pick<GenerateOptions, 'maxTokens' | 'temperature' | 'topP'>> {
  const maxTokens = options.maxTokens ?? 256;
  const temperature = options.temperature ?? 1;
  const topP = options.topP ?? 1;
  if (!Number.isInteger(maxTokens) || maxTokens < 1)
    throw new Error(`generate: maxTokens must be a positive integer, got ${maxTokens}`);
  if (!Number.isFinite(temperature) || temperature < 0)
    throw new Error(`generate: temperature must be >= 0, got ${temperature}`);
  if (!Number.isFinite(topP) || topP <= 0 || topP > 1) throw new Error(`generate: topP must be in (0, 1], got ${topP}`);
  if (options.stop?.some((s) => s.length === 0)) throw new Error('generate: empty stop string');
  return { maxTokens, temperature, topP };
}

interface Row {
  index: number;
  prompt: number[];
  ids: number[];
  logprobs: number[];
  rand: () => number;
  limit: number;
  done?: { reason: FinishReason; text: string; stopString?: string };
  /** Searches the decoded text for the stop strings (absent without any). */
  stops?: StopMatcher;
}

/**
 * Generates a completion for each prompt (token ids, e.g. a chat template rendered and encoded). Prompts are
 * run as one batch; split very large batches yourself to bound memory.
 */
export async function generate(
  model: Decoder,
  tokenizer: TextTokenizer,
  prompts: readonly (readonly number[])[],
  options: GenerateOptions = {},
): Promise<GenerationResult[]> {
  const { maxTokens, temperature, topP } = validate(options);
  if (prompts.length === 0) return [];
  const V = model.config.vocabSize;
  const ctx = model.config.maxPositionEmbeddings;
  for (const [i, p] of prompts.entries()) {
    if (p.length === 0) throw new Error(`generate: prompt ${i} is empty`);
    if (p.length >= ctx) throw new Error(`generate: prompt ${i} has ${p.length} tokens; the model's context is ${ctx}`);
    for (const id of p)
      if (!Number.isInteger(id) || id < 0 || id >= V)
        throw new Error(`generate: prompt ${i} has token id ${id} outside 0..${V - 1}`);
  }
  const sampleable = Math.min(V, tokenizer.vocabSize);
  const eos = new Set(options.eosTokenIds ?? tokenizer.eosTokenIds);
  const stops = options.stop ?? [];
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 32);
  const seeds = options.seeds;
  if (seeds && seeds.length !== prompts.length)
    throw new Error(`generate: ${seeds.length} seeds for ${prompts.length} prompts`);
  const rows: Row[] = prompts.map((prompt, index) => ({
    index,
    prompt: [...prompt],
    ids: [],
    logprobs: [],
    rand: seeds ? seededRandom(seeds[index]!, 0) : seededRandom(seed, index),
    limit: Math.min(maxTokens, ctx - prompt.length),
    ...(stops.length > 0 ? { stops: new StopMatcher(stops) } : {}),
  }));

  let { logits, cache } = prefill(model, rows, tokenizer.padTokenId, options.sharePrompts !== false);

  let active = rows; // rows still generating, in cache order
  try {
    for (;;) {
      const data = (await logits.data()) as Float32Array;
      logits.dispose();
      const next: number[] = [];
      for (let b = 0; b < active.length; b++) {
        const row = active[b]!;
        const logp = logSoftmaxRow(data, b * V, V);
        // Models often pad the embedding past the tokenizer (Qwen2: 151,936 rows for 151,665 tokens): never
        // sample an id that cannot be decoded. Log-probabilities stay those of the full distribution.
        const tok = sampleToken(V > sampleable ? logp.subarray(0, sampleable) : logp, temperature, topP, row.rand);
        row.ids.push(tok);
        row.logprobs.push(logp[tok]!);
        next.push(tok);
        finishIfDone(row, tok, eos, tokenizer);
      }
      const cancelled = options.shouldStop?.() === true;
      const keep: number[] = [];
      active.forEach((row, b) => {
        if (!row.done && cancelled) row.done = { reason: 'cancelled', text: tokenizer.decode(row.ids) };
        if (!row.done) keep.push(b);
      });
      if (keep.length === 0) break;
      if (keep.length < active.length) {
        const smaller = selectCacheRows(cache!, keep);
        disposeCache(cache);
        cache = smaller;
        active = keep.map((b) => active[b]!);
      }
      const step = tf.tensor2d(
        keep.map((b) => next[b]!),
        [keep.length, 1],
        'int32',
      );
      const out = model.forward(step, { cache: cache!, lastOnly: true });
      step.dispose();
      disposeCache(cache);
      ({ logits, cache } = out);
      // Lets a worker's message handler run (e.g. a cancel request) between tokens.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } finally {
    if (!logits.isDisposed) logits.dispose();
    disposeCache(cache as KVCache | undefined);
  }

  return rows.map((r) => {
    const done = r.done!;
    const result: GenerationResult = {
      tokenIds: r.ids,
      text: done.text,
      finishReason: done.reason,
      tokenLogprobs: r.logprobs,
      promptTokens: r.prompt.length,
    };
    if (done.stopString !== undefined) result.stopString = done.stopString;
    return result;
  });
}

/**
 * The prompts' left-padded batch run once, each distinct prompt once (a state's candidates share one prompt):
 * its rows of the cache and logits are then repeated for the rows that asked for it, which is what each would
 * have computed itself.
 */
function prefill(
  model: Decoder,
  rows: readonly Row[],
  pad: number,
  share: boolean,
): { logits: tf.Tensor; cache: KVCache | undefined } {
  const distinct = new Map<string, number>();
  const unique: number[][] = [];
  // source[i]: which of the distinct prompts row i asked for.
  const source = rows.map((r, i) => {
    const key = share ? r.prompt.join(',') : String(i);
    let u = distinct.get(key);
    if (u === undefined) {
      u = unique.push(r.prompt) - 1;
      distinct.set(key, u);
    }
    return u;
  });
  const T = Math.max(...unique.map((p) => p.length));
  const idsFlat = new Int32Array(unique.length * T).fill(pad);
  const maskFlat = new Float32Array(unique.length * T);
  unique.forEach((p, b) => {
    const off = b * T + (T - p.length);
    idsFlat.set(p, off);
    maskFlat.fill(1, off, (b + 1) * T);
  });
  const idsT = tf.tensor2d(idsFlat, [unique.length, T], 'int32');
  const maskT = tf.tensor2d(maskFlat, [unique.length, T], 'float32');
  const out = model.forward(idsT, { attentionMask: maskT, returnCache: true, lastOnly: true });
  idsT.dispose();
  maskT.dispose();
  if (unique.length === rows.length) return { logits: out.logits, cache: out.cache! };
  const cache = selectCacheRows(out.cache!, source);
  const logits = tf.tidy(() => tf.gather(out.logits, tf.tensor1d(source, 'int32')));
  disposeCache(out.cache);
  out.logits.dispose();
  return { logits, cache };
}

function finishIfDone(row: Row, tok: number, eos: Set<number>, tokenizer: TextTokenizer): void {
  if (eos.has(tok)) {
    row.done = { reason: 'eos', text: tokenizer.decode(row.ids.slice(0, -1)) };
    return;
  }
  if (row.stops) {
    const text = tokenizer.decode(row.ids);
    const match = row.stops.find(text);
    if (match) {
      row.done = { reason: 'stop', text: text.slice(0, match.at), stopString: match.stop };
      return;
    }
    if (row.ids.length >= row.limit) row.done = { reason: 'length', text };
    return;
  }
  if (row.ids.length >= row.limit) row.done = { reason: 'length', text: tokenizer.decode(row.ids) };
}
