// An Agent answered by an OpenAI-compatible chat-completions server (an 'endpoint' version, or an 'adapter'
// version: the same server asked for `model: <adapter name>`), through tasks/chat-client.ts. Before each call the
// dialogue is fitted to the version's context window minus its reply budget (tasks/context-budget.ts fitDialogue),
// counted with the served model's own tokenizer and chat template when the version names its Hugging Face
// directory (baseModelDir), else with the pessimistic estimate in tasks/context-budget.ts. Every reply carries its
// provenance (engine 'endpoint'). A server that stays down surfaces as AgentUnavailableError (from the client),
// which the engine turns into "the agent is unavailable, your turn will be retried".
import type { Logger } from '../../tasks/logger.ts';
import type {
  Agent,
  AgentReply,
  ChatMessage,
  CompletionTokens,
  TokenLogprob,
  TurnProvenance,
} from '../../tasks/agent.ts';
import { chatCompletion, type ChatClientOptions } from '../../tasks/chat-client.ts';
import { EndpointRequestError, type ChatEndpoint } from '../../tasks/chat-endpoint.ts';
import { tokenIdsOf } from '../../tasks/chat-logprobs.ts';
import { ProtocolError, sanitizeText } from '../../tasks/protocol.ts';
import { estimateTokens, fitDialogue } from '../../tasks/context-budget.ts';
import { replySeed } from '../../tasks/random.ts';
import type { Serving } from './serving.ts';

export type TokenCounter = (messages: readonly ChatMessage[]) => number;

export interface EndpointAgentOptions {
  /** The policy version's name (the agent's name). */
  name: string;
  serving: Serving;
  /** Ask for this adapter (its name on the server) instead of the base model. */
  adapter?: string | null;
  /** With a seed, the reply at agent turn k is sampled with seed + k: a game is reproducible on servers that honour seeds. */
  seed?: number;
  /** Ask for per-token logprobs (default true; vLLM and llama.cpp return them, others ignore the field). */
  logprobs?: boolean;
  /**
   * Record each reply's token ids and log-probabilities (default: serving.recordTokens), tagged with this weights
   * version (default: "adapter:<name>", else "<served model>@<serving.revision>").
   */
  recordTokens?: boolean;
  weightsVersion?: string;
  /** Overrides the counter (default: baseModelDir's tokenizer, else estimateTokens). */
  countTokens?: TokenCounter;
  /**
   * Called when the server says the requested model does not exist (a restarted vLLM has forgotten a runtime
   * adapter); the request is then sent once more.
   */
  onModelMissing?: () => Promise<void>;
  client?: ChatClientOptions;
  log?: Logger;
}

export interface EndpointAgent extends Agent {
  readonly serving: Serving;
  readonly adapter: string | null;
  /** The same agent with another base seed (one per simulated game). */
  withSeed(seed: number): Agent;
  close(): Promise<void>;
}

/** Exact prompt tokens: the model directory's tokenizer and chat template, as the server renders them. */
export async function tokenizerCounter(modelDir: string): Promise<TokenCounter> {
  const { TextTokenizer } = await import('../model/tokenizer.ts');
  const { ChatFormatter } = await import('../model/chat.ts');
  const tokenizer = await TextTokenizer.load(modelDir);
  const chat = ChatFormatter.fromTokenizer(tokenizer);
  return (messages) => tokenizer.encode(chat.format(messages, { addGenerationPrompt: true })).length;
}

// A server that says the prompt is too long (our estimate was off for this model): try again with this share of
// the budget, at most twice.
const CONTEXT_ERROR = /context length|maximum context|too long|max_model_len|prompt is too long|exceeds/i;
const SHRINK = 0.7;

