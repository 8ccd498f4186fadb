// The bot on a policy served by an OpenAI-compatible server (a real HTTP server written for the tests), through
// the real runtime (bot/runtime.ts) with trainer/policies/agent-for.ts as its agent loader: a console session
// from consent to rating; a session that survives the server being down for 30 s (the person is told, the turn
// is retried, nothing lost or stored twice); and deploy / rollback of LoRA adapter versions, whose agents load
// and unload the adapters on the server as the deployed version changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { startOpenAiServer, type ChatBody, type OpenAiServer } from '../../testing/openai-server.ts';
import type { SessionView } from '../../bot/session/engine.ts';
import type { Runtime } from '../../bot/runtime.ts';
import { deployPolicyByName, rollbackPolicy } from '../../prisma/deployment-store.ts';
import type { PolicyVersion } from '../../prisma/generated/client.ts';
import { importTasks } from '../../prisma/task-store.ts';
import type { TurnProvenance } from '../../tasks/agent.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { registerAdapterVersion, registerEndpointVersion } from '../../trainer/policies/registry.ts';
import { consoleRuntime, ConsolePerson } from '../helpers/console-person.ts';

let t: TestDatabase;
let server: OpenAiServer;
let runtime: Runtime;
let root: string;
let endpoint: PolicyVersion;

// Asks one question, then answers with a function whose signature it copies from the task.
function player(body: ChatBody): string {
  if (body.messages.filter((m) => m.role === 'assistant').length === 0) return 'Should the result be rounded?';
  const signature = /def \w+\([^)]*\)/.exec(String(body.messages[1]!.content))?.[0] ?? 'def f()';
  return `I WANT TO ANSWER: ${signature}:\n    return None`;
}

async function playConsoleSession(name: string, during?: () => Promise<void>): Promise<ConsolePerson> {
  const term = new ConsolePerson({ engine: runtime.engine, name: name, root, consentText: 'Consent text.' });
  let at = await term.expect('Do you accept? [y/N]');
  term.type('y');
  at = await term.expect('Which kind of task?', at);
  term.type('b');
  at = await term.expect('Agent (message 1 of 2)', at);
  at = await term.expect('Should the result be rounded?', at);
  at = await term.expect('You: ', at);
  await during?.();
  term.type('Yes, to two decimals.');
  return term;
}

async function finishConsoleSession(term: ConsolePerson, from: number): Promise<void> {
  let at = await term.expect('Agent (message 2 of 2) — final answer', from, 120_000);
  at = await term.expect('Result: ', at);
  at = await term.expect('How helpful was the agent?', at);
  term.type('3');
  at = await term.expect('A comment', at);
  term.type('');
  await term.expect('Start another session? [y/N]', at);
  term.type('n');
  await term.done;
}

async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  t = await createTestDatabase();
  root = await mkdtemp(join(tmpdir(), 'bot-endpoint-'));
  await importTasks(t.prisma, generateMiniTasks({ seed: 21, count: 6, split: 'train' }));
  server = await startOpenAiServer({
    model: 'llama-3.1-8b-instruct',
    maxModelLen: 8192,
    reply: player,
    tokenDelayMs: 1,
  });
  endpoint = await registerEndpointVersion(t.prisma, {
    name: 'llama',
    url: server.url,
    model: 'llama-3.1-8b-instruct',
    maxTokens: 256,
  });
  await deployPolicyByName(t.db, 'test', 'llama');
  runtime = await consoleRuntime(t);
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await server?.close();
  await t?.drop();
  if (root) await rm(root, { recursive: true, force: true });
});

async function sessionOf(name: string) {
  return t.prisma.session.findFirstOrThrow({
    where: { participant: { discordUserId: `console:${name}` } },
    include: { turns: { orderBy: { index: 'asc' } }, evaluation: true, ratings: true },
  });
}

