// What `sweetloop serve` serves: a PolicyVersion turned into an engine (llama.cpp when it loads, the tfjs worker
// otherwise), and, with `--policy deployed`, the deployed version followed through LISTEN policy_deployed: a
// deploy builds the new engine first and then swaps it into the slot, so requests already running finish on the
// old engine and new ones go to the new one. Adapter versions are loaded into the engine of their base.
import { resolve } from 'node:path';
import type { Logger } from '../../tasks/logger.ts';
import type { Database } from '../../prisma/db.ts';
import type { PolicyVersion, PrismaClient } from '../../prisma/generated/client.ts';
import { checkpointOf, deployedPolicy } from '../../prisma/policy-store.ts';
import { POLICY_CHANNEL } from '../../prisma/deployment-store.ts';
import type { BackendChoice } from '../model/backend.ts';
import type { EngineStartOptions, ServingEngine } from './engine-contract.ts';
import type { EngineSlot } from './slot.ts';

export type EngineKind = 'llama' | 'tfjs';

/** A checkpoint to run under a model name, and the LoRA adapter a version adds on top of it. */
export interface ServeTarget {
  versionName: string;
  modelName: string;
  /** Our checkpoint's directory; for a gguf version, its file (then `gguf` is set). */
  checkpointDir: string;
  /** A foreign GGUF model (a 'gguf' version): llama.cpp only, with the file's own tokenizer and chat template. */
  gguf?: { file: string; sha256: string | null } | null;
  adapter: { name: string; path: string } | null;
}

interface ServingJson {
  model?: string;
  endpointVersionId?: string;
  baseModelDir?: string;
  adapterName?: string;
}

function servingOf(v: PolicyVersion): ServingJson {
  return v.serving && typeof v.serving === 'object' && !Array.isArray(v.serving) ? (v.serving as ServingJson) : {};
}

/**
 * How a version is served here; a clear Error for versions whose weights are not on this machine.
 *  - checkpoint: its directory, under the version's name;
 *  - endpoint with serving.baseModelDir (a version whose endpoint is this server): that directory, under
 *    serving.model;
 *  - adapter: its base (serving.endpointVersionId: a checkpoint version, or an endpoint version with
 *    baseModelDir; or serving.baseModelDir itself) under the base's model name, plus the PEFT directory
 *    (checkpointPath) as adapter serving.adapterName (default: the version's name).
 */
export async function servingTarget(prisma: PrismaClient, v: PolicyVersion): Promise<ServeTarget> {
  if (v.kind === 'checkpoint')
    return { versionName: v.name, modelName: v.name, checkpointDir: resolve(checkpointOf(v)), adapter: null };
  if (v.kind === 'gguf') {
    const file = resolve(checkpointOf(v));
    return {
      versionName: v.name,
      modelName: v.name,
      checkpointDir: file,
      gguf: { file, sha256: v.checkpointSha256 },
      adapter: null,
    };
  }
  const s = servingOf(v);
  if (v.kind === 'endpoint') {
    if (!s.baseModelDir)
      throw new Error(
        `policy version "${v.name}" is served by an external endpoint (no serving.baseModelDir): sweetloop serve has no weights to load`,
      );
    return { versionName: v.name, modelName: s.model ?? v.name, checkpointDir: resolve(s.baseModelDir), adapter: null };
  }
  if (v.kind === 'adapter') {
    const base = s.endpointVersionId
      ? await prisma.policyVersion.findUnique({ where: { id: s.endpointVersionId } })
      : null;
    if (s.endpointVersionId && !base)
      throw new Error(`adapter version "${v.name}": its base version ${s.endpointVersionId} does not exist`);
    const baseTarget = base ? await servingTarget(prisma, base) : null;
    const baseDir = baseTarget?.checkpointDir ?? s.baseModelDir;
    if (!baseDir)
      throw new Error(
        `adapter version "${v.name}": neither serving.endpointVersionId nor serving.baseModelDir names weights to load the adapter onto`,
      );
    return {
      versionName: v.name,
      modelName: baseTarget?.modelName ?? s.model ?? `${v.name}-base`,
      checkpointDir: resolve(baseDir),
      adapter: { name: s.adapterName ?? v.name, path: resolve(checkpointOf(v)) },
    };
  }
  throw new Error(`policy version "${v.name}" has an unknown kind "${v.kind}"`);
}

// ---------------------------------------------------------------------------------------------------------
// Engines

export interface EngineFactoryOptions {
  kind: EngineKind;
  maxBatch: number;
  maxQueue: number;
  /** tfjs backend of the fallback engine's worker. */
  backend?: BackendChoice;
  log?: Logger;
}

