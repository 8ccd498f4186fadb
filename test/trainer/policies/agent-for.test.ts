// loadAgent for every kind of policy version, against a real OpenAI-compatible HTTP server and a real database:
// endpoint versions answer through the chat client with their provenance and context budget; adapter versions
// are loaded into the server before use, asked for by their adapter name, reloaded when a restarted server has
// forgotten them, and unloaded on close once their version is no longer deployed — deploy and rollback
// (prisma/deployment-store.ts) followed by loading and closing agents send exactly the right load/unload calls.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../../testing/openai-server.ts';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';
import { deployPolicyByName, rollbackPolicy } from '../../../prisma/deployment-store.ts';
import type { PolicyVersion } from '../../../prisma/generated/client.ts';
import { AgentUnavailableError } from '../../../tasks/agent.ts';
import type { BackendTask } from '../../../tasks/model.ts';
import { buildDialogue, playEpisode } from '../../../tasks/protocol.ts';
import { estimateTokens } from '../../../tasks/context-budget.ts';
import { createRuleSimulator } from '../../../tasks/simulator.ts';
import { loadAgent, type LoadedAgent } from '../../../trainer/policies/agent-for.ts';
import { registerAdapterVersion, registerEndpointVersion } from '../../../trainer/policies/registry.ts';

let t: TestDatabase;
let server: OpenAiServer;
let root: string;
let endpoint: PolicyVersion;

const task: BackendTask = {
  kind: 'backend',
  description: 'A function that converts a temperature. The signature of the function is: def convert(t)',
  reference: 'def convert(t):\n    return round(t * 9 / 5 + 32, 1)',
  testCases: ['convert(0)'],
};

async function adapterDir(name: string): Promise<string> {
  const dir = join(root, name);
  await import('node:fs/promises').then((fs) => fs.mkdir(dir, { recursive: true }));
  await writeFile(
    join(dir, 'adapter_config.json'),
    JSON.stringify({ peft_type: 'LORA', r: 4, lora_alpha: 8, target_modules: ['q_proj', 'v_proj'] }),
  );
  // The server in this test records the path and never reads the weights.
  await writeFile(join(dir, 'adapter_model.safetensors'), Buffer.alloc(8));
  return dir;
}