describe('the bot on an endpoint policy', () => {
  it('runs a console session from consent to rating, storing each agent turn with its provenance', async () => {
    const before = server.chatRequests().length;
    const term = await playConsoleSession('ada');
    await finishConsoleSession(term, 0);
    const s = await sessionOf('ada');
    expect(s).toMatchObject({ channel: 'console', status: 'answered', policyVersionId: endpoint.id, turnCount: 2 });
    expect(s.turns.map((x) => x.role)).toEqual(['agent', 'human', 'agent']);
    expect(s.evaluation!.testsTotal).toBeGreaterThan(0);
    expect(s.ratings[0]!.value).toBe(3);
    for (const turn of s.turns.filter((x) => x.role === 'agent')) {
      const p = turn.provenance as unknown as TurnProvenance;
      expect(p).toMatchObject({
        engine: 'endpoint',
        servedModel: 'llama-3.1-8b-instruct',
        adapter: null,
        finishReason: 'stop',
        droppedTurns: 0,
      });
      expect(p.logprobs!.map((l) => l.token).join('')).toBe(turn.rawOutput);
      expect(turn.completionTokens).toBe(p.logprobs!.length);
    }
    expect((s.turns[2]!.provenance as unknown as TurnProvenance).prompt.at(-1)).toEqual({
      role: 'user',
      content: 'Yes, to two decimals.',
    });
    expect(server.chatRequests().length - before).toBe(2);
  }, 120_000);

  it('keeps a session through a 30-second outage of the server: the person is told, the turn is retried once it is back', async () => {
    const before = server.chatRequests().length;
    let downAt = 0;
    const term = await playConsoleSession('grace', async () => {
      downAt = Date.now();
      await server.down(30_000);
    });
    const told = await term.expect(
      '[The agent is unavailable right now; your session is kept and continues as soon as it is back.]',
      0,
      60_000,
    );
    const back = await term.expect('[The agent is back.]', told, 120_000);
    expect(Date.now() - downAt).toBeGreaterThanOrEqual(30_000);
    await finishConsoleSession(term, back);
    const s = await sessionOf('grace');
    expect(s).toMatchObject({ status: 'answered', turnCount: 2 });
    // Nothing lost, nothing stored twice.
    expect(s.turns.map((x) => x.role)).toEqual(['agent', 'human', 'agent']);
    expect(s.turns[0]!.content).toBe('Should the result be rounded?');
    expect(s.turns[1]!.content).toBe('Yes, to two decimals.');
    expect(s.turns[2]!.content).toMatch(/^I WANT TO ANSWER: def /);
    // Refused connections never reached the server: each agent turn was generated once.
    expect(server.chatRequests().length - before).toBe(2);
  }, 240_000);

  it('loads the deployed adapter into the server and unloads the one a deploy or rollback retires', async () => {
    const adapterDir = async (name: string) => {
      const dir = join(root, 'adapters', name);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'adapter_config.json'), '{"peft_type":"LORA","r":8}');
      await writeFile(join(dir, 'adapter_model.safetensors'), Buffer.alloc(8));
      return dir;
    };
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
    server.setReply(() => 'I WANT TO ANSWER: def f():\n    return None');
    const view: SessionView = {
      showAgentMessage: async (step) => `shown:${step.turnId}`,
      showResult: async () => {},
      askRating: async () => {},
      notice: async () => {},
    };
    let people = 0;
    // One session with whatever is deployed: the engine loads the deployed version's agent for it.
    const session = async () => {
      const person = { externalId: `console:p${++people}`, displayName: null };
      await runtime.engine.acceptConsent(person);
      const started = await runtime.engine.start(person, 'backend');
      await runtime.engine.advance(started.sessionId, view);
      const s = await t.prisma.session.findUniqueOrThrow({
        where: { id: started.sessionId },
        include: { turns: true },
      });
      return (s.turns[0]!.provenance as unknown as TurnProvenance).adapter;
    };
    const deployed = (id: string) =>
      until(() => runtime.policies.deployed?.id === id, `the bot to follow the deploy of ${id}`);

    await deployPolicyByName(t.db, 'mod', 'sweet-a');
    await deployed(a.id);
    expect(await session()).toBe(nameA);
    expect(server.adapterCalls).toEqual([{ op: 'load', name: nameA, path: join(root, 'adapters', 'a') }]);
    expect(server.chatRequests().at(-1)!.body.model).toBe(nameA);

    await deployPolicyByName(t.db, 'mod', 'sweet-b');
    await deployed(b.id);
    // The retired version's agent is closed (its adapter unloaded) once no session uses it.
    await until(() => server.adapterCalls.length === 2, 'the unload of the retired adapter');
    expect(server.adapterCalls[1]).toEqual({ op: 'unload', name: nameA });
    expect(await session()).toBe(nameB);
    expect(server.adapterCalls[2]).toEqual({ op: 'load', name: nameB, path: join(root, 'adapters', 'b') });

    await rollbackPolicy(t.db, 'mod');
    await deployed(a.id);
    await until(() => server.adapterCalls.length === 4, 'the unload after the rollback');
    expect(server.adapterCalls[3]).toEqual({ op: 'unload', name: nameB });
    expect(await session()).toBe(nameA);
    expect(server.adapterCalls.slice(4)).toEqual([{ op: 'load', name: nameA, path: join(root, 'adapters', 'a') }]);
    expect([...server.adapters.keys()]).toEqual([nameA]);
  }, 120_000);
});
