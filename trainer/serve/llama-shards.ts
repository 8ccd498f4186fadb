// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// The llama.cpp contexts of the llama.cpp engine (llama-engine.ts): one model's (the base model's or one adapter's)
// `shards` contexts, each decoding on its own thread with its own sequences, each sequence its own KV cache
// (llama.cpp's per-sequence streams: attention reads only the sequence's own cells). Here are what one batch
// decodes (planBatch, llama-schedule.ts, counted as a step), the step barrier that keeps a context's running
// sequences in one batch, and which free sequence a prompt takes (prefix reuse, pickSequence).
import { availableParallelism } from 'node:os';
import type { BatchItem, LlamaContext, LlamaContextSequence, LlamaModel, PrioritizedBatchItem } from 'node-llama-cpp';
import { pickSequence, planBatch } from './llama-schedule.ts';

/** One llama.cpp context: its own dispatch loop, so shards of one model decode at the same time on their threads. */
export interface Shard {
  context: LlamaContext;
  /** Sequences no request runs on; each keeps its last request's tokens in its KV cache for prefix reuse. */
  free: FreeSequence[];
  running: number;
  /** Sequences whose step a batch has decoded but whose result has not reached their loop yet. */
  awaitingResults: number;
  /** Loops waiting for the rest of their step's results (see stepBarrier). */
  barrier: (() => void)[];
}

/** The base model or one adapter: `shards` contexts with the same weights (and LoRA). */
export interface ContextEntry {
  /** GGUF path of the adapter, '' for the base model. */
  key: string;
  shards: Shard[];
  running: number;
  lastUsed: number;
  retired: boolean;
}

export interface FreeSequence {
  seq: LlamaContextSequence;
  /** Prompt length of the last request that ran on it (0: none, or its state is not to be trusted). */
  promptLength: number;
  releasedAt: number;
}

/** Decode steps as recordStep counts them (the engine's stats). */
export interface StepCounters {
  decodeSteps: number;
  stepSequences: number;
  tokensDecoded: number;
  /** batchSizes[n] = steps that decoded n sequences. */
  batchSizes: Record<number, number>;
}

/** How many contexts a model gets, each with how many sequences, and the settings of each context. */
export interface ShardSettings {
  count: number;
  sequences: number;
  contextSize: number;
  batchSize: number;
  flashAttention: boolean;
  threads: number;
}

/** Longest a sequence waits at the step barrier for the other results of its step. */
const BARRIER_SAFETY_MS = 20;

/** Contexts per model: the option, else one per core up to one per 8 running sequences. */
export function shardCount(shards: number | undefined, maxBatch: number): number {
  return Math.max(1, shards ?? Math.min(availableParallelism(), Math.floor(maxBatch / 8)));
}

/** Creates the `count` contexts of the base model (key '') or of the adapter at GGUF path `key`. */
export async function createShards(
  model: LlamaModel,
  key: string,
  s: ShardSettings,
  counters: StepCounters,
): Promise<ContextEntry> {
  const entry: ContextEntry = { key, shards: [], running: 0, lastUsed: Date.now(), retired: false };
  try {
    for (let i = 0; i < s.count; i++) {
      const shard = { free: [], running: 0, awaitingResults: 0, barrier: [] } as unknown as Shard;
      shard.context = await model.createContext({
        sequences: s.sequences,
        contextSize: s.contextSize,
        batchSize: s.batchSize,
        flashAttention: s.flashAttention,
        threads: s.threads,
        failedCreationRemedy: false,
        batching: { itemPrioritizationStrategy: (o) => recordStep(shard, counters, o) },
        ...(key ? { lora: { adapters: [{ filePath: key, scale: 1 }] } } : {}),
      });
      for (let j = 0; j < s.sequences; j++)
        shard.free.push({ seq: shard.context.getSequence(), promptLength: 0, releasedAt: 0 });
      entry.shards.push(shard);
    }
  } catch (err) {
    for (const shard of entry.shards) await shard.context.dispose();
    throw err;
  }
  return entry;
}

/**
 * Continuous batching needs every running sequence's next token in the same llama_decode. node-llama-cpp
 * samples each sequence's token on the thread pool after a decode, and its dispatch loop decodes whatever is
 * queued as soon as the last sample is in: left alone, the sequence that finished sampling first re-queues
 * early and most steps decode one sequence (measured: 46 of 47 steps for two requests). So a loop that has
 * its token waits here until every result of the step has been delivered, plus one event-loop turn (the
 * dispatch loop has ended by then); then all ask for their next step together and share one batch.
 */
export async function stepBarrier(entry: Shard): Promise<void> {
  if (entry.awaitingResults <= 0) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    return;
  }
  await new Promise<void>((resolve) => {
    entry.barrier.push(resolve);
    // A safety net against a result that never arrives: never hold a sequence for long.
    setTimeout(resolve, BARRIER_SAFETY_MS).unref();
  });
}

/** One result of the step has reached its loop; the last one releases the loops waiting at the barrier. */
export function stepResolved(entry: Shard): void {
  entry.awaitingResults = Math.max(0, entry.awaitingResults - 1);
  if (entry.awaitingResults > 0 || entry.barrier.length === 0) return;
  const waiting = entry.barrier.splice(0);
  setImmediate(() => waiting.forEach((f) => f()));
}

/**
 * node-llama-cpp asks this, once per llama_decode, which pending tokens go into the batch: planBatch's order
 * (every generating sequence's next token, then prompts in arrival order, whole where they fit). Here is also
 * where a step is counted, with the number of sequences it decodes.
 */
function recordStep(
  entry: Shard,
  counters: StepCounters,
  { items, size }: { items: readonly BatchItem[]; size: number },
): PrioritizedBatchItem[] {
  const amounts = planBatch(
    items.map((i) => i.tokens.length),
    size,
  );
  const out: PrioritizedBatchItem[] = [];
  let tokens = 0;
  items.forEach((item, i) => {
    if (amounts[i]! > 0) out.push({ item, processAmount: amounts[i]! });
    tokens += amounts[i]!;
  });
  // Items taken whole get their result after this step (a prompt cut into chunks only after its last one).
  entry.awaitingResults += out.filter((p) => p.processAmount === p.item.tokens.length).length;
  if (out.length > 0) {
    counters.decodeSteps++;
    counters.stepSequences += out.length;
    counters.batchSizes[out.length] = (counters.batchSizes[out.length] ?? 0) + 1;
    counters.tokensDecoded += tokens;
  }
  return out;
}

/**
 * The sequence for a prompt: the one (in any shard) whose last request this prompt continues, else the least
 * recently used free one of the shard running the fewest requests, so that new dialogues spread over shards.
 */
export function pickShardSequence(
  entry: ContextEntry,
  prompt: readonly number[],
): { shard: Shard; index: number; keep: number } | null {
  const view = (shard: Shard) =>
    shard.free.map((f) => ({ tokens: f.seq.contextTokens, promptLength: f.promptLength, releasedAt: f.releasedAt }));
  let fallback: { shard: Shard; index: number; keep: number } | null = null;
  for (const shard of entry.shards) {
    const free = view(shard);
    const choice = pickSequence(free, prompt);
    if (!choice) continue;
    // A continuation: its prefix covers the previous request's prompt on that sequence.
    const f = free[choice.index]!;
    if (f.promptLength > 0 && choice.keep >= Math.min(f.promptLength, prompt.length - 1)) return { shard, ...choice };
    if (!fallback || shard.running < fallback.shard.running) fallback = { shard, ...choice };
  }
  return fallback;
}
