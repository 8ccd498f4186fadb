// What an operator watches: /health/live (the process answers), /health/ready (gateway connected, database
// reachable, a policy served, no overdue work; 503 with the failing checks otherwise) and /metrics (Prometheus
// text: active and overdue sessions, turns, interaction acknowledgement and turn latency, evaluation failures,
// queue depth, errors).
// The metrics are the engine's observer (counts and latencies only, never text, ids or secrets).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineObserver } from './session/engine.ts';

const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 120];

export class BotMetrics implements EngineObserver {
  readonly registry = new Registry();
  readonly turns: Counter<'role'>;
  readonly ackSeconds: Histogram;
  readonly turnSeconds: Histogram;
  readonly evaluationFailures: Counter;
  readonly errors: Counter<'where'>;
  readonly queueDepth: Gauge;
  private queued = 0;

  /**
   * `activeSessions` and `overdueSessions` (sessions whose next step nobody works on past its time, see
   * bot/session/sweep.ts) are read at each scrape (null when they cannot be read now: the gauge keeps its last value),
   * and so is `scoring`, the scoring pool's answers waiting and being scored (bot/session/scoring.ts).
   */
  constructor(
    activeSessions?: () => Promise<number | null>,
    overdueSessions?: () => Promise<number | null>,
    scoring?: () => { queued: number; running: number },
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: 'sweetloop_bot_' });
    this.turns = new Counter({
      name: 'sweetloop_turns_total',
      help: 'Dialogue turns stored',
      labelNames: ['role'],
      registers: [this.registry],
    });
    this.ackSeconds = new Histogram({
      name: 'sweetloop_interaction_ack_seconds',
      help: 'Time from an interaction being created to its acknowledgement',
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
    this.turnSeconds = new Histogram({
      name: 'sweetloop_agent_turn_seconds',
      help: 'Time the agent took to write a turn',
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
    this.evaluationFailures = new Counter({
      name: 'sweetloop_evaluation_failures_total',
      help: 'Answers that could not be scored',
      registers: [this.registry],
    });
    this.errors = new Counter({
      name: 'sweetloop_errors_total',
      help: 'Internal errors shown to people as an error id',
      labelNames: ['where'],
      registers: [this.registry],
    });
    const self = this;
    this.queueDepth = new Gauge({
      name: 'sweetloop_queue_depth',
      help: 'Messages and interactions being handled now',
      registers: [this.registry],
      collect() {
        this.set(self.queued);
      },
    });
    new Gauge({
      name: 'sweetloop_active_sessions',
      help: 'Sessions running now',
      registers: [this.registry],
      async collect() {
        const n = activeSessions ? await activeSessions().catch(() => null) : null;
        if (n !== null) this.set(n);
      },
    });
    new Gauge({
      name: 'sweetloop_scoring_answers',
      help: 'Answers waiting for a place in the scoring pool (state="queued") and being scored (state="running")',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        const load = scoring?.();
        if (!load) return;
        this.set({ state: 'queued' }, load.queued);
        this.set({ state: 'running' }, load.running);
      },
    });
    new Gauge({
      name: 'sweetloop_overdue_sessions',
      help: 'Sessions whose next step (agent turn, showing it, result, rating prompt) nobody has worked on past its time',
      registers: [this.registry],
      async collect() {
        const n = overdueSessions ? await overdueSessions().catch(() => null) : null;
        if (n !== null) this.set(n);
      },
    });
  }

  agentTurn(ms: number): void {
    this.turns.inc({ role: 'agent' });
    this.turnSeconds.observe(ms / 1000);
  }

  humanTurn(): void {
    this.turns.inc({ role: 'human' });
  }

  evaluationFailed(): void {
    this.evaluationFailures.inc();
  }

  /** Counts a piece of work for the queue depth while `fn` runs. */
  async track<T>(fn: () => Promise<T>): Promise<T> {
    this.queued++;
    try {
      return await fn();
    } finally {
      this.queued--;
    }
  }

  get inFlight(): number {
    return this.queued;
  }
}

/** A readiness check: passed or not, or not with the reason (shown under `reasons` in /health/ready). */
export type CheckResult = boolean | { ok: boolean; reason?: string };

export interface ReadinessChecks {
  [name: string]: () => Promise<CheckResult> | CheckResult;
}

export interface HealthServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The trainer service's metrics: process metrics and the training runs by status (read from the database at
 * each scrape; kept at their last value while it is unreachable).
 */
