// How dialogues become token sequences for training, for the policy (which sees the dialogue only) and for the
// critic (which also reads the training-time information c: the hidden reference). Every agent turn is the
// chat template's assistant segment (message + end-of-turn marker), encoded exactly as ChatFormatter.segments
// cuts it, so a turn scored inside a whole dialogue and the same turn scored after its prompt alone agree.
import * as tf from '@tensorflow/tfjs';
import type { ChatMessage } from '../tasks/agent.ts';
import type { TaskContent } from '../tasks/model.ts';
import { buildDialogue, type DialogueTurn } from '../tasks/protocol.ts';
import { ChatFormatter } from './model/chat.ts';
import { loadCheckpoint } from './model/checkpoint.ts';
import type { Decoder } from './model/decoder.ts';
import { completionLogprobs } from './model/logprobs.ts';
import { TextTokenizer } from './model/tokenizer.ts';

/** A decoder with the tokenizer and chat template it was trained with. */
export interface LoadedModel {
  model: Decoder;
  tokenizer: TextTokenizer;
  chat: ChatFormatter;
  dir: string;
}

/** Loads a Hugging Face model directory; `name` must be unique in the process (tfjs variable names are global). */
export async function loadModel(dir: string, name: string, trainable: boolean): Promise<LoadedModel> {
  const tokenizer = await TextTokenizer.load(dir);
  const { model } = await loadCheckpoint(dir, { name, trainable });
  return { model, tokenizer, chat: ChatFormatter.fromTokenizer(tokenizer), dir };
}

/** The critic's view of a dialogue: the agent's system prompt followed by the hidden information. */
export function criticDialogue(task: TaskContent, turns: readonly DialogueTurn[]): ChatMessage[] {
  const messages = buildDialogue(task, turns);
  const hidden =
    task.kind === 'backend'
      ? 'The function the person has in mind (hidden from the agent):'
      : 'The page the person has in mind (hidden from the agent):';
  messages[0] = { role: 'system', content: `${messages[0]!.content}\n\n${hidden}\n${task.reference}` };
  return messages;
}

/** The policy's view: the dialogue exactly as the protocol shows it to the agent. */
export function policyDialogue(task: TaskContent, turns: readonly DialogueTurn[]): ChatMessage[] {
  return buildDialogue(task, turns);
}

/** A whole dialogue as one token sequence, with where each agent turn's tokens lie: ids[start, end). */
export interface EncodedDialogue {
  ids: number[];
  turns: { start: number; end: number }[];
}

/**
 * Encodes a dialogue segment by segment. Over `contextLength` tokens, the oldest tokens are dropped (what a
 * turn is judged on is its recent context); a turn that loses all its tokens is dropped with them. `side`
 * 'right' drops the newest instead, as the official code does.
 */
export function encodeDialogue(
  m: Pick<LoadedModel, 'chat' | 'tokenizer'>,
  messages: readonly ChatMessage[],
  contextLength: number,
  side: 'left' | 'right' = 'left',
): EncodedDialogue {
  const ids: number[] = [];
  const turns: { start: number; end: number }[] = [];
  for (const seg of m.chat.segments(messages)) {
    const part = m.tokenizer.encode(seg.text);
    if (seg.train && part.length > 0) turns.push({ start: ids.length, end: ids.length + part.length });
    ids.push(...part);
  }
  const cut = Math.max(0, ids.length - contextLength);
  if (cut === 0) return { ids, turns };
  // 'right' (the official datasets: Hugging Face's truncation side): the newest tokens go; a turn keeps what fits.
  if (side === 'right')
    return {
      ids: ids.slice(0, contextLength),
      turns: turns
        .filter((t) => t.start < contextLength)
        .map((t) => ({ start: t.start, end: Math.min(t.end, contextLength) })),
    };
  return {
    ids: ids.slice(cut),
    // A turn's first token needs one token of context before it.
    turns: turns.filter((t) => t.end - cut > 1).map((t) => ({ start: Math.max(1, t.start - cut), end: t.end - cut })),
  };
}

/** The prompt (with the generation prompt) and the assistant segment of one more message, as token ids. */
export function encodeAction(
  m: Pick<LoadedModel, 'chat' | 'tokenizer'>,
  prompt: readonly ChatMessage[],
  action: string,
  contextLength: number,
): { prompt: number[]; completion: number[] } {
  const promptText = m.chat.format(prompt, { addGenerationPrompt: true });
  const full = m.chat.format([...prompt, { role: 'assistant', content: action }]);
  if (!full.startsWith(promptText)) throw new Error('chat template is not prefix-consistent');
  let completion = m.tokenizer.encode(full.slice(promptText.length));
  let promptIds = m.tokenizer.encode(promptText);
  // Keep at least a few tokens of context; an action longer than the whole context is cut at its end.
  if (completion.length > contextLength - 8) completion = completion.slice(0, contextLength - 8);
  if (promptIds.length + completion.length > contextLength)
    promptIds = promptIds.slice(promptIds.length + completion.length - contextLength);
  return { prompt: promptIds, completion };
}

