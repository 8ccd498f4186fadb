// sweetloop serve's HTTP side against the official openai client: the real fastify server on a free port over
// the real tfjs worker engine (tiny random-weight checkpoints), and a real Postgres for following deploys.
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';
import { switchDeployedPolicy } from '../../../prisma/deployment-store.ts';
import type { PolicyVersion } from '../../../prisma/generated/client.ts';
import type { EngineRequest, ServingEngine } from '../../../trainer/serve/engine-contract.ts';
import { engineFactory, followDeployed, type Follower } from '../../../trainer/serve/follow.ts';
import { startServer, type RunningServer } from '../../../trainer/serve/server.ts';
import { EngineSlot } from '../../../trainer/serve/slot.ts';
import { TfjsEngine } from '../../../trainer/serve/tfjs-engine.ts';

const DIALOGUE = [
  { role: 'system' as const, content: 'You are a helpful collaborator.' },
  { role: 'user' as const, content: 'What should the function return when the list is empty?' },
];

function engineRequest(over: Partial<EngineRequest>): EngineRequest {
  return {
    messages: DIALOGUE,
    maxTokens: 8,
    temperature: 0,
    topP: 1,
    logprobs: false,
    topLogprobs: 0,
    adapter: null,
    signal: new AbortController().signal,
    ...over,
  };
}

const LONG_TOKENS = 1000;

/** A seed whose sampled completion of DIALOGUE runs long (random weights stop at EOS early for some seeds). */
async function longSeed(engine: TfjsEngine): Promise<{ seed: number; tokens: number }> {
  let best = { seed: 0, tokens: -1 };
  for (let seed = 1; seed <= 12 && best.tokens < 400; seed++) {
    const r = await engine.generate(engineRequest({ maxTokens: LONG_TOKENS, temperature: 1, seed })).result;
    if (r.completionTokens > best.tokens) best = { seed, tokens: r.completionTokens };
  }
  return best;
}

/** Prometheus text → sample values by name (with labels as written). */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    const value = Number(line.slice(at + 1));
    expect(Number.isNaN(value), `unparseable metrics line: ${line}`).toBe(false);
    out.set(line.slice(0, at), value);
  }
  return out;
}

