// The fallback serving engine, and the serial yardstick of bench:serve: today's inference worker
// (trainer/model/inference.ts, one request at a time, tfjs) behind the ServingEngine contract. It decodes one
// request at a time (maxBatch 1); others wait in a capped queue (EngineOverloadedError beyond it). The worker
// returns a whole completion at once, so a stream's tokens all arrive when the request finishes: that is what
// this engine is, and what the benchmark's serial column measures. LoRA adapters are merged into a copy of the
// base weights (tfjs, on this thread, once per adapter) and served by a worker of their own.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendChoice } from '../model/backend.ts';
import { InferenceClient } from '../model/inference.ts';
import { TextTokenizer } from '../model/tokenizer.ts';
import { EngineOverloadedError, EngineRequestError } from './engine-contract.ts';
import type {
  EngineRequest,
  EngineResult,
  EngineStartOptions,
  EngineStats,
  EngineStream,
  EngineToken,
  ServingEngine,
} from './engine-contract.ts';
import { TokenChannel } from './token-channel.ts';

export interface TfjsEngineOptions extends EngineStartOptions {
  /** Force a tfjs backend in the worker; default: the best available. */
  backend?: BackendChoice;
}

interface Served {
  client: InferenceClient;
  /** Where the weights came from: the base checkpoint, or an adapter directory (merged into `mergedDir`). */
  source: string;
  mergedDir?: string;
}

interface Job {
  req: EngineRequest;
  channel: TokenChannel;
  onAbort?: () => void;
}

/**
 * Text of each generated token such that the pieces concatenate to `text` (the completion as the worker decoded
 * it: without EOS, cut before a stop string). Prefix differences keep multi-byte characters whole: a prefix that
 * ends inside one (decoded as U+FFFD) gives its token an empty piece and the next token the whole character.
 * Tokens entirely past the end of `text` (the EOS token, the rest of a stop string) are left out.
 */
export function tokenPieces(
  decode: (ids: readonly number[]) => string,
  ids: readonly number[],
  text: string,
): string[] {
  const pieces: string[] = [];
  let emitted = 0;
  for (let i = 0; i < ids.length && emitted < text.length; i++) {
    const prefix = decode(ids.slice(0, i + 1));
    if (prefix.endsWith('\uFFFD') && i < ids.length - 1) {
      pieces.push('');
      continue;
    }
    const end = Math.min(prefix.length, text.length);
    pieces.push(end > emitted ? text.slice(emitted, end) : '');
    emitted = Math.max(emitted, end);
  }
  return pieces;
}

export class TfjsEngine implements ServingEngine {
  readonly modelName: string;
  private readonly base: Served;
  private readonly adapterMap = new Map<string, Served>();
  private readonly queue: Job[] = [];
  private running: Job | null = null;
  private closed = false;
  private steps = 0;

  private constructor(
    private readonly options: TfjsEngineOptions,
    client: InferenceClient,
    private readonly tokenizer: TextTokenizer,
  ) {
    this.modelName = options.modelName;
    this.base = { client, source: options.checkpointDir };
  }

  static async start(options: TfjsEngineOptions): Promise<TfjsEngine> {
    const [client, tokenizer] = await Promise.all([
      InferenceClient.start({
        checkpointDir: options.checkpointDir,
        ...(options.backend ? { backend: options.backend } : {}),
      }),
      TextTokenizer.load(options.checkpointDir),
    ]);
    return new TfjsEngine(options, client, tokenizer);
  }

  stats(): EngineStats {
    // One decoding step a token, one sequence a step: what "serial" means in the batching counters.
    return {
      running: this.running ? 1 : 0,
      queued: this.queue.length,
      maxBatch: 1,
      maxQueue: this.options.maxQueue,
      decodeSteps: this.steps,
      stepSequences: this.steps,
    };
  }

  adapters(): string[] {
    return [...this.adapterMap.keys()];
  }

  generate(req: EngineRequest): EngineStream {
    if (this.closed) throw new Error('the tfjs engine is closed');
    if (req.topLogprobs > 0) {
      throw new EngineRequestError(
        "top_logprobs is not available from the tfjs engine (its worker returns only the sampled token's logprob); use the llama engine or top_logprobs 0",
      );
    }
    if (req.adapter !== null && !this.adapterMap.has(req.adapter))
      throw new EngineRequestError(`no adapter named "${req.adapter}" is loaded`);
    if (this.running && this.queue.length >= this.options.maxQueue) {
      throw new EngineOverloadedError(
        `the queue is full (${this.queue.length} waiting, ${this.options.maxQueue} allowed)`,
      );
    }
    const job: Job = { req, channel: new TokenChannel() };
    if (req.signal.aborted) {
      job.channel.end({ promptTokens: 0, completionTokens: 0, finishReason: 'abort' });
      return job.channel;
    }
    // A request still waiting leaves the queue at once; a running one is cancelled in the worker (runJob).
    job.onAbort = () => {
      const i = this.queue.indexOf(job);
      if (i >= 0) {
        this.queue.splice(i, 1);
        job.channel.end({ promptTokens: 0, completionTokens: 0, finishReason: 'abort' });
      }
    };
    req.signal.addEventListener('abort', job.onAbort, { once: true });
    this.queue.push(job);
    this.pump();
    return job.channel;
  }

