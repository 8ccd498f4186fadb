// Sweetloop's own server inside the bot's process: how the bot serves local checkpoint versions through the same
// protocol (and the same endpoint agent and chat client) as any other model. One OpenAI-compatible server
// (server.ts) listens on 127.0.0.1 at a free port; behind it a router holds one engine per checkpoint version in
// use (llama.cpp, or the tfjs worker when llama.cpp cannot load it: follow.ts's engineFactory decides per version,
// each reason logged once) and sends each request to the engine named by its `model`. A version stays loaded while anyone
// holds it: the deployed version (follow()), and every agent of a running session (acquire()/release()), so a
// deploy loads the new version first and a session that started on the old one keeps being answered by it until
// its agent is closed.
import type { Logger } from '../../tasks/logger.ts';
import type { ChatMessage } from '../../tasks/agent.ts';
import type { PolicyVersion, PrismaClient } from '../../prisma/generated/client.ts';
import type { BackendChoice } from '../model/backend.ts';
import { EngineRequestError } from './engine-contract.ts';
import type { EngineRequest, EngineStats, EngineStream, ServingEngine } from './engine-contract.ts';
import { engineFactory, servingTarget, type EngineFactory, type EngineKind } from './follow.ts';
import { startServer, type RunningServer } from './server.ts';

/** How the bot serves local checkpoints (LOCAL_SERVE_* in bin/config.ts). */
export interface LocalServeSettings {
  /** llama.cpp (batched), falling back to tfjs when it cannot load; or tfjs (one request at a time). */
  engine: EngineKind;
  /** Most sequences one version's engine decodes together. */
  maxBatch: number;
  /** Most requests waiting beyond the batch before the server answers 429 (the chat client retries those). */
  maxQueue: number;
  /** tfjs backend of the fallback engine's worker. */
  backend?: BackendChoice;
  /** The bot asks this server for per-token logprobs of every reply (LOCAL_SERVE_LOGPROBS; default false). */
  logprobs?: boolean;
}

/** A checkpoint version being served locally: what an endpoint agent needs to talk to it. */
export interface LocalModel {
  /** Base URL for OpenAI clients (`http://127.0.0.1:PORT/v1`). */
  url: string;
  /** The `model` to ask for: the version's name. */
  model: string;
  /** The engine answering it (provenance.engine). */
  engine: EngineKind;
  /** The checkpoint directory: its tokenizer and chat template count prompt tokens exactly. */
  checkpointDir: string;
  /** Tokens one sequence holds: the checkpoint's positions, or less where the engine's context is smaller. */
  contextWindow: number;
  /** Requests worth having in flight at once (batch plus queue): the client's cap, so the server does the queueing. */
  maxInFlight: number;
  /** Exact prompt tokens as the engine renders them (a foreign GGUF: its own template and vocabulary). */
  countTokens?: (messages: readonly ChatMessage[]) => number;
  /** A gguf version's file (provenance). */
  weights?: { file: string; sha256: string; quantization: string };
}

/** What trainer/policies/agent-for.ts needs from local serving. */
export interface LocalCheckpointServer {
  /** Loads the version (if it is not loaded) and holds it until release(). */
  acquire(policy: PolicyVersion): Promise<LocalModel>;
  release(policy: PolicyVersion): Promise<void>;
}

interface Loaded {
  engine: ServingEngine;
  kind: EngineKind;
  model: LocalModel;
  /** Requests running on it now (an unload waits for them). */
  inFlight: number;
  drained?: () => void;
}

interface Entry {
  holds: number;
  loading: Promise<Loaded>;
  loaded: Loaded | null;
}

/**
 * The engines of several versions behind one ServingEngine, for server.ts, which routes by model name: the
 * primary (deployed) version is its `modelName`, the other loaded versions are listed as its `adapters()`, and a
 * request for one of those arrives with `adapter` set to its name. Counters add up over engines, closed ones
 * included, so /metrics stays monotonic across deploys.
 */
class VersionRouter implements ServingEngine {
  readonly engines = new Map<string, Loaded>();
  primary: string | null = null;
  private retiredSteps = 0;
  private retiredSeqs = 0;

  get modelName(): string {
    if (this.primary && this.engines.has(this.primary)) return this.primary;
    return this.engines.keys().next().value ?? '(none loaded)';
  }

  adapters(): string[] {
    const first = this.modelName;
    return [...this.engines.keys()].filter((n) => n !== first);
  }

