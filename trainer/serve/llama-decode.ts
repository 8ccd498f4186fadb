// trainer/serve/: serving a policy (engine contract, llama.cpp engine, GGUF files, OpenAI-compatible server).
// Files here may import tasks/, prisma/ and trainer/ only (and their npm dependencies).
//
// One request decoded on its llama.cpp sequence (llama-shards.ts), its tokens streamed as they come.
//
// Sampling. Without logprobs, llama.cpp samples natively (greedy at temperature 0; else top-p on the model's
// distribution, then temperature, then a draw seeded by `seed`). With logprobs, llama.cpp returns the model's
// full next-token distribution (temperature 1, nothing cut) and the token is drawn in JavaScript by
// trainer/model/generate.ts's sampleToken and seeded stream, the tfjs path's own sampler, so the reported
// logprobs are those of the model's distribution (as the tfjs path reports them). A seed reproduces a request
// exactly as long as the request (logprobs included) and the batch it is decoded in are the same: llama.cpp's
// sums depend on the batch's make-up, as vLLM's do.
import { TokenBias, type LlamaContextSequence, type LlamaModel, type Token } from 'node-llama-cpp';
import { seededRandom } from '../../tasks/random.ts';
import { descendingOrder, sampleToken } from '../model/generate.ts';
import { CompletionText } from './completion-text.ts';
import type { EngineRequest, EngineResult, EngineToken } from './engine-contract.ts';
import type { PromptCodec } from './gguf-foreign.ts';
import { stepBarrier, stepResolved, type Shard } from './llama-shards.ts';
import type { TokenChannel } from './token-channel.ts';

/** A request accepted by the engine: waiting in its queue, then decoding. */
export interface Job {
  req: EngineRequest;
  channel: TokenChannel;
  promptIds: number[];
  limit: number;
  /** GGUF path of the adapter this request was accepted for ('' = base). */
  adapterKey: string;
  aborted: boolean;
  onAbort: () => void;
}

const ABORTED = Symbol('aborted');

/** What decoding needs of the model: how text becomes tokens and back, and which tokens may be sampled. */
export interface DecodeModel {
  codec: PromptCodec;
  /** Ids below this can be sampled (the tokenizer's); embedding rows past it can never be decoded. */
  sampleable: number;
  /** Keeps llama.cpp's own sampler off the rows past `sampleable`; undefined when there are none. */
  tokenBias: TokenBias | undefined;
  /** One step's log-probabilities, as long as the embedding: filled and read before the next await, so one buffer serves every sequence. */
  logpScratch: Float64Array;
}

/** The DecodeModel of a loaded model whose embedding has `embeddingRows` rows. */
export function decodeModel(model: LlamaModel, codec: PromptCodec, embeddingRows: number): DecodeModel {
  const sampleable = Math.min(embeddingRows, codec.vocabSize);
  let tokenBias: TokenBias | undefined;
  // Embedding rows past the tokenizer (Qwen2 pads its vocabulary) can never be decoded: never sample them.
  if (sampleable < embeddingRows) {
    tokenBias = new TokenBias(model.tokenizer);
    for (let id = sampleable; id < embeddingRows; id++) tokenBias.set(id as Token, 'never');
  }
  return { codec, sampleable, tokenBias, logpScratch: new Float64Array(embeddingRows) };
}

function withLogprobs(t: EngineToken, logprob: number | undefined, top: EngineToken['top']): EngineToken {
  if (logprob !== undefined) t.logprob = logprob;
  if (top) t.top = top;
  return t;
}

/**
 * Runs one request on its sequence, whose first `keep` tokens are the prompt's already (prefix reuse): the rest
 * of the old state is erased and only the prompt after them evaluated. Streams the request's tokens and
 * returns its totals (the caller ends the stream).
 */