/** The prompt ids the policy generates from, cut on the left so that `room` new tokens fit the context. */
export function encodePrompt(
  m: Pick<LoadedModel, 'chat' | 'tokenizer'>,
  prompt: readonly ChatMessage[],
  contextLength: number,
  room: number,
): number[] {
  return encodePromptCut(m, prompt, contextLength, room).ids;
}

/** encodePrompt, and how many tokens it cut from the start of the rendered prompt (0: none). */
export function encodePromptCut(
  m: Pick<LoadedModel, 'chat' | 'tokenizer'>,
  prompt: readonly ChatMessage[],
  contextLength: number,
  room: number,
): { ids: number[]; cut: number } {
  const ids = m.tokenizer.encode(m.chat.format(prompt, { addGenerationPrompt: true }));
  const keep = Math.max(8, contextLength - room);
  return ids.length > keep ? { ids: ids.slice(ids.length - keep), cut: ids.length - keep } : { ids, cut: 0 };
}

export interface TurnLogprobs {
  /** [N, L] log-probability of each agent-turn token (N turns over all sequences, L the longest turn). */
  logp: tf.Tensor2D;
  /** [N, L] 1 for real tokens. */
  mask: tf.Tensor2D;
  /** Which sequence each turn belongs to. */
  owner: number[];
  /** Token count of each turn. */
  lengths: number[];
}

/**
 * Differentiable per-token log-probabilities of every agent turn of a batch of encoded dialogues, from one
 * forward pass per batch. Call inside tf.tidy / a gradient function.
 */
export function turnLogprobs(
  model: Decoder,
  seqs: readonly EncodedDialogue[],
  padTokenId: number,
  sharePrefix = true,
): TurnLogprobs {
  // Everything before the first agent turn is context, so the tokens all dialogues share run once (logprobs.ts).
  const promptLengths = seqs.map((s) => Math.max(1, Math.min(s.ids.length - 1, ...s.turns.map((t) => t.start))));
  const scored = completionLogprobs(
    model,
    seqs.map((s, b) => ({ prompt: s.ids.slice(0, promptLengths[b]), completion: s.ids.slice(promptLengths[b]) })),
    { padTokenId, sharePrefix },
  );
  const width = scored.tokenLogprobs.shape[1];
  const owner: number[] = [];
  const lengths: number[] = [];
  seqs.forEach((s, b) => {
    for (const t of s.turns) {
      owner.push(b);
      lengths.push(t.end - t.start);
    }
  });
  const N = Math.max(1, owner.length);
  const L = Math.max(1, ...lengths);
  const index = new Int32Array(N * L);
  const mask = new Float32Array(N * L);
  let n = 0;
  seqs.forEach((s, b) => {
    for (const t of s.turns) {
      // Column j of the scored row is the log-probability of ids[j + promptLength].
      for (let j = 0; j < t.end - t.start; j++) {
        index[n * L + j] = b * width + t.start + j - promptLengths[b]!;
        mask[n * L + j] = 1;
      }
      n++;
    }
  });
  const flat = tf.reshape(scored.tokenLogprobs, [-1]);
  const logp = tf.mul(
    tf.reshape(tf.gather(flat, tf.tensor1d(index, 'int32')), [N, L]),
    tf.tensor2d(mask, [N, L]),
  ) as tf.Tensor2D;
  return { logp, mask: tf.tensor2d(mask, [N, L]), owner, lengths };
}

/** The same as numbers, one array per turn, in batches (no gradient). */
export async function turnLogprobValues(
  model: Decoder,
  seqs: readonly EncodedDialogue[],
  padTokenId: number,
  batchSize = 4,
): Promise<number[][][]> {
  const out: number[][][] = [];
  for (let i = 0; i < seqs.length; i += batchSize) {
    const chunk = seqs.slice(i, i + batchSize);
    const r = tf.tidy(() => {
      const t = turnLogprobs(model, chunk, padTokenId);
      return { logp: t.logp, owner: t.owner, lengths: t.lengths };
    });
    const data = (await r.logp.data()) as Float32Array;
    const L = r.logp.shape[1];
    r.logp.dispose();
    const perSeq: number[][][] = chunk.map(() => []);
    r.owner.forEach((b, n) => perSeq[b]!.push(Array.from(data.subarray(n * L, n * L + r.lengths[n]!))));
    out.push(...perSeq);
  }
  return out;
}

/** Pads per-turn value arrays into an [N, L] tensor matching turnLogprobs' layout. */
export function padTurns(values: readonly (readonly number[])[], L: number): tf.Tensor2D {
  const N = Math.max(1, values.length);
  const flat = new Float32Array(N * L);
  values.forEach((v, n) => flat.set(v.slice(0, L), n * L));
  return tf.tensor2d(flat, [N, L]);
}