export function trainerMetrics(
  runsByStatus: () => Promise<Record<string, number>>,
  /** The service's state (trainer/service.ts ServiceStatus): one gauge a state, 1 for the current one. */
  service?: { states: readonly string[]; now: () => { state: string; failures: number; polls: number } },
): { registry: Registry } {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'sweetloop_trainer_' });
  new Gauge({
    name: 'sweetloop_training_runs',
    help: 'Training runs by status',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      const counts = await runsByStatus().catch(() => null);
      if (counts) for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
    },
  });
  if (service) {
    new Gauge({
      name: 'sweetloop_trainer_state',
      help: 'What the trainer service is doing: 1 for its current state (cannot-train: it cannot train what is deployed; backing-off: its cycles fail), 0 for the others',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        const now = service.now().state;
        for (const state of service.states) this.set({ state }, state === now ? 1 : 0);
      },
    });
    new Gauge({
      name: 'sweetloop_trainer_consecutive_failures',
      help: 'Training cycles failed in a row (0 after a cycle that did not fail)',
      registers: [registry],
      collect() {
        this.set(service.now().failures);
      },
    });
    new Gauge({
      name: 'sweetloop_trainer_polls',
      help: 'Times the trainer service has looked at the deployed version and the data since it started',
      registers: [registry],
      collect() {
        this.set(service.now().polls);
      },
    });
  }
  return { registry };
}

/** A check that does not answer within this time counts as failed (an unreachable database hangs). */
const CHECK_TIMEOUT_MS = 2_000;

async function runCheck(check: () => Promise<CheckResult> | CheckResult): Promise<{ ok: boolean; reason?: string }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ ok: boolean; reason?: string }>(
    (resolve) =>
      (timer = setTimeout(
        () => resolve({ ok: false, reason: `no answer within ${CHECK_TIMEOUT_MS} ms` }),
        CHECK_TIMEOUT_MS,
      )),
  );
  const asResult = (r: CheckResult) => (typeof r === 'boolean' ? { ok: r } : r);
  try {
    return await Promise.race([
      Promise.resolve()
        .then(check)
        .then(asResult, () => ({ ok: false })),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Serves /health/live, /health/ready and /metrics on `port` (0: any free port; see the returned port), on
 * 127.0.0.1 unless `host` says otherwise: they answer without a token.
 */
export async function startHealthServer(o: {
  port: number;
  host?: string;
  metrics: { registry: Registry };
  ready: ReadinessChecks;
  live?: () => boolean;
}): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET') return json(405, { error: 'method not allowed' });
    if (path === '/health/live' || path === '/health') {
      const alive = o.live ? o.live() : true;
      return json(alive ? 200 : 503, { status: alive ? 'live' : 'stopping' });
    }
    if (path === '/health/ready') {
      void Promise.all(
        Object.entries(o.ready).map(async ([name, check]) => [name, await runCheck(check)] as const),
      ).then((results) => {
        const checks = Object.fromEntries(results.map(([name, r]) => [name, r.ok]));
        const reasons = Object.fromEntries(
          results.filter(([, r]) => !r.ok && r.reason).map(([name, r]) => [name, r.reason]),
        );
        const ok = results.every(([, r]) => r.ok);
        json(ok ? 200 : 503, {
          status: ok ? 'ready' : 'not ready',
          checks,
          ...(Object.keys(reasons).length ? { reasons } : {}),
        });
      });
      return;
    }
    if (path === '/metrics') {
      void o.metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': o.metrics.registry.contentType });
          res.end(text);
        },
        (err) => json(500, { error: (err as Error).message }),
      );
      return;
    }
    json(404, { error: 'not found' });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host ?? '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
