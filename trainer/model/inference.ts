// The main-thread side of inference: starts the worker (worker.ts via worker-entry.mjs), sends it requests
// with ids, turns its answers back into promises. Nothing here loads tfjs, so importing it costs the bot
// nothing. Worker errors reach the caller as Errors with the worker's message; a crashed worker fails every
// pending and later request with a clear message instead of hanging.
import { Worker } from 'node:worker_threads';
import type { BackendChoice } from './backend.ts';
import type { PromptInput, ScoreRequest } from './loaded-policy.ts';
import type { GenerateOptions, GenerationResult } from './generate.ts';
import type {
  SerializedError,
  WorkerInfo,
  WorkerInit,
  WorkerMessage,
  WorkerRequest,
  WorkerResultMap,
} from './worker.ts';

export type { WorkerInfo } from './worker.ts';

export interface InferenceClientOptions {
  checkpointDir: string;
  /** Force a tfjs backend in the worker (TFJS_BACKEND); default: the best available. */
  backend?: BackendChoice;
}

/** An error raised inside the worker, re-raised here with its original name and message. */
export class InferenceError extends Error {
  constructor(readonly remote: SerializedError) {
    super(remote.message);
    this.name = remote.name === 'Error' ? 'InferenceError' : remote.name;
  }
}

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void };
type Op = Exclude<WorkerRequest, { op: 'cancel' }>['op'];
type Payload<K extends Op> = Omit<Extract<WorkerRequest, { op: K }>, 'id' | 'op'>;

export class InferenceClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private dead: Error | undefined;
  private exited: Promise<void>;
  private currentInfo: WorkerInfo;

  private constructor(
    private readonly worker: Worker,
    info: WorkerInfo,
    exited: Promise<void>,
  ) {
    this.currentInfo = info;
    this.exited = exited;
    worker.on('message', (msg: WorkerMessage) => {
      if (!('id' in msg)) return;
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new InferenceError(msg.error));
    });
    const fail = (err: Error) => {
      this.dead ??= err;
      for (const p of this.pending.values()) p.reject(this.dead);
      this.pending.clear();
    };
    worker.on('error', (err) => fail(new Error(`inference worker crashed: ${err.message}`)));
    worker.on('exit', (code) => fail(new Error(`inference worker is not running (exited with code ${code})`)));
  }

  /** Starts a worker and waits until it has loaded `checkpointDir`; load errors reject here. */
  static async start(options: InferenceClientOptions): Promise<InferenceClient> {
    const init: WorkerInit = { checkpointDir: options.checkpointDir };
    if (options.backend) init.backend = options.backend;
    const worker = new Worker(new URL('./worker-entry.mjs', import.meta.url), { workerData: init });
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    const info = await new Promise<WorkerInfo>((resolve, reject) => {
      const onMessage = (msg: WorkerMessage) => {
        if ('type' in msg) {
          cleanup();
          if (msg.type === 'ready') resolve(msg.info);
          else {
            void worker.terminate();
            reject(new InferenceError(msg.error));
          }
        }
      };
      const onError = (err: Error) => {
        cleanup();
        reject(new Error(`inference worker failed to start: ${err.message}`));
      };
      const onExit = (code: number) => {
        cleanup();
        reject(new Error(`inference worker exited during start (code ${code})`));
      };
      const cleanup = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
    });
    return new InferenceClient(worker, info, exited);
  }

  /** What the worker serves now (checkpoint, sizes, backend, its thread id). */
  get info(): WorkerInfo {
    return this.currentInfo;
  }

  private request<K extends Op>(op: K, payload: Payload<K>, signal?: AbortSignal): Promise<WorkerResultMap[K]> {
    if (this.dead) return Promise.reject(this.dead);
    if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : abortError());
    const id = this.nextId++;
    return new Promise<WorkerResultMap[K]>((resolve, reject) => {
      let onAbort: (() => void) | undefined;
      if (signal) {
        onAbort = () => this.worker.postMessage({ op: 'cancel', target: id } satisfies WorkerRequest);
        signal.addEventListener('abort', onAbort, { once: true });
      }
      const done = () => {
        if (signal && onAbort) signal.removeEventListener('abort', onAbort);
      };
      this.pending.set(id, {
        resolve: (v) => {
          done();
          resolve(v as WorkerResultMap[K]);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      this.worker.postMessage({ id, op, ...payload } as WorkerRequest);
    });
  }

  /** Completions for each prompt, generated as one batch. Aborting the signal ends it with an AbortError. */
  generate(
    prompts: PromptInput[],
    options: Omit<GenerateOptions, 'shouldStop'> = {},
    signal?: AbortSignal,
  ): Promise<GenerationResult[]> {
    return this.request('generate', { prompts, options }, signal);
  }

  /** Per-token log-probabilities of each continuation (plain numbers). */
  logprobs(items: ScoreRequest[], options: { batchSize?: number } = {}): Promise<number[][]> {
    return this.request('logprobs', {
      items,
      ...(options.batchSize !== undefined ? { batchSize: options.batchSize } : {}),
    });
  }

  /** Token ids of a prompt as the worker would feed it (chat template applied for messages). */
  encode(prompt: PromptInput): Promise<number[]> {
    return this.request('encode', { prompt });
  }

  /** Hot-swaps the served checkpoint (e.g. after a deploy). On failure the old one keeps serving. */
  async reload(checkpointDir: string): Promise<WorkerInfo> {
    this.currentInfo = await this.request('load', { checkpointDir });
    return this.currentInfo;
  }

  /** Lets queued requests finish, frees the model and ends the thread. */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (!this.dead) {
      const timeout = options.timeoutMs ?? 30_000;
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          // Past the reply the queue is drained and the model freed: ending the thread loses nothing.
          this.request('close', {}).then(() => this.worker.terminate()),
          new Promise<void>((_, reject) => {
            timer = setTimeout(() => reject(new Error('inference worker did not close in time')), timeout);
          }),
        ]);
      } catch {
        await this.worker.terminate();
      } finally {
        if (timer) clearTimeout(timer);
      }
    }
    this.dead ??= new Error('inference worker is closed');
    await this.exited;
  }
}

function abortError(): Error {
  return Object.assign(new Error('request cancelled'), { name: 'AbortError' });
}
