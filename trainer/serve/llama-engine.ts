// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// The CPU serving engine: llama.cpp through node-llama-cpp, with continuous batching.
//
// Batching. A model's sequences (`maxBatch` + `cachedSequences`) are divided among `shards` llama.cpp contexts,
// each decoding on its own thread; every sequence has its own KV cache (llama.cpp's per-sequence streams:
// attention reads only the sequence's own cells); at most `maxBatch` decode at once. A request takes a free sequence as soon as one is free (synchronously inside generate() when one is) and
// runs its own evaluate loop on it; node-llama-cpp gathers the pending evaluations of a context's sequences into
// one llama_decode, whose contents planBatch (llama-schedule.ts) picks: every generating sequence's next token,
// then new prompts whole in arrival order. A step barrier (stepBarrier) makes every running sequence ask for its
// next step together; without it most steps decoded one sequence. One thread a context: on 2-vCPU machines two
// threads a context were 3-20x slower and erratic. A request that finishes, or whose signal aborts, leaves after the
// step in flight and gives its sequence back with its tokens still cached; the first waiting request takes it.
// A request that cannot start waits; generate() throws EngineOverloadedError when `maxQueue` already wait.
//
// Prefix reuse. Each turn of a dialogue sends the whole dialogue again. A request takes the free sequence whose
// last request's prompt its own prompt extends, and evaluates only the tokens after the common prefix; other
// requests take the least recently used free sequence (pickSequence, llama-schedule.ts).
//
// Adapters. llama.cpp applies LoRA per context, not per sequence, so each adapter in use gets contexts of its
// own (created on first use, its `shards` like the base model's, keyed by the adapter's GGUF path; "a context"
// below means such a set), the base model another;
// `maxBatch` caps the sequences running over all contexts together and at most `maxContexts` contexts exist at
// once (an idle one is closed to make room; requests for an adapter without room wait in the queue). A PEFT
// directory is converted once (cached by sha256, a new path per version, since llama.cpp caches adapters by
// path); replacing an adapter name sends new requests to the new version while requests accepted before finish
// on the old one, whose context is closed after them. A .gguf adapter file given directly must likewise get a
// new path per version.
//
// Prompts of our own checkpoints are the checkpoint's chat template rendered by trainer/model/chat.ts and encoded
// by trainer/model/tokenizer.ts, exactly as the tfjs path does; completion text is decoded by the same tokenizer.
// A foreign GGUF (startGguf) brings its own vocabulary and chat template: gguf-foreign.ts's codec renders the
// file's template and lets llama.cpp tokenize with the file's vocabulary.
//
// Sampling. Without logprobs, llama.cpp samples natively (greedy at temperature 0; else top-p on the model's
// distribution, then temperature, then a draw seeded by `seed`). With logprobs, llama.cpp returns the model's
// full next-token distribution (temperature 1, nothing cut) and the token is drawn in JavaScript by
// trainer/model/generate.ts's sampleToken and seeded stream, the tfjs path's own sampler, so the reported
// logprobs are those of the model's distribution (as the tfjs path reports them). A seed reproduces a request
// exactly as long as the request (logprobs included) is the same.
//
// Safety. A GGUF file is validated (gguf-validate.ts) and then loaded once in a child process
// (llama-probe.mjs) before this process loads it: llama.cpp aborts the process on some malformed files.
import { spawn } from 'node:child_process';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stat } from 'node:fs/promises';
import { getLlama, LlamaLogLevel, TokenBias, type BatchItem, type Llama, type LlamaContext, type LlamaContextSequence, type LlamaModel, type PrioritizedBatchItem, type Token } from 'node-llama-cpp';
import type { Logger } from '../../tasks/logger.ts';
import type { ModelConfig } from '../model/architecture.ts';
import { ChatFormatter } from '../model/chat.ts';
import { readConfig } from '../model/checkpoint.ts';
import { seededRandom } from '../../tasks/random.ts';
import { descendingOrder, sampleToken } from '../model/generate.ts';
import { StopMatcher } from '../model/stop-strings.ts';
import { TextTokenizer } from '../model/tokenizer.ts';
import type { ChatMessage } from '../../tasks/agent.ts';
import { EngineOverloadedError, EngineRequestError } from './engine-contract.ts';
import { ggufPromptCodec, inspectForeignGguf, type ForeignGgufInfo, type PromptCodec } from './gguf-foreign.ts';
import type { EngineRequest, EngineResult, EngineStartOptions, EngineStats, EngineStream, EngineToken, ServingEngine } from './engine-contract.ts';
import { convertAdapterToGguf, convertCheckpointToGguf, type GgufDtype } from './gguf-convert.ts';
import { validateAdapterGguf, validateModelGguf } from './gguf-validate.ts';
import { pickSequence, planBatch } from './llama-schedule.ts';
import { TokenChannel } from './token-channel.ts';

