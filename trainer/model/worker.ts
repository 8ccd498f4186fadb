// The inference worker: runs in a worker_threads thread (started through worker-entry.mjs, which registers
// tsx), holds one LoadedPolicy and answers requests from inference.ts's client. The model's forward passes are
// synchronous tfjs work; here they block only this thread, never the bot's event loop (gateway heartbeats,
// Discord's 3-second acknowledgements).
//
// Protocol (all messages are plain structured-clone objects):
//   worker → parent, once:  { type: 'ready', info, backend }  or  { type: 'fatal', error }
//   parent → worker:        { id, op: 'generate' | 'logprobs' | 'load' | 'info' | 'encode' | 'close', ... }
//                           { op: 'cancel', target: id }   (no reply; the target ends with an AbortError)
//   worker → parent:        { id, ok: true, result }  or  { id, ok: false, error: { name, message, stack } }
// Requests run one at a time in arrival order. 'load' swaps in a new checkpoint: the new one is loaded fully
// first, so a failed load leaves the old model serving. 'close' answers after the queue drains, then exits.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import type { BackendChoice } from './backend.ts';
import type { GenerateOptions, GenerationResult } from './generate.ts';
import type { LoadedPolicyInfo, PromptInput, ScoreRequest } from './loaded-policy.ts';

export interface WorkerInit {
  checkpointDir: string;
  backend?: BackendChoice;
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
}

export type WorkerRequest =
  | { id: number; op: 'generate'; prompts: PromptInput[]; options: Omit<GenerateOptions, 'shouldStop'> }
  | { id: number; op: 'logprobs'; items: ScoreRequest[]; batchSize?: number }
  | { id: number; op: 'encode'; prompt: PromptInput }
  | { id: number; op: 'load'; checkpointDir: string }
  | { id: number; op: 'info' }
  | { id: number; op: 'close' }
  | { op: 'cancel'; target: number };

export interface WorkerInfo extends LoadedPolicyInfo {
  backend: string;
  threadId: number;
}

export type WorkerResultMap = {
  generate: GenerationResult[];
  logprobs: number[][];
  encode: number[];
  load: WorkerInfo;
  info: WorkerInfo;
  close: null;
};

export type WorkerMessage =
  | { type: 'ready'; info: WorkerInfo }
  | { type: 'fatal'; error: SerializedError }
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: SerializedError };

export function serializeError(err: unknown): SerializedError {
  if (err instanceof Error) return { name: err.name, message: err.message, ...(err.stack ? { stack: err.stack } : {}) };
  return { name: 'Error', message: String(err) };
}

async function main(): Promise<void> {
  const port = parentPort;
  if (!port) throw new Error('worker.ts must run in a worker thread (start it through inference.ts)');
  const init = workerData as WorkerInit;

  let policy: import('./loaded-policy.ts').LoadedPolicy;
  let backendName: string;
  try {
    // Imported here so that a failure to load tfjs is reported as 'fatal' like any other.
    const { initBackend } = await import('./backend.ts');
    backendName = (await initBackend(init.backend)).name;
    const { LoadedPolicy } = await import('./loaded-policy.ts');
    policy = await LoadedPolicy.load(init.checkpointDir);
  } catch (err) {
    port.postMessage({ type: 'fatal', error: serializeError(err) } satisfies WorkerMessage);
    return;
  }
  const info = (): WorkerInfo => ({ ...policy.info(), backend: backendName, threadId });
  port.postMessage({ type: 'ready', info: info() } satisfies WorkerMessage);

  const cancelled = new Set<number>();
  let queue: Promise<void> = Promise.resolve();
  let closing = false;

  const handle = async (req: Exclude<WorkerRequest, { op: 'cancel' }>): Promise<unknown> => {
    if (cancelled.has(req.id)) throw Object.assign(new Error('request cancelled'), { name: 'AbortError' });
    switch (req.op) {
      case 'generate': {
        const results = await policy.generate(req.prompts, { ...req.options, shouldStop: () => cancelled.has(req.id) });
        if (cancelled.has(req.id)) throw Object.assign(new Error('request cancelled'), { name: 'AbortError' });
        return results;
      }
      case 'logprobs':
        return policy.logprobs(req.items, req.batchSize !== undefined ? { batchSize: req.batchSize } : {});
      case 'encode':
        return policy.encodePrompt(req.prompt);
      case 'load': {
        const { LoadedPolicy } = await import('./loaded-policy.ts');
        const next = await LoadedPolicy.load(req.checkpointDir);
        const old = policy;
        policy = next;
        old.dispose();
        return info();
      }
      case 'info':
        return info();
      case 'close':
        return null;
    }
  };

  port.on('message', (req: WorkerRequest) => {
    if (req.op === 'cancel') {
      cancelled.add(req.target);
      return;
    }
    if (closing) {
      port.postMessage({
        id: req.id,
        ok: false,
        error: { name: 'Error', message: 'inference worker is closing' },
      } satisfies WorkerMessage);
      return;
    }
    if (req.op === 'close') closing = true;
    queue = queue.then(async () => {
      let msg: WorkerMessage;
      try {
        msg = { id: req.id, ok: true, result: await handle(req) };
      } catch (err) {
        msg = { id: req.id, ok: false, error: serializeError(err) };
      } finally {
        cancelled.delete(req.id);
      }
      port.postMessage(msg);
      if (req.op === 'close') {
        policy.dispose();
        port.close();
      }
    });
  });
}

await main();
