// The bot process of bench/bot.ts: the real runtime (bot/runtime.ts, its default agent loader and sandboxed scorer)
// and Discord client (bot/discord/bot.ts) over the benchmark's Postgres database and fake Discord, as `sweetloop
// bot` runs them, in a process of its own so that what it measures of itself is the bot's alone. It answers the
// driver over IPC: 'reset' starts a phase (CPU, event-loop delay and query counters from zero, heap after a GC),
// 'heap' reads the heap after a GC (all sessions of the phase open), 'stats' ends the phase, 'stop' exits (a
// CPU profile, when asked for with --cpu-prof, is written then).
// Settings from the environment: BENCH_DB_URL, BENCH_API_BASE, BENCH_GUILD_ID, BENCH_MAX_TURNS,
// BENCH_SCORING_POOL, BENCH_LOG_FILE, BENCH_DB_POOL_SIZE (optional: the pool's size, DATABASE_POOL_SIZE);
// diagnostics: BENCH_DIAGNOSTIC_GLOBAL_RPS (discord.js's global limit), BENCH_TURN_MARKS (a file for each turn's
// moments), BENCH_DB_SOCKET (Postgres's Unix socket directory, instead of TCP).
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance, type EventLoopUtilization } from 'node:perf_hooks';
import pg from 'pg';
import pino from 'pino';
import { openDatabase } from '../prisma/db.ts';
import { createRuntime } from '../bot/runtime.ts';
import { DiscordBot } from '../bot/discord/bot.ts';

const env = process.env;
const need = (k: string): string =>
  env[k] ??
  (() => {
    throw new Error(`bench bot process: ${k} is not set`);
  })();

// Database round trips: every query any pg client of this process sends (Prisma's adapter goes through pg.Client).
// By statement (its first 80 characters), to tell which dominate: the driver prints the top ones on stderr; and by
// kind (statementKind: the verb and the table), for the whole phase and for the work of each person's message.
let queries = 0;
const statements = new Map<string, number>();
const kinds = new Map<string, number>();
const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
/** The work one person's message started (discord.js's messageCreate, and everything it awaited): its round trips and pool waits. */
type TurnWork = { messageId: string; kinds: Map<string, number>; poolWaitMs: number; marks: [string, number][] };
const turnContext = new AsyncLocalStorage<TurnWork>();
// A diagnostic (BENCH_TURN_MARKS=FILE): each turn's moments (its statements sent and done, its requests, its pool
// waits) written to FILE at 'stats', to see where a turn's time goes.
const MARKS = env.BENCH_TURN_MARKS;
const mark = (label: string) => MARKS && turnContext.getStore()?.marks.push([label, performance.now()]);
const kindOf = new Map<string, string>();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  queries++;
  const a = args[0] as string | { text?: string };
  const text = typeof a === 'string' ? a : (a?.text ?? '');
  count(statements, text.slice(0, 80));
  // Memoised by text: the bench's own parsing was 0.5-1 % of the bot's CPU at 200 people (its CPU profile).
  let kind = kindOf.get(text);
  if (kind === undefined) kindOf.set(text, (kind = statementKind(text)));
  count(kinds, kind);
  const turn = turnContext.getStore();
  if (turn) count(turn.kinds, kind);
  if (turn && MARKS) {
    turn.marks.push([`${kind} sent`, performance.now()]);
    const cb = args.at(-1);
    if (typeof cb === 'function')
      args[args.length - 1] = (...r: unknown[]) => (turn.marks.push([`${kind} done`, performance.now()]), cb(...r));
  }
  const hold = holding.get(this);
  const q0 = performance.now();
  const spent = () => hold && (hold.queryMs += performance.now() - q0);
  if (hold) {
    hold.kinds.push(kind);
    // pool.query (and so Prisma's statements outside a transaction) passes a callback; a transaction awaits.
    const cb = args.at(-1);
    if (typeof cb === 'function') args[args.length - 1] = (...r: unknown[]) => (spent(), cb(...r));
  }
  const out = (query as (...a: unknown[]) => unknown).apply(this, args);
  if (hold && out instanceof Promise) out.then(spent, spent);
  return out;
} as typeof query;

