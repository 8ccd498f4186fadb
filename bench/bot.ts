// Bot benchmark: N simulated people (default 50) at once, each through a whole backend session on the fake
// Discord (real discord.js client, real Postgres, real sandboxed evaluation), with either policy kind:
//   - tfjs: a tiny real policy served by the inference worker (in-process);
//   - endpoint: an endpoint version on a local OpenAI-compatible server (bot/testing/openai-server.ts, in a
//     process of its own) that streams a fixed reply with a fixed delay per token, loaded through
//     trainer/policies/agent-for.ts as the bot loads it in production (chat client, in-flight cap, provenance).
// Each run measures
//   - interaction acknowledgement latency: from the interaction's dispatch on the gateway to the bot's
//     callback reaching the fake Discord (Discord's limit is 3 s);
//   - per-turn overhead excluding model time: from a person's message on the gateway to the agent's reply
//     reaching Discord, minus the time the agent's reply() took (stored per turn as latencyMs).
// Usage: npm run bench:bot [-- --policy tfjs|endpoint|both --people 50 --turns 3 --max-tokens 24 --token-delay-ms 20]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { availableParallelism, loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { builtinTasks } from '../tasks/library.ts';
import { importTasks } from '../prisma/task-store.ts';
import { createRuntime } from '../bot/runtime.ts';
import { DiscordBot } from '../bot/discord/bot.ts';
import { createPolicyAgent } from '../trainer/model/policy.ts';
import { loadAgent } from '../trainer/policies/agent-for.ts';
import { registerEndpointVersion } from '../trainer/policies/registry.ts';
import { deployPolicyByName, registerVersion } from '../prisma/policy-store.ts';
import type { Agent } from '../tasks/agent.ts';
import { FakeDiscord, type FakeUser, type InteractionRecord, type Shown } from '../bot/testing/fake-discord.ts';
import { createTestDatabase } from '../bot/testing/database.ts';
import { makeTinyCheckpoint } from '../bot/testing/tiny-checkpoint.ts';
import { percentile } from '../tasks/stats.ts';

const { values: args } = parseArgs({
  options: {
    people: { type: 'string', default: '50' },
    turns: { type: 'string', default: '3' },
    'max-tokens': { type: 'string', default: '24' },
    policy: { type: 'string', default: 'both' },
    'token-delay-ms': { type: 'string', default: '20' },
  },
});
const MODES = args.policy === 'both' ? (['tfjs', 'endpoint'] as const) : ([args.policy] as ('tfjs' | 'endpoint')[]);
if (!MODES.every((m) => m === 'tfjs' || m === 'endpoint')) throw new Error(`--policy must be tfjs, endpoint or both, got ${args.policy}`);
const TOKEN_DELAY_MS = Number(args['token-delay-ms']);
const PEOPLE = Number(args.people);
const TURNS = Number(args.turns);
const MAX_TOKENS = Number(args['max-tokens']);


type Mode = 'tfjs' | 'endpoint';
interface Row {
  name: string;
  n: number;
  p50: number;
  p99: number;
  max: number;
}
interface RunResult {
  mode: Mode;
  rows: Row[];
  byKind: Row[];
  json: Record<string, unknown>;
  summary: string[];
}

