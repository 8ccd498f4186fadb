// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// The CPU serving engine: llama.cpp through node-llama-cpp, with continuous batching.
//
// Batching. A model's sequences (`maxBatch` + `cachedSequences`) are divided among `shards` llama.cpp contexts,
// each decoding on its own thread (llama-shards.ts: one thread a context, since on 2-vCPU machines two threads a
// context were 3-20x slower and erratic); at most `maxBatch` decode at once. A request takes a free sequence as
// soon as one is free (synchronously inside generate() when one is) and runs its own evaluate loop on it
// (llama-decode.ts); node-llama-cpp gathers the pending evaluations of a context's sequences into one
// llama_decode, whose contents planBatch (llama-schedule.ts) picks, and a step barrier makes every running
// sequence ask for its next step together. A request that finishes, or whose signal aborts, leaves after the
// step in flight and gives its sequence back with its tokens still cached; the first waiting request takes it.
// A request that cannot start waits; generate() throws EngineOverloadedError when `maxQueue` already wait.
//
// Prefix reuse. Each turn of a dialogue sends the whole dialogue again. A request takes the free sequence whose
// last request's prompt its own prompt extends, and evaluates only the tokens after the common prefix; other
// requests take the least recently used free sequence (pickSequence, llama-schedule.ts).
//
// Adapters. llama.cpp applies LoRA per context, not per sequence, so each adapter in use gets contexts of its
// own (created on first use, its `shards` like the base model's, keyed by the adapter's GGUF path; "a context"
// below means such a set), the base model another; `maxBatch` caps the sequences running over all contexts
// together and at most `maxContexts` contexts exist at once (an idle one is closed to make room; requests for an
// adapter without room wait in the queue). A PEFT directory is converted once (cached by sha256, a new path per
// version, since llama.cpp caches adapters by path); replacing an adapter name sends new requests to the new
// version while requests accepted before finish on the old one, whose context is closed after them. A .gguf
// adapter file given directly must likewise get a new path per version.
//
// The model served, our checkpoint or a foreign GGUF, and how its prompts are encoded: llama-model.ts.
import type { LlamaContextSequence, LlamaModel } from 'node-llama-cpp';
import type { ModelConfig } from '../model/architecture.ts';
import type { ChatMessage } from '../../tasks/agent.ts';
import { EngineOverloadedError, EngineRequestError } from './engine-contract.ts';
import type { ForeignGgufInfo, PromptCodec } from './gguf-foreign.ts';
import type { EngineRequest, EngineResult, EngineStats, EngineStream, ServingEngine } from './engine-contract.ts';
import { decodeJob, decodeModel, type DecodeModel, type Job } from './llama-decode.ts';
import {
  defaultGgufCacheDir,
  loadAdapterGguf,
  loadCheckpointModel,
  loadForeignModel,
  type LlamaEngineOptions,
  type LoadedLlamaModel,
} from './llama-model.ts';
import {
  createShards,
  pickShardSequence,
  shardCount,
  type ContextEntry,
  type Shard,
  type StepCounters,
} from './llama-shards.ts';
import { TokenChannel } from './token-channel.ts';

/** What stats() reports beyond EngineStats. */
export interface LlamaEngineStats extends EngineStats {
  decodeSteps: number;
  stepSequences: number;
  /** Steps by how many sequences they decoded: batchSizes[n] = steps that decoded n sequences. */
  batchSizes: Record<number, number>;
  /** Prompt and generated tokens that went through forward passes. */
  tokensDecoded: number;
  /** Prompt tokens of started requests found in a sequence's KV cache (not evaluated again), and all of them. */
  promptTokensReused: number;
  promptTokens: number;
  contexts: number;
  /** llama.cpp contexts over all of them (each model's shards). */
  shards: number;
}

function checkLimits(options: Pick<LlamaEngineOptions, 'maxBatch' | 'maxQueue'>): void {
  if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1)
    throw new Error(`maxBatch must be a positive integer, got ${options.maxBatch}`);
  if (!Number.isInteger(options.maxQueue) || options.maxQueue < 0)
    throw new Error(`maxQueue must be a non-negative integer, got ${options.maxQueue}`);
}

