// The in-process policy agent under the context budget: a starter-shaped checkpoint (1,024-token window) plays a
// whole 10-turn game whose human replies are long, dropping its oldest turns instead of overflowing, and every
// reply carries its provenance with its exact tokens.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initBackend } from '../../../trainer/model/backend.ts';
import { buildStarterPolicy, STARTER_SIZE } from '../../../trainer/recipes/starter.ts';
import type { AgentReply, ChatMessage, Collaborator, CompletionTokens } from '../../../tasks/agent.ts';
import { checkpointSha256 } from '../../../trainer/model/checkpoint.ts';
import type { BackendTask } from '../../../tasks/model.ts';
import { buildDialogue, HUMAN_MESSAGE_CAP, MAX_AGENT_TURNS, playEpisode } from '../../../tasks/protocol.ts';
import { createPolicyAgent, type PolicyAgent } from '../../../trainer/model/policy.ts';

let dir: string;
let agent: PolicyAgent;

const task: BackendTask = {
  kind: 'backend',
  description:
    'A function that prices a cup of coffee from its size and extras. The signature of the function is: def price(size, extras)',
  reference: 'def price(size, extras):\n    return {"s": 2.0, "m": 2.5, "l": 3.0}[size] + 0.5 * len(extras)',
  testCases: ['price("s", [])'],
};

// A person who answers every question at the length limit.
const longWinded: Collaborator = {
  name: 'long-winded',
  async reply(dialogue: ChatMessage[]) {
    const turn = dialogue.filter((m) => m.role === 'assistant').length;
    const sentence = `Answer ${turn}: a small costs two dollars, a medium two fifty, a large three, and each extra adds fifty cents. `;
    return sentence.repeat(10).slice(0, HUMAN_MESSAGE_CAP.backend);
  },
};

beforeAll(async () => {
  // The starter's recipe and size (vocabulary 2,048 learnt from expert games, 1,024-token window), trained for
  // only two updates: its tokenizer is the real starter's kind, its answers are still noise.
  await initBackend('wasm');
  dir = join(await mkdtemp(join(tmpdir(), 'policy-budget-')), 'starter');
  await buildStarterPolicy({ dir, seed: 4, games: 24, steps: 2, tokensPerStep: 512, copyDrillPhase: null });
  agent = await createPolicyAgent({
    checkpointDir: dir,
    name: 'tiny-starter',
    maxTokens: 48,
    temperature: 0.8,
    seed: 11,
  });
}, 120_000);

afterAll(async () => {
  await agent?.close();
  if (dir) await rm(join(dir, '..'), { recursive: true, force: true });
});

describe('policy agent context budget', () => {
  it('plays a 10-turn game with long human replies to the end on a 1,024-token window', async () => {
    expect(agent.client.info.contextLength).toBe(STARTER_SIZE.contextLength);
    expect(STARTER_SIZE.contextLength).toBe(1024);
    const replies: AgentReply[] = [];
    const recording = {
      name: agent.name,
      reply: async (d: ChatMessage[], o?: { signal?: AbortSignal }) => {
        const r = await agent.reply(d, o);
        replies.push(r);
        return r;
      },
    };
    // Barely trained weights almost never write the answer marker, so the game runs to the turn limit.
    const episode = await playEpisode({ task, agent: recording, collaborator: longWinded, maxTurns: MAX_AGENT_TURNS });
    const agentTurns = episode.turns.filter((t) => t.role === 'agent');
    expect(agentTurns.length).toBe(replies.length);
    expect(episode.endReason).toBe('turn-limit');
    expect(agentTurns).toHaveLength(MAX_AGENT_TURNS);

    // Without the budget the last prompt would not have fit the window at all.
    const full = buildDialogue(task, episode.turns.slice(0, -1));
    const counter = await import('../../../trainer/model/tokenizer.ts').then((m) => m.TextTokenizer.load(dir));
    const { ChatFormatter } = await import('../../../trainer/model/chat.ts');
    const chat = ChatFormatter.fromTokenizer(counter);
    const tokens = (ms: readonly ChatMessage[]) =>
      counter.encode(chat.format(ms, { addGenerationPrompt: true })).length;
    expect(tokens(full)).toBeGreaterThan(1024);
    const sha256 = await checkpointSha256(dir);

    for (const [i, r] of replies.entries()) {
      const p = r.provenance!;
      expect(p.engine).toBe('tfjs');
      expect(p.servedModel).toBe('tiny-starter');
      expect(p.sampling).toEqual({ temperature: 0.8, topP: 0.95, maxTokens: 48, seed: 11 + i });
      expect(p.latencyMs).toBeGreaterThan(0);
      // What was sent: system prompt and task first, roles alternating, within the window minus the reply's room.
      expect(p.prompt[0]!.role).toBe('system');
      expect(p.prompt[1]).toEqual({ role: 'user', content: task.description });
      p.prompt.slice(2).forEach((m, k) => expect(m.role).toBe(k % 2 === 0 ? 'assistant' : 'user'));
      expect(tokens(p.prompt)).toBeLessThanOrEqual(1024 - 48);
      expect(r.promptTokens).toBe(tokens(p.prompt));
      expect(p.droppedTurns % 2).toBe(0);
      expect(p.prompt.length - 2 + p.droppedTurns).toBe(2 * i);
      // The latest human reply is always there (after the first turn).
      if (i > 0) expect(p.prompt.at(-1)!.content).toMatch(new RegExp(`^Answer ${i}:`));
      expect(p.logprobs).toHaveLength(r.completionTokens!);
      for (const l of p.logprobs!) expect(l.logprob).toBeLessThanOrEqual(0);
      // The exact tokens, always recorded: the ids the logprobs' text decodes from, the same log-probabilities,
      // and the weights named by the checkpoint's hash.
      const exact = p.tokens as CompletionTokens;
      expect(exact.ids).toHaveLength(r.completionTokens!);
      expect(exact.ids.map((id) => counter.decode([id]))).toEqual(p.logprobs!.map((l) => l.token));
      expect(exact.logprobs).toEqual(p.logprobs!.map((l) => l.logprob));
      expect(exact.weightsVersion).toBe(`tiny-starter@sha256:${sha256}`);
    }
    expect(replies.at(-1)!.provenance!.droppedTurns).toBeGreaterThan(0);
  }, 300_000);
});