export async function createEndpointAgent(o: EndpointAgentOptions): Promise<EndpointAgent> {
  const s = o.serving;
  let count: TokenCounter = o.countTokens ?? estimateTokens;
  if (!o.countTokens && s.baseModelDir) {
    try {
      count = await tokenizerCounter(s.baseModelDir);
    } catch (err) {
      // The directory may live on the GPU box only: estimate rather than refuse to serve.
      o.log?.warn(
        { policy: o.name, dir: s.baseModelDir, err: (err as Error).message },
        "cannot read the served model's tokenizer: estimating prompt tokens",
      );
    }
  }
  const endpoint: ChatEndpoint = { url: s.url, apiKeyEnv: s.apiKeyEnv ?? null };
  const model = o.adapter ?? s.model;
  const budget = s.contextWindow - s.maxTokens;
  const recordTokens = o.recordTokens ?? s.recordTokens ?? false;
  const wantLogprobs = recordTokens || (o.logprobs ?? true);
  if (budget < 64)
    throw new Error(
      `policy version "${o.name}": a context window of ${s.contextWindow} leaves ${budget} tokens for the dialogue after ${s.maxTokens} for the reply`,
    );

  async function reply(
    dialogue: ChatMessage[],
    seedBase: number | undefined,
    signal?: AbortSignal,
  ): Promise<AgentReply> {
    const turn = dialogue.filter((m) => m.role === 'assistant').length;
    const seed = seedBase !== undefined ? replySeed(seedBase, turn) : null;
    let room = budget;
    let modelReloaded = false;
    for (let shrink = 0; ; ) {
      const fitted = fitDialogue(dialogue, room, count);
      if (!fitted.fits) {
        throw new ProtocolError(
          `${o.name}: the system prompt and the task alone take about ${fitted.tokens} tokens, more than the ${s.contextWindow}-token window leaves after ${s.maxTokens} for the reply`,
        );
      }
      try {
        const r = await chatCompletion(
          endpoint,
          {
            model,
            messages: fitted.messages,
            temperature: s.temperature,
            topP: s.topP,
            maxTokens: s.maxTokens,
            seed,
            logprobs: wantLogprobs,
            tokenIds: recordTokens,
            signal,
          },
          { ...(s.maxInFlight ? { maxInFlight: s.maxInFlight } : {}), ...o.client, log: o.client?.log ?? o.log },
        );
        const provenance: TurnProvenance = {
          engine: 'endpoint',
          servedModel: r.servedModel,
          adapter: o.adapter ?? null,
          sampling: { temperature: s.temperature, topP: s.topP, maxTokens: s.maxTokens, seed },
          finishReason: r.finishReason,
          latencyMs: r.latencyMs,
          firstTokenMs: r.firstTokenMs,
          prompt: fitted.messages,
          droppedTurns: fitted.droppedTurns,
          logprobs: r.logprobs,
          logprobsRequested: wantLogprobs,
          tokens: recordTokens
            ? completionTokens(
                r.logprobs,
                o.weightsVersion ??
                  (o.adapter ? `adapter:${o.adapter}` : `${r.servedModel}@${s.revision ?? 'unknown-revision'}`),
              )
            : 'off',
        };
        const out: AgentReply = { text: sanitizeText(r.text), provenance };
        out.promptTokens = r.usage?.promptTokens ?? fitted.tokens;
        if (r.usage) out.completionTokens = r.usage.completionTokens;
        else if (r.logprobs) out.completionTokens = r.logprobs.length;
        return out;
      } catch (err) {
        if (err instanceof EndpointRequestError && err.status === 404 && o.onModelMissing && !modelReloaded) {
          modelReloaded = true;
          o.log?.warn({ policy: o.name, model }, 'the server does not know the model: loading it again');
          await o.onModelMissing();
          continue;
        }
        if (
          err instanceof EndpointRequestError &&
          err.status === 400 &&
          CONTEXT_ERROR.test(err.message) &&
          shrink < 2 &&
          fitted.droppedTurns < dialogue.length - 2
        ) {
          shrink++;
          room = Math.floor(room * SHRINK);
          o.log?.warn({ policy: o.name, room }, 'the server found the prompt too long: fitting it to a smaller budget');
          continue;
        }
        throw err;
      }
    }
  }

  /** The reply's tokens from logprobs asked for with token ids; 'unavailable' when the server gave none. */
  function completionTokens(logprobs: TokenLogprob[] | null, weightsVersion: string): CompletionTokens | 'unavailable' {
    const ids = logprobs ? tokenIdsOf(logprobs) : null;
    if (!logprobs || !ids) return 'unavailable';
    return { ids, logprobs: logprobs.map((t) => t.logprob), weightsVersion };
  }

  const agent: EndpointAgent = {
    name: o.name,
    serving: s,
    adapter: o.adapter ?? null,
    reply: (dialogue, opts) => reply(dialogue, o.seed, opts?.signal),
    withSeed: (seed) => ({ name: o.name, reply: (dialogue, opts) => reply(dialogue, seed, opts?.signal) }),
    // Nothing is held: connections belong to the process-wide client.
    close: async () => {},
  };
  return agent;
}