export class LlamaCppEngine implements ServingEngine {
  readonly modelName: string;
  private readonly maxBatch: number;
  private readonly maxQueue: number;
  private readonly maxContexts: number;
  private readonly contexts = new Map<string, ContextEntry>();
  private readonly creating = new Map<string, Promise<void>>();
  private readonly adapterPaths = new Map<string, string>();
  private readonly queue: Job[] = [];
  private running = 0;
  private closed = false;
  private idleWaiters: (() => void)[] = [];
  private readonly sampling: DecodeModel;
  private counters: StepCounters & { promptTokens: number; promptTokensReused: number } = {
    decodeSteps: 0,
    stepSequences: 0,
    tokensDecoded: 0,
    promptTokens: 0,
    promptTokensReused: 0,
    batchSizes: {},
  };

  private readonly config: ModelConfig | null;
  private readonly codec: PromptCodec;
  private readonly model: LlamaModel;
  readonly ggufPath: string;
  readonly contextSize: number;

  private constructor(
    private readonly options: LlamaEngineOptions,
    loaded: LoadedLlamaModel,
  ) {
    this.modelName = options.modelName;
    this.maxBatch = options.maxBatch;
    this.maxQueue = options.maxQueue;
    this.maxContexts = options.maxContexts ?? 2;
    ({
      config: this.config,
      codec: this.codec,
      model: this.model,
      ggufPath: this.ggufPath,
      contextSize: this.contextSize,
    } = loaded);
    this.sampling = decodeModel(loaded.model, loaded.codec, loaded.embeddingRows);
  }

  /** Prompt tokens of a dialogue as this engine renders and tokenizes it (the agent's context budget). */
  countPromptTokens(messages: readonly ChatMessage[]): number {
    return this.codec.encode(messages).length;
  }

  /**
   * Serves a foreign GGUF model (gguf-foreign.ts) with the file's own vocabulary and chat template
   * (llama-model.ts). Returns the engine and the file's summary (provenance).
   */
  static async startGguf(
    options: Omit<LlamaEngineOptions, 'checkpointDir'> & { ggufPath: string; expectSha256?: string },
  ): Promise<{ engine: LlamaCppEngine; info: ForeignGgufInfo }> {
    checkLimits(options);
    const loaded = await loadForeignModel(options);
    const engine = new LlamaCppEngine({ ...options, checkpointDir: '' }, loaded);
    await engine.openBaseContext();
    return { engine, info: loaded.info };
  }

  /** Serves our own checkpoint, converted to GGUF (cached), validated, probed and loaded (llama-model.ts). */
  static async start(options: LlamaEngineOptions): Promise<LlamaCppEngine> {
    checkLimits(options);
    const cacheDir = options.cacheDir ?? defaultGgufCacheDir();
    const engine = new LlamaCppEngine({ ...options, cacheDir }, await loadCheckpointModel({ ...options, cacheDir }));
    await engine.openBaseContext();
    return engine;
  }

  /** The base model's context, up front: the first request should not wait for it. The model is freed if it fails. */
  private async openBaseContext(): Promise<void> {
    try {
      this.contexts.set('', await this.createContext(''));
    } catch (err) {
      await this.model.dispose();
      throw err;
    }
  }

  stats(): LlamaEngineStats {
    return {
      running: this.running,
      queued: this.queue.length,
      maxBatch: this.maxBatch,
      maxQueue: this.maxQueue,
      decodeSteps: this.counters.decodeSteps,
      stepSequences: this.counters.stepSequences,
      batchSizes: { ...this.counters.batchSizes },
      tokensDecoded: this.counters.tokensDecoded,
      promptTokens: this.counters.promptTokens,
      promptTokensReused: this.counters.promptTokensReused,
      contexts: this.contexts.size,
      shards: [...this.contexts.values()].reduce((n, e) => n + e.shards.length, 0),
    };
  }

  adapters(): string[] {
    return [...this.adapterPaths.keys()];
  }

  /**
   * Makes an adapter available under `name`: a PEFT directory (converted to GGUF, cached by sha256) or a GGUF
   * file. Loading the same source again is a no-op; a new source replaces the old for new requests only.
   */
  async loadAdapter(name: string, source: string): Promise<void> {
    if (!this.config)
      throw new Error(
        `${this.modelName} is a foreign GGUF model: LoRA adapters are attached to our own checkpoints only`,
      );
    const ggufPath = await loadAdapterGguf(source, this.config, this.ggufPath, this.options);
    const old = this.adapterPaths.get(name);
    this.adapterPaths.set(name, ggufPath);
    if (old && old !== ggufPath) this.retireIfUnused(old);
    this.options.log?.info({ adapter: name, gguf: ggufPath }, 'adapter loaded');
  }

  async unloadAdapter(name: string): Promise<void> {
    const old = this.adapterPaths.get(name);
    if (old === undefined) return;
    this.adapterPaths.delete(name);
    this.retireIfUnused(old);
  }