async function metrics(server: RunningServer): Promise<Map<string, number>> {
  const res = await fetch(`${server.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return parseMetrics(await res.text());
}

async function health(
  server: RunningServer,
): Promise<{ status: string; running: number; queued: number; model?: string }> {
  return (await fetch(`${server.url}/health`)).json() as Promise<{ status: string; running: number; queued: number }>;
}

async function until(cond: () => Promise<boolean> | boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

function clientFor(server: RunningServer): OpenAI {
  // No retries: a 429 must reach the test, not be retried away by the client.
  return new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
}

describe('sweetloop serve over the tfjs engine', () => {
  let dir: string;
  let engine: TfjsEngine;
  let server: RunningServer;
  let client: OpenAI;
  let long: { seed: number; tokens: number };
  let fullDurationMs = Infinity;

  beforeAll(async () => {
    dir = await makeTinyCheckpoint({ maxPositionEmbeddings: 4096 });
    engine = await TfjsEngine.start({ modelName: 'tiny-v1', checkpointDir: dir, maxBatch: 1, maxQueue: 0 });
    long = await longSeed(engine);
    server = await startServer({ engine, retryAfterSeconds: 2 });
    client = clientFor(server);
  });
  afterAll(async () => {
    await server?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers a chat completion with logprobs, usage and a reproducible seed', async () => {
    const ask = () =>
      client.chat.completions.create({
        model: 'tiny-v1',
        messages: DIALOGUE,
        max_tokens: 12,
        temperature: 1,
        seed: 7,
        logprobs: true,
      });
    const a = await ask();
    const b = await ask();
    expect(a.object).toBe('chat.completion');
    expect(a.model).toBe('tiny-v1');
    const choice = a.choices[0]!;
    expect(choice.message.role).toBe('assistant');
    expect(['stop', 'length']).toContain(choice.finish_reason);
    expect(a.usage!.completion_tokens).toBeGreaterThan(0);
    expect(a.usage!.total_tokens).toBe(a.usage!.prompt_tokens + a.usage!.completion_tokens);
    const lp = choice.logprobs!.content!;
    expect(lp.length).toBeGreaterThan(0);
    expect(lp.map((t) => t.token).join('')).toBe(choice.message.content);
    for (const t of lp) {
      expect(t.logprob).toBeLessThanOrEqual(0);
      expect(Buffer.from(t.bytes!).toString('utf8')).toBe(t.token);
    }
    expect(b.choices[0]!.message.content).toBe(choice.message.content);
  });

  it('streams the same tokens as the non-streaming answer, usage last, then [DONE]', async () => {
    const params = { model: 'tiny-v1', messages: DIALOGUE, max_tokens: 16, temperature: 0 };
    const whole = await client.chat.completions.create(params);
    const stream = await client.chat.completions.create({
      ...params,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.object).toBe('chat.completion.chunk');
      if (chunk.choices[0]) {
        text += chunk.choices[0].delta.content ?? '';
        finish = chunk.choices[0].finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(whole.choices[0]!.message.content);
    expect(finish).toBe(whole.choices[0]!.finish_reason);
    expect(usage).toEqual(whole.usage);
    expect(chunks).toBeGreaterThan(2);

    // The wire format itself: every event a `data:` line, the last one [DONE].
    const raw = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...params, stream: true }),
    });
    expect(raw.headers.get('content-type')).toContain('text/event-stream');
    const events = (await raw.text()).split('\n\n').filter(Boolean);
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events.at(-1)).toBe('data: [DONE]');
  });

  it('lists the model, reports health, and refuses bad requests with clear OpenAI-shaped errors', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny-v1']);
    expect((await client.models.retrieve('tiny-v1')).id).toBe('tiny-v1');
    const h = await health(server);
    expect(h.status).toBe('ok');
    expect(h.model).toBe('tiny-v1');

    await expect(client.chat.completions.create({ model: 'tiny-v1', messages: DIALOGUE, n: 2 })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('n must be 1'),
    });
    await expect(client.chat.completions.create({ model: 'gpt-4o', messages: DIALOGUE })).rejects.toMatchObject({
      status: 404,
      code: 'model_not_found',
    });
    await expect(client.chat.completions.create({ model: 'tiny-v1', messages: [] })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('messages'),
    });
    await expect(
      client.chat.completions.create({ model: 'tiny-v1', messages: DIALOGUE, temperature: 5 }),
    ).rejects.toMatchObject({ status: 400, param: 'temperature' });
    await expect(
      client.chat.completions.create({ model: 'tiny-v1', messages: DIALOGUE, logprobs: true, top_logprobs: 3 }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('top_logprobs'),
    });
    const tooLong = 'word '.repeat(5000);
    await expect(
      client.chat.completions.create({ model: 'tiny-v1', messages: [{ role: 'user', content: tooLong }] }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining('context'),
    });

    for (const body of [
      '{not json',
      JSON.stringify([1, 2]),
      JSON.stringify({ model: 'tiny-v1', messages: [{ role: 'tool', content: 'x' }] }),
    ]) {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(res.status).toBe(400);
      const json = (await res.json()) as { error: { message: string; type: string } };
      expect(json.error.type).toBe('invalid_request_error');
      expect(json.error.message).not.toMatch(/\n\s+at /);
    }
    const missing = await fetch(`${server.url}/v1/completions`, { method: 'POST' });
    expect(missing.status).toBe(404);
  });

  it('answers 429 with Retry-After when the queue is full, and counts it in /metrics', async () => {
    const before = await metrics(server);
    const startedAt = performance.now();
    const first = client.chat.completions.create({
      model: 'tiny-v1',
      messages: DIALOGUE,
      max_tokens: LONG_TOKENS,
      temperature: 1,
      seed: long.seed,
    });
    await until(async () => (await health(server)).running === 1, 'the first request to run');
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny-v1', messages: DIALOGUE, max_tokens: 4 }),
    });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('rate_limit_exceeded');
    const done = await first;
    fullDurationMs = performance.now() - startedAt;
    expect(done.usage!.completion_tokens).toBe(long.tokens);
    const after = await metrics(server);
    expect(
      after.get('sweetloop_serve_rejected_overloaded_total')! -
        (before.get('sweetloop_serve_rejected_overloaded_total') ?? 0),
    ).toBe(1);
    expect(
      after.get('sweetloop_serve_generated_tokens_total')! - before.get('sweetloop_serve_generated_tokens_total')!,
    ).toBe(long.tokens);
    expect(
      after.get('sweetloop_serve_time_to_first_token_seconds_count')! -
        before.get('sweetloop_serve_time_to_first_token_seconds_count')!,
    ).toBe(1);
    expect(
      after.get('sweetloop_serve_request_duration_seconds_count')! -
        before.get('sweetloop_serve_request_duration_seconds_count')!,
    ).toBe(1);
    expect(after.get('sweetloop_serve_decode_steps_total')! - before.get('sweetloop_serve_decode_steps_total')!).toBe(
      long.tokens,
    );
    expect(after.get('sweetloop_serve_max_batch')).toBe(1);
  });

  it('a client that goes away frees the slot at once', async () => {
    const before = await metrics(server);
    const abort = new AbortController();
    const first = client.chat.completions.create(
      { model: 'tiny-v1', messages: DIALOGUE, max_tokens: LONG_TOKENS, temperature: 1, seed: long.seed, stream: true },
      { signal: abort.signal },
    );
    await until(async () => (await health(server)).running === 1, 'the request to run');
    const abortedAt = performance.now();
    abort.abort();
    await expect(first).rejects.toThrow();
    await until(async () => (await health(server)).running === 0, 'the slot to be freed', 5_000);
    // Freed by the cancel, not by the request running to its end (which took fullDurationMs above).
    expect(performance.now() - abortedAt).toBeLessThan(fullDurationMs / 2);
    // The slot is free for the next request, which would otherwise get 429 (maxQueue 0).
    const next = await client.chat.completions.create({
      model: 'tiny-v1',
      messages: DIALOGUE,
      max_tokens: 4,
      temperature: 0,
    });
    expect(next.choices[0]!.message.content).toBeTypeOf('string');
    const after = await metrics(server);
    expect(after.get('sweetloop_serve_aborted_total')! - (before.get('sweetloop_serve_aborted_total') ?? 0)).toBe(1);
  });
});

describe('sweetloop serve --policy deployed', () => {
  let t: TestDatabase;
  let dirs: string[] = [];
  let server: RunningServer;
  let follower: Follower;
  let v2: PolicyVersion;
  const served: string[] = [];

  beforeAll(async () => {
    t = await createTestDatabase();
    dirs = [
      await makeTinyCheckpoint({ seed: 1, maxPositionEmbeddings: 4096 }),
      await makeTinyCheckpoint({ seed: 2, maxPositionEmbeddings: 4096 }),
    ];
    await t.prisma.policyVersion.create({
      data: {
        name: 'serve-v1',
        algorithm: 'external',
        checkpointPath: dirs[0]!,
        checkpointSha256: '1'.repeat(64),
        status: 'deployed',
        deployedAt: new Date(),
      },
    });
    v2 = await t.prisma.policyVersion.create({
      data: { name: 'serve-v2', algorithm: 'external', checkpointPath: dirs[1]!, checkpointSha256: '2'.repeat(64) },
    });
    const slot = new EngineSlot();
    server = await startServer({ engine: slot });
    follower = await followDeployed({
      db: t.db,
      slot,
      factory: engineFactory({ kind: 'tfjs', maxBatch: 1, maxQueue: 16 }),
      onServe: (v) => served.push(v.name),
    });
  });
  afterAll(async () => {
    await follower?.stop();
    await server?.close();
    await t?.drop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('serves the deployed version, and a deploy switches it while requests in flight finish on the old one', async () => {
    expect(served).toEqual(['serve-v1']);
    const client = clientFor(server);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['serve-v1']);

    // Six long requests on v1's serial engine: most of them are still running or queued when v2 takes over.
    const finished: number[] = [];
    const inFlight = Array.from({ length: 6 }, (_, i) =>
      client.chat.completions
        .create({ model: 'serve-v1', messages: DIALOGUE, max_tokens: 500, temperature: 1, seed: i + 1 })
        .then((r) => {
          finished.push(i);
          return r;
        }),
    );
    await until(async () => (await health(server)).running === 1, 'v1 to start decoding');
    await switchDeployedPolicy(t.db, 'test', v2, 'policy.deploy');
    await until(() => served.includes('serve-v2'), 'the follower to serve v2');
    expect(finished.length).toBeLessThan(6); // the switch really happened with v1 requests in flight

    // New requests go to v2 at once; the old name is gone for them.
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['serve-v2']);
    const onV2 = await client.chat.completions.create({
      model: 'serve-v2',
      messages: DIALOGUE,
      max_tokens: 4,
      temperature: 0,
    });
    expect(onV2.model).toBe('serve-v2');
    await expect(
      client.chat.completions.create({ model: 'serve-v1', messages: DIALOGUE, max_tokens: 4 }),
    ).rejects.toMatchObject({ status: 404 });

    // Every request accepted by v1 completes there, none dropped; then v1's engine is closed.
    const results = await Promise.all(inFlight);
    for (const r of results) {
      expect(r.model).toBe('serve-v1');
      expect(r.usage!.completion_tokens).toBeGreaterThan(0);
    }
    await follower.server.retired;
  });

  it('loads an adapter version onto its base engine on deploy', async () => {
    // A LoRA adapter with non-zero B (a fresh one is the identity), saved in PEFT's layout.
    const adapterDir = await mkdtemp(join(tmpdir(), 'serve-lora-'));
    dirs.push(adapterDir);
    const tf = await import('@tensorflow/tfjs');
    const { initBackend } = await import('../../../trainer/model/backend.ts');
    const { loadCheckpoint } = await import('../../../trainer/model/checkpoint.ts');
    const { addLora, saveLora } = await import('../../../trainer/model/lora.ts');
    await initBackend();
    const { model } = await loadCheckpoint(dirs[1]!, { trainable: false });
    addLora(model, { rank: 4, alpha: 8, seed: 3 });
    for (const ad of model.adapters.values())
      tf.tidy(() => ad.b.assign(tf.randomNormal(ad.b.shape, 0, 0.5, 'float32', 5)));
    await saveLora(adapterDir, model);
    model.dispose();

    const v3 = await t.prisma.policyVersion.create({
      data: {
        name: 'serve-v3',
        algorithm: 'sweet',
        kind: 'adapter',
        checkpointPath: adapterDir,
        serving: { endpointVersionId: v2.id, adapterName: 'serve-v3-lora' },
      },
    });
    await switchDeployedPolicy(t.db, 'test', v3, 'policy.deploy');
    await until(() => served.includes('serve-v3'), 'the follower to load the adapter');
    const client = clientFor(server);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['serve-v2', 'serve-v3-lora']);
    const ask = (m: string) =>
      client.chat.completions.create({ model: m, messages: DIALOGUE, max_tokens: 24, temperature: 0, logprobs: true });
    const [base, adapted] = [await ask('serve-v2'), await ask('serve-v3-lora')];
    expect(adapted.model).toBe('serve-v3-lora');
    // Same greedy path would give the same logprobs; the adapter moves them.
    expect(adapted.choices[0]!.logprobs!.content!.map((x) => x.logprob)).not.toEqual(
      base.choices[0]!.logprobs!.content!.map((x) => x.logprob),
    );
  });
});

describe('sweetloop serve over the llama.cpp engine', () => {
  let work: string;
  let engine: ServingEngine;
  let server: RunningServer;
  let client: OpenAI;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'serve-llama-'));
    const ckpt = await makeTinyCheckpoint({ dir: join(work, 'ckpt') });
    // Imported here: the native engine loads native code; the tfjs tests above do not depend on it.
    const { LlamaCppEngine } = await import('../../../trainer/serve/llama-engine.ts');
    engine = await LlamaCppEngine.start({
      modelName: 'tiny-llama',
      checkpointDir: ckpt,
      cacheDir: join(work, 'gguf'),
      contextSize: 512,
      maxBatch: 4,
      maxQueue: 4,
    });
    server = await startServer({ engine });
    client = clientFor(server);
  });
  afterAll(async () => {
    await server?.close();
    await rm(work, { recursive: true, force: true });
  });

  it('decodes two streamed requests started together in one batch, as /metrics shows', async () => {
    const before = await metrics(server);
    const run = async (content: string) => {
      const stream = await client.chat.completions.create({
        model: 'tiny-llama',
        messages: [{ role: 'user', content }],
        max_tokens: 24,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let tokens = 0;
      for await (const c of stream) {
        text += c.choices[0]?.delta?.content ?? '';
        if (c.usage) tokens = c.usage.completion_tokens;
      }
      return { text, tokens };
    };
    const [a, b] = await Promise.all([
      run('What should the function return when the list is empty?'),
      run('def scale(values, factor):'),
    ]);
    expect(Math.min(a.tokens, b.tokens)).toBeGreaterThan(4);
    const after = await metrics(server);
    const steps =
      after.get('sweetloop_serve_decode_steps_total')! - (before.get('sweetloop_serve_decode_steps_total') ?? 0);
    const seqs =
      after.get('sweetloop_serve_step_sequences_total')! - (before.get('sweetloop_serve_step_sequences_total') ?? 0);
    // Serially the two would need a step a token each; together they share steps, so sequences outnumber steps.
    expect(steps).toBeLessThan(a.tokens + b.tokens);
    expect(seqs / steps).toBeGreaterThan(1.5);
    expect(after.get('sweetloop_serve_max_batch')).toBe(4);
    expect(
      after.get('sweetloop_serve_generated_tokens_total')! -
        (before.get('sweetloop_serve_generated_tokens_total') ?? 0),
    ).toBe(a.tokens + b.tokens);
  });

  it('a client that goes away mid-stream leaves the batch', async () => {
    const before = await metrics(server);
    // A raw connection, dropped right after the first token arrives.
    const firstData = await new Promise<string>((resolve, reject) => {
      const req = http.request(
        `${server.url}/v1/chat/completions`,
        { method: 'POST', headers: { 'content-type': 'application/json' } },
        (res) => {
          let seen = '';
          res.on('data', (d: Buffer) => {
            seen += d.toString();
            // The role chunk, then the first token's.
            if (seen.split('data: ').length > 2) {
              req.destroy();
              resolve(seen);
            }
          });
          res.on('error', () => {});
        },
      );
      req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
      req.end(
        JSON.stringify({
          model: 'tiny-llama',
          messages: DIALOGUE,
          max_tokens: 400,
          temperature: 1,
          seed: 3,
          stream: true,
        }),
      );
    });
    expect(firstData).not.toContain('[DONE]');
    await until(async () => (await health(server)).running === 0, 'the sequence to leave the batch', 10_000);
    const after = await metrics(server);
    expect(after.get('sweetloop_serve_aborted_total')! - (before.get('sweetloop_serve_aborted_total') ?? 0)).toBe(1);
    // Cut short: far fewer tokens than asked for went out.
    expect(
      after.get('sweetloop_serve_generated_tokens_total')! -
        (before.get('sweetloop_serve_generated_tokens_total') ?? 0),
    ).toBeLessThan(400);
  });

  it("returns top_logprobs in OpenAI's shape", async () => {
    const r = await client.chat.completions.create({
      model: 'tiny-llama',
      messages: DIALOGUE,
      max_tokens: 6,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    });
    const content = r.choices[0]!.logprobs!.content!;
    expect(content.length).toBeGreaterThan(0);
    expect(content.map((t) => t.token).join('')).toBe(r.choices[0]!.message.content);
    for (const t of content) {
      expect(t.top_logprobs).toHaveLength(3);
      // Greedy: the chosen token is the most likely one.
      expect(t.logprob).toBeCloseTo(Math.max(...t.top_logprobs.map((x) => x.logprob)), 4);
    }
  });
});
