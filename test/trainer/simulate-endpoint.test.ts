// `simulate` on endpoint and adapter versions: games are played through the chat-completions protocol against a
// real HTTP server (several at once, seeded), scored by the real sandboxed evaluator, and stored as simulated
// sessions whose agent turns carry their provenance; a server that goes down for a while only delays the run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer, type ChatBody } from '../../testing/openai-server.ts';
import { importTasks } from '../../prisma/task-store.ts';
import type { TurnProvenance } from '../../tasks/agent.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { createScorer, type Scorer } from '../../tasks/scorer.ts';
import { registerAdapterVersion, registerEndpointVersion } from '../../trainer/policies/registry.ts';
import { simulate } from '../../trainer/simulate.ts';

let t: TestDatabase;
let server: OpenAiServer;
let scorer: Scorer;
let root: string;

// Asks one question, then answers with a function whose signature it copies from the task.
function player(body: ChatBody): string {
  const asked = body.messages.filter((m) => m.role === 'assistant').length;
  if (asked === 0) return 'What should the function return for an empty input?';
  const task = String(body.messages[1]!.content);
  const signature = /def \w+\([^)]*\)/.exec(task)?.[0] ?? 'def f()';
  return `I WANT TO ANSWER: ${signature}:\n    return None`;
}

beforeAll(async () => {
  t = await createTestDatabase();
  root = await mkdtemp(join(tmpdir(), 'simulate-endpoint-'));
  await importTasks(t.prisma, generateMiniTasks({ seed: 8, count: 3, split: 'test' }));
  server = await startOpenAiServer({ model: 'llama-test', maxModelLen: 8192, reply: player, tokenDelayMs: 2 });
  scorer = createScorer();
}, 120_000);

afterAll(async () => {
  await scorer?.close();
  await server?.close();
  await t?.drop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('simulate on served versions', () => {
  it('stores endpoint games with the provenance of every agent turn, surviving an outage', async () => {
    const v = await registerEndpointVersion(t.prisma, {
      name: 'llama',
      url: server.url,
      model: 'llama-test',
      maxTokens: 200,
    });
    // Down when the run starts: the first replies wait for it (the client's retries, then the run's patience).
    await server.down(2500);
    const games = await simulate(t.prisma, v, scorer, {
      kind: 'backend',
      split: 'test',
      episodes: 4,
      seed: 50,
      store: true,
      parallel: 2,
    });
    expect(games).toHaveLength(4);
    expect(games.every((g) => g.agentTurns === 2)).toBe(true);

    const sessions = await t.prisma.session.findMany({
      where: { policyVersionId: v.id },
      include: { turns: { orderBy: { index: 'asc' } }, evaluation: true },
    });
    expect(sessions).toHaveLength(4);
    const seeds: number[] = [];
    for (const s of sessions) {
      expect(s).toMatchObject({ simulated: true, channel: 'simulated', status: 'answered', turnCount: 2 });
      expect(s.turns.map((x) => x.role)).toEqual(['agent', 'human', 'agent']);
      expect(s.evaluation!.testsTotal).toBeGreaterThan(0);
      for (const turn of s.turns.filter((x) => x.role === 'agent')) {
        const p = turn.provenance as unknown as TurnProvenance;
        expect(p).toMatchObject({
          engine: 'endpoint',
          servedModel: 'llama-test',
          adapter: null,
          finishReason: 'stop',
          droppedTurns: 0,
        });
        expect(p.sampling).toMatchObject({ temperature: 0.7, topP: 0.95, maxTokens: 200 });
        expect(p.logprobs!.map((l) => l.token).join('')).toBe(turn.rawOutput);
        expect(turn.latencyMs).toBe(Math.round(p.latencyMs));
        expect(turn.promptTokens).toBeGreaterThan(0);
        expect(turn.completionTokens).toBe(p.logprobs!.length);
        seeds.push(p.sampling.seed!);
      }
    }
    // Game i samples with seed + 1000 i, turn k adding k.
    expect(seeds.sort((a, b) => a - b)).toEqual([50, 51, 1050, 1051, 2050, 2051, 3050, 3051]);
    // A refused connection never reaches the server: each agent turn was answered exactly once (nothing twice).
    expect(server.chatRequests()).toHaveLength(8);
  }, 180_000);

  it('plays adapter versions through their adapter, loading it first and unloading it after (not deployed)', async () => {
    const endpoint = await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'llama' } });
    const dir = join(root, 'adapter');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'adapter_config.json'), '{"peft_type":"LORA","r":4}');
    await writeFile(join(dir, 'adapter_model.safetensors'), Buffer.alloc(8));
    const a = await registerAdapterVersion(t.prisma, {
      name: 'sweet-1',
      endpoint,
      adapterDir: dir,
      algorithm: 'sweet',
    });
    const name = (a.serving as { adapterName: string }).adapterName;
    server.adapterCalls.length = 0;
    const games = await simulate(t.prisma, a, scorer, {
      kind: 'backend',
      split: 'test',
      episodes: 2,
      seed: 1,
      store: true,
    });
    expect(games).toHaveLength(2);
    expect(server.adapterCalls).toEqual([
      { op: 'load', name, path: dir },
      { op: 'unload', name },
    ]);
    const turns = await t.prisma.turn.findMany({ where: { session: { policyVersionId: a.id }, role: 'agent' } });
    expect(turns).toHaveLength(4);
    for (const turn of turns) expect(turn.provenance).toMatchObject({ servedModel: name, adapter: name });
  }, 120_000);
});
