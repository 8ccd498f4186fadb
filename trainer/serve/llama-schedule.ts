// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
//
// The llama.cpp engine's two scheduling decisions, as pure functions over plain data (no node-llama-cpp objects):
// which free sequence a new request takes (prefix reuse), and which queued tokens go into the next llama_decode.
//
// Prefix reuse. A dialogue's next request repeats the whole dialogue so far: its prompt begins with the previous
// request's prompt (and most of the reply, as far as the re-encoded text gives the same tokens). A finished
// request leaves its tokens in its sequence's KV cache; the next request that extends that prompt takes that
// sequence and evaluates only the tokens after the common prefix. Other requests take the least recently used
// free sequence, never one a dialogue could continue on while an idle one is left: two dialogues share the
// system prompt, and taking a sequence for that short shared prefix would throw away another's whole history.
//
// Batches. Measured here (2 shared vCPUs, the starter's shape; bench/HISTORY.md, "Serving"): llama.cpp reads one sequence's 300-token prompt
// at about twice the tokens per CPU-second of 32 prompts cut into equal slices and decoded together, and larger
// batches (2048) cost half the CPU of 512 for the same prompts. So each decode takes the next token of every
// sequence that is generating (continuous batching), then fills the rest with prompts in arrival order, whole
// where they fit, rather than a slice of every prompt.

/** A free sequence as the scheduler sees it. */
export interface CachedSequence {
  /** Tokens in its KV cache, in order (node-llama-cpp's `contextTokens`). */
  readonly tokens: readonly number[];
  /** Prompt length of the request that last ran on it (0 when none did, or its state was cleared). */
  readonly promptLength: number;
  /** When it was given back (ms); 0 for one never used. */
  readonly releasedAt: number;
}

export interface SequenceChoice {
  /** Index into the free list. */
  index: number;
  /** Tokens of the prompt already in that sequence's KV cache: evaluation starts after them. */
  keep: number;
}

/** Length of the common prefix of two token lists. */
export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * The free sequence a request with `prompt` should run on: the one whose previous request's prompt this prompt
 * extends (the longest such prefix), else the least recently used. `keep` is at most prompt.length - 1: the
 * last prompt token is always evaluated again, since its logits give the first new token.
 */
export function pickSequence(free: readonly CachedSequence[], prompt: readonly number[]): SequenceChoice | null {
  if (free.length === 0) return null;
  let best = -1;
  let bestPrefix = 0;
  for (let i = 0; i < free.length; i++) {
    const s = free[i]!;
    if (s.promptLength === 0 || s.promptLength > prompt.length) continue;
    const p = commonPrefix(s.tokens, prompt);
    if (p >= s.promptLength && p > bestPrefix) {
      best = i;
      bestPrefix = p;
    }
  }
  if (best < 0) {
    best = 0;
    for (let i = 1; i < free.length; i++) if (free[i]!.releasedAt < free[best]!.releasedAt) best = i;
    bestPrefix = commonPrefix(free[best]!.tokens, prompt);
  }
  return { index: best, keep: Math.min(bestPrefix, prompt.length - 1) };
}

/**
 * Tokens of each queued item for the next decode of `size` tokens, items in queue order: first one token of
 * every item (a generating sequence's next token, or the start of a prompt), then the rest to prompts in order,
 * each as much as fits. Returns process amounts aligned with `lengths` (0 = not in this decode).
 */
export function planBatch(lengths: readonly number[], size: number): number[] {
  const amounts = lengths.map(() => 0);
  let left = size;
  for (let i = 0; i < lengths.length && left > 0; i++) {
    if (lengths[i]! > 0) {
      amounts[i] = 1;
      left--;
    }
  }
  for (let i = 0; i < lengths.length && left > 0; i++) {
    const more = Math.min(lengths[i]! - amounts[i]!, left);
    if (more > 0) {
      amounts[i]! += more;
      left -= more;
    }
  }
  return amounts;
}
