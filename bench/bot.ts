// Bot benchmark: the bot alone, as in production. Three processes:
//   - this one: the fake Discord (testing/fake-discord.ts) and the people's drivers, and the throwaway Postgres
//     database (what it queries is its own, after each phase);
//   - the bot (bench/bot-process.ts): the real runtime, discord.js client, default agent loader and sandboxed scorer;
//   - an OpenAI-compatible server (testing/openai-server.ts) streaming a fixed reply at a fixed delay per token,
//     deployed as an endpoint version, so the model's time is fixed and what is measured is the bot's.
// Each phase: N people arrive within the same second, each through a whole backend session (/task start, consent,
// TURNS agent messages, TURNS - 1 replies, the answer scored in the sandbox pool, a rating). Per phase:
//   - acknowledgement of every interaction (dispatch on the gateway to the bot's callback; Discord's limit: 3 s);
//   - the bot's own time per turn: the person's message on the gateway to the agent's reply on Discord, minus the
//     server's own time on the reply (measured in the server's process: a wait for one of the bot's in-flight slots
//     to the server is the bot's time); split at the bot's edges into the way in (to discord.js's messageCreate),
//     the bot's work and the way out (the post sent to shown); and, part of it, the time the posts showing the reply waited
//     in discord.js's REST queue (measured in the bot process: Discord's 50 requests a second per bot token), of
//     which the part spent while the client-side global limit held every request back (measured: the windows
//     @discordjs/rest waited on it); the own time less that part, the bot's own processing with Discord's limit
//     set aside;
//   - every REST request's wait in that queue, the requests by route and per second, the waits for a Postgres
//     connection of the bot's pool;
//   - the bot's database round trips, Discord REST requests, CPU seconds (all per agent turn, the whole session's work counted), its
//     event-loop delay, its heap per open session (after a GC, all sessions open, less the heap before);
//   - the time from the answer shown to its result shown (the scoring queue and sandbox included).
//   - the pool's connections by the statements sent on each (held how long), the connections it opened, and the
//     bot's main-thread utilisation (its longest stretch at least 90 % busy): a connection is held until the bot's
//     one thread reads the reply, so a busy thread lengthens every hold and the pool's queue.
// The machine's load average before and after. One JSON line at the end; exit 1 unless every session was answered,
// scored and rated once.
// Usage: npm run bench:bot [-- --people 50,100,200 --think-ms 0 --turns 3 --max-tokens 24 --token-delay-ms 20 --scoring-pool 2
//                             --max-in-flight 256 (the endpoint version's requests in flight to the server)
//                             --cpu-prof DIR (writes the bot process's CPU profile there)
//                             --db-pool-size N (the bot's Postgres pool, DATABASE_POOL_SIZE; default: its default)
//                             --diagnostic-global-rps N (a diagnostic only: discord.js's client-side global limit
//                             raised to N a second, to see what the limit costs; Discord's own stays 50)]
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { builtinTasks } from '../tasks/library.ts';
import { importTasks } from '../prisma/task-store.ts';
import { deployPolicyByName } from '../prisma/deployment-store.ts';
import { registerEndpointVersion } from '../trainer/policies/registry.ts';
import { FakeDiscord, type InteractionRecord, type Shown } from '../testing/fake-discord.ts';
import { createTestDatabase } from '../testing/database.ts';
import { Rng } from '../tasks/random.ts';
import { overlap, printPhases, round, stat, union, type RestRecord } from './bot-report.ts';
import { personKey, startBot, startModelServer } from './bot-processes.ts';

