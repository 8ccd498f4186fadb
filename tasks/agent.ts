// What it means to be an agent or a collaborator in a ColBench game, independent of who plays:
// the deployed policy, a scripted expert, a person on Discord, a simulator.

/** One message of the dialogue in chat-model terms: the agent is the `assistant`, the collaborator the `user`. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** One generated token with its log-probability (and the most likely alternatives, when asked for). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  top?: { token: string; logprob: number }[];
}

/**
 * Where an agent message came from, stored with the turn and exported: enough to tell which model wrote it, how
 * it was sampled, exactly what it was shown, and to check it against a re-run. Filled by every policy kind
 * (in-process checkpoint, Sweetloop's own server, any OpenAI-compatible endpoint).
 */
export interface TurnProvenance {
  /** 'tfjs' (in-process checkpoint), 'endpoint' (an OpenAI-compatible server), or another engine's name. */
  engine: string;
  /** The model name the server reported (or the checkpoint's name), and the LoRA adapter if one was applied. */
  servedModel: string;
  adapter: string | null;
  sampling: { temperature: number; topP: number; maxTokens: number; seed: number | null };
  /** Why generation stopped ('stop', 'length', ...), as the engine said. */
  finishReason: string | null;
  latencyMs: number;
  /** Time to the first token, when streamed. */
  firstTokenMs: number | null;
  /** The messages actually sent, after the context budget was applied (system prompt, task, latest turns). */
  prompt: ChatMessage[];
  /** How many earlier dialogue turns were left out to fit the model's window (0: none). */
  droppedTurns: number;
  /**
   * Tokens cut from the start of the rendered prompt to fit the window, where the engine cuts tokens rather than
   * turns (in-process batched games, trainer/rollout.ts); absent elsewhere.
   */
  cutTokens?: number;
  /**
   * Per-token log-probabilities when the engine returned them (the trainer recomputes its own for RL). Stored as null
   * when `tokens` was recorded: the TurnTokens row holds them once (prisma/session-store.ts).
   */
  logprobs: TokenLogprob[] | null;
  /**
   * Whether they were asked for: false records "not requested" (the bot asks its own server only when
   * LOCAL_SERVE_LOGPROBS says so), as against asked for and not returned (logprobs null, this true). Absent on
   * turns stored before it was recorded (every agent asked for them then).
   */
  logprobsRequested?: boolean;
  /** The weights file, when the version is one (a GGUF model made elsewhere): its path, sha256 and quantization. */
  weights?: { file: string; sha256: string; quantization: string };
  /**
   * The completion's exact tokens (a version that records them: serving.recordTokens), which the session store
   * moves into their own row (prisma/schema.prisma TurnTokens), leaving 'recorded' here; or why there are none:
   * 'off' (the version does not record them), 'unavailable' (asked for; the server gave no token ids). Absent on
   * turns stored before tokens were recorded.
   */
  tokens?: CompletionTokens | 'recorded' | 'off' | 'unavailable';
}

/** An agent turn's completion as the server generated it: token ids, their log-probabilities, and the weights. */
export interface CompletionTokens {
  ids: number[];
  logprobs: number[];
  /** "adapter:<name>", "<model>@<revision>", or "<version>@sha256:<weights file>" (prisma/schema.prisma TurnTokens). */
  weightsVersion: string;
}

/**
 * The weights version of Sweetloop's own checkpoints and GGUF files (CompletionTokens.weightsVersion): the version's
 * name and its checkpoint sha256 ('unknown' where none was stored).
 */
export function ownWeightsVersion(name: string, sha256: string | null | undefined): string {
  return `${name}@sha256:${sha256 ?? 'unknown'}`;
}

export interface AgentReply {
  /** The agent's full message, exactly as produced (before the protocol's parsing). */
  text: string;
  promptTokens?: number;
  completionTokens?: number;
  provenance?: TurnProvenance;
}

/**
 * The agent cannot answer right now (its server is down, overloaded or unreachable after the client's retries).
 * Nothing is wrong with the session: callers keep it waiting and try the same turn again later.
 */
export class AgentUnavailableError extends Error {
  override name = 'AgentUnavailableError';
  constructor(
    message: string,
    /** A hint from the server (Retry-After) of when to try again. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/**
 * An agent answers the dialogue so far. `dialogue` starts with the system prompt and the task description
 * (as the protocol builds them) and alternates assistant/user after that.
 */
export interface Agent {
  readonly name: string;
  reply(dialogue: ChatMessage[], options?: { signal?: AbortSignal }): Promise<AgentReply>;
}

/** A collaborator answers the agent's latest message, knowing the hidden reference. */
export interface Collaborator {
  readonly name: string;
  reply(dialogue: ChatMessage[], options?: { signal?: AbortSignal }): Promise<string>;
}
