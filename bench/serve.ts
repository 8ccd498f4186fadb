// Serving benchmark: ColBench-mini sessions replayed from 1, 8, 32 and 64 concurrent clients through the official
// openai client against `sweetloop serve` (the llama.cpp engine, continuous batching) and, in the same run,
// against today's one-request-at-a-time inference worker behind the same server (TfjsEngine). Each session is a
// stored-shape dialogue (tasks/protocol.ts buildDialogue: system prompt, task, then agent and collaborator turns)
// that grows by one agent reply (the model's own streamed answer) and one collaborator reply (a withheld fact of
// the task) per turn. Measures, per engine and concurrency: generated tokens/s (all sessions' completion tokens
// over the wall time), time to first token and time per agent turn (p50/p99), and the mean batch size the engine
// reported in /metrics; also the prompt tokens the llama.cpp engine found in its KV caches (prefix reuse: a
// dialogue's next turn repeats the dialogue) and this process's CPU seconds (engine threads included), since on
// the shared 2-core machine wall-clock rates move with other people's load. The serial worker hands over a whole
// completion at once, so its time to first token is its turn time: that is the experience today's path gives.
//
// Requests are the bot's (trainer/policies/endpoint-agent.ts): temperature 0.7, top-p 0.95, a seed, and no
// logprobs: the bot asks its own server for them only with LOCAL_SERVE_LOGPROBS=true (the trainer recomputes its
// own), since the llama.cpp engine then hands each token's whole distribution to JavaScript; every phase also
// runs with logprobs (`--logprobs on,off`), as the bot asks with that setting. Replies are capped at --max-tokens (32) where the bot allows 1,024. Clients run in
// a worker thread (bench/serve-clients.ts), as people's clients run in processes of their own, and each engine
// is warmed up first with one turn of as many sessions as the largest phase, as a server that has been running
// is: JIT-compiled, every sequence's memory touched, and every sequence holding a dialogue.
// Usage: npm run bench:serve [-- --sessions 1,8,32,64 --turns 3 --max-tokens 32 --engines llama,tfjs
//                                --logprobs on,off --checkpoint DIR --max-batch N (default: sweetloop serve's)
//                                --gguf FILE --json]
// --gguf FILE measures a GGUF model file (a foreign one: its own vocabulary and chat template, as `policy add
// --gguf` serves it) at 1, 8 and 32 sessions unless --sessions says otherwise; its serial baseline is the same
// llama.cpp engine taking one request at a time (tfjs cannot run a GGUF file).
// Checkpoint: --checkpoint, else the built starter (./data/checkpoints/starter, then the one shipped in the
// repository), else a random-weight checkpoint of the starter's shape; the run prints which.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { generateMiniTasks } from '../tasks/mini.ts';
import type { TaskRecord } from '../tasks/model.ts';
import type { PhaseReply, PhaseRequest, TurnRecord } from './serve-clients.ts';
import type { ServingEngine } from '../trainer/serve/engine-contract.ts';
import { startServer } from '../trainer/serve/server.ts';
import { SERVE_DEFAULTS } from '../trainer/serve/defaults.ts';
import { TfjsEngine } from '../trainer/serve/tfjs-engine.ts';
import { percentile } from '../tasks/stats.ts';

const { values: args } = parseArgs({
  options: {
    sessions: { type: 'string', default: '1,8,32,64' },
    turns: { type: 'string', default: '3' },
    'max-tokens': { type: 'string', default: '32' },
    engines: { type: 'string', default: 'llama,tfjs' },
    logprobs: { type: 'string', default: 'on,off' },
    checkpoint: { type: 'string' },
    gguf: { type: 'string' },
    'max-batch': { type: 'string', default: String(SERVE_DEFAULTS.maxBatch) },
    seed: { type: 'string', default: '1234' },
    json: { type: 'boolean', default: false },
  },
});