  generate(req: EngineRequest): EngineStream {
    const name = req.adapter ?? this.modelName;
    const l = this.engines.get(name);
    if (!l) throw new EngineRequestError(`no version named "${name}" is loaded`);
    const stream = l.engine.generate({ ...req, adapter: null });
    l.inFlight++;
    const done = () => {
      if (--l.inFlight === 0) l.drained?.();
    };
    stream.result.then(done, done);
    return stream;
  }

  stats(): EngineStats {
    let running = 0;
    let queued = 0;
    let maxBatch = 0;
    let maxQueue = 0;
    let steps = this.retiredSteps;
    let seqs = this.retiredSeqs;
    for (const l of this.engines.values()) {
      const s = l.engine.stats();
      running += s.running;
      queued += s.queued;
      maxBatch += s.maxBatch;
      maxQueue += s.maxQueue;
      steps += s.decodeSteps ?? 0;
      seqs += s.stepSequences ?? 0;
    }
    return { running, queued, maxBatch, maxQueue, decodeSteps: steps, stepSequences: seqs };
  }

  /** Takes a version out of service: new requests for it get 404; running ones finish, then its engine closes. */
  async remove(name: string): Promise<void> {
    const l = this.engines.get(name);
    if (!l) return;
    this.engines.delete(name);
    if (l.inFlight > 0) await new Promise<void>((resolve) => (l.drained = resolve));
    const s = l.engine.stats();
    this.retiredSteps += s.decodeSteps ?? 0;
    this.retiredSeqs += s.stepSequences ?? 0;
    await l.engine.close();
  }

  async loadAdapter(): Promise<void> {
    throw new Error('the local server loads versions, not adapters');
  }

  async unloadAdapter(): Promise<void> {}

  async close(): Promise<void> {
    for (const name of [...this.engines.keys()]) await this.remove(name);
  }
}

export interface LocalServingOptions extends LocalServeSettings {
  prisma: PrismaClient;
  log?: Logger;
}

