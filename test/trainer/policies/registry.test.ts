// Registering endpoint versions: the server is asked whether it serves the model (and for its window), bad
// settings are refused with a message, and only the NAME of the key's variable is stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../../testing/openai-server.ts';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';
import { buildDialogue } from '../../../tasks/protocol.ts';
import { createEndpointAgent, tokenizerCounter } from '../../../trainer/policies/endpoint-agent.ts';
import { registerEndpointVersion, RegistryError } from '../../../trainer/policies/registry.ts';
import { servedAt, servingOf } from '../../../trainer/policies/serving.ts';

let t: TestDatabase;
let server: OpenAiServer;
const SECRET = 'sk-registry-secret-42';

beforeAll(async () => {
  t = await createTestDatabase();
  server = await startOpenAiServer({ model: 'qwen2.5-7b', maxModelLen: 32768, apiKey: SECRET });
  process.env.REGISTRY_TEST_KEY = SECRET;
}, 120_000);

afterAll(async () => {
  delete process.env.REGISTRY_TEST_KEY;
  await server?.close();
  await t?.drop();
});

describe('registerEndpointVersion', () => {
  it("stores a candidate endpoint version with the server's window and the key variable's name only", async () => {
    const v = await registerEndpointVersion(t.prisma, {
      name: 'qwen',
      url: `${server.url}/`,
      model: 'qwen2.5-7b',
      apiKeyEnv: 'REGISTRY_TEST_KEY',
    });
    expect(v).toMatchObject({ kind: 'endpoint', status: 'candidate', algorithm: 'external', checkpointPath: null });
    expect(servingOf(v)).toEqual({
      url: server.url,
      model: 'qwen2.5-7b',
      apiKeyEnv: 'REGISTRY_TEST_KEY',
      contextWindow: 32768,
      temperature: 0.7,
      topP: 0.95,
      maxTokens: 1024,
    });
    expect(servedAt(v)).toBe(`${server.url} qwen2.5-7b`);
    const row = await t.prisma.$queryRawUnsafe<{ s: string }[]>(
      `SELECT row_to_json(p)::text AS s FROM "PolicyVersion" p`,
    );
    expect(row.map((r) => r.s).join('\n')).not.toContain(SECRET);
    expect(server.requests.at(-1)!.headers.authorization).toBe(`Bearer ${SECRET}`);
  });

  it('refuses what cannot work, with a message', async () => {
    const base = { url: server.url, model: 'qwen2.5-7b', apiKeyEnv: 'REGISTRY_TEST_KEY' };
    await expect(registerEndpointVersion(t.prisma, { ...base, name: 'qwen' })).rejects.toThrow(/already exists/);
    await expect(registerEndpointVersion(t.prisma, { ...base, name: 'x', model: 'gpt-5' })).rejects.toThrow(
      /does not serve a model named "gpt-5"; it serves: qwen2.5-7b/,
    );
    await expect(registerEndpointVersion(t.prisma, { ...base, name: 'x', apiKeyEnv: undefined })).rejects.toThrow(
      /did not answer GET \/models.*HTTP 401/,
    );
    await expect(registerEndpointVersion(t.prisma, { ...base, name: 'x', apiKeyEnv: SECRET })).rejects.toThrow(
      /NAME of an environment variable|not set/,
    );
    await expect(
      registerEndpointVersion(t.prisma, { ...base, name: 'x', url: 'http://127.0.0.1:9/v1', check: false }),
    ).rejects.toThrow(/--context-window/);
    await expect(registerEndpointVersion(t.prisma, { ...base, name: 'x', maxTokens: 40000 })).rejects.toThrow(
      /leaves no room/,
    );
    await expect(registerEndpointVersion(t.prisma, { ...base, name: 'bad name!' })).rejects.toBeInstanceOf(
      RegistryError,
    );
    await expect(
      registerEndpointVersion(t.prisma, { ...base, name: 'x', baseModelDir: '/nonexistent' }),
    ).rejects.toThrow(/no tokenizer.json/);
    // Without the check a server that is not up yet can be registered.
    const later = await registerEndpointVersion(t.prisma, {
      ...base,
      name: 'later',
      url: 'http://127.0.0.1:9/v1',
      check: false,
      contextWindow: 4096,
    });
    expect(servingOf(later).contextWindow).toBe(4096);
  });

  it("counts prompt tokens with the served model's tokenizer when given its directory", async () => {
    const dir = await makeTinyCheckpoint({ seed: 2 });
    try {
      const v = await registerEndpointVersion(t.prisma, {
        name: 'with-tokenizer',
        url: server.url,
        model: 'qwen2.5-7b',
        apiKeyEnv: 'REGISTRY_TEST_KEY',
        baseModelDir: dir,
        contextWindow: 2048,
        maxTokens: 512,
      });
      const count = await tokenizerCounter(dir);
      const agent = await createEndpointAgent({ name: v.name, serving: servingOf(v) });
      const turns = Array.from({ length: 10 }, (_, i) => ({
        role: i % 2 === 0 ? ('agent' as const) : ('human' as const),
        content: `${i} ${'price '.repeat(60)}`,
      }));
      const r = await agent.reply(buildDialogue({ kind: 'backend', description: 'Prices.' }, turns));
      expect(r.provenance!.droppedTurns).toBeGreaterThan(0);
      expect(count(r.provenance!.prompt)).toBeLessThanOrEqual(2048 - 512);
      // Exactly the fewest pairs: one more pair would not have fit.
      const withOneMore = buildDialogue(
        { kind: 'backend', description: 'Prices.' },
        turns.slice(r.provenance!.droppedTurns - 2),
      );
      expect(count(withOneMore)).toBeGreaterThan(2048 - 512);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("keeps at most the version's recorded requests in flight to its server, and 16 when it records none", async () => {
    const dialogue = buildDialogue({ kind: 'backend', description: 'Prices.' }, [
      { role: 'agent', content: 'What do you need?' },
      { role: 'human', content: 'A sum.' },
    ]);
    const slow = await startOpenAiServer({
      model: 'm',
      maxModelLen: 4096,
      reply: () => 'one two three four',
      tokenDelayMs: 30,
    });
    try {
      const capped = await registerEndpointVersion(t.prisma, {
        name: 'capped',
        url: slow.url,
        model: 'm',
        maxInFlight: 3,
      });
      expect(servingOf(capped).maxInFlight).toBe(3);
      const agent = await createEndpointAgent({ name: capped.name, serving: servingOf(capped) });
      await Promise.all(Array.from({ length: 8 }, () => agent.reply(dialogue)));
      expect(slow.chatRequests()).toHaveLength(8);
      expect(slow.stats.maxActive).toBe(3);
      await expect(
        registerEndpointVersion(t.prisma, { name: 'zero', url: slow.url, model: 'm', maxInFlight: 0 }),
      ).rejects.toThrow(/maxInFlight/);
    } finally {
      await slow.close();
    }
    // Another server (the cap is per address, process-wide): a version recording none gets the client's default.
    const wide = await startOpenAiServer({
      model: 'm',
      maxModelLen: 4096,
      reply: () => 'one two three four',
      tokenDelayMs: 30,
    });
    try {
      const plain = await registerEndpointVersion(t.prisma, { name: 'uncapped', url: wide.url, model: 'm' });
      expect(servingOf(plain).maxInFlight).toBeUndefined();
      const agent = await createEndpointAgent({ name: plain.name, serving: servingOf(plain) });
      await Promise.all(Array.from({ length: 20 }, () => agent.reply(dialogue)));
      expect(wide.stats.maxActive).toBe(16);
    } finally {
      await wide.close();
    }
  });
});