export type EngineFactory = (
  target: Pick<ServeTarget, 'modelName' | 'checkpointDir' | 'gguf'>,
) => Promise<ServingEngine>;

interface LlamaModule {
  LlamaCppEngine?: { start?: (o: EngineStartOptions & { log?: Logger }) => Promise<ServingEngine> };
}

/** A foreign GGUF's engine: llama.cpp or nothing (tfjs cannot run a GGUF file), the reason in the error. */
async function startGgufEngine(
  target: Pick<ServeTarget, 'modelName' | 'gguf'>,
  options: EngineFactoryOptions,
): Promise<ServingEngine> {
  const { LlamaCppEngine } = await import('./llama-engine.ts');
  const { engine } = await LlamaCppEngine.startGguf({
    modelName: target.modelName,
    ggufPath: target.gguf!.file,
    ...(target.gguf!.sha256 ? { expectSha256: target.gguf!.sha256 } : {}),
    maxBatch: options.maxBatch,
    maxQueue: options.maxQueue,
    // Every cached sequence costs a whole window of KV cells, which for a real model is megabytes a token; a free
    // sequence still keeps its dialogue's tokens for the next turn until another request takes it.
    cachedSequences: 0,
    ...(options.log ? { log: options.log } : {}),
  });
  options.log?.info({ model: target.modelName, engine: 'llama', gguf: target.gguf!.file }, 'serve: engine ready');
  return engine;
}

/**
 * The llama.cpp engine, imported only when asked for: its module (llama-engine.ts) loads native code.
 * Null with the reason when it is unavailable.
 */
async function startLlama(
  o: EngineStartOptions,
  log?: Logger,
): Promise<{ engine: ServingEngine } | { reason: string }> {
  let mod: LlamaModule;
  try {
    // Through a variable: this module must type-check and run whether or not the llama engine is present.
    const spec = './llama-engine.ts';
    mod = (await import(/* @vite-ignore */ spec)) as LlamaModule;
  } catch (e) {
    return { reason: `cannot load trainer/serve/llama-engine.ts: ${(e as Error).message.split('\n')[0]}` };
  }
  const start = mod.LlamaCppEngine?.start;
  if (typeof start !== 'function')
    return { reason: 'trainer/serve/llama-engine.ts has no LlamaCppEngine.start(options)' };
  try {
    return { engine: await start.call(mod.LlamaCppEngine, { ...o, ...(log ? { log } : {}) }) };
  } catch (e) {
    return { reason: `llama.cpp could not serve ${o.checkpointDir}: ${(e as Error).message.split('\n')[0]}` };
  }
}

/** Builds engines of the chosen kind; 'llama' falls back to the tfjs worker, saying why, when llama.cpp cannot run. */
export function engineFactory(options: EngineFactoryOptions): EngineFactory {
  return async (target) => {
    if (target.gguf) {
      if (options.kind !== 'llama')
        throw new Error(
          `${target.modelName} is a GGUF model: only the llama engine serves it (not --engine ${options.kind})`,
        );
      return startGgufEngine(target, options);
    }
    const o: EngineStartOptions = {
      modelName: target.modelName,
      checkpointDir: target.checkpointDir,
      maxBatch: options.maxBatch,
      maxQueue: options.maxQueue,
    };
    if (options.kind === 'llama') {
      const r = await startLlama(o, options.log);
      if ('engine' in r) {
        options.log?.info({ model: o.modelName, engine: 'llama', checkpoint: o.checkpointDir }, 'serve: engine ready');
        return r.engine;
      }
      options.log?.warn(
        { reason: r.reason },
        'serve: llama.cpp engine unavailable; falling back to the tfjs worker (one request at a time)',
      );
    }
    const { TfjsEngine } = await import('./tfjs-engine.ts');
    const engine = await TfjsEngine.start({ ...o, ...(options.backend ? { backend: options.backend } : {}) });
    options.log?.info({ model: o.modelName, engine: 'tfjs', checkpoint: o.checkpointDir }, 'serve: engine ready');
    return engine;
  };
}

// ---------------------------------------------------------------------------------------------------------
// Serving a version, and following deploys

export interface ServeVersionOptions {
  slot: EngineSlot;
  factory: EngineFactory;
  log?: Logger;
}

/**
 * Puts `target` into service: when the slot already runs its checkpoint under the same name only the adapter is
 * loaded; otherwise a new engine is built (adapter included) before the swap, so a failure leaves the old one
 * serving. Resolves once new requests go to the target; `retired` settles when the old engine has drained and
 * closed.
 */