export class LocalServing implements LocalCheckpointServer {
  private readonly entries = new Map<string, Entry>();
  private readonly factory: EngineFactory;
  private deployed: PolicyVersion | null = null;
  private following: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly o: LocalServingOptions,
    private readonly router: VersionRouter,
    readonly server: RunningServer,
  ) {
    this.factory = engineFactory({
      kind: o.engine,
      maxBatch: o.maxBatch,
      maxQueue: o.maxQueue,
      ...(o.backend ? { backend: o.backend } : {}),
      ...(o.log ? { log: onceLogger(o.log) } : {}),
    });
  }

  /** Listens on 127.0.0.1 at a free port; nothing is loaded until a version is followed or acquired. */
  static async start(o: LocalServingOptions): Promise<LocalServing> {
    const router = new VersionRouter();
    const server = await startServer({ engine: router, port: 0, host: '127.0.0.1', ...(o.log ? { log: o.log } : {}) });
    return new LocalServing(o, router, server);
  }

  get url(): string {
    return `${this.server.url}/v1`;
  }

  /** Names of the versions loaded now. */
  loaded(): string[] {
    return [...this.router.engines.keys()];
  }

  async acquire(policy: PolicyVersion): Promise<LocalModel> {
    if (this.closed) throw new Error('local serving is closed');
    let e = this.entries.get(policy.name);
    if (!e) {
      const entry: Entry = { holds: 0, loading: null as unknown as Promise<Loaded>, loaded: null };
      entry.loading = this.load(policy).then((l) => {
        entry.loaded = l;
        this.router.engines.set(policy.name, l);
        return l;
      });
      entry.loading.catch(() => {
        if (this.entries.get(policy.name) === entry) this.entries.delete(policy.name);
      });
      this.entries.set(policy.name, entry);
      e = entry;
    }
    e.holds++;
    try {
      return (await e.loading).model;
    } catch (err) {
      e.holds--;
      throw err;
    }
  }

  async release(policy: PolicyVersion): Promise<void> {
    const e = this.entries.get(policy.name);
    if (!e || e.holds === 0) return;
    if (--e.holds > 0) return;
    this.entries.delete(policy.name);
    await e.loading.then(
      () => this.router.remove(policy.name),
      () => {},
    );
    this.o.log?.info({ version: policy.name }, 'local serve: version unloaded (no session uses it)');
  }

  /**
   * Serves `v` from now on as the deployed version (a checkpoint; other kinds are served elsewhere): loads it
   * before letting go of the previous one, which stays loaded while sessions still hold it. Deploys are applied
   * one at a time, in order.
   */
  follow(v: PolicyVersion | null): Promise<void> {
    this.following = this.following.then(async () => {
      if (this.closed || v?.id === this.deployed?.id) return;
      const previous = this.deployed;
      this.deployed = null;
      if (v?.kind === 'checkpoint' || v?.kind === 'gguf') {
        try {
          await this.acquire(v);
          this.deployed = v;
          this.router.primary = v.name;
        } catch (err) {
          // Not held: the next session on it tries to load it again (its agent is loaded on first use).
          this.o.log?.error(
            { version: v.name, err: (err as Error).message },
            'local serve: cannot load the deployed version',
          );
        }
      }
      // Sessions still on the previous version hold it themselves.
      if (previous) await this.release(previous);
    });
    return this.following;
  }

  private async load(policy: PolicyVersion): Promise<Loaded> {
    if (policy.kind !== 'checkpoint' && policy.kind !== 'gguf')
      throw new Error(
        `policy version "${policy.name}" is a ${policy.kind}: only checkpoints and GGUF models are served locally`,
      );
    const target = await servingTarget(this.o.prisma, policy);
    if (target.gguf) return this.loadGguf(policy, target.modelName, target.gguf.file);
    const [engine, { TfjsEngine }, { readConfig }] = await Promise.all([
      this.factory(target),
      import('./tfjs-engine.ts'),
      import('../model/checkpoint.ts'),
    ]);
    const kind: EngineKind = engine instanceof TfjsEngine ? 'tfjs' : 'llama';
    let window: number;
    try {
      window = (await readConfig(target.checkpointDir)).maxPositionEmbeddings;
    } catch (err) {
      await engine.close();
      throw err;
    }
    const engineContext = (engine as { contextSize?: unknown }).contextSize;
    if (typeof engineContext === 'number' && engineContext > 0) window = Math.min(window, engineContext);
    if (this.closed) {
      await engine.close();
      throw new Error('local serving is closed');
    }
    this.o.log?.info({ version: policy.name, engine: kind, url: this.url }, 'local serve: version loaded');
    return {
      engine,
      kind,
      inFlight: 0,
      model: {
        url: this.url,
        model: target.modelName,
        engine: kind,
        checkpointDir: target.checkpointDir,
        contextWindow: window,
        maxInFlight: this.o.maxBatch + this.o.maxQueue,
      },
    };
  }

  /** A gguf version: llama.cpp with the file's own tokenizer and template, which also count the agent's prompts. */
  private async loadGguf(policy: PolicyVersion, modelName: string, file: string): Promise<Loaded> {
    const engine = await this.factory({
      modelName,
      checkpointDir: file,
      gguf: { file, sha256: policy.checkpointSha256 },
    });
    const llama = engine as unknown as { contextSize: number; countPromptTokens(m: readonly ChatMessage[]): number };
    if (this.closed) {
      await engine.close();
      throw new Error('local serving is closed');
    }
    const quantization = (policy.serving as { quantization?: unknown } | null)?.quantization;
    this.o.log?.info(
      { version: policy.name, engine: 'llama', gguf: file, url: this.url },
      'local serve: version loaded',
    );
    return {
      engine,
      kind: 'llama',
      inFlight: 0,
      model: {
        url: this.url,
        model: modelName,
        engine: 'llama',
        checkpointDir: file,
        contextWindow: llama.contextSize,
        maxInFlight: this.o.maxBatch + this.o.maxQueue,
        countTokens: (m) => llama.countPromptTokens(m),
        weights: {
          file,
          sha256: policy.checkpointSha256 ?? '',
          quantization: typeof quantization === 'string' ? quantization : 'unknown',
        },
      },
    };
  }

  /** Stops listening, lets running requests finish, closes every engine. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.following.catch(() => {});
    await Promise.allSettled([...this.entries.values()].map((e) => e.loading));
    this.entries.clear();
    await this.server.close();
  }
}

/**
 * `log` with each warning said once: every version tries llama.cpp first (a checkpoint it refuses must not
 * condemn the next one to tfjs), and a reason that holds for all of them (no binary for this platform) is
 * worth one line, not one per load.
 */
function onceLogger(log: Logger): Logger {
  const said = new Set<string>();
  const once = Object.create(log) as Logger;
  once.warn = ((obj: unknown, msg?: string, ...rest: unknown[]) => {
    const key = `${JSON.stringify(obj)}\0${msg ?? ''}`;
    if (said.has(key)) return;
    said.add(key);
    (log.warn as (...a: unknown[]) => void)(obj, msg, ...rest);
  }) as Logger['warn'];
  return once;
}