export interface LlamaEngineOptions extends EngineStartOptions {
  /** Where converted GGUF files are kept (content-addressed). Default: <os tmpdir>/sweetloop-gguf. */
  cacheDir?: string;
  /** Tokens each sequence can hold (prompt + completion). Default: min(max_position_embeddings, 4096). */
  contextSize?: number;
  /** Contexts alive at once (the base model and each adapter in use take one set of `shards`). Default 2. */
  maxContexts?: number;
  /** Storage of the converted matrices. F16 was ~5% faster (bench/HISTORY.md, "Serving"); F32 is exact. Default F32. */
  dtype?: GgufDtype;
  /** Threads per context (default 1: two were slower on the 2-vCPU machines measured). */
  threads?: number;
  /**
   * Most tokens one llama_decode takes (prompts are cut to fit). Default 2048: on the starter, 32 prompts cost
   * half the CPU time at 2048 than at node-llama-cpp's default of 512 (llama-schedule.ts).
   */
  batchSize?: number;
  /**
   * Sequences each context keeps beyond `maxBatch` so that finished dialogues' KV caches survive for their next
   * turn (prefix reuse, llama-schedule.ts); at most `maxBatch` of a context's sequences decode at once. Each
   * costs `contextSize` KV cells. Default `maxBatch`; 0 still reuses prefixes, among fewer sequences.
   */
  cachedSequences?: number;
  /**
   * Contexts per model (the base model and each adapter), among which sequences are divided: each decodes on
   * its own thread, so two use two cores where one context with two threads was slower. Default: one
   * per core, at most one per 8 of `maxBatch` (at least 1).
   */
  shards?: number;
  /**
   * llama.cpp's flash attention. Default off: on the starter with 32 sequences of 500 tokens, it took about twice
   * the CPU time (prompts and decoding alike) of the plain attention on these machines.
   */
  flashAttention?: boolean;
  /** Load each new GGUF file in a child process first (default true). */
  probe?: boolean;
  /** Told each request's prompt token ids as they go to llama.cpp (tests check what the model was given). */
  onPrompt?: (ids: readonly number[]) => void;
  log?: Logger;
}

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

