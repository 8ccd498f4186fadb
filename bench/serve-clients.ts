// bench:serve's load generator, run in a worker thread: the sessions' openai clients (request building, SSE
// parsing, timing) on a thread of their own, as they would be in the people's own processes, rather than on the
// server's event loop, whose time is the thing measured. The worker plays what bench/serve.ts asks (one phase at
// a time) and posts each session's turn records back.
import { parentPort } from 'node:worker_threads';
import OpenAI from 'openai';
import { miniMeta } from '../tasks/mini-model.ts';
import type { TaskRecord } from '../tasks/model.ts';
import { buildDialogue, capCollaboratorReply, type DialogueTurn } from '../tasks/protocol.ts';

export interface TurnRecord {
  ttftMs: number;
  turnMs: number;
  tokens: number;
}

/** One phase: these sessions at once, `turns` agent turns each. */
export interface PhaseRequest {
  id: number;
  baseURL: string;
  model: string;
  tasks: TaskRecord[];
  /** Seed of session i's first turn (turn k uses seeds[i] + k). */
  seeds: number[];
  turns: number;
  maxTokens: number;
  logprobs: boolean;
}

export type PhaseReply = { id: number; records: TurnRecord[] } | { id: number; error: string };

/** What the collaborator says after agent turn k: one of the task's withheld facts, as a person would answer. */
function collaboratorReply(task: TaskRecord, k: number): string {
  const facts = miniMeta(task)?.withheld ?? [];
  const f = facts[k % Math.max(1, facts.length)];
  return capCollaboratorReply(
    f
      ? `${f.answer}, that is what I want for ${f.key.toLowerCase().replace(/_/g, ' ')}.`
      : 'Whatever you think is best.',
    'backend',
  );
}

/**
 * A stored-shape dialogue (tasks/protocol.ts buildDialogue) that grows by one agent reply (the model's own
 * streamed answer) and one collaborator reply per turn.
 */
async function session(client: OpenAI, req: PhaseRequest, task: TaskRecord, seed: number): Promise<TurnRecord[]> {
  const turns: DialogueTurn[] = [];
  const out: TurnRecord[] = [];
  for (let k = 0; k < req.turns; k++) {
    const started = performance.now();
    let ttft = NaN;
    let text = '';
    let tokens = 0;
    const stream = await client.chat.completions.create({
      model: req.model,
      messages: buildDialogue(task, turns),
      max_tokens: req.maxTokens,
      temperature: 0.7,
      top_p: 0.95,
      seed: seed + k,
      // As the bot asks (trainer/policies/endpoint-agent.ts): the sampled tokens' logprobs go into provenance.
      logprobs: req.logprobs,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta?.content;
      if (piece && Number.isNaN(ttft)) ttft = performance.now() - started;
      if (piece) text += piece;
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
    }
    out.push({
      ttftMs: Number.isNaN(ttft) ? performance.now() - started : ttft,
      turnMs: performance.now() - started,
      tokens,
    });
    turns.push({ role: 'agent', content: text }, { role: 'human', content: collaboratorReply(task, k) });
  }
  return out;
}

if (parentPort) {
  const port = parentPort;
  port.on('message', (req: PhaseRequest) => {
    const client = new OpenAI({ baseURL: req.baseURL, apiKey: 'bench', maxRetries: 0, timeout: 30 * 60_000 });
    Promise.all(req.tasks.map((task, i) => session(client, req, task, req.seeds[i]!))).then(
      (sessions) => port.postMessage({ id: req.id, records: sessions.flat() } satisfies PhaseReply),
      (err: unknown) =>
        port.postMessage({ id: req.id, error: (err as Error).stack ?? String(err) } satisfies PhaseReply),
    );
  });
}