// Each checkout of a pool connection: how long it was held, the statements sent on it, and how much of the hold
// was spent in them (the rest: awaits of other work while holding it), and whether a person's message started it.
type Hold = { kinds: string[]; queryMs: number; t0: number; turn: boolean; waitMs: number };
const holding = new WeakMap<pg.Client, Hold>();
const holds: { key: string; holdMs: number; queryMs: number; turn: boolean; waitMs: number }[] = [];
const held = (client: pg.PoolClient, waitMs: number): void => {
  const hold: Hold = { kinds: [], queryMs: 0, t0: performance.now(), turn: !!turnContext.getStore(), waitMs };
  holding.set(client, hold);
  const release = client.release;
  client.release = function (this: pg.PoolClient, ...a: unknown[]) {
    holding.delete(client);
    client.release = release;
    const k = hold.kinds.filter((x) => x !== 'BEGIN' && x !== 'COMMIT');
    holds.push({
      key: (hold.kinds.includes('BEGIN') ? 'tx: ' : '') + k.slice(0, 4).join(' + ') + (k.length > 4 ? ' + ...' : ''),
      holdMs: performance.now() - hold.t0,
      queryMs: hold.queryMs,
      turn: hold.turn,
      waitMs: hold.waitMs,
    });
    return (release as (...a: unknown[]) => void).apply(this, a);
  } as typeof release;
};

// Waiting for one of the pool's connections: from asking the pool to getting a client (pg.Pool.connect, which
// pool.query and Prisma's adapter both go through).
const poolWaits: number[] = [];
const waited = (t0: number): number => {
  const ms = performance.now() - t0;
  poolWaits.push(ms);
  mark('pool got');
  const turn = turnContext.getStore();
  if (turn) turn.poolWaitMs += ms;
  return ms;
};
const connect = pg.Pool.prototype.connect;
pg.Pool.prototype.connect = function (
  this: pg.Pool,
  cb?: (err: Error | undefined, client?: pg.PoolClient, done?: unknown) => void,
) {
  const t0 = performance.now();
  mark('pool asked');
  // A waiting caller's callback is called when another caller releases its connection, in that caller's async
  // context: bound here to the asker's, so that the wait and the statements sent on the connection count for the
  // turn that asked (unbound, they counted for the turn that released it: bench/HISTORY.md, 2026-12-07 10:50-11:55).
  if (cb) {
    const asker = AsyncResource.bind(
      (err: Error | undefined, client: pg.PoolClient, done: unknown) => (
        client && held(client, waited(t0)), cb(err, client, done)
      ),
    );
    return (connect as (cb: unknown) => void).call(this, asker);
  }
  return (connect as () => Promise<pg.PoolClient>).call(this).then((c) => (held(c, waited(t0)), c));
} as typeof connect;

// Connections the pool opened (each a Postgres backend started: on a busy 2-core machine, a wait of its own).
const opened: number[] = [];
const clientConnect = pg.Client.prototype.connect;
pg.Client.prototype.connect = function (this: pg.Client, cb?: (err: Error) => void) {
  const t0 = performance.now();
  if (cb)
    return (clientConnect as (cb: unknown) => void).call(
      this,
      (err: Error) => (opened.push(performance.now() - t0), cb(err)),
    );
  return (clientConnect as () => Promise<unknown>).call(this).then(() => void opened.push(performance.now() - t0));
} as typeof clientConnect;

// The model's requests (the agent's turn) and Discord's REST calls go through fetch (undici): marked when asked.
const fetch0 = globalThis.fetch;
globalThis.fetch = ((...a: Parameters<typeof fetch>) => {
  const url = String(a[0] instanceof Request ? a[0].url : a[0]);
  mark(`fetch ${url.includes('/chat/completions') ? 'model' : 'other'}`);
  return fetch0(...a).then((r) => (mark(`fetch ${url.includes('/chat/completions') ? 'model' : 'other'} headers`), r));
}) as typeof fetch;

/** The URL with libpq's `host` parameter naming a socket directory (prisma/db.ts parsePostgresUrl reads it). */
function viaSocket(url: string, dir: string): string {
  const u = new URL(url);
  u.searchParams.set('host', dir);
  return u.toString();
}

// Logged as in production (info), to a file.
const log = pino({ level: 'info', base: null }, pino.destination({ dest: need('BENCH_LOG_FILE'), sync: false }));
const db = await openDatabase({
  // A diagnostic (BENCH_DB_SOCKET=DIR): the same database through Postgres's Unix socket in DIR, not TCP.
  databaseUrl: env.BENCH_DB_SOCKET ? viaSocket(need('BENCH_DB_URL'), env.BENCH_DB_SOCKET) : need('BENCH_DB_URL'),
  pgliteDir: '/nonexistent',
  poolSize: env.BENCH_DB_POOL_SIZE ? Number(env.BENCH_DB_POOL_SIZE) : undefined,
});
const rt = await createRuntime({
  channel: 'discord',
  db,
  log,
  maxTurns: Number(need('BENCH_MAX_TURNS')),
  idleMinutes: 30,
  render: null,
  scoringPool: Number(need('BENCH_SCORING_POOL')),
});
const bot = new DiscordBot(
  rt.engine,
  rt.services,
  {
    token: 'bench-token',
    apiBase: need('BENCH_API_BASE'),
    guildIds: [need('BENCH_GUILD_ID')],
    consentText: 'BENCH CONSENT',
    exportSalt: 'bench-export-salt',
  },
  log,
);
await bot.start();