beforeAll(async () => {
  t = await createTestDatabase();
  root = await mkdtemp(join(tmpdir(), 'agent-for-'));
  server = await startOpenAiServer({ model: 'llama-3.1-8b-instruct', maxModelLen: 8192 });
  endpoint = await registerEndpointVersion(t.prisma, {
    name: 'llama-base',
    url: server.url,
    model: 'llama-3.1-8b-instruct',
    maxTokens: 256,
    temperature: 0.6,
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await t?.drop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('loadAgent', () => {
  it('answers as an endpoint version, with provenance, through the chat-completions protocol', async () => {
    server.setReply((b) =>
      b.messages.filter((m) => m.role === 'assistant').length >= 1
        ? 'I WANT TO ANSWER: def convert(t):\n    return round(t * 9 / 5 + 32, 1)'
        : 'Should the result be rounded?',
    );
    const agent = await loadAgent(endpoint, { seed: 100 });
    try {
      const episode = await playEpisode({ task, agent, collaborator: createRuleSimulator(task) });
      expect(episode.endReason).toBe('answered');
      expect(episode.turns.map((x) => x.role)).toEqual(['agent', 'human', 'agent']);
      const [first, , last] = episode.turns;
      expect(first!.provenance).toMatchObject({
        engine: 'endpoint',
        servedModel: 'llama-3.1-8b-instruct',
        adapter: null,
        sampling: { temperature: 0.6, topP: 0.95, maxTokens: 256, seed: 100 },
        finishReason: 'stop',
        droppedTurns: 0,
      });
      expect(last!.provenance!.sampling.seed).toBe(101);
      expect(last!.provenance!.prompt).toEqual(buildDialogue(task, episode.turns.slice(0, 2)));
      expect(last!.provenance!.logprobs!.map((l) => l.token).join('')).toBe(last!.content);
      expect(first!.provenance!.firstTokenMs).not.toBeNull();
      const sent = server
        .chatRequests()
        .slice(-2)
        .map((r) => r.body);
      expect(sent.map((b) => [b.model, b.seed, b.max_tokens, b.logprobs])).toEqual([
        ['llama-3.1-8b-instruct', 100, 256, true],
        ['llama-3.1-8b-instruct', 101, 256, true],
      ]);
    } finally {
      await agent.close();
    }
  });

  it("fits a long dialogue into the version's context window", async () => {
    const small = await registerEndpointVersion(t.prisma, {
      name: 'llama-small-window',
      url: server.url,
      model: 'llama-3.1-8b-instruct',
      contextWindow: 1024,
      maxTokens: 256,
    });
    server.setReply(() => 'Another question?');
    const agent = await loadAgent(small);
    try {
      const turns = Array.from({ length: 12 }, (_, i) => ({
        role: i % 2 === 0 ? ('agent' as const) : ('human' as const),
        content: `${i}: ${'word '.repeat(80)}`,
      }));
      const r = await agent.reply(buildDialogue(task, turns));
      const p = r.provenance!;
      expect(p.droppedTurns).toBeGreaterThan(0);
      expect(estimateTokens(p.prompt)).toBeLessThanOrEqual(1024 - 256);
      expect(p.prompt.at(-1)!.content).toBe(turns.at(-1)!.content);
      expect(server.chatRequests().at(-1)!.body.messages).toEqual(p.prompt);
    } finally {
      await agent.close();
    }
  });

  it('says the agent is unavailable when the server is down, and answers again when it is back', async () => {
    const agent = await loadAgent(endpoint, { chat: { maxRetries: 1 } });
    try {
      server.setReply(() => 'Back again.');
      await server.down(1500);
      await expect(agent.reply(buildDialogue(task, []))).rejects.toBeInstanceOf(AgentUnavailableError);
      await server.up();
      expect((await agent.reply(buildDialogue(task, []))).text).toBe('Back again.');
    } finally {
      await agent.close();
    }
  });

  it('loads adapters into the server on load, names them as the model, and unloads retired ones on close', async () => {
    const a = await registerAdapterVersion(t.prisma, {
      name: 'sweet-a',
      endpoint,
      adapterDir: await adapterDir('a'),
      algorithm: 'sweet',
    });
    const b = await registerAdapterVersion(t.prisma, {
      name: 'sweet-b',
      endpoint,
      adapterDir: await adapterDir('b'),
      algorithm: 'sweet',
    });
    const nameA = (a.serving as { adapterName: string }).adapterName;
    const nameB = (b.serving as { adapterName: string }).adapterName;
    expect(nameA).toMatch(/^sweet-a-[0-9a-f]{8}$/);
    server.adapterCalls.length = 0;
    server.setReply(() => 'A question from the adapter?');

    // What the bot's engine does on each deploy: load the deployed version's agent, close the one it replaces.
    const agents = new Map<string, LoadedAgent>();
    const follow = async (v: PolicyVersion) => {
      const next = await loadAgent(v, { prisma: t.prisma });
      for (const [id, old] of agents) if (id !== v.id) await old.close(), agents.delete(id);
      agents.set(v.id, next);
      return next;
    };

    await deployPolicyByName(t.db, 'test', 'sweet-a');
    const agentA = await follow(a);
    expect(server.adapterCalls).toEqual([{ op: 'load', name: nameA, path: join(root, 'a') }]);
    const r = await agentA.reply(buildDialogue(task, []));
    expect(r.provenance).toMatchObject({ servedModel: nameA, adapter: nameA });
    expect(server.chatRequests().at(-1)!.body.model).toBe(nameA);

    // Loading an agent for a version already loaded does not load it twice.
    const again = await loadAgent(a, { prisma: t.prisma });
    await again.close(); // still deployed: stays loaded
    expect(server.adapterCalls).toHaveLength(1);

    await deployPolicyByName(t.db, 'test', 'sweet-b');
    await follow(b);
    expect(server.adapterCalls.slice(1)).toEqual([
      { op: 'load', name: nameB, path: join(root, 'b') },
      { op: 'unload', name: nameA },
    ]);
    expect([...server.adapters.keys()]).toEqual([nameB]);

    await rollbackPolicy(t.db, 'test');
    const back = await follow(a);
    expect(server.adapterCalls.slice(3)).toEqual([
      { op: 'load', name: nameA, path: join(root, 'a') },
      { op: 'unload', name: nameB },
    ]);
    expect([...server.adapters.keys()]).toEqual([nameA]);

    // A restarted server has forgotten runtime adapters: the agent loads it again and answers.
    server.adapters.clear();
    expect((await back.reply(buildDialogue(task, []))).text).toBe('A question from the adapter?');
    expect(server.adapterCalls.at(-1)).toEqual({ op: 'load', name: nameA, path: join(root, 'a') });
    for (const x of agents.values()) await x.close();
  });

  it('loads an adapter version while its server is down, and loads the adapter once the server is back', async () => {
    const c = await registerAdapterVersion(t.prisma, {
      name: 'sweet-c',
      endpoint,
      adapterDir: await adapterDir('c'),
      algorithm: 'sweet',
    });
    const nameC = (c.serving as { adapterName: string }).adapterName;
    server.adapterCalls.length = 0;
    // Longer than the adapter routes' own retries (about 1.5 s), so loading finds the server down.
    await server.down(4000);
    const agent = await loadAgent(c, { prisma: t.prisma, chat: { maxRetries: 0 } });
    try {
      await expect(agent.reply(buildDialogue(task, []))).rejects.toBeInstanceOf(AgentUnavailableError);
      await server.up();
      server.setReply(() => 'Ready.');
      expect((await agent.reply(buildDialogue(task, []))).text).toBe('Ready.');
      expect(server.adapterCalls).toEqual([{ op: 'load', name: nameC, path: join(root, 'c') }]);
    } finally {
      await agent.close(); // a candidate: unloaded
    }
    expect(server.adapterCalls.at(-1)).toEqual({ op: 'unload', name: nameC });
  });

  it('loads checkpoint versions in-process, with tfjs provenance', async () => {
    const dir = await makeTinyCheckpoint({ seed: 3, maxPositionEmbeddings: 1024 });
    const v = await t.prisma.policyVersion.create({
      data: { name: 'tiny-ckpt', algorithm: 'starter', checkpointPath: dir, checkpointSha256: 'x' },
    });
    const agent = await loadAgent(v, { seed: 5, sampling: { maxTokens: 8 } });
    try {
      const r = await agent.reply(buildDialogue(task, []));
      expect(r.provenance).toMatchObject({
        engine: 'tfjs',
        servedModel: 'tiny-ckpt',
        adapter: null,
        sampling: { seed: 5, maxTokens: 8 },
      });
    } finally {
      await agent.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