function positiveInt(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}
const GGUF = args.gguf ? resolve(args.gguf) : null;
if (GGUF && !existsSync(GGUF)) throw new Error(`--gguf ${args.gguf}: no such file`);
if (GGUF && process.argv.every((a) => !a.startsWith('--sessions'))) args.sessions = '1,8,32';
if (GGUF && process.argv.every((a) => !a.startsWith('--engines'))) args.engines = 'llama,llama-serial';
const SESSIONS = args.sessions.split(',').map((s) => positiveInt('sessions', s.trim()));
const TURNS = positiveInt('turns', args.turns);
const MAX_TOKENS = positiveInt('max-tokens', args['max-tokens']);
const MAX_BATCH = positiveInt('max-batch', args['max-batch']);
const SEED = positiveInt('seed', args.seed);
const ENGINES = args.engines.split(',').map((e) => e.trim());
for (const e of ENGINES)
  if (e !== 'llama' && e !== 'tfjs' && !(GGUF && e === 'llama-serial'))
    throw new Error(`--engines: unknown engine ${JSON.stringify(e)} (llama, tfjs; with --gguf: llama, llama-serial)`);
if (GGUF && ENGINES.includes('tfjs'))
  throw new Error('--gguf: tfjs cannot run a GGUF file (engines: llama, llama-serial)');
const LOGPROBS = args.logprobs.split(',').map((v) => {
  if (v.trim() !== 'on' && v.trim() !== 'off')
    throw new Error(`--logprobs: ${JSON.stringify(v)} is neither on nor off`);
  return v.trim() === 'on';
});

// ---------------------------------------------------------------------------------------------------------
// The checkpoint

interface Checkpoint {
  dir: string;
  what: string;
  cleanup?: () => Promise<void>;
}

/** A random-weight checkpoint of the starter's shape, its tokenizer learnt (as the starter's is) from expert games. */
async function randomStarterShape(): Promise<Checkpoint> {
  const [
    { STARTER_SIZE, expertDialogues },
    { ChatFormatter, CHATML_TEMPLATE },
    { trainByteLevelBpe, chatMlTokenizerConfig },
    { TextTokenizer, saveTokenizerFiles },
    { llamaConfig },
    { Decoder },
    { saveCheckpoint },
  ] = await Promise.all([
    import('../trainer/recipes/starter.ts'),
    import('../trainer/model/chat.ts'),
    import('../trainer/model/bpe-train.ts'),
    import('../trainer/model/tokenizer.ts'),
    import('../trainer/model/architecture.ts'),
    import('../trainer/model/decoder.ts'),
    import('../trainer/model/checkpoint.ts'),
  ]);
  const dir = await mkdtemp(join(tmpdir(), 'bench-serve-'));
  const chat = new ChatFormatter(CHATML_TEMPLATE);
  const rendered = (await expertDialogues(SEED, 120)).map((d) => chat.format(d));
  const tokenizerJson = trainByteLevelBpe(rendered, { vocabSize: STARTER_SIZE.vocabSize });
  const tokenizerConfig = chatMlTokenizerConfig(CHATML_TEMPLATE, { model_max_length: STARTER_SIZE.contextLength });
  const tok = new TextTokenizer({
    tokenizerJson: tokenizerJson as unknown as Record<string, unknown>,
    tokenizerConfig,
  });
  const config = llamaConfig({
    vocabSize: tok.vocabSize,
    hiddenSize: STARTER_SIZE.hiddenSize,
    intermediateSize: STARTER_SIZE.intermediateSize,
    numLayers: STARTER_SIZE.numLayers,
    numHeads: STARTER_SIZE.numHeads,
    numKvHeads: STARTER_SIZE.numKvHeads,
    maxPositionEmbeddings: STARTER_SIZE.contextLength,
    tieWordEmbeddings: true,
    eosTokenIds: [tok.tokenToId('<|im_end|>')!],
    padTokenId: tok.padTokenId,
  });
  const model = new Decoder(config, { name: 'bench', seed: SEED });
  try {
    await saveCheckpoint(dir, model);
  } finally {
    model.dispose();
  }
  await saveTokenizerFiles(dir, tokenizerJson, tokenizerConfig);
  return {
    dir,
    what: `random weights in the starter's shape (d${config.hiddenSize}, ${config.numLayers} layers, vocab ${config.vocabSize}, context ${config.maxPositionEmbeddings}): the starter is not built`,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

async function pickCheckpoint(): Promise<Checkpoint> {
  if (args.checkpoint) {
    if (!existsSync(join(args.checkpoint, 'config.json')))
      throw new Error(`--checkpoint ${args.checkpoint}: no config.json there`);
    return { dir: resolve(args.checkpoint), what: `--checkpoint ${args.checkpoint}` };
  }
  // CHECKPOINT_DIR's default (bin/config.ts); another CHECKPOINT_DIR's starter is given with --checkpoint.
  const built = resolve('./data/checkpoints', 'starter');
  if (existsSync(join(built, 'config.json'))) return { dir: built, what: `the built starter policy (${built})` };
  const { shippedStarterDir } = await import('../trainer/recipes/starter.ts');
  const shipped = shippedStarterDir(SEED);
  if (existsSync(join(shipped, 'config.json')))
    return { dir: shipped, what: `the starter policy shipped in the repository (${shipped})` };
  return randomStarterShape();
}

// ---------------------------------------------------------------------------------------------------------
// Sessions

/** The load generator: a worker thread running the sessions' clients (bench/serve-clients.ts). */
class Clients {
  // The worker registers tsx's loader itself (a worker does not inherit the hooks npm run bench:serve runs under).
  private readonly worker = new Worker(
    `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(new URL('./serve-clients.ts', import.meta.url).href)}); })`,
    { eval: true },
  );
  private next = 0;
  private readonly pending = new Map<number, { resolve: (r: TurnRecord[]) => void; reject: (e: Error) => void }>();

  constructor() {
    this.worker.on('message', (reply: PhaseReply) => {
      const p = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if ('error' in reply) p?.reject(new Error(`a bench session failed: ${reply.error}`));
      else p?.resolve(reply.records);
    });
    this.worker.on('error', (err) => {
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    });
  }

  /** Plays `tasks` as concurrent sessions of `turns` turns; session i's turn k has seed seeds[i] + k. */
  play(
    baseURL: string,
    model: string,
    tasks: TaskRecord[],
    seeds: number[],
    logprobs: boolean,
    turns = TURNS,
  ): Promise<TurnRecord[]> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({
        id,
        baseURL,
        model,
        tasks,
        seeds,
        turns,
        maxTokens: MAX_TOKENS,
        logprobs,
      } satisfies PhaseRequest);
    });
  }

  close(): Promise<number> {
    return this.worker.terminate();
  }
}