/** One llama.cpp context: its own dispatch loop, so shards of one model decode at the same time on their threads. */
interface Shard {
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
interface ContextEntry {
  /** GGUF path of the adapter, '' for the base model. */
  key: string;
  shards: Shard[];
  running: number;
  lastUsed: number;
  retired: boolean;
}

interface FreeSequence {
  seq: LlamaContextSequence;
  /** Prompt length of the last request that ran on it (0: none, or its state is not to be trusted). */
  promptLength: number;
  releasedAt: number;
}

interface Job {
  req: EngineRequest;
  channel: TokenChannel;
  promptIds: number[];
  limit: number;
  /** GGUF path of the adapter this request was accepted for ('' = base). */
  adapterKey: string;
  aborted: boolean;
  onAbort: () => void;
}

const ABORTED = Symbol('aborted');
/** Longest a sequence waits at the step barrier for the other results of its step. */
const BARRIER_SAFETY_MS = 20;
let llamaPromise: Promise<Llama> | undefined;

/** The process's llama.cpp binding: the prebuilt CPU binary, never a build or a download. */
export function loadLlama(): Promise<Llama> {
  llamaPromise ??= getLlama({ gpu: false, build: 'never', skipDownload: true, logLevel: LlamaLogLevel.warn }).catch((err: unknown) => {
    llamaPromise = undefined;
    throw new Error(`node-llama-cpp's prebuilt CPU binary could not be loaded: ${(err as Error).message}`);
  });
  return llamaPromise;
}

const PROBE_SCRIPT = fileURLToPath(new URL('./llama-probe.mjs', import.meta.url));
const probed = new Set<string>();

/**
 * Loads a GGUF model (and adapter) once in a child process: resolves when that worked, throws with the child's
 * last output otherwise. Files are content-addressed, so a success is remembered per path and size.
 */
export async function probeGgufInChild(modelPath: string, adapterPath?: string, timeoutMs = 120_000): Promise<void> {
  const key = `${modelPath}:${(await stat(modelPath)).size}|${adapterPath ? `${adapterPath}:${(await stat(adapterPath)).size}` : ''}`;
  if (probed.has(key)) return;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [PROBE_SCRIPT, modelPath, ...(adapterPath ? [adapterPath] : [])], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // ggml's abort otherwise spends seconds trying to print a backtrace through gdb.
      env: { ...process.env, GGML_NO_BACKTRACE: '1' },
    });
    let out = '';
    const keep = (b: Buffer) => (out = (out + b.toString()).slice(-2000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else {
        const what = adapterPath ? `${adapterPath} (on ${modelPath})` : modelPath;
        reject(new Error(`llama.cpp could not load ${what}: the probe process ${signal ? `was killed by ${signal}` : `exited with ${code}`}: ${out.trim().split('\n').slice(-4).join(' | ')}`));
      }
    });
  });
  probed.add(key);
}

function withLogprobs(t: EngineToken, logprob: number | undefined, top: EngineToken['top']): EngineToken {
  if (logprob !== undefined) t.logprob = logprob;
  if (top) t.top = top;
  return t;
}

/**
 * Streams a completion's text as it grows, holding back what may still turn into a stop string or a UTF-8
 * character. The text is decoded from the token ids by the model's tokenizer; ids before `anchor` are already
 * text (`stable`) and were cut at a character boundary, so only the tail is decoded again.
 */
export class CompletionText {
  private readonly ids: number[] = [];
  private anchor = 0;
  private stable = '';
  private emitted = 0;
  private readonly stops: StopMatcher;

  constructor(private readonly decode: (ids: number[]) => string, stops: readonly string[]) {
    this.stops = new StopMatcher(stops);
  }

  /** Adds a token; returns the text it releases, and whether a stop string ended the completion. */
  push(id: number): { text: string; stopped: boolean } {
    this.ids.push(id);
    const tail = this.decode(this.ids.slice(this.anchor));
    const full = this.stable + tail;
    // Byte-level tokens split characters: a trailing U+FFFD may still become a character.
    let partial = 0;
    while (partial < 3 && partial < tail.length && tail[tail.length - 1 - partial] === '\uFFFD') partial++;
    if (partial === 0) {
      this.stable = full;
      this.anchor = this.ids.length;
    }
    const match = this.stops.find(full);
    if (match) return { text: this.release(full, match.at), stopped: true };
    return { text: this.release(full, full.length - Math.max(this.stops.pendingLength(full), partial)), stopped: false };
  }

  /** Everything not yet released (the end of a completion that no stop string cut). */
  flush(): string {
    const full = this.stable + (this.anchor < this.ids.length ? this.decode(this.ids.slice(this.anchor)) : '');
    return this.release(full, full.length);
  }

  private release(full: string, end: number): string {
    if (end <= this.emitted) return '';
    const piece = full.slice(this.emitted, end);
    this.emitted = end;
    return piece;
  }
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
  private readonly sampleable: number;
  private readonly tokenBias: TokenBias | undefined;
  private readonly logpScratch: Float64Array;
  private counters = { decodeSteps: 0, stepSequences: 0, tokensDecoded: 0, promptTokens: 0, promptTokensReused: 0, batchSizes: {} as Record<number, number> };