export async function decodeJob(
  job: Job,
  model: DecodeModel,
  entry: Shard,
  seq: LlamaContextSequence,
  keep: number,
): Promise<EngineResult> {
  const { req, channel } = job;
  if (seq.nextTokenIndex > keep) await seq.eraseContextTokenRanges([{ start: keep, end: seq.nextTokenIndex }]);
  const jsSampling = req.logprobs && req.temperature > 0;
  const wantDistribution = req.logprobs && (jsSampling || req.topLogprobs > 0);
  const seed = req.seed ?? Math.floor(Math.random() * 2 ** 32);
  const rand = seededRandom(seed, 0);
  const text = new CompletionText((ids) => model.codec.decode(ids), req.stop ?? []);
  const iterator = seq.evaluateWithMetadata(
    job.promptIds.slice(keep) as Token[],
    { probabilities: wantDistribution, confidence: req.logprobs && !wantDistribution },
    {
      // Greedy when we sample ourselves: the greedy sampler leaves the distribution as the model gave it.
      temperature: jsSampling ? 0 : req.temperature,
      topP: jsSampling ? 1 : req.topP,
      topK: 0,
      minP: 0,
      seed,
      yieldEogToken: true,
      ...(model.tokenBias ? { tokenBias: model.tokenBias } : {}),
    },
  );
  let onAbort = () => {};
  const abort = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED);
    if (req.signal.aborted) resolve(ABORTED);
    req.signal.addEventListener('abort', onAbort, { once: true });
  });
  let completion = 0;
  let replacement: Token | undefined;
  let finish: EngineResult['finishReason'] = 'length';
  try {
    for (;;) {
      if (completion > 0) await stepBarrier(entry);
      const next = iterator.next(replacement);
      next.then(
        () => stepResolved(entry),
        () => stepResolved(entry),
      );
      const step = await Promise.race([next, abort]);
      if (step === ABORTED) {
        finish = 'abort';
        break;
      }
      if (step.done) {
        finish = 'stop';
        break;
      }
      const out = step.value as { token: Token; probabilities?: Map<Token, number>; confidence?: number };
      let token = out.token as number;
      let logprob: number | undefined;
      let top: EngineToken['top'];
      if (wantDistribution) {
        const probs = out.probabilities!;
        if (jsSampling) {
          // Filled and read before the next await: one buffer serves every sequence.
          const logp = model.logpScratch.fill(-Infinity);
          for (const [id, p] of probs) logp[id] = Math.log(p);
          token = sampleToken(
            logp.subarray(0, model.sampleable),
            req.temperature,
            req.topP,
            rand,
            req.topP < 1 ? descendingOrder(probs, model.sampleable) : undefined,
          );
          replacement = token as Token;
        }
        logprob = Math.log(probs.get(token as Token) ?? 0);
        if (req.topLogprobs > 0) {
          top = [];
          for (const [id, p] of probs) {
            if (top.length >= req.topLogprobs) break;
            top.push({ token: model.codec.decode([id]), logprob: Math.log(p) });
          }
        }
      } else if (req.logprobs && out.confidence !== undefined) logprob = Math.log(out.confidence);
      completion++;
      // Every emitted piece belongs to a token with its logprob: text held back (a possible stop string, half a
      // character) is released with the last token, or with the end-of-sequence token if that ends the text.
      if (model.codec.isEnd(token)) {
        finish = 'stop';
        const rest = text.flush();
        if (rest) channel.push(withLogprobs({ text: rest, id: token }, logprob, top));
        break;
      }
      const piece = text.push(token);
      const last = !piece.stopped && completion >= job.limit;
      channel.push(withLogprobs({ text: last ? piece.text + text.flush() : piece.text, id: token }, logprob, top));
      if (piece.stopped) {
        finish = 'stop';
        break;
      }
      if (last) break;
    }
    return { promptTokens: job.promptIds.length, completionTokens: completion, finishReason: finish };
  } finally {
    req.signal.removeEventListener('abort', onAbort);
    // Waits for a step still in flight (after an abort) before the sequence is cleared and reused.
    await iterator.return(undefined);
  }
}