async function scrape(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const m = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    m.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return m;
}

interface PhaseResult {
  engine: string;
  /** Whether the requests asked for logprobs (the bot does only with LOCAL_SERVE_LOGPROBS=true). */
  logprobs: boolean;
  sessions: number;
  requests: number;
  tokens: number;
  /** Prompt tokens of the requests (the whole dialogue, every turn): the other half of the work. */
  promptTokens: number;
  /** Of those, tokens the engine found in a sequence's KV cache and did not evaluate again (null: not reported). */
  promptTokensReused: number | null;
  /** CPU time of this process (server, engine and its threads, the clients) over the phase. */
  cpuS: number;
  wallS: number;
  tokensPerS: number;
  ttftP50Ms: number;
  ttftP99Ms: number;
  turnP50Ms: number;
  turnP99Ms: number;
  meanBatch: number | null;
}

/** The llama.cpp engine's count of prompt tokens served from its KV caches (prefix reuse); null for others. */
function reusedPromptTokens(engine: ServingEngine): number | null {
  const s = engine.stats() as { promptTokensReused?: number };
  return typeof s.promptTokensReused === 'number' ? s.promptTokensReused : null;
}

async function runEngine(kind: string, engine: ServingEngine, tasks: TaskRecord[]): Promise<PhaseResult[]> {
  const server = await startServer({ engine });
  const clients = new Clients();
  const baseURL = `${server.url}/v1`;
  const results: PhaseResult[] = [];
  try {
    // Warm-up (see the top of this file): one turn of as many sessions as the largest phase.
    const warm = Math.max(...SESSIONS);
    await clients.play(
      baseURL,
      engine.modelName,
      tasks.slice(0, warm),
      tasks.slice(0, warm).map((_, i) => 1 + i),
      LOGPROBS[0]!,
      1,
    );
    // Each phase has tasks of its own (after the warm-up's): a dialogue repeated from an earlier phase would find
    // its turns in the llama.cpp engine's KV caches, which real sessions never would.
    let offset = warm;
    for (const logprobs of LOGPROBS)
      for (const n of SESSIONS) {
        const before = await scrape(server.url);
        const reusedBefore = reusedPromptTokens(engine);
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        const phase = tasks.slice(offset, offset + n);
        const records = await clients.play(
          baseURL,
          engine.modelName,
          phase,
          phase.map((_, i) => 1000 * (offset + i)),
          logprobs,
        );
        offset += n;
        const wallS = (performance.now() - t0) / 1000;
        const cpu = process.cpuUsage(cpu0);
        const reusedAfter = reusedPromptTokens(engine);
        const after = await scrape(server.url);
        const steps =
          (after.get('sweetloop_serve_decode_steps_total') ?? 0) -
          (before.get('sweetloop_serve_decode_steps_total') ?? 0);
        const seqs =
          (after.get('sweetloop_serve_step_sequences_total') ?? 0) -
          (before.get('sweetloop_serve_step_sequences_total') ?? 0);
        const tokens = records.reduce((s, r) => s + r.tokens, 0);
        const promptTokens =
          (after.get('sweetloop_serve_prompt_tokens_total') ?? 0) -
          (before.get('sweetloop_serve_prompt_tokens_total') ?? 0);
        const r: PhaseResult = {
          engine: kind,
          logprobs,
          sessions: n,
          requests: records.length,
          tokens,
          promptTokens,
          promptTokensReused: reusedBefore === null || reusedAfter === null ? null : reusedAfter - reusedBefore,
          cpuS: (cpu.user + cpu.system) / 1e6,
          wallS,
          tokensPerS: tokens / wallS,
          ttftP50Ms: percentile(
            records.map((x) => x.ttftMs),
            50,
          ),
          ttftP99Ms: percentile(
            records.map((x) => x.ttftMs),
            99,
          ),
          turnP50Ms: percentile(
            records.map((x) => x.turnMs),
            50,
          ),
          turnP99Ms: percentile(
            records.map((x) => x.turnMs),
            99,
          ),
          meanBatch: steps > 0 ? seqs / steps : null,
        };
        results.push(r);
        if (!args.json)
          process.stderr.write(
            `  ${kind} x${n}${logprobs ? ', logprobs' : ''}: ${r.tokensPerS.toFixed(1)} tokens/s over ${wallS.toFixed(1)} s\n`,
          );
      }
  } finally {
    await clients.close();
    await server.close();
  }
  return results;
}