/** Sets up the policy of a run: the deployed version's agent, and what to free afterwards. */
async function policyFor(mode: Mode, tdb: Awaited<ReturnType<typeof createTestDatabase>>, dir: string): Promise<{ loader: () => Promise<Agent>; close: () => Promise<void>; label: string }> {
  if (mode === 'tfjs') {
    const ckpt = await makeTinyCheckpoint({ dir: join(dir, 'tiny'), maxPositionEmbeddings: 16384 });
    await registerVersion(tdb.prisma, { name: 'tiny', algorithm: 'external', checkpointPath: ckpt, checkpointSha256: '0'.repeat(64) });
    await deployPolicyByName(tdb.db, 'bench', 'tiny');
    const agent = await createPolicyAgent({ checkpointDir: ckpt, name: 'tiny', maxTokens: MAX_TOKENS, seed: 1 });
    return { loader: async () => agent, close: () => agent.close(), label: `tiny tfjs policy (max ${MAX_TOKENS} tokens/reply) in one inference worker` };
  }
  // A reply of MAX_TOKENS words streamed at TOKEN_DELAY_MS each: a fixed model time, so what is measured is ours.
  // The server runs in its own process, as a model server would: its streaming does not eat this process's CPU.
  const words = Array.from({ length: MAX_TOKENS }, (_, i) => (i === 0 ? 'Could' : `w${i}`)).join(' ') + '?';
  const serverModule = pathToFileURL(join(import.meta.dirname, '../bot/testing/openai-server.ts')).href;
  const code =
    `const { startOpenAiServer } = await import(${JSON.stringify(serverModule)});` +
    `const s = await startOpenAiServer({ model: 'bench-model', maxModelLen: 8192, tokenDelayMs: ${TOKEN_DELAY_MS}, reply: () => ${JSON.stringify(words)} });` +
    `console.log(s.url);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.once('exit', (c) => reject(new Error(`the OpenAI-compatible server process exited (${c})`)));
    createInterface({ input: child.stdout! }).once('line', (line) => resolveUrl(line.trim()));
  });
  const server = { close: async () => void child.kill('SIGTERM') };
  await registerEndpointVersion(tdb.prisma, { name: 'bench-endpoint', url, model: 'bench-model', maxTokens: MAX_TOKENS });
  await deployPolicyByName(tdb.db, 'bench', 'bench-endpoint');
  const version = await tdb.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'bench-endpoint' } });
  const agent = await loadAgent(version, { prisma: tdb.prisma });
  return {
    loader: async () => agent,
    close: async () => {
      await agent.close();
      await server.close();
    },
    label: `endpoint policy on a local OpenAI-compatible server (${MAX_TOKENS} tokens/reply streamed, ${TOKEN_DELAY_MS} ms/token)`,
  };
}

async function run(mode: Mode): Promise<RunResult> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-bot-'));
  const tdb = await createTestDatabase();
  const fake = await new FakeDiscord({ heartbeatIntervalMs: 5_000 }).start();
  await importTasks(tdb.prisma, builtinTasks({ kind: 'backend' }));
  const policy = await policyFor(mode, tdb, dir);
  const runtime = await createRuntime({ channel: 'discord', db: tdb.db, maxTurns: TURNS, idleMinutes: 30, loadAgent: policy.loader, render: null });
  const bot = new DiscordBot(runtime.engine, runtime.services, {
    token: 'bench-token',
    apiBase: fake.apiBase,
    guildIds: [fake.guildId],
    consentText: 'BENCH CONSENT',
    exportSalt: 'bench-export-salt',
  });
  await bot.start();

  const acks: number[] = [];
  const acksByKind: Record<string, number[]> = { start: [], accept: [], rate: [] };
  const overheads: number[] = [];
  // By agent message number (2 .. TURNS; the last one is the answer, after which the session is evaluated).
  const overheadsByTurn: Record<string, number[]> = {};
  const models: number[] = [];
  const totals: number[] = [];
  const ack = (i: InteractionRecord, kind: string) =>
    fake.waitFor(() => (i.ackAt !== null ? i.ackAt - i.sentAt : null), 120_000, 'ack').then((ms) => {
      acks.push(ms);
      acksByKind[kind]!.push(ms);
    });
  const agentMsgs = (threadId: string) => fake.inChannel(threadId).filter((s) => s.content.startsWith('**Agent**'));

  async function person(n: number): Promise<void> {
    const user: FakeUser = fake.user(`person${n}`);
    const start = fake.command(user, 'task', 'start', { kind: 'backend' });
    await ack(start, 'start');
    const consent = await fake.waitFor(() => fake.replies(start).find((s) => s.kind === 'original'), 120_000, 'consent');
    const accept = fake.click(user, consent, 'consent:accept:backend');
    await ack(accept, 'accept');
    const hidden = await fake.waitFor(() => fake.replies(accept).find((s) => s.content.includes('Only you can see this')), 300_000, 'hidden');
    const threadId = /<#(\d+)>/.exec(hidden.content)![1]!;
    let shown: Shown = await fake.waitFor(() => agentMsgs(threadId)[0], 600_000, 'first agent message');
    for (let k = 1; k < TURNS; k++) {
      const sent = performance.now();
      fake.say(user, threadId, `Reply ${k} from person ${n}: keep it simple.`);
      shown = await fake.waitFor(() => agentMsgs(threadId)[k], 600_000, `agent message ${k + 1}`);
      // The bot records the Discord message id just after posting it.
      const id = shown.id;
      const turn = await fake.waitFor(() => tdb.prisma.turn.findFirst({ where: { externalMessageId: id } }), 60_000, 'the shown turn');
      const total = shown.at - sent;
      totals.push(total);
      models.push(turn.latencyMs ?? 0);
      overheads.push(total - (turn.latencyMs ?? 0));
      (overheadsByTurn[`agent message ${k + 1}`] ??= []).push(total - (turn.latencyMs ?? 0));
    }
    const rating = await fake.waitFor(() => fake.inChannel(threadId).find((s) => s.content.startsWith('How helpful')), 600_000, 'rating');
    const sessionId = /rate:([0-9a-f-]+):/.exec(JSON.stringify(rating.components))![1]!;
    const rate = fake.click(user, rating, `rate:${sessionId}:${1 + (n % 5)}`);
    await ack(rate, 'rate');
    await fake.waitFor(() => fake.replies(rate).find((s) => s.content.includes('you rated')), 120_000, 'rating stored');
  }

  // Event-loop delay of this process (bot, fake Discord and driver share it): separates our own blocking from
  // the machine being busy.
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const load0 = loadavg()[0]!;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: PEOPLE }, (_, n) => person(n)));
  const wall = (performance.now() - t0) / 1000;
  loop.disable();
  const loopP99 = loop.percentile(99) / 1e6;
  const loopMax = loop.max / 1e6;
  const load1 = loadavg()[0]!;
  const answered = await tdb.prisma.session.count({ where: { status: 'answered' } });
  const evaluated = await tdb.prisma.evaluation.count();
  const rated = await tdb.prisma.rating.count();

  await bot.stop();
  await runtime.close();
  await policy.close();
  await fake.stop();
  await tdb.drop();
  await rm(dir, { recursive: true, force: true });

  const row = (name: string, xs: number[]): Row => ({ name, n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), max: Math.max(...xs) });
  const rows = [row('interaction ack (ms)', acks), row('turn overhead excl. model (ms)', overheads), row('model time per turn (ms)', models), row('turn total (ms)', totals)];
  return {
    mode,
    rows,
    byKind: [
      ...Object.entries(acksByKind).map(([k, xs]) => row(`  ack of ${k} (ms)`, xs)),
      ...Object.entries(overheadsByTurn).map(([k, xs]) => row(`  overhead, ${k} (ms)`, xs)),
    ],
    summary: [
      `${mode}: ${policy.label}`,
      `${mode}: event-loop delay p99 ${loopP99.toFixed(1)} ms, max ${loopMax.toFixed(1)} ms; load average ${load0.toFixed(1)} -> ${load1.toFixed(1)} on ${availableParallelism()} cores`,
      `${mode}: sessions answered ${answered}/${PEOPLE}, evaluated ${evaluated}, rated ${rated}; wall ${wall.toFixed(1)} s; acks over 3 s: ${acks.filter((a) => a > 3000).length}`,
    ],
    json: {
      ackMs: { p50: rows[0]!.p50, p99: rows[0]!.p99, max: rows[0]!.max, n: acks.length },
      ackMsByKind: Object.fromEntries(Object.entries(acksByKind).map(([k, xs]) => [k, { p50: percentile(xs, 50), p99: percentile(xs, 99), max: Math.max(...xs) }])),
      acksOver3s: acks.filter((a) => a > 3000).length,
      eventLoopDelayMs: { p99: loopP99, max: loopMax },
      loadAverage: [load0, load1],
      turnOverheadMs: { p50: rows[1]!.p50, p99: rows[1]!.p99, max: rows[1]!.max, n: overheads.length },
      turnOverheadMsByMessage: Object.fromEntries(Object.entries(overheadsByTurn).map(([k, xs]) => [k, { p50: percentile(xs, 50), p99: percentile(xs, 99), max: Math.max(...xs) }])),
      modelMs: { p50: rows[2]!.p50, p99: rows[2]!.p99, max: rows[2]!.max },
      answered,
      evaluated,
      rated,
      wallSeconds: Number(wall.toFixed(1)),
    },
  };
}

async function main(): Promise<void> {
  const results: RunResult[] = [];
  // One run after the other, never together: each has the machine to itself (as far as this process goes).
  for (const mode of MODES) results.push(await run(mode));
  const cell = (r: Row) => `${String(r.n).padStart(6)}${r.p50.toFixed(1).padStart(10)}${r.p99.toFixed(1).padStart(10)}${r.max.toFixed(1).padStart(10)}`;
  console.log(`\nbench:bot — ${PEOPLE} people at once, ${TURNS} agent turns each, Postgres, fake Discord`);
  console.log(`${'metric'.padEnd(32)}${results.map((r) => `${r.mode.padStart(12)}${'n'.padStart(6)}${'p50'.padStart(10)}${'p99'.padStart(10)}${'max'.padStart(10)}`).join('   ')}`);
  const names = results[0]!.rows.map((r) => r.name).concat(results[0]!.byKind.map((r) => r.name));
  for (const [i, name] of names.entries()) {
    console.log(`${name.padEnd(32)}${results.map((r) => `${''.padStart(12)}${cell([...r.rows, ...r.byKind][i]!)}`).join('   ')}`);
  }
  for (const r of results) for (const line of r.summary) console.log(line);
  console.log(
    JSON.stringify({
      bench: 'bot',
      people: PEOPLE,
      turns: TURNS,
      maxTokens: MAX_TOKENS,
      tokenDelayMs: TOKEN_DELAY_MS,
      runs: Object.fromEntries(results.map((r) => [r.mode, r.json])),
    }),
  );
  if (results.some((r) => r.json.answered !== PEOPLE || r.json.rated !== PEOPLE)) process.exitCode = 1;
}

await main();
