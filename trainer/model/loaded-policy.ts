// A loaded policy: decoder + tokenizer + chat template, with the two things callers ask of it (generate,
// score continuations) in terms of chat messages, text or token ids. Used inside the inference worker, by the
// `model` CLI and by the starter builder's checks; it runs on whatever thread creates it.
import * as tf from '@tensorflow/tfjs';
import type { ChatMessage } from '../../tasks/agent.ts';
import { ChatFormatter } from './chat.ts';
import { loadCheckpoint } from './checkpoint.ts';
import type { Decoder } from './decoder.ts';
import { generate } from './generate.ts';
import type { GenerateOptions, GenerationResult } from './generate.ts';
import { completionLogprobValues } from './logprobs.ts';
import { TextTokenizer } from './tokenizer.ts';

/** What to condition on: a dialogue (rendered with the chat template and the generation prompt), raw text, or ids. */
export type PromptInput = { messages: readonly ChatMessage[] } | { text: string } | { ids: readonly number[] };

export interface ScoreRequest {
  prompt: PromptInput;
  /** Continuation: text (encoded on its own, as generation produces it) or token ids. */
  completion: string | readonly number[];
}

export interface LoadedPolicyInfo {
  checkpointDir: string;
  numParameters: number;
  vocabSize: number;
  contextLength: number;
  eosTokenIds: number[];
  chatTemplate: 'model' | 'chatml-default';
}

export class LoadedPolicy {
  constructor(
    readonly model: Decoder,
    readonly tokenizer: TextTokenizer,
    readonly chat: ChatFormatter,
    readonly checkpointDir: string,
  ) {
    if (tokenizer.vocabSize > model.config.vocabSize) {
      throw new Error(
        `${checkpointDir}: the tokenizer has ${tokenizer.vocabSize} ids but the model's vocabulary is ${model.config.vocabSize}`,
      );
    }
  }

  /** Loads a Hugging Face model directory (config.json, safetensors, tokenizer.json, tokenizer_config.json). */
  static async load(checkpointDir: string, options: { name?: string } = {}): Promise<LoadedPolicy> {
    const tokenizer = await TextTokenizer.load(checkpointDir);
    const { model } = await loadCheckpoint(checkpointDir, { name: options.name ?? 'policy', trainable: false });
    try {
      return new LoadedPolicy(model, tokenizer, ChatFormatter.fromTokenizer(tokenizer), checkpointDir);
    } catch (err) {
      model.dispose();
      throw err;
    }
  }

  encodePrompt(p: PromptInput): number[] {
    if ('ids' in p) return [...p.ids];
    if ('text' in p) return this.tokenizer.encode(p.text);
    return this.tokenizer.encode(this.chat.format(p.messages, { addGenerationPrompt: true }));
  }

  async generate(prompts: readonly PromptInput[], options: GenerateOptions = {}): Promise<GenerationResult[]> {
    return generate(
      this.model,
      this.tokenizer,
      prompts.map((p) => this.encodePrompt(p)),
      options,
    );
  }

  async logprobs(items: readonly ScoreRequest[], options: { batchSize?: number } = {}): Promise<number[][]> {
    const batch = items.map((it) => ({
      prompt: this.encodePrompt(it.prompt),
      completion: typeof it.completion === 'string' ? this.tokenizer.encode(it.completion) : [...it.completion],
    }));
    return completionLogprobValues(this.model, batch, { padTokenId: this.tokenizer.padTokenId, ...options });
  }

  /** Full-vocabulary logits of every position of one sequence: [T][V]. */
  async logits(ids: readonly number[]): Promise<number[][]> {
    const V = this.model.config.vocabSize;
    for (const id of ids)
      if (!Number.isInteger(id) || id < 0 || id >= V) throw new Error(`token id ${id} is outside 0..${V - 1}`);
    if (ids.length === 0) throw new Error('no token ids given');
    const input = tf.tensor2d([ids as number[]], [1, ids.length], 'int32');
    const { logits } = this.model.forward(input);
    input.dispose();
    const data = (await logits.data()) as Float32Array;
    logits.dispose();
    return Array.from({ length: ids.length }, (_, t) => Array.from(data.subarray(t * V, (t + 1) * V)));
  }

  info(): LoadedPolicyInfo {
    return {
      checkpointDir: this.checkpointDir,
      numParameters: this.model.numParameters,
      vocabSize: this.model.config.vocabSize,
      contextLength: this.model.config.maxPositionEmbeddings,
      eosTokenIds: [...this.tokenizer.eosTokenIds],
      chatTemplate: this.tokenizer.chatTemplate ? 'model' : 'chatml-default',
    };
  }

  dispose(): void {
    this.model.dispose();
  }
}
