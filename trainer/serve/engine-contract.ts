// The serving engine's contract, split from the protocol as vLLM splits its engine from its entrypoints: the
// OpenAI-compatible HTTP server (server.ts) speaks chat completions and knows nothing of models; an engine
// (llama.cpp for CPU serving, tfjs as the fallback) schedules requests into batches and decodes tokens.
import type { ChatMessage } from '../../tasks/agent.ts';

export interface EngineRequest {
  messages: ChatMessage[];
  maxTokens: number;
  temperature: number;
  topP: number;
  seed?: number;
  stop?: string[];
  /** Return each token's log-probability, and this many alternatives (0 = none). */
  logprobs: boolean;
  topLogprobs: number;
  /** A LoRA adapter (by the name it was loaded under) to apply, or null for the base model. */
  adapter: string | null;
  /** Aborted when the client goes away: the request leaves the batch at once. */
  signal: AbortSignal;
}

export interface EngineToken {
  text: string;
  /** The token's id in the model's vocabulary (both engines give it; a client asks with return_tokens_as_token_ids). */
  id?: number;
  logprob?: number;
  top?: { token: string; logprob: number }[];
}

export interface EngineResult {
  promptTokens: number;
  completionTokens: number;
  finishReason: 'stop' | 'length' | 'abort';
}

/** One request's tokens as they are decoded, then the totals. */
export interface EngineStream extends AsyncIterable<EngineToken> {
  readonly result: Promise<EngineResult>;
}

export interface EngineStats {
  /** Sequences decoding now, and requests waiting for a slot. */
  running: number;
  queued: number;
  maxBatch: number;
  maxQueue: number;
  /**
   * Cumulative since the engine started (optional: an engine may not count them): decoding steps run, and the sum over those
   * steps of the sequences each one decoded. /metrics exports both as counters: their ratio is the mean batch
   * size, and a step count that grows by less than the tokens of two concurrent requests shows they shared steps.
   */
  decodeSteps?: number;
  stepSequences?: number;
}

/**
 * Thrown by generate() when the request cannot be served as asked (prompt longer than the context, an option
 * this engine does not offer): the server answers 400 with the message.
 */
export class EngineRequestError extends Error {
  override name = 'EngineRequestError';
}

/** Thrown by generate() when the queue is full: the server answers 429. */
export class EngineOverloadedError extends Error {
  override name = 'EngineOverloadedError';
}

export interface ServingEngine {
  /** The model name clients send (`model`), i.e. the served policy version's name. */
  readonly modelName: string;
  generate(req: EngineRequest): EngineStream;
  stats(): EngineStats;
  /** Makes a LoRA adapter available under `name` (idempotent). */
  loadAdapter(name: string, path: string): Promise<void>;
  unloadAdapter(name: string): Promise<void>;
  adapters(): string[];
  close(): Promise<void>;
}

/**
 * What it takes to start an engine over a Hugging Face checkpoint directory: the follow loop
 * (follow.ts) builds engines from it, so that `--engine llama|tfjs` is a choice of constructor only.
 */
export interface EngineStartOptions {
  /** The name clients send as `model` (the policy version's name). */
  modelName: string;
  checkpointDir: string;
  /** Most sequences decoding at once, and most requests waiting beyond them before 429. */
  maxBatch: number;
  maxQueue: number;
}