  private pump(): void {
    if (this.running || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    this.running = job;
    void this.runJob(job).then((settle) => {
      if (job.onAbort) job.req.signal.removeEventListener('abort', job.onAbort);
      // Free before settling: whoever awaits the result may send the next request at once.
      this.running = null;
      settle();
      this.pump();
    });
  }

  /** Decodes one request; returns how to settle its stream (called once the slot is free). */
  private async runJob(job: Job): Promise<() => void> {
    const { req, channel } = job;
    const served = req.adapter === null ? this.base : this.adapterMap.get(req.adapter);
    try {
      if (!served) throw new EngineRequestError(`adapter "${req.adapter}" was unloaded`);
      const ids = await served.client.encode({ messages: req.messages });
      const ctx = served.client.info.contextLength;
      if (ids.length >= ctx)
        throw new EngineRequestError(`the prompt has ${ids.length} tokens; the model's context is ${ctx}`);
      const [r] = await served.client.generate(
        [{ ids }],
        {
          maxTokens: req.maxTokens,
          temperature: req.temperature,
          topP: req.topP,
          ...(req.seed !== undefined ? { seed: req.seed } : {}),
          ...(req.stop && req.stop.length ? { stop: req.stop } : {}),
        },
        req.signal,
      );
      const result = r!;
      this.steps += result.tokenIds.length;
      const pieces = tokenPieces((x) => this.tokenizer.decode(x), result.tokenIds, result.text);
      const done: EngineResult = {
        promptTokens: result.promptTokens,
        completionTokens: result.tokenIds.length,
        finishReason:
          result.finishReason === 'length' ? 'length' : result.finishReason === 'cancelled' ? 'abort' : 'stop',
      };
      return () => {
        pieces.forEach((text, i) => {
          const token: EngineToken = { text, id: result.tokenIds[i]! };
          if (req.logprobs) token.logprob = result.tokenLogprobs[i]!;
          channel.push(token);
        });
        channel.end(done);
      };
    } catch (err) {
      if (req.signal.aborted || (err as Error).name === 'AbortError')
        return () => channel.end({ promptTokens: 0, completionTokens: 0, finishReason: 'abort' });
      return () => channel.fail(err);
    }
  }

  async loadAdapter(name: string, path: string): Promise<void> {
    const existing = this.adapterMap.get(name);
    if (existing?.source === path) return;
    const mergedDir = await mkdtemp(join(tmpdir(), 'sweetloop-merged-'));
    try {
      await mergeAdapter(this.options.checkpointDir, path, mergedDir, this.options.backend);
      const client = await InferenceClient.start({
        checkpointDir: mergedDir,
        ...(this.options.backend ? { backend: this.options.backend } : {}),
      });
      this.adapterMap.set(name, { client, source: path, mergedDir });
    } catch (err) {
      await rm(mergedDir, { recursive: true, force: true });
      throw err;
    }
    if (existing) await this.dispose(existing);
  }

  async unloadAdapter(name: string): Promise<void> {
    const served = this.adapterMap.get(name);
    if (!served) return;
    this.adapterMap.delete(name);
    await this.dispose(served);
  }

  private async dispose(served: Served): Promise<void> {
    await served.client.close();
    if (served.mergedDir) await rm(served.mergedDir, { recursive: true, force: true });
  }

  /** Ends waiting requests with 'abort', lets the running one finish, then stops every worker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.queue.splice(0))
      job.channel.end({ promptTokens: 0, completionTokens: 0, finishReason: 'abort' });
    const running = this.running;
    if (running) await running.channel.result.catch(() => {});
    for (const served of [this.base, ...this.adapterMap.values()]) await this.dispose(served);
    this.adapterMap.clear();
  }
}

/** Base weights + a PEFT LoRA adapter, merged (W + (α/r)·B·A) and written as a full checkpoint into `outDir`. */
async function mergeAdapter(
  baseDir: string,
  adapterDir: string,
  outDir: string,
  backend?: BackendChoice,
): Promise<void> {
  const [{ initBackend }, { loadCheckpoint, saveCheckpoint }, { loadLora, mergeLora }, { copyTokenizerFiles }] =
    await Promise.all([
      import('../model/backend.ts'),
      import('../model/checkpoint.ts'),
      import('../model/lora.ts'),
      import('../versions.ts'),
    ]);
  await initBackend(backend);
  const { model } = await loadCheckpoint(baseDir, { trainable: false });
  try {
    await loadLora(adapterDir, model);
    mergeLora(model);
    await saveCheckpoint(outDir, model);
  } finally {
    model.dispose();
  }
  await copyTokenizerFiles(baseDir, outDir);
}