const { values: args } = parseArgs({
  options: {
    people: { type: 'string', default: '50,100,200' },
    turns: { type: 'string', default: '3' },
    'max-tokens': { type: 'string', default: '24' },
    'token-delay-ms': { type: 'string', default: '20' },
    'scoring-pool': { type: 'string', default: '2' },
    'cpu-prof': { type: 'string' },
    'db-pool-size': { type: 'string' },
    // A diagnostic only: discord.js's client-side global limit (Discord's is 50 a second a bot token).
    'diagnostic-global-rps': { type: 'string' },
    // Reading and typing: each person waits a seeded uniform time in MIN-MAX ms before each of their messages.
    'think-ms': { type: 'string', default: '0' },
    // Requests the bot keeps in flight to the server (the endpoint version's serving.maxInFlight): the bench's
    // server takes any number at once, as vLLM takes 256 sequences by default (--max-num-seqs).
    'max-in-flight': { type: 'string', default: '256' },
  },
});
/** A positive whole-number flag (bench/args.ts's rule, for values given with parseArgs). */
function wholeNumber(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag}: expected a positive integer, got ${JSON.stringify(v)}`);
  return n;
}
const PHASES = args.people.split(',').map((p) => wholeNumber('--people', p.trim()));
const TURNS = wholeNumber('--turns', args.turns);
const MAX_TOKENS = wholeNumber('--max-tokens', args['max-tokens']);
const TOKEN_DELAY_MS = Number(args['token-delay-ms']);
const SCORING_POOL = wholeNumber('--scoring-pool', args['scoring-pool']);
const MAX_IN_FLIGHT = wholeNumber('--max-in-flight', args['max-in-flight']);
const DB_POOL_SIZE =
  args['db-pool-size'] === undefined ? undefined : wholeNumber('--db-pool-size', args['db-pool-size']);
const THINK = /^(\d+)(?:-(\d+))?$/.exec(args['think-ms']);
if (!THINK || Number(THINK[2] ?? THINK[1]) < Number(THINK[1]))
  throw new Error(`--think-ms must be MIN-MAX (ms, MIN <= MAX) or one number, got ${args['think-ms']}`);
const [THINK_MIN, THINK_MAX] = [Number(THINK[1]), Number(THINK[2] ?? THINK[1])];
if (TURNS < 2) throw new Error('--turns must be at least 2 (a question, then the answer)');
if (!(TOKEN_DELAY_MS >= 0)) throw new Error(`--token-delay-ms must be a number >= 0, got ${args['token-delay-ms']}`);
const WAIT_MS = 600_000;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-bot-'));
  const tdb = await createTestDatabase();
  const fake = await new FakeDiscord({ heartbeatIntervalMs: 5_000 }).start();
  await importTasks(tdb.prisma, builtinTasks({ kind: 'backend' }));
  const model = await startModelServer(MAX_TOKENS, TOKEN_DELAY_MS);
  await registerEndpointVersion(tdb.prisma, {
    name: 'bench-endpoint',
    url: model.url,
    model: 'bench-model',
    maxTokens: MAX_TOKENS,
    maxInFlight: MAX_IN_FLIGHT,
  });
  await deployPolicyByName(tdb.db, 'bench', 'bench-endpoint');
  const bot = await startBot(
    {
      BENCH_DB_URL: tdb.url,
      BENCH_API_BASE: fake.apiBase,
      BENCH_GUILD_ID: fake.guildId,
      BENCH_MAX_TURNS: String(TURNS),
      BENCH_SCORING_POOL: String(SCORING_POOL),
      BENCH_LOG_FILE: join(dir, 'bot.log'),
      ...(DB_POOL_SIZE ? { BENCH_DB_POOL_SIZE: String(DB_POOL_SIZE) } : {}),
      ...(args['diagnostic-global-rps'] ? { BENCH_DIAGNOSTIC_GLOBAL_RPS: args['diagnostic-global-rps'] } : {}),
    },
    args['cpu-prof'],
  );
  const agentMsgs = (threadId: string) => fake.inChannel(threadId).filter((s) => s.content.startsWith('**Agent**'));
  const phases: Record<string, unknown>[] = [];
  let ok = true;
  const loadStart = loadavg();
  try {
    for (const [p, people] of PHASES.entries()) {
      const acks: number[] = [];
      const acksByKind: Record<'start' | 'consent' | 'rating', number[]> = { start: [], consent: [], rating: [] };
      const turnsShown: { k: number; sent: number; msgId: string; key: string; shown: Shown; threadId: string }[] = [];
      const answerToResult: number[] = [];
      // Each answer's wait for its result (the answer shown to the result shown): scoring, results and ratings.
      const scoring: [number, number][] = [];
      let opened = 0;
      let allOpen!: () => void;
      const allOpenP = new Promise<void>((r) => (allOpen = r));
      let holdOpen!: () => void;
      const held = new Promise<void>((r) => (holdOpen = r));
      const ack = (i: InteractionRecord, kind: keyof typeof acksByKind) =>
        fake
          .waitFor(() => (i.ackAt !== null ? i.ackAt - i.sentAt : null), WAIT_MS, 'ack')
          .then((ms) => void (acks.push(ms), acksByKind[kind].push(ms)));

      const users = Array.from({ length: people }, (_, n) => fake.user(`p${p}-person${n}`));
      async function person(n: number): Promise<void> {
        const user = users[n]!;
        const start = fake.command(user, 'task', 'start', { kind: 'backend' });
        await ack(start, 'start');
        const consent = await fake.waitFor(
          () => fake.replies(start).find((s) => s.kind === 'original'),
          WAIT_MS,
          'consent',
        );
        const accept = fake.click(user, consent, 'consent:accept:backend');
        await ack(accept, 'consent');
        const hidden = await fake.waitFor(
          () => fake.replies(accept).find((s) => s.content.includes('Only you can see this')),
          WAIT_MS,
          'hidden',
        );
        const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
        let shown: Shown = await fake.waitFor(() => agentMsgs(threadId)[0], WAIT_MS, 'first agent message');
        // Every session of the phase open before anyone replies: the heap per open session is read then.
        if (++opened === people) allOpen();
        await held;
        const rng = Rng.derive(7, 'think', p, n);
        for (let k = 1; k < TURNS; k++) {
          // Thinking happens before the message is sent, so it is never part of the bot's own time.
          if (THINK_MAX > 0) await sleep(THINK_MIN + rng.next() * (THINK_MAX - THINK_MIN));
          const sent = performance.now();
          const key = personKey(k, n, p);
          const msgId = fake.say(user, threadId, `${key}: keep it simple.`);
          shown = await fake.waitFor(() => agentMsgs(threadId)[k], WAIT_MS, `agent message ${k + 1}`);
          turnsShown.push({ k, sent, msgId, key, shown, threadId });
        }
        const result = await fake.waitFor(
          () => fake.inChannel(threadId).find((s) => s.content.startsWith('**Result:**')),
          WAIT_MS,
          'result',
        );
        answerToResult.push(result.at - shown.at);
        scoring.push([shown.at, result.at]);
        const rating = await fake.waitFor(
          () => fake.inChannel(threadId).find((s) => s.content.includes('How helpful')),
          WAIT_MS,
          'rating',
        );
        const sessionId = /rate:([0-9a-f-]+):/.exec(JSON.stringify(rating.components))![1]!;
        const rate = fake.click(user, rating, `rate:${sessionId}:${1 + (n % 5)}`);
        await ack(rate, 'rating');
        await fake.waitFor(
          () => fake.replies(rate).find((s) => s.content.includes('you rated')),
          WAIT_MS,
          'rating stored',
        );
      }

      const load0 = loadavg();
      const heap0 = (await bot.ask('reset')).heapBytes!;
      const rest0 = fake.requests.length;
      const t0 = performance.now();
      const done = Promise.all(Array.from({ length: people }, (_, n) => person(n)));
      await Promise.race([allOpenP, done]);
      const heapOpen = (await bot.ask('heap')).heapBytes!;
      holdOpen();
      await done;
      const wallS = (performance.now() - t0) / 1000;
      const s = await bot.ask('stats');
      const restRequests = fake.requests.length - rest0;
      const load1 = loadavg();

      // The agent's time of each shown turn, read once the phase is over (this process's queries are not the bot's).
      const ids = turnsShown.map((t) => t.shown.id);
      const stored = await tdb.prisma.turn.findMany({
        where: { externalMessageId: { in: ids } },
        select: { externalMessageId: true, latencyMs: true },
      });
      const modelMs = new Map(stored.map((t) => [t.externalMessageId, t.latencyMs ?? 0]));
      // Less the server's own time on the reply (as the server measured it): a wait for one of the bot's in-flight
      // slots to the server, or its reading of the stream, is the bot's time.
      const serverMs = turnsShown.map((t) => model.servedMs.get(t.key) ?? NaN);
      const own = turnsShown.map((t, i) => t.shown.at - t.sent - serverMs[i]!);
      // Of each turn's own time, what the posts showing the agent's reply (those to its thread made between the
      // person's message and the reply shown) spent queued in discord.js before being sent: measured in the bot
      // process. Only posts: the typing indicator is not awaited, so its wait overlaps the agent's time.
      const rest = s.rest as RestRecord[];
      const byThread = new Map<string, RestRecord[]>();
      for (const r of rest) {
        const m = /^\/channels\/(\d+)\//.exec(r.route);
        if (m && r.method === 'POST' && r.route.endsWith('/messages'))
          byThread.set(m[1]!, [...(byThread.get(m[1]!) ?? []), r]);
      }
      const wall = (t: number) => performance.timeOrigin + t;
      const postsOf = (t: (typeof turnsShown)[number]) =>
        (byThread.get(t.threadId) ?? []).filter((r) => r.queuedAt >= wall(t.sent) && r.queuedAt <= wall(t.shown.at));
      const queuedInTurn = turnsShown.map((t) => postsOf(t).reduce((a, r) => a + (r.waitMs ?? 0), 0));
      // Of that, the time the posts were queued while the global limit held every request back: the union of their
      // queued intervals within the bot's measured global windows (each moment counted once, however many posts).
      const windows = s.globalWindows as [number, number][];
      const globalInTurn = turnsShown.map((t) =>
        overlap(union(postsOf(t).map((r): [number, number] => [r.queuedAt, r.queuedAt + (r.waitMs ?? 0)])), windows),
      );
      const ownLessGlobal = own.map((o, i) => o - globalInTurn[i]!);
      // The own time split at the bot's edges: the way in (from the person's message to discord.js's messageCreate
      // in the bot), the bot's work (from there to queueing the post that shows the reply, less the agent's time),
      // and the way out after discord.js sent that post (the request and the fake Discord showing it).
      const received = new Map(s.received as [string, number][]);
      const wayIn = turnsShown.map((t) => (received.get(t.msgId) ?? NaN) - wall(t.sent));
      const lastPost = turnsShown.map((t) => postsOf(t).at(-1));
      const botWork = turnsShown.map(
        (t, i) => (lastPost[i]?.queuedAt ?? NaN) - (received.get(t.msgId) ?? NaN) - serverMs[i]!,
      );
      const whileScoring = turnsShown.map((t) => scoring.some(([from, to]) => from < t.shown.at && to > t.sent));
      const wayOut = turnsShown.map(
        (t, i) => wall(t.shown.at) - (lastPost[i]?.queuedAt ?? NaN) - (lastPost[i]?.waitMs ?? NaN),
      );
      // The work each person's message started in the bot (measured there: what ran in its async context, the
      // agent's reply and its post included): its round trips, by kind, and its waits for a pool connection.
      const work = new Map(
        (s.turnWork as { messageId: string; kinds: Record<string, number>; poolWaitMs: number }[]).map((w) => [
          w.messageId,
          w,
        ]),
      );
      const turnWork = turnsShown.map((t) => work.get(t.msgId));
      const turnKinds = new Map<string, number>();
      for (const w of turnWork)
        for (const [k, n] of Object.entries(w?.kinds ?? {})) turnKinds.set(k, (turnKinds.get(k) ?? 0) + n);
      const perTurn = (m: Iterable<[string, number]>, turns: number) =>
        Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, round(n / turns, 2)]));
      const restWaits = rest.map((r) => r.waitMs).filter((w): w is number => w !== null);
      const restRoutes = new Map<string, number>();
      for (const r of rest) {
        const k = `${r.method} ${r.route
          .replace(/\d{16,}/g, ':id')
          .replace(/\/webhooks\/:id\/[^/]+/, '/webhooks/:id/:token')
          .replace(/\/interactions\/:id\/[^/]+/, '/interactions/:id/:token')}`;
        restRoutes.set(k, (restRoutes.get(k) ?? 0) + 1);
      }
      const mine = { participant: { discordUserId: { in: users.map((u) => u.id) } } };
      const sessions = await tdb.prisma.session.findMany({
        where: mine,
        select: { status: true, evaluation: { select: { id: true } }, _count: { select: { ratings: true } } },
      });
      const agentTurns = people * TURNS;
      const phase = {
        people,
        loadAverage: { before: load0.map((x) => round(x, 2)), after: load1.map((x) => round(x, 2)) },
        wallSeconds: round(wallS),
        ackMs: stat(acks),
        ackMsByKind: Object.fromEntries(Object.entries(acksByKind).map(([k, xs]) => [k, stat(xs)])),
        acksOver3s: acks.filter((a) => a > 3000).length,
        ownTimePerTurnMs: stat(own),
        restQueueInOwnTimeMs: stat(queuedInTurn),
        restQueueShareOfOwnTime: round(queuedInTurn.reduce((a, b) => a + b, 0) / own.reduce((a, b) => a + b, 0), 3),
        restGlobalLimitInOwnTimeMs: stat(globalInTurn),
        ownTimeLessGlobalLimitMs: stat(ownLessGlobal),
        ownTimeSplitMs: { wayIn: stat(wayIn), botWork: stat(botWork), wayOut: stat(wayOut) },
        // By the person's reply it answers: the last agent turn is the answer, whose wave brings scoring and ratings.
        botWorkByReplyMs: Object.fromEntries(
          Array.from({ length: TURNS - 1 }, (_, k) => [
            k + 1,
            stat(botWork.filter((_, i) => turnsShown[i]!.k === k + 1)),
          ]),
        ),
        // The answer's minute (issue 47, item 3): the bot's work of the turns whose time (the person's message to
        // the reply shown) overlapped another session's answer waiting for its result, against those that did not.
        botWorkWhileScoringMs: stat(botWork.filter((_, i) => whileScoring[i])),
        botWorkNotWhileScoringMs: stat(botWork.filter((_, i) => !whileScoring[i])),
        modelTimePerTurnMs: stat(serverMs),
        agentRequestInBotMs: stat(turnsShown.map((t) => modelMs.get(t.shown.id) ?? NaN)),
        dbRoundTripsPerTurn: round(s.queries! / agentTurns),
        // The same by statement kind (the whole session's work, per agent turn), then those of a person's message.
        dbRoundTripsPerTurnByKind: perTurn(s.statementKinds as [string, number][], agentTurns),
        dbRoundTripsInReplyTurn: stat(
          turnWork.map((w) => (w ? Object.values(w.kinds).reduce((a, b) => a + b, 0) : NaN)),
        ),
        dbRoundTripsInReplyTurnByKind: perTurn(turnKinds, turnWork.length),
        dbPoolWaitInReplyTurnMs: stat(turnWork.map((w) => w?.poolWaitMs ?? NaN)),
        // Discord allows a bot token 50 REST requests a second (discord.js queues to stay under it).
        restRequestsPerTurn: round(restRequests / agentTurns),
        restRequestsPerSecond: round(restRequests / wallS),
        restQueueWaitMs: stat(restWaits),
        restRateLimited: s.rateLimited,
        restRequestsPerSessionByRoute: Object.fromEntries(
          [...restRoutes].sort((a, b) => b[1] - a[1]).map(([k, n]) => [k, round(n / people, 2)]),
        ),
        dbPoolWaitMs: stat(s.poolWaitsMs as number[]),
        // Connections the pool opened during the phase, and how long each took to open.
        dbConnectionsOpenedMs: stat(s.connectionsOpenedMs as number[]),
        cpuSecondsPerTurn: round(s.cpuSeconds! / agentTurns, 4),
        botCpuSeconds: round(s.cpuSeconds!, 2),
        eventLoopDelayMs: { p99: round(s.loopP99Ms!), max: round(s.loopMaxMs!) },
        // The bot's main thread: its busy share over the phase, and its longest stretch at least 90 % busy.
        mainThreadUtilisation: s.mainThread,
        // Pool connections by the statements sent on each (the top ones by time held; bench/bot-process.ts).
        dbPoolHolds: (s.holdProfile as unknown[]).slice(0, 10),
        heapPerOpenSessionKiB: round((heapOpen - heap0) / people / 1024),
        botRssMiB: round(s.rssBytes! / 2 ** 20),
        answerToResultMs: stat(answerToResult),
        sessions: people,
        answered: sessions.filter((x) => x.status === 'answered').length,
        scored: sessions.filter((x) => x.evaluation).length,
        rated: sessions.filter((x) => x._count.ratings === 1).length,
      };
      if (
        phase.answered !== people ||
        phase.scored !== people ||
        phase.rated !== people ||
        own.some((x) => !Number.isFinite(x))
      )
        ok = false;
      phases.push(phase);
      process.stderr.write(
        `phase ${people} people: ${JSON.stringify(phase)}\nthe bot's most frequent statements: ${JSON.stringify(s.topStatements)}\n`,
      );
      process.stderr.write(
        `round trips per agent turn by kind: ${JSON.stringify(phase.dbRoundTripsPerTurnByKind)}\nin a reply's turn: ${JSON.stringify(phase.dbRoundTripsInReplyTurnByKind)}\n`,
      );
      // Pool connections by what was sent on them: held how long, how much of that in the statements, the wait before.
      type Hold = { key: string; n: number; fromTurns: number; holdP50: number; holdP99: number; holdSumMs: number };
      type Held = Hold & { querySumMs: number; waitP50: number; waitP99: number };
      const holdLine = (h: Held) =>
        `  ${h.n} ${h.fromTurns} ${h.holdP50} / ${h.holdP99} / ${h.holdSumMs} ${h.querySumMs} ${h.waitP50} / ${h.waitP99}  ${h.key}`;
      process.stderr.write(
        'pool connection holds (n, from turns, hold p50 / p99 / sum ms, in statements sum ms, wait before p50 / p99 ms):\n' +
          `${(s.holdProfile as Held[]).map(holdLine).join('\n')}\n`,
      );
    }
  } finally {
    await bot.stop();
    model.close();
    await fake.stop();
    await tdb.drop();
    await rm(dir, { recursive: true, force: true });
  }
  const loadEnd = loadavg();
  printPhases(phases, { turns: TURNS, maxTokens: MAX_TOKENS, tokenDelayMs: TOKEN_DELAY_MS, scoringPool: SCORING_POOL });
  console.log(
    JSON.stringify({
      bench: 'bot',
      turns: TURNS,
      maxTokens: MAX_TOKENS,
      tokenDelayMs: TOKEN_DELAY_MS,
      scoringPool: SCORING_POOL,
      dbPoolSize: DB_POOL_SIZE ?? 'default',
      cores: availableParallelism(),
      loadAverage: { before: loadStart.map((x) => round(x, 2)), after: loadEnd.map((x) => round(x, 2)) },
      phases,
    }),
  );
  if (!ok) process.exitCode = 1;
}

await main();