  private constructor(
    private readonly options: LlamaEngineOptions,
    /** Our checkpoint's config; null for a foreign GGUF (no adapters then: nothing to convert them against). */
    private readonly config: ModelConfig | null,
    private readonly codec: PromptCodec,
    /** Rows of the embedding (the logits' length). */
    embeddingRows: number,
    private readonly model: LlamaModel,
    readonly ggufPath: string,
    readonly contextSize: number,
  ) {
    this.modelName = options.modelName;
    this.maxBatch = options.maxBatch;
    this.maxQueue = options.maxQueue;
    this.maxContexts = options.maxContexts ?? 2;
    this.logpScratch = new Float64Array(embeddingRows);
    this.sampleable = Math.min(embeddingRows, codec.vocabSize);
    // Embedding rows past the tokenizer (Qwen2 pads its vocabulary) can never be decoded: never sample them.
    if (this.sampleable < embeddingRows) {
      this.tokenBias = new TokenBias(model.tokenizer);
      for (let id = this.sampleable; id < embeddingRows; id++) this.tokenBias.set(id as Token, 'never');
    }
  }

  /** Prompt tokens of a dialogue as this engine renders and tokenizes it (the agent's context budget). */
  countPromptTokens(messages: readonly ChatMessage[]): number {
    return this.codec.encode(messages).length;
  }