// Time each Discord REST request spends queued in discord.js (@discordjs/rest) before it is sent: from the call
// (REST.queueRequest) to its first network attempt (options.makeRequest), joined through the request's async
// context. Waits on the client-side global limit (globalRequestsPerSecond) and on per-route buckets are in it;
// `rateLimited` counts the times a request found a limit exhausted.
type RestRecord = { method: string; route: string; queuedAt: number; waitMs: number | null };
let restRecords: RestRecord[] = [];
let rateLimited = { global: 0, route: 0 };
// When the client-side global limit held every request back: each global `rateLimited` event starts a wait of
// timeToReset ms that all of the manager's requests share (@discordjs/rest's globalDelay), so the time a request
// was queued inside these windows is what the global limit cost it. Merged as they come (they arrive in order).
let globalWindows: [number, number][] = [];
const globalWindow = (from: number, ms: number): void => {
  const last = globalWindows.at(-1);
  const to = from + Math.max(0, ms);
  if (last && from <= last[1]) last[1] = Math.max(last[1], to);
  else globalWindows.push([from, to]);
};
const restContext = new AsyncLocalStorage<RestRecord>();
const rest = bot.client.rest;
// A diagnostic only (bench/bot.ts --diagnostic-global-rps): the client-side global limit raised, to see what it costs.
if (env.BENCH_DIAGNOSTIC_GLOBAL_RPS) rest.options.globalRequestsPerSecond = Number(env.BENCH_DIAGNOSTIC_GLOBAL_RPS);
const queueRequest = rest.queueRequest.bind(rest);
rest.queueRequest = (req) => {
  mark(`rest ${req.method}`);
  const rec: RestRecord = {
    method: req.method,
    route: req.fullRoute,
    queuedAt: performance.timeOrigin + performance.now(),
    waitMs: null,
  };
  restRecords.push(rec);
  return restContext.run(rec, () => queueRequest(req));
};
// Interaction responses go through a REST manager of their own (bot/discord/bot.ts): its sends are timed too.
for (const manager of [rest, bot.interactionRest]) {
  const makeRequest = manager.options.makeRequest;
  manager.options.makeRequest = (...a) => {
    const rec = restContext.getStore();
    if (rec && rec.waitMs === null) rec.waitMs = performance.timeOrigin + performance.now() - rec.queuedAt;
    return makeRequest(...a);
  };
  manager.on('rateLimited', (r) => {
    if (!r.global) return void rateLimited.route++;
    rateLimited.global++;
    globalWindow(performance.timeOrigin + performance.now(), r.timeToReset);
  });
}

// When each person's message reached the bot (discord.js's messageCreate): splits a turn's own time into the way
// in (the fake Discord's gateway and discord.js) and the bot's own work (bench/bot.ts).
let received: [string, number][] = [];
let turnWork: TurnWork[] = [];
// Ahead of the bot's own listener, so that the bot's handling of the message runs (and awaits) in its context.
bot.client.prependListener('messageCreate', (m) => {
  received.push([m.id, performance.timeOrigin + performance.now()]);
  const work: TurnWork = {
    messageId: m.id,
    kinds: new Map(),
    poolWaitMs: 0,
    marks: [['messageCreate', performance.now()]],
  };
  turnWork.push(work);
  turnContext.enterWith(work);
});

/**
 * A statement's kind: its verb and the table it reads or writes first (`SELECT Session`, `INSERT Turn`, `WITH
 * UPDATE Session` for a data-modifying CTE), or the bare command (`BEGIN`, `COMMIT`).
 */
function statementKind(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ');
  const table = (re: RegExp) => re.exec(t)?.[1] ?? '?';
  const name = '(?:"public"\\.)?"?(\\w+)"?';
  if (/^WITH\b/i.test(t)) {
    const m = new RegExp(`\\b(UPDATE|INSERT INTO|DELETE FROM) ${name}`, 'i').exec(t);
    return m
      ? `WITH ${m[1]!.split(' ')[0]!.toUpperCase()} ${m[2]}`
      : `WITH SELECT ${table(new RegExp(`\\bFROM ${name}`, 'i'))}`;
  }
  const verb = (/^\w+/.exec(t)?.[0] ?? '?').toUpperCase();
  if (verb === 'SELECT')
    return /\bFROM\b/i.test(t) ? `SELECT ${table(new RegExp(`\\bFROM ${name}`, 'i'))}` : 'SELECT (no table)';
  if (verb === 'INSERT') return `INSERT ${table(new RegExp(`^INSERT INTO ${name}`, 'i'))}`;
  if (verb === 'UPDATE') return `UPDATE ${table(new RegExp(`^UPDATE ${name}`, 'i'))}`;
  if (verb === 'DELETE') return `DELETE ${table(new RegExp(`^DELETE FROM ${name}`, 'i'))}`;
  return verb;
}

