// The deployed policy as an Agent: a checkpoint served by the inference worker, prompted with the dialogue the
// protocol builds (system prompt, task description, alternating turns) rendered by the model's chat template.
// Before each reply the dialogue is fitted to the checkpoint's window minus the reply budget (tasks/context-budget.ts
// fitDialogue), counted with the checkpoint's own tokenizer and chat template, so a long session drops its oldest
// turns instead of overflowing the model. Every reply carries its provenance (engine 'tfjs') with its exact tokens:
// the worker computes each sampled token's log-probability anyway, so they are always recorded.
import {
  ownWeightsVersion,
  type Agent,
  type AgentReply,
  type ChatMessage,
  type TurnProvenance,
} from '../../tasks/agent.ts';
import { ProtocolError } from '../../tasks/protocol.ts';
import { fitDialogue } from '../../tasks/context-budget.ts';
import { replySeed } from '../../tasks/random.ts';
import type { BackendChoice } from './backend.ts';
import { ChatFormatter } from './chat.ts';
import { checkpointSha256 } from './checkpoint.ts';
import { InferenceClient } from './inference.ts';
import type { WorkerInfo } from './inference.ts';
import { TextTokenizer } from './tokenizer.ts';

export interface PolicyAgentOptions {
  /** Hugging Face model directory to serve (ignored when `client` is given). */
  checkpointDir?: string;
  /** Share an already started worker instead of starting one; `close()` then leaves it running. */
  client?: InferenceClient;
  backend?: BackendChoice;
  name?: string;
  /** Default 0.7: a collaborator-facing agent should not ramble; rollouts for training may want 1. */
  temperature?: number;
  /** Default 0.95. */
  topP?: number;
  /**
   * Default 1024 tokens (a backend answer; frontend pages may want more). Room for the reply is kept in the
   * window: this many tokens, but never more than half the window, so that a small model still sees the
   * conversation (generation stops at the window's end anyway).
   */
  maxTokens?: number;
  /** With a seed, reply k samples with seed + k: a whole game is reproducible. */
  seed?: number;
  /**
   * Recorded with each reply's tokens (tasks/agent.ts ownWeightsVersion of the version's stored sha256); default:
   * the name and the served checkpoint's sha256, computed when it is loaded.
   */
  weightsVersion?: string;
}

export interface PolicyAgent extends Agent {
  readonly client: InferenceClient;
  /** Serves another checkpoint from the next reply on (a deploy or rollback). */
  reload(checkpointDir: string): Promise<WorkerInfo>;
  close(): Promise<void>;
}

/** Counts prompt tokens exactly as the worker will encode them (LoadedPolicy.encodePrompt), on this thread. */
interface PromptCounter {
  count(messages: readonly ChatMessage[]): number;
  token(id: number): string;
}

async function promptCounter(checkpointDir: string): Promise<PromptCounter> {
  const tokenizer = await TextTokenizer.load(checkpointDir);
  const chat = ChatFormatter.fromTokenizer(tokenizer);
  return {
    count: (messages) => tokenizer.encode(chat.format(messages, { addGenerationPrompt: true })).length,
    token: (id) => tokenizer.decode([id]),
  };
}

/** Tokens kept free for the reply in a window of `window` tokens. */
export function replyReserve(window: number, maxTokens: number): number {
  return Math.max(1, Math.min(maxTokens, Math.floor(window / 2)));
}

export async function createPolicyAgent(options: PolicyAgentOptions): Promise<PolicyAgent> {
  let client = options.client;
  const owned = !client;
  if (!client) {
    if (!options.checkpointDir) throw new Error('createPolicyAgent: give checkpointDir or client');
    client = await InferenceClient.start({
      checkpointDir: options.checkpointDir,
      ...(options.backend ? { backend: options.backend } : {}),
    });
  }
  const c = client;
  const name = options.name ?? 'policy';
  const weightsOf = async (dir: string) => ownWeightsVersion(name, await checkpointSha256(dir));
  let counter: PromptCounter;
  let weightsVersion: string;
  try {
    counter = await promptCounter(c.info.checkpointDir);
    weightsVersion = options.weightsVersion ?? (await weightsOf(c.info.checkpointDir));
  } catch (err) {
    if (owned) await c.close();
    throw err;
  }
  const temperature = options.temperature ?? 0.7;
  const topP = options.topP ?? 0.95;
  const maxTokens = options.maxTokens ?? 1024;
  let calls = 0;

  return {
    name,
    client: c,
    async reply(dialogue: ChatMessage[], opts?: { signal?: AbortSignal }): Promise<AgentReply> {
      const seed = options.seed !== undefined ? replySeed(options.seed, calls) : undefined;
      calls++;
      const window = c.info.contextLength;
      const fitted = fitDialogue(dialogue, window - replyReserve(window, maxTokens), counter.count);
      if (!fitted.fits) {
        throw new ProtocolError(
          `${name}: the system prompt and the task alone take ${fitted.tokens} tokens, more than the ${window}-token window leaves after ${replyReserve(window, maxTokens)} tokens for the reply`,
        );
      }
      const started = performance.now();
      const [r] = await c.generate(
        [{ messages: fitted.messages }],
        // The window ends generation too; asking for no more than fits keeps the worker's own check quiet.
        {
          temperature,
          topP,
          maxTokens: Math.max(1, Math.min(maxTokens, window - fitted.tokens)),
          ...(seed !== undefined ? { seed } : {}),
        },
        opts?.signal,
      );
      const latencyMs = performance.now() - started;
      const provenance: TurnProvenance = {
        engine: 'tfjs',
        servedModel: name,
        adapter: null,
        sampling: { temperature, topP, maxTokens, seed: seed ?? null },
        finishReason: r!.finishReason,
        latencyMs,
        firstTokenMs: null,
        prompt: fitted.messages,
        droppedTurns: fitted.droppedTurns,
        // The model's own log-probabilities (temperature 1, no top-p) of the tokens it sampled.
        logprobs: r!.tokenIds.map((id, i) => ({ token: counter.token(id), logprob: r!.tokenLogprobs[i]! })),
        logprobsRequested: true,
        tokens: { ids: [...r!.tokenIds], logprobs: [...r!.tokenLogprobs], weightsVersion },
      };
      return { text: r!.text, promptTokens: r!.promptTokens, completionTokens: r!.tokenIds.length, provenance };
    },
    async reload(dir: string) {
      const next = await promptCounter(dir);
      const nextWeights = await weightsOf(dir);
      const info = await c.reload(dir);
      counter = next;
      weightsVersion = nextWeights;
      return info;
    },
    async close() {
      if (owned) await c.close();
    },
  };
}
