// Builds a session engine from plain settings: the database, the policy watcher, the agent loader (checkpoint
// versions served by Sweetloop's own OpenAI-compatible server, started in this process on first use and following
// deploys; other versions by their endpoints), the evaluators and the page renderer. Shared by
// `sweetloop start|bot|console`, the tests and the benchmark, which may swap the agent loader.
import type { Agent } from '../tasks/agent.ts';
import { openDatabase, type Database } from '../prisma/db.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import type { Logger } from '../tasks/logger.ts';
import { PolicyWatcher } from './deploy-watch.ts';
import { SessionEngine, type Channel, type EngineObserver } from './session/engine.ts';
import type { Limits } from './limits.ts';
import { BotServices } from './services.ts';
import type { PrivacySettings } from './privacy.ts';
import type { Evaluate, RenderPage } from './session/types.ts';
import { createScorer } from '../tasks/scorer.ts';
import type { Renderer } from '../tasks/render.ts';
import type { LocalServeSettings, LocalServing } from '../trainer/serve/local.ts';
import { SERVE_DEFAULTS } from '../trainer/serve/defaults.ts';

export interface RuntimeOptions {
  channel: Channel;
  /** An open database to use (not closed by the runtime); otherwise one is opened from the two fields below. */
  db?: Database;
  databaseUrl?: string | undefined;
  pgliteDir?: string;
  log?: Logger;
  maxTurns: number;
  idleMinutes: number;
  ratingWeight?: number;
  /** How long the agent may take to load and answer before the person is told it is unavailable (the engine's default: 2 minutes). */
  agentWaitMs?: number;
  /** How long a step owed with nobody working on it may wait before it is overdue (the engine's default: 30 s). */
  overdueMs?: number;
  /** How long the agent may write before the person sees it typing (the engine's default: 2 s). */
  typingAfterMs?: number;
  bwrapPath?: string;
  pythonPath?: string;
  chromiumPath?: string;
  /** How often the deployed policy is re-read besides NOTIFY (ms). */
  policyPollMs?: number;
  /** How the default loader serves checkpoint versions (engine, batch and queue caps); default: `sweetloop serve`'s. */
  localServe?: LocalServeSettings;
  /** Replaces the default loader (checkpoint versions through the local server, others through their endpoints). */
  loadAgent?: (policy: PolicyVersion) => Promise<Agent>;
  /** Replaces the default evaluators. */
  evaluate?: Evaluate;
  /**
   * Replaces the default renderer (one Chromium, started here); `null` runs without one (frontend sessions
   * refused). With a replacement, the default evaluator cannot score frontend answers: pass `evaluate` too.
   */
  render?: RenderPage | null;
  /** Per-person limits (bot/limits.ts); unset: none. */
  limits?: Limits;
  /** Answers scored at once; the others wait in arrival order (bot/session/scoring.ts). Default: the engine's (2). */
  scoringPool?: number;
  /** Told what the engine does, for metrics (bot/health.ts). */
  observer?: EngineObserver;
  /** Deletions (bot/privacy.ts): the keyed hash's secret, the folders whose export files lose a deleted person's rows. */
  privacy?: PrivacySettings;
}

export interface Runtime {
  db: Database;
  engine: SessionEngine;
  services: BotServices;
  policies: PolicyWatcher;
  /** The local server of checkpoint versions, once the default loader has started it (null until then). */
  localServing(): LocalServing | null;
  close(): Promise<void>;
}

/**
 * The agent of a policy version of any kind, always over the OpenAI protocol: a checkpoint served by `local` (this
 * process's own server), a model behind an OpenAI-compatible server, or a LoRA adapter loaded into such a server
 * on first use and unloaded once retired.
 */
export async function defaultLoadAgent(
  policy: PolicyVersion,
  db: Database,
  log?: Logger,
  local?: () => Promise<LocalServing>,
  localLogprobs = false,
): Promise<Agent> {
  const { loadAgent, servedLocally } = await import('../trainer/policies/agent-for.ts');
  return loadAgent(policy, {
    prisma: db.prisma,
    localLogprobs,
    ...(log ? { log } : {}),
    ...(servedLocally(policy.kind) && local ? { local: await local() } : {}),
  });
}

const RETIRED_SWEEP_MS = 60_000;

