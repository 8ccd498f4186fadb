// The bot's local server (trainer/serve/local.ts), through loadAgent's local path: a checkpoint version's agent is
// the endpoint agent against the local server (model = the version's name, the engine's provenance, the
// checkpoint's window), holds keep a version loaded, the last release unloads it, a version that cannot be loaded
// fails with its reason and leaves nothing held, and a checkpoint llama.cpp refuses is served by tfjs (the reason
// logged once) while the next one still gets llama.cpp. Real Postgres, real tiny checkpoints, real engines.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';
import type { BackendTask } from '../../../tasks/model.ts';
import { buildDialogue } from '../../../tasks/protocol.ts';
import { loadAgent } from '../../../trainer/policies/agent-for.ts';
import { LocalServing } from '../../../trainer/serve/local.ts';

const task: BackendTask = {
  kind: 'backend',
  description: 'A function that converts a temperature. The signature of the function is: def convert(t)',
  reference: 'def convert(t):\n    return t * 9 / 5 + 32\n',
  testCases: ['convert(0)'],
};

describe('local serving', () => {
  let t: TestDatabase;
  let dir: string;
  let local: LocalServing;
  beforeAll(async () => {
    t = await createTestDatabase();
    dir = await makeTinyCheckpoint({ seed: 4, maxPositionEmbeddings: 1024 });
    local = await LocalServing.start({ prisma: t.prisma, engine: 'tfjs', maxBatch: 1, maxQueue: 4 });
  }, 60_000);
  afterAll(async () => {
    await local?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves a checkpoint version to the endpoint agent and unloads it on the last release', async () => {
    const v = await t.prisma.policyVersion.create({
      data: { name: 'tiny-local', algorithm: 'starter', checkpointPath: dir },
    });
    const agent = await loadAgent(v, { local, seed: 7, sampling: { maxTokens: 8 } });
    expect(local.loaded()).toEqual(['tiny-local']);
    try {
      const r = await agent.reply(buildDialogue(task, []));
      expect(r.provenance).toMatchObject({
        engine: 'tfjs',
        servedModel: 'tiny-local',
        adapter: null,
        sampling: { seed: 7, maxTokens: 8 },
      });
      // The bot's own server is not asked for logprobs unless a setting says so: recorded as not requested.
      expect(r.provenance).toMatchObject({ logprobs: null, logprobsRequested: false });
      expect(r.completionTokens).toBeLessThanOrEqual(8);
      // A second holder (the deployed version, say) keeps it loaded past the agent's close.
      const held = await local.acquire(v);
      expect(held).toMatchObject({ model: 'tiny-local', engine: 'tfjs', contextWindow: 1024, url: local.url });
    } finally {
      await agent.close();
    }
    expect(local.loaded()).toEqual(['tiny-local']);
    await local.release(v);
    expect(local.loaded()).toEqual([]);
    const health = (await (await fetch(`${local.server.url}/metrics`)).text()).split('\n');
    expect(health).toContain('sweetloop_serve_requests_total{status="200"} 1');
  }, 120_000);

  it('asks for logprobs when told to (LOCAL_SERVE_LOGPROBS), one per generated token', async () => {
    const v = await t.prisma.policyVersion.create({
      data: { name: 'tiny-logprobs', algorithm: 'starter', checkpointPath: dir },
    });
    const agent = await loadAgent(v, { local, localLogprobs: true, seed: 7, sampling: { maxTokens: 8 } });
    try {
      const r = await agent.reply(buildDialogue(task, []));
      expect(r.provenance?.logprobsRequested).toBe(true);
      expect(r.provenance?.logprobs?.length).toBe(r.completionTokens);
      expect(r.provenance!.logprobs!.every((l) => Number.isFinite(l.logprob) && l.logprob <= 0)).toBe(true);
    } finally {
      await agent.close();
    }
  }, 120_000);

  it('refuses versions it cannot load, with the reason, holding nothing', async () => {
    const missing = await t.prisma.policyVersion.create({
      data: { name: 'gone', algorithm: 'starter', checkpointPath: '/nonexistent/checkpoint' },
    });
    await expect(loadAgent(missing, { local })).rejects.toThrow(/nonexistent/);
    expect(local.loaded()).toEqual([]);
    const endpoint = await t.prisma.policyVersion.create({
      data: {
        name: 'remote',
        algorithm: 'external',
        kind: 'endpoint',
        serving: {
          url: 'http://127.0.0.1:9/v1',
          model: 'm',
          contextWindow: 4096,
          temperature: 0.7,
          topP: 0.95,
          maxTokens: 256,
        },
      },
    });
    await expect(local.acquire(endpoint)).rejects.toThrow(/only checkpoints and GGUF models are served locally/);
  });

  it('falls back to tfjs for a checkpoint llama.cpp refuses, saying why once, and still uses llama.cpp for the next', async () => {
    // A byte-fallback BPE tokenizer: the tfjs tokenizer reads it, the GGUF writer refuses it.
    const refused = await makeTinyCheckpoint({ seed: 5, maxPositionEmbeddings: 1024 });
    const tokFile = join(refused, 'tokenizer.json');
    const tok = JSON.parse(await readFile(tokFile, 'utf8')) as { model: Record<string, unknown> };
    tok.model.byte_fallback = true;
    await writeFile(tokFile, JSON.stringify(tok));
    const lines: { level: number; msg: string; reason?: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        done();
      },
    });
    const llama = await LocalServing.start({
      prisma: t.prisma,
      engine: 'llama',
      maxBatch: 2,
      maxQueue: 4,
      log: pino({ level: 'info' }, sink),
    });
    try {
      const a = await t.prisma.policyVersion.create({
        data: { name: 'refused', algorithm: 'starter', checkpointPath: refused },
      });
      const b = await t.prisma.policyVersion.create({
        data: { name: 'fine', algorithm: 'starter', checkpointPath: dir },
      });
      expect((await llama.acquire(a)).engine).toBe('tfjs');
      await llama.release(a);
      expect((await llama.acquire(a)).engine).toBe('tfjs'); // loaded again: the same reason is not repeated
      const agent = await loadAgent(b, { local: llama, sampling: { maxTokens: 4 } });
      try {
        expect((await agent.reply(buildDialogue(task, []))).provenance).toMatchObject({
          engine: 'llama',
          servedModel: 'fine',
        });
      } finally {
        await agent.close();
      }
      const agentA = await loadAgent(a, { local: llama, sampling: { maxTokens: 4 } });
      try {
        expect((await agentA.reply(buildDialogue(task, []))).provenance).toMatchObject({
          engine: 'tfjs',
          servedModel: 'refused',
        });
      } finally {
        await agentA.close();
      }
      await llama.release(a);
      const fallbacks = lines.filter((l) => l.level === 40 && /falling back/.test(l.msg));
      expect(fallbacks).toHaveLength(1);
      expect(fallbacks[0]!.reason).toMatch(/byte-level BPE/);
    } finally {
      await llama.close();
      await rm(refused, { recursive: true, force: true });
    }
  }, 180_000);
});