  /** Closes the context of an adapter path no name points to any more, once its requests have finished. */
  private retireIfUnused(key: string): void {
    if ([...this.adapterPaths.values()].includes(key)) return;
    if (this.queue.some((j) => j.adapterKey === key)) return;
    const entry = this.contexts.get(key);
    if (!entry) return;
    // Out of the map at once (no new request gets it); closed when its last request has finished.
    this.contexts.delete(key);
    entry.retired = true;
    if (entry.running === 0) void this.disposeContext(entry);
  }

  generate(req: EngineRequest): EngineStream {
    if (this.closed) throw new Error(`the llama.cpp engine for ${this.modelName} is closed`);
    let adapterKey = '';
    if (req.adapter !== null) {
      const p = this.adapterPaths.get(req.adapter);
      if (p === undefined) throw new EngineRequestError(`no adapter named "${req.adapter}" is loaded`);
      adapterKey = p;
    }
    if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1)
      throw new EngineRequestError(`max_tokens must be a positive integer, got ${req.maxTokens}`);
    if (!Number.isFinite(req.temperature) || req.temperature < 0)
      throw new EngineRequestError(`temperature must be >= 0, got ${req.temperature}`);
    if (!Number.isFinite(req.topP) || req.topP <= 0 || req.topP > 1)
      throw new EngineRequestError(`top_p must be in (0, 1], got ${req.topP}`);
    if (req.stop?.some((s) => s.length === 0)) throw new EngineRequestError('stop strings must not be empty');
    let promptIds: number[];
    try {
      promptIds = this.codec.encode(req.messages);
    } catch (err) {
      throw new EngineRequestError(`the messages cannot be formatted: ${(err as Error).message}`);
    }
    if (promptIds.length === 0) throw new EngineRequestError('the prompt is empty');
    this.options.onPrompt?.(promptIds);
    if (promptIds.length >= this.contextSize) {
      throw new EngineRequestError(
        `the prompt has ${promptIds.length} tokens; each sequence holds ${this.contextSize}`,
      );
    }
    const channel = new TokenChannel();
    const job: Job = {
      req,
      channel,
      promptIds,
      limit: Math.min(req.maxTokens, this.contextSize - promptIds.length),
      adapterKey,
      aborted: false,
      onAbort: () => {
        job.aborted = true;
        const i = this.queue.indexOf(job);
        if (i >= 0) {
          this.queue.splice(i, 1);
          channel.end({ promptTokens: promptIds.length, completionTokens: 0, finishReason: 'abort' });
          this.notifyIdle();
        }
      },
    };
    if (req.signal.aborted) {
      channel.end({ promptTokens: promptIds.length, completionTokens: 0, finishReason: 'abort' });
      return channel;
    }
    this.queue.push(job);
    this.pump();
    // Exact: it waits only if it could not start, and it may wait only if fewer than maxQueue already do.
    if (this.queue.length > this.maxQueue && this.queue.includes(job)) {
      this.queue.splice(this.queue.indexOf(job), 1);
      throw new EngineOverloadedError(
        `the queue is full (${this.queue.length} waiting, ${this.maxQueue} allowed, ${this.running} decoding)`,
      );
    }
    req.signal.addEventListener('abort', job.onAbort, { once: true });
    return channel;
  }

  /**
   * Starts waiting requests while sequences are free, in arrival order (a request whose adapter has no context
   * yet does not hold up the others). Synchronous where the context exists, so a request that can start has
   * started when generate() returns; a missing context is created in the background and pump() runs again.
   */
  private pump(): void {
    const blocked = new Set<string>();
    for (const job of [...this.queue]) {
      if (this.running >= this.maxBatch) break;
      if (blocked.has(job.adapterKey)) continue;
      const entry = this.contexts.get(job.adapterKey);
      const picked = entry ? pickShardSequence(entry, job.promptIds) : null;
      if (!entry || !picked) {
        blocked.add(job.adapterKey);
        if (!entry) this.ensureContext(job.adapterKey);
        continue;
      }
      const { shard, index, keep } = picked;
      const [free] = shard.free.splice(index, 1);
      this.queue.splice(this.queue.indexOf(job), 1);
      this.running++;
      entry.running++;
      shard.running++;
      this.counters.promptTokens += job.promptIds.length;
      this.counters.promptTokensReused += keep;
      void this.run(job, entry, shard, free!.seq, keep);
    }
  }

  /** Creates the context for `key` if there is room (closing the least recently used idle one if needed). */
  private ensureContext(key: string): void {
    if (this.creating.has(key) || this.closed) return;
    if (this.contexts.size + this.creating.size >= this.maxContexts) {
      const idle = [...this.contexts.values()]
        .filter((e) => e.running === 0)
        .sort((a, b) => a.lastUsed - b.lastUsed)[0];
      // No room: the next request to finish calls pump() again.
      if (!idle) return;
      void this.disposeContext(idle);
    }
    const creation = this.createContext(key).then(
      (entry) => {
        this.contexts.set(key, entry);
      },
      (err: unknown) => {
        const error = new Error(
          `llama.cpp could not create a context${key ? ` with adapter ${key}` : ''}: ${(err as Error).message}`,
        );
        for (const job of this.queue.filter((j) => j.adapterKey === key)) {
          this.queue.splice(this.queue.indexOf(job), 1);
          job.req.signal.removeEventListener('abort', job.onAbort);
          job.channel.fail(error);
        }
      },
    );
    this.creating.set(
      key,
      creation.finally(() => {
        this.creating.delete(key);
        this.pump();
        this.notifyIdle();
      }),
    );
  }

  private async createContext(key: string): Promise<ContextEntry> {
    const count = shardCount(this.options.shards, this.maxBatch);
    // llama.cpp's limit is 256 sequences a context.
    const sequences = Math.min(
      256,
      Math.ceil((this.maxBatch + (this.options.cachedSequences ?? this.maxBatch)) / count),
    );
    const entry = await createShards(
      this.model,
      key,
      {
        count,
        sequences,
        contextSize: this.contextSize,
        batchSize: Math.min(this.options.batchSize ?? 2048, this.contextSize * sequences),
        flashAttention: this.options.flashAttention ?? false,
        threads: this.options.threads ?? 1,
      },
      this.counters,
    );
    this.options.log?.debug(
      { adapter: key || null, shards: count, sequences, batchSize: entry.shards[0]!.context.batchSize },
      'llama.cpp context created',
    );
    return entry;
  }

  private async disposeContext(entry: ContextEntry): Promise<void> {
    if (this.contexts.get(entry.key) === entry) this.contexts.delete(entry.key);
    entry.retired = true;
    for (const shard of entry.shards) if (!shard.context.disposed) await shard.context.dispose();
  }

  private async run(
    job: Job,
    entry: ContextEntry,
    shard: Shard,
    seq: LlamaContextSequence,
    keep: number,
  ): Promise<void> {
    let outcome: { result: EngineResult } | { error: unknown };
    try {
      outcome = { result: await decodeJob(job, this.sampling, shard, seq, keep) };
    } catch (err) {
      outcome = job.aborted
        ? { result: { promptTokens: job.promptIds.length, completionTokens: 0, finishReason: 'abort' } }
        : { error: err };
    }
    job.req.signal.removeEventListener('abort', job.onAbort);
    // The request has left the batch: counters first, so that stats() agree with a result the client sees.
    entry.running--;
    shard.running--;
    entry.lastUsed = Date.now();
    this.running--;
    if ('result' in outcome) job.channel.end(outcome.result);
    else job.channel.fail(outcome.error);
    try {
      // The sequence keeps its tokens for the dialogue's next turn; after a failure nothing of it is trusted.
      if ('error' in outcome) await seq.clearHistory();
      shard.free.push({
        seq,
        promptLength: 'error' in outcome ? 0 : job.promptIds.length,
        releasedAt: performance.now(),
      });
    } catch (err) {
      if (!entry.retired)
        this.options.log?.warn({ err }, 'a llama.cpp sequence could not be cleared; its context is retired');
      entry.retired = true;
      if (this.contexts.get(entry.key) === entry) this.contexts.delete(entry.key);
    }
    if (entry.retired && entry.running === 0) void this.disposeContext(entry);
    else if (entry.key) this.retireIfUnused(entry.key);
    this.pump();
    this.notifyIdle();
  }

  private notifyIdle(): void {
    if (this.running > 0 || this.queue.length > 0) return;
    const w = this.idleWaiters;
    this.idleWaiters = [];
    for (const f of w) f();
  }

  /** Ends waiting requests with 'abort', lets running ones finish, then frees the model. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.queue.splice(0)) {
      job.req.signal.removeEventListener('abort', job.onAbort);
      job.channel.end({ promptTokens: job.promptIds.length, completionTokens: 0, finishReason: 'abort' });
    }
    if (this.running > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    for (const p of this.creating.values()) await p.catch(() => undefined);
    for (const entry of [...this.contexts.values()]) await this.disposeContext(entry);
    await this.model.dispose();
  }
}