/**
 * Pool connection holds by what was sent on them: count, how many a person's message started, hold p50 / p99 / sum,
 * the wait for the connection before them p50 / p99, the time in the statements themselves (sum).
 */
function holdProfile() {
  const by = new Map<string, typeof holds>();
  for (const h of holds) by.set(h.key, [...(by.get(h.key) ?? []), h]);
  const at = (xs: number[], p: number) => {
    const sorted = [...xs].sort((x, y) => x - y);
    return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]! * 10) / 10;
  };
  return [...by]
    .map(([key, hs]) => {
      const hold = hs.map((h) => h.holdMs);
      const wait = hs.map((h) => h.waitMs);
      return {
        key,
        n: hs.length,
        fromTurns: hs.filter((h) => h.turn).length,
        holdP50: at(hold, 0.5),
        holdP99: at(hold, 0.99),
        holdSumMs: Math.round(hold.reduce((x, y) => x + y, 0)),
        waitP50: at(wait, 0.5),
        waitP99: at(wait, 0.99),
        querySumMs: Math.round(hs.reduce((x, h) => x + h.queryMs, 0)),
      };
    })
    .sort((x, y) => y.holdSumMs - x.holdSumMs)
    .slice(0, 25);
}

const loop = monitorEventLoopDelay({ resolution: 10 });
// The main thread's utilisation (busy share) in each quarter second of the phase: whether the bot's one thread was
// the limit (a connection is held until the thread reads the reply on it, so a busy thread lengthens every hold).
const ELU_EVERY_MS = 250;
let elu: number[] = [];
let eluLast: EventLoopUtilization = performance.eventLoopUtilization();
let eluPhase: EventLoopUtilization = eluLast;
const eluTimer = setInterval(() => {
  const now = performance.eventLoopUtilization();
  elu.push(performance.eventLoopUtilization(now, eluLast).utilization);
  eluLast = now;
}, ELU_EVERY_MS);
eluTimer.unref();
/** The phase's busy share, and its longest run of quarter seconds at least 90 % busy (in seconds). */
function utilisation() {
  let run = 0;
  let longest = 0;
  for (const u of elu) longest = Math.max(longest, (run = u >= 0.9 ? run + 1 : 0));
  return {
    overall: Math.round(performance.eventLoopUtilization(eluPhase).utilization * 100) / 100,
    longestBusyS: (longest * ELU_EVERY_MS) / 1000,
    quarterSecondsAtLeast90: elu.filter((u) => u >= 0.9).length,
  };
}
let cpu0 = process.cpuUsage();
let queries0 = 0;
const heap = (): number => {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
};

process.on('message', (m: { op: 'reset' | 'heap' | 'stats' | 'stop' }) => {
  if (m.op === 'reset') {
    const heapBytes = heap();
    loop.reset();
    loop.enable();
    elu = [];
    eluPhase = eluLast = performance.eventLoopUtilization();
    cpu0 = process.cpuUsage();
    queries0 = queries;
    statements.clear();
    poolWaits.length = 0;
    holds.length = 0;
    opened.length = 0;
    restRecords = [];
    received = [];
    turnWork = [];
    kinds.clear();
    rateLimited = { global: 0, route: 0 };
    globalWindows = [];
    process.send!({ op: 'reset', heapBytes });
  } else if (m.op === 'heap') {
    process.send!({ op: 'heap', heapBytes: heap() });
  } else if (m.op === 'stats') {
    loop.disable();
    const cpu = process.cpuUsage(cpu0);
    if (MARKS) writeFileSync(MARKS, JSON.stringify(turnWork.map((w) => w.marks)));
    process.send!({
      op: 'stats',
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      queries: queries - queries0,
      loopP99Ms: loop.percentile(99) / 1e6,
      loopMaxMs: loop.max / 1e6,
      mainThread: utilisation(),
      rssBytes: process.memoryUsage().rss,
      topStatements: [...statements].sort((x, y) => y[1] - x[1]).slice(0, 12),
      poolWaitsMs: poolWaits,
      holdProfile: holdProfile(),
      connectionsOpenedMs: opened,
      statementKinds: [...kinds].sort((x, y) => y[1] - x[1]),
      turnWork: turnWork.map((w) => ({
        messageId: w.messageId,
        kinds: Object.fromEntries(w.kinds),
        poolWaitMs: w.poolWaitMs,
      })),
      rest: restRecords,
      received,
      rateLimited,
      globalWindows,
    });
  } else if (m.op === 'stop') {
    void (async () => {
      await bot.stop();
      await rt.close();
      await db.close();
      log.flush();
      process.exit(0);
    })();
  }
});
process.send!({ op: 'ready' });