export class VersionServer {
  private current: { key: string; engine: ServingEngine } | null = null;
  /** Resolves when every engine swapped out so far has finished its requests and closed. */
  retired: Promise<void> = Promise.resolve();

  /** Adapters loaded on the live engine by deploys, oldest first. */
  private recent: string[] = [];

  constructor(private readonly o: ServeVersionOptions) {}

  /**
   * Keeps the deployed adapter and the one before it (a rollback, and requests still running on it) and unloads
   * older ones: every adapter holds memory (a context in llama.cpp, a whole merged model in the tfjs fallback).
   */
  private async unloadStale(engine: ServingEngine, current: string): Promise<void> {
    this.recent = [...this.recent.filter((n) => n !== current), current];
    while (this.recent.length > 2) {
      const old = this.recent.shift()!;
      await engine
        .unloadAdapter(old)
        .catch((e: unknown) =>
          this.o.log?.warn({ adapter: old, err: (e as Error).message }, 'serve: unloading an old adapter failed'),
        );
    }
  }

  async serve(target: ServeTarget): Promise<void> {
    const key = `${target.modelName}\0${target.checkpointDir}`;
    const live =
      this.current && this.current.engine === this.o.slot.engine && this.current.key === key
        ? this.current.engine
        : null;
    if (live) {
      if (target.adapter) {
        await live.loadAdapter(target.adapter.name, target.adapter.path);
        await this.unloadStale(live, target.adapter.name);
      }
      this.o.log?.info(
        { version: target.versionName, adapter: target.adapter?.name ?? null },
        'serve: serving version',
      );
      return;
    }
    const engine = await this.o.factory(target);
    try {
      if (target.adapter) await engine.loadAdapter(target.adapter.name, target.adapter.path);
    } catch (e) {
      await engine.close();
      throw e;
    }
    this.current = { key, engine };
    this.recent = target.adapter ? [target.adapter.name] : [];
    const swapped = this.o.slot
      .swap(engine)
      .catch((e: unknown) =>
        this.o.log?.error({ err: (e as Error).message }, 'serve: closing the previous engine failed'),
      );
    this.retired = Promise.all([this.retired, swapped]).then(() => {});
    this.o.log?.info(
      { version: target.versionName, model: target.modelName, adapter: target.adapter?.name ?? null },
      'serve: serving version',
    );
  }
}

export interface FollowOptions extends ServeVersionOptions {
  db: Database;
  /** Also look every this many ms (a dropped LISTEN connection must not leave an old version serving); default 30 s. */
  pollMs?: number;
  /** Called after each switch (tests, the console's status line). */
  onServe?: (version: PolicyVersion, target: ServeTarget) => void;
}

export interface Follower {
  readonly server: VersionServer;
  /** The version served now (null until one is deployed). */
  current(): PolicyVersion | null;
  stop(): Promise<void>;
}

/**
 * Serves the deployed version now (or waits for one) and switches whenever another is deployed. A version that
 * fails to load is logged and the previous one keeps serving; the next notification or poll tries again.
 */
export async function followDeployed(o: FollowOptions): Promise<Follower> {
  const server = new VersionServer(o);
  let served: PolicyVersion | null = null;
  let failedId: string | null = null;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;

  const check = async () => {
    const v = await deployedPolicy(o.db.prisma);
    if (!v) {
      if (!served) o.log?.info('serve: no policy version is deployed yet; waiting for a deploy');
      return;
    }
    if (v.id === served?.id || v.id === failedId) return;
    try {
      const target = await servingTarget(o.db.prisma, v);
      await server.serve(target);
      served = v;
      failedId = null;
      o.onServe?.(v, target);
    } catch (e) {
      failedId = v.id;
      o.log?.error(
        { version: v.name, err: (e as Error).message },
        'serve: cannot serve the deployed version; the previous one stays',
      );
    }
  };
  // One check at a time; notifications arriving during one coalesce into a single further check.
  const wake = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await check().catch((e: unknown) => o.log?.error({ err: (e as Error).message }, 'serve: deploy check failed'));
      } while (again && !stopped);
      running = null;
    })();
    return running;
  };

  const unlisten = await o.db.listen(POLICY_CHANNEL, () => {
    failedId = null; // an explicit deploy deserves a fresh try even of a version that failed before
    void wake();
  });
  await wake();
  const timer = setInterval(() => void wake(), o.pollMs ?? 30_000);
  timer.unref();
  return {
    server,
    current: () => served,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await unlisten();
      await running;
    },
  };
}