export async function createRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const ownDb = !opts.db;
  const db =
    opts.db ??
    (await openDatabase({
      databaseUrl: opts.databaseUrl,
      pgliteDir: opts.pgliteDir ?? './data/pglite',
      log: opts.log,
    }));
  const closers: (() => Promise<void>)[] = [];
  try {
    const policies = new PolicyWatcher(db, opts.policyPollMs ?? (db.kind === 'pglite' ? 5_000 : 30_000), opts.log);
    await policies.start();
    closers.push(() => policies.stop());
    // Started on the first checkpoint agent (a runtime with its own loader never listens); from then on it loads
    // each deployed checkpoint as it is deployed. Closed after the engine, whose agents release their versions.
    let local: Promise<LocalServing> | null = null;
    let localNow: LocalServing | null = null;
    const startLocal = (): Promise<LocalServing> =>
      (local ??= (async () => {
        const { LocalServing } = await import('../trainer/serve/local.ts');
        const s = opts.localServe ?? {
          engine: SERVE_DEFAULTS.engine,
          maxBatch: SERVE_DEFAULTS.maxBatch,
          maxQueue: SERVE_DEFAULTS.maxQueue,
        };
        const l = await LocalServing.start({ ...s, prisma: db.prisma, ...(opts.log ? { log: opts.log } : {}) });
        localNow = l;
        await l.follow(policies.deployed);
        return l;
      })().catch((err: unknown) => {
        local = null;
        throw err;
      }));
    closers.push(async () => {
      const l = await local?.catch(() => null);
      await l?.close();
    });
    policies.onChange((v) => void localNow?.follow(v));
    let render: RenderPage | undefined;
    let renderer: Renderer | null = null;
    if (opts.render === undefined) {
      try {
        const { Renderer } = await import('../tasks/render.ts');
        const r = await Renderer.launch({
          ...(opts.chromiumPath ? { executablePath: opts.chromiumPath } : {}),
          ...(opts.log ? { log: opts.log } : {}),
        });
        renderer = r;
        render = async (html) => (await r.render(html)).png;
        closers.push(() => r.close());
      } catch (err) {
        opts.log?.warn({ err: (err as Error).message }, 'no page renderer: frontend sessions are disabled');
      }
    } else if (opts.render) {
      render = opts.render;
    }
    let evaluate = opts.evaluate;
    if (!evaluate) {
      const scorer = createScorer({ bwrapPath: opts.bwrapPath, pythonPath: opts.pythonPath, renderer, log: opts.log });
      evaluate = (task, answer) => scorer.evaluate(task, answer);
    }
    const engine = new SessionEngine(
      {
        db,
        policies,
        loadAgent:
          opts.loadAgent ??
          ((policy) => defaultLoadAgent(policy, db, opts.log, startLocal, opts.localServe?.logprobs ?? false)),
        evaluate,
        ...(render ? { render } : {}),
        ...(opts.log ? { log: opts.log } : {}),
        ...(opts.observer ? { observer: opts.observer } : {}),
      },
      {
        channel: opts.channel,
        maxTurns: opts.maxTurns,
        idleMinutes: opts.idleMinutes,
        ratingWeight: opts.ratingWeight ?? 0,
        ...(opts.agentWaitMs !== undefined ? { agentWaitMs: opts.agentWaitMs } : {}),
        ...(opts.overdueMs !== undefined ? { overdueMs: opts.overdueMs } : {}),
        ...(opts.typingAfterMs !== undefined ? { typingAfterMs: opts.typingAfterMs } : {}),
        ...(opts.limits ? { limits: opts.limits } : {}),
        ...(opts.scoringPool !== undefined ? { scoringPool: opts.scoringPool } : {}),
        ...(opts.privacy ? { erasureKey: opts.privacy.key } : {}),
      },
    );
    closers.push(() => engine.close());
    // A deploy retires a version: its agent is closed once no running session still uses it.
    const evict = () =>
      void engine
        .evictRetired()
        .catch((err) => opts.log?.warn({ err: (err as Error).message }, 'cannot evict retired agents'));
    policies.onChange(evict);
    // The last session on a retired version ends some time after the deploy: look again now and then, so its
    // engine in the local server is unloaded without waiting for the next deploy.
    const sweeper = setInterval(evict, RETIRED_SWEEP_MS);
    sweeper.unref();
    closers.push(async () => clearInterval(sweeper));
    return {
      db,
      engine,
      services: new BotServices(db, opts.privacy),
      policies,
      localServing: () => localNow,
      close: async () => {
        for (const c of closers.reverse()) await c().catch(() => {});
        if (ownDb) await db.close();
      },
    };
  } catch (err) {
    for (const c of closers.reverse()) await c().catch(() => {});
    if (ownDb) await db.close();
    throw err;
  }
}