  /**
   * Serves a foreign GGUF model (gguf-foreign.ts) with the file's own vocabulary and chat template: validated,
   * checked against `expectSha256` when given (the file a version registered), probed in a child process, loaded.
   * Returns the engine and the file's summary (provenance).
   */
  static async startGguf(options: Omit<LlamaEngineOptions, 'checkpointDir'> & { ggufPath: string; expectSha256?: string }): Promise<{ engine: LlamaCppEngine; info: ForeignGgufInfo }> {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1) throw new Error(`maxBatch must be a positive integer, got ${options.maxBatch}`);
    if (!Number.isInteger(options.maxQueue) || options.maxQueue < 0) throw new Error(`maxQueue must be a non-negative integer, got ${options.maxQueue}`);
    const info = await inspectForeignGguf(options.ggufPath);
    if (options.expectSha256 && info.sha256 !== options.expectSha256) {
      throw new Error(`${options.ggufPath} changed since it was registered (sha256 ${info.sha256.slice(0, 12)}..., registered ${options.expectSha256.slice(0, 12)}...): register the new file as a new version`);
    }
    if (options.probe ?? true) await probeGgufInChild(options.ggufPath);
    const llama = await loadLlama();
    const model = await llama.loadModel({ modelPath: options.ggufPath, gpuLayers: 0 });
    const template = model.fileInfo.metadata.tokenizer?.chat_template;
    const contextSize = Math.min(options.contextSize ?? 4096, info.contextLength);
    const engine = new LlamaCppEngine({ ...options, checkpointDir: '' }, null, ggufPromptCodec(model, String(template), info.vocabSize), info.vocabSize, model, options.ggufPath, contextSize);
    options.log?.info({ gguf: options.ggufPath, quantization: info.quantization, maxBatch: options.maxBatch, contextSize }, 'llama.cpp engine loaded (foreign GGUF)');
    try {
      engine.contexts.set('', await engine.createContext(''));
    } catch (err) {
      await model.dispose();
      throw err;
    }
    return { engine, info };
  }

  /** Converts (cached) and validates the checkpoint's GGUF, probes it in a child process, loads it. */
  static async start(options: LlamaEngineOptions): Promise<LlamaCppEngine> {
    if (!Number.isInteger(options.maxBatch) || options.maxBatch < 1) throw new Error(`maxBatch must be a positive integer, got ${options.maxBatch}`);
    if (!Number.isInteger(options.maxQueue) || options.maxQueue < 0) throw new Error(`maxQueue must be a non-negative integer, got ${options.maxQueue}`);
    const config = await readConfig(options.checkpointDir);
    const tokenizer = await TextTokenizer.load(options.checkpointDir);
    const chat = ChatFormatter.fromTokenizer(tokenizer);
    const cacheDir = options.cacheDir ?? path.join(tmpdir(), 'sweetloop-gguf');
    const conv = await convertCheckpointToGguf(options.checkpointDir, { cacheDir }, { dtype: options.dtype ?? 'F32' });
    await validateModelGguf(conv.path, config);
    if (options.probe ?? true) await probeGgufInChild(conv.path);
    const llama = await loadLlama();
    const model = await llama.loadModel({ modelPath: conv.path, gpuLayers: 0 });
    const contextSize = Math.min(options.contextSize ?? 4096, config.maxPositionEmbeddings);
    options.log?.info({ gguf: conv.path, converted: conv.converted, maxBatch: options.maxBatch, contextSize }, 'llama.cpp engine loaded');
    const codec: PromptCodec = {
      encode: (messages) => tokenizer.encode(chat.format(messages, { addGenerationPrompt: true })),
      decode: (ids) => tokenizer.decode([...ids]),
      isEnd: (id) => tokenizer.eosTokenIds.includes(id),
      vocabSize: tokenizer.vocabSize,
    };
    const engine = new LlamaCppEngine({ ...options, cacheDir }, config, codec, config.vocabSize, model, conv.path, contextSize);
    // The base model's context up front: the first request should not wait for it.
    try {
      engine.contexts.set('', await engine.createContext(''));
    } catch (err) {
      await model.dispose();
      throw err;
    }
    return engine;
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
    if (!this.config) throw new Error(`${this.modelName} is a foreign GGUF model: LoRA adapters are attached to our own checkpoints only`);
    let ggufPath: string;
    if ((await stat(source)).isDirectory()) {
      ggufPath = (await convertAdapterToGguf(source, this.config, { cacheDir: this.options.cacheDir! }, { dtype: this.options.dtype ?? 'F32' })).path;
    } else ggufPath = path.resolve(source);
    await validateAdapterGguf(ggufPath, this.config);
    if (this.options.probe ?? true) await probeGgufInChild(this.ggufPath, ggufPath);
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
    if (!Number.isInteger(req.maxTokens) || req.maxTokens < 1) throw new EngineRequestError(`max_tokens must be a positive integer, got ${req.maxTokens}`);
    if (!Number.isFinite(req.temperature) || req.temperature < 0) throw new EngineRequestError(`temperature must be >= 0, got ${req.temperature}`);
    if (!Number.isFinite(req.topP) || req.topP <= 0 || req.topP > 1) throw new EngineRequestError(`top_p must be in (0, 1], got ${req.topP}`);
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
      throw new EngineRequestError(`the prompt has ${promptIds.length} tokens; each sequence holds ${this.contextSize}`);
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
      throw new EngineOverloadedError(`the queue is full (${this.queue.length} waiting, ${this.maxQueue} allowed, ${this.running} decoding)`);
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
      const picked = entry ? this.pickShardSequence(entry, job.promptIds) : null;
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

  /**
   * The sequence for a prompt: the one (in any shard) whose last request this prompt continues, else the least
   * recently used free one of the shard running the fewest requests, so that new dialogues spread over shards.
   */
  private pickShardSequence(entry: ContextEntry, prompt: readonly number[]): { shard: Shard; index: number; keep: number } | null {
    const view = (shard: Shard) => shard.free.map((f) => ({ tokens: f.seq.contextTokens, promptLength: f.promptLength, releasedAt: f.releasedAt }));
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

  /** Creates the context for `key` if there is room (closing the least recently used idle one if needed). */
  private ensureContext(key: string): void {
    if (this.creating.has(key) || this.closed) return;
    if (this.contexts.size + this.creating.size >= this.maxContexts) {
      const idle = [...this.contexts.values()].filter((e) => e.running === 0).sort((a, b) => a.lastUsed - b.lastUsed)[0];
      // No room: the next request to finish calls pump() again.
      if (!idle) return;
      void this.disposeContext(idle);
    }
    const creation = this.createContext(key).then(
      (entry) => {
        this.contexts.set(key, entry);
      },
      (err: unknown) => {
        const error = new Error(`llama.cpp could not create a context${key ? ` with adapter ${key}` : ''}: ${(err as Error).message}`);
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
    const entry: ContextEntry = { key, shards: [], running: 0, lastUsed: Date.now(), retired: false };
    const count = this.shardCount();
    // llama.cpp's limit is 256 sequences a context.
    const sequences = Math.min(256, Math.ceil((this.maxBatch + (this.options.cachedSequences ?? this.maxBatch)) / count));
    try {
      for (let i = 0; i < count; i++) {
        const shard = { free: [], running: 0, awaitingResults: 0, barrier: [] } as unknown as Shard;
        shard.context = await this.model.createContext({
          sequences,
          contextSize: this.contextSize,
          batchSize: Math.min(this.options.batchSize ?? 2048, this.contextSize * sequences),
          flashAttention: this.options.flashAttention ?? false,
          threads: this.options.threads ?? 1,
          failedCreationRemedy: false,
          batching: { itemPrioritizationStrategy: (o) => this.recordStep(shard, o) },
          ...(key ? { lora: { adapters: [{ filePath: key, scale: 1 }] } } : {}),
        });
        for (let j = 0; j < sequences; j++) shard.free.push({ seq: shard.context.getSequence(), promptLength: 0, releasedAt: 0 });
        entry.shards.push(shard);
      }
    } catch (err) {
      for (const shard of entry.shards) await shard.context.dispose();
      throw err;
    }
    this.options.log?.debug({ adapter: key || null, shards: count, sequences, batchSize: entry.shards[0]!.context.batchSize }, 'llama.cpp context created');
    return entry;
  }

  /** Contexts per model: the option, else one per core up to one per 8 running sequences. */
  private shardCount(): number {
    return Math.max(1, this.options.shards ?? Math.min(availableParallelism(), Math.floor(this.maxBatch / 8)));
  }

  /**
   * Continuous batching needs every running sequence's next token in the same llama_decode. node-llama-cpp
   * samples each sequence's token on the thread pool after a decode, and its dispatch loop decodes whatever is
   * queued as soon as the last sample is in: left alone, the sequence that finished sampling first re-queues
   * early and most steps decode one sequence (measured: 46 of 47 steps for two requests). So a loop that has
   * its token waits here until every result of the step has been delivered, plus one event-loop turn (the
   * dispatch loop has ended by then); then all ask for their next step together and share one batch.
   */
  private async stepBarrier(entry: Shard): Promise<void> {
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

  private stepResolved(entry: Shard): void {
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
  private recordStep(entry: Shard, { items, size }: { items: readonly BatchItem[]; size: number }): PrioritizedBatchItem[] {
    const amounts = planBatch(items.map((i) => i.tokens.length), size);
    const out: PrioritizedBatchItem[] = [];
    let tokens = 0;
    items.forEach((item, i) => {
      if (amounts[i]! > 0) out.push({ item, processAmount: amounts[i]! });
      tokens += amounts[i]!;
    });
    // Items taken whole get their result after this step (a prompt cut into chunks only after its last one).
    entry.awaitingResults += out.filter((p) => p.processAmount === p.item.tokens.length).length;
    if (out.length > 0) {
      this.counters.decodeSteps++;
      this.counters.stepSequences += out.length;
      this.counters.batchSizes[out.length] = (this.counters.batchSizes[out.length] ?? 0) + 1;
      this.counters.tokensDecoded += tokens;
    }
    return out;
  }

  private async disposeContext(entry: ContextEntry): Promise<void> {
    if (this.contexts.get(entry.key) === entry) this.contexts.delete(entry.key);
    entry.retired = true;
    for (const shard of entry.shards) if (!shard.context.disposed) await shard.context.dispose();
  }

  private async run(job: Job, entry: ContextEntry, shard: Shard, seq: LlamaContextSequence, keep: number): Promise<void> {
    let outcome: { result: EngineResult } | { error: unknown };
    try {
      outcome = { result: await this.decode(job, shard, seq, keep) };
    } catch (err) {
      outcome = job.aborted ? { result: { promptTokens: job.promptIds.length, completionTokens: 0, finishReason: 'abort' } } : { error: err };
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
      shard.free.push({ seq, promptLength: 'error' in outcome ? 0 : job.promptIds.length, releasedAt: performance.now() });
    } catch (err) {
      if (!entry.retired) this.options.log?.warn({ err }, 'a llama.cpp sequence could not be cleared; its context is retired');
      entry.retired = true;
      if (this.contexts.get(entry.key) === entry) this.contexts.delete(entry.key);
    }
    if (entry.retired && entry.running === 0) void this.disposeContext(entry);
    else if (entry.key) this.retireIfUnused(entry.key);
    this.pump();
    this.notifyIdle();
  }

  /**
   * Runs one request on its sequence, whose first `keep` tokens are the prompt's already (prefix reuse): the rest
   * of the old state is erased and only the prompt after them evaluated. Streams the request's tokens and
   * returns its totals (the caller ends the stream).
   */
  private async decode(job: Job, entry: Shard, seq: LlamaContextSequence, keep: number): Promise<EngineResult> {
    const { req, channel } = job;
    if (seq.nextTokenIndex > keep) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
    const jsSampling = req.logprobs && req.temperature > 0;
    const wantDistribution = req.logprobs && (jsSampling || req.topLogprobs > 0);
    const seed = req.seed ?? Math.floor(Math.random() * 2 ** 32);
    const rand = seededRandom(seed, 0);
    const text = new CompletionText((ids) => this.codec.decode(ids), req.stop ?? []);
    const iterator = seq.evaluateWithMetadata(
      job.promptIds.slice(keep) as Token[],
      { probabilities: wantDistribution, confidence: req.logprobs && !wantDistribution },
      {
        // Greedy when we sample ourselves: the greedy sampler leaves the distribution as the model gave it.
        temperature: jsSampling ? 0 : req.temperature,
        topP: jsSampling ? 1 : req.topP,
        topK: 0,
        minP: 0,
        seed,
        yieldEogToken: true,
        ...(this.tokenBias ? { tokenBias: this.tokenBias } : {}),
      },
    );
    let onAbort = () => {};
    const abort = new Promise<typeof ABORTED>((resolve) => {
      onAbort = () => resolve(ABORTED);
      if (req.signal.aborted) resolve(ABORTED);
      req.signal.addEventListener('abort', onAbort, { once: true });
    });
    let completion = 0;
    let replacement: Token | undefined;
    let finish: EngineResult['finishReason'] = 'length';
    try {
      for (;;) {
        if (completion > 0) await this.stepBarrier(entry);
        const next = iterator.next(replacement);
        next.then(
          () => this.stepResolved(entry),
          () => this.stepResolved(entry),
        );
        const step = await Promise.race([next, abort]);
        if (step === ABORTED) {
          finish = 'abort';
          break;
        }
        if (step.done) {
          finish = 'stop';
          break;
        }
        const out = step.value as { token: Token; probabilities?: Map<Token, number>; confidence?: number };
        let token = out.token as number;
        let logprob: number | undefined;
        let top: EngineToken['top'];
        if (wantDistribution) {
          const probs = out.probabilities!;
          if (jsSampling) {
            // Filled and read before the next await: one buffer serves every sequence.
            const logp = this.logpScratch.fill(-Infinity);
            for (const [id, p] of probs) logp[id] = Math.log(p);
            token = sampleToken(logp.subarray(0, this.sampleable), req.temperature, req.topP, rand, req.topP < 1 ? descendingOrder(probs, this.sampleable) : undefined);
            replacement = token as Token;
          }
          logprob = Math.log(probs.get(token as Token) ?? 0);
          if (req.topLogprobs > 0) {
            top = [];
            for (const [id, p] of probs) {
              if (top.length >= req.topLogprobs) break;
              top.push({ token: this.codec.decode([id]), logprob: Math.log(p) });
            }
          }
        } else if (req.logprobs && out.confidence !== undefined) logprob = Math.log(out.confidence);
        completion++;
        // Every emitted piece belongs to a token with its logprob: text held back (a possible stop string, half a
        // character) is released with the last token, or with the end-of-sequence token if that ends the text.
        if (this.codec.isEnd(token)) {
          finish = 'stop';
          const rest = text.flush();
          if (rest) channel.push(withLogprobs({ text: rest }, logprob, top));
          break;
        }
        const piece = text.push(token);
        const last = !piece.stopped && completion >= job.limit;
        channel.push(withLogprobs({ text: last ? piece.text + text.flush() : piece.text }, logprob, top));
        if (piece.stopped) {
          finish = 'stop';
          break;
        }
        if (last) break;
      }
      return { promptTokens: job.promptIds.length, completionTokens: completion, finishReason: finish };
    } finally {
      req.signal.removeEventListener('abort', onAbort);
      // Waits for a step still in flight (after an abort) before the sequence is cleared and reused.
      await iterator.return(undefined);
    }
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