async function main(): Promise<void> {
  const loadBefore = loadavg();
  const ckpt: Checkpoint = GGUF ? { dir: GGUF, what: `--gguf ${GGUF}` } : await pickCheckpoint();
  const maxSessions = Math.max(...SESSIONS);
  const tasks = generateMiniTasks({
    seed: SEED,
    count: maxSessions + LOGPROBS.length * SESSIONS.reduce((a, b) => a + b, 0),
  });
  const pool =
    process.env.UV_THREADPOOL_SIZE ?? "4 (libuv's default: run through npm run bench:serve to get sweetloop's)";
  console.log(`bench:serve  checkpoint: ${ckpt.what}`);
  console.log(
    `  ${TURNS} agent turns a session, at most ${MAX_TOKENS} tokens a turn, temperature 0.7, top-p 0.95; libuv thread pool ${pool}; load average before ${loadBefore.map((x) => x.toFixed(2)).join(' ')}`,
  );
  const all: PhaseResult[] = [];
  try {
    for (const kind of ENGINES) {
      const opts = {
        modelName: 'bench',
        checkpointDir: ckpt.dir,
        maxBatch: kind === 'tfjs' ? 1 : MAX_BATCH,
        maxQueue: maxSessions * 2,
      };
      let engine: ServingEngine;
      if (GGUF) {
        const { LlamaCppEngine } = await import('../trainer/serve/llama-engine.ts');
        const started = await LlamaCppEngine.startGguf({
          modelName: 'bench',
          ggufPath: GGUF,
          maxBatch: kind === 'llama-serial' ? 1 : MAX_BATCH,
          maxQueue: maxSessions * 2,
          cachedSequences: 0,
        });
        if (kind === 'llama')
          console.log(
            `  ${started.info.architecture}, ${started.info.quantization}, ${(started.info.sizeBytes / 1e6).toFixed(1)} MB, window ${started.engine.contextSize} tokens, sha256 ${started.info.sha256.slice(0, 16)}...`,
          );
        engine = started.engine;
        all.push(
          ...(await runEngine(
            kind === 'llama-serial' ? 'llama.cpp (serial, 1 at a time)' : 'llama.cpp (batched)',
            engine,
            tasks,
          )),
        );
        await engine.close();
        continue;
      }
      if (kind === 'llama') {
        // Imported here: it loads llama.cpp's native code, which the tfjs-only run does not need.
        const { LlamaCppEngine } = await import('../trainer/serve/llama-engine.ts');
        engine = await LlamaCppEngine.start(opts);
      } else engine = await TfjsEngine.start(opts);
      all.push(...(await runEngine(kind === 'tfjs' ? 'tfjs (serial worker)' : 'llama.cpp (batched)', engine, tasks)));
    }
  } finally {
    await ckpt.cleanup?.();
  }

  const fmt = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  const header = [
    'engine',
    'logprobs',
    'sessions',
    'requests',
    'prompt tokens',
    'of them cached',
    'tokens',
    'tokens/s',
    'CPU s',
    'TTFT p50 ms',
    'TTFT p99 ms',
    'turn p50 ms',
    'turn p99 ms',
    'mean batch',
  ];
  const rows = all.map((r) => [
    r.engine,
    r.logprobs ? 'yes' : 'no',
    String(r.sessions),
    String(r.requests),
    String(r.promptTokens),
    r.promptTokensReused === null ? '-' : String(r.promptTokensReused),
    String(r.tokens),
    fmt(r.tokensPerS, 1),
    fmt(r.cpuS, 1),
    fmt(r.ttftP50Ms),
    fmt(r.ttftP99Ms),
    fmt(r.turnP50Ms),
    fmt(r.turnP99Ms),
    r.meanBatch === null ? '-' : r.meanBatch.toFixed(2),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));

  // Batched ÷ serial tokens/s per concurrency: throughputRatio for the bot's requests (without logprobs, the
  // default) when they ran, else for the others; the other kind under its own name.
  const ratios = (logprobs: boolean): Record<string, number> => {
    const ratio: Record<string, number> = {};
    for (const n of SESSIONS) {
      const batched = all.find(
        (r) => r.engine === 'llama.cpp (batched)' && r.logprobs === logprobs && r.sessions === n,
      );
      const serial = all.find(
        (r) =>
          (r.engine.startsWith('tfjs') || r.engine.includes('serial')) && r.logprobs === logprobs && r.sessions === n,
      );
      if (batched && serial && serial.tokensPerS > 0)
        ratio[String(n)] = Number((batched.tokensPerS / serial.tokensPerS).toFixed(2));
    }
    return ratio;
  };
  const primary = !LOGPROBS.includes(false);
  const ratio = ratios(primary);
  const other = LOGPROBS.length > 1 ? ratios(!primary) : {};
  const show = (r: Record<string, number>, what: string) => {
    if (Object.keys(r).length)
      console.log(
        `throughput ratio (batched / serial tokens/s), ${what}: ${Object.entries(r)
          .map(([n, x]) => `${n}: ${x}x`)
          .join(', ')}`,
      );
  };
  show(ratio, primary ? 'with logprobs (LOCAL_SERVE_LOGPROBS=true)' : "without logprobs (the bot's requests)");
  show(other, 'with logprobs (LOCAL_SERVE_LOGPROBS=true)');
  const loadAfter = loadavg();
  console.log(`load average after ${loadAfter.map((x) => x.toFixed(2)).join(' ')}`);
  if (args.json) {
    console.log(
      JSON.stringify({
        throughputRatio: ratio,
        logprobs: primary,
        ...(Object.keys(other).length ? { throughputRatioWithLogprobs: other } : {}),
        threadPool: process.env.UV_THREADPOOL_SIZE ?? null,
        checkpoint: ckpt.what,
        turns: TURNS,
        maxTokens: MAX_TOKENS,
        loadAverage: { before: loadBefore, after: loadAfter },
        results: all,
      }),
    );
  }
}

await main();
