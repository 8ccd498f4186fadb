// Plays many games at once with one in-process policy: every game runs tasks/protocol.ts `playEpisode`
// unchanged, and their agent replies are gathered into one batched generation whenever every running game is
// waiting for the agent (a batch of 16 costs little more than one game's reply on a CPU). Used by simulated
// collection, evaluation and the promotion gate.
import type { Agent, ChatMessage, Collaborator, TurnProvenance } from '../tasks/agent.ts';
import type { TaskContent } from '../tasks/model.ts';
import { playEpisode, sanitizeText, type Episode } from '../tasks/protocol.ts';
import { generate, type GenerationResult } from './model/generate.ts';
import { encodePromptCut, type LoadedModel } from './sequences.ts';
import { gameSeed, replySeed } from '../tasks/random.ts';

export interface SamplingOptions {
  temperature: number;
  topP: number;
  /** Longest agent message, in tokens. */
  maxTokens: number;
}

export const DEFAULT_SAMPLING: SamplingOptions = { temperature: 0.7, topP: 0.95, maxTokens: 320 };

export interface RolloutJob {
  task: TaskContent;
  /** Anything the caller wants back with the result (a task id). */
  ref: string;
}

export interface RolloutResult {
  job: RolloutJob;
  episode: Episode;
  startedAt: Date;
  endedAt: Date;
}

interface Waiting {
  prompt: number[];
  seed: number;
  asked: number;
  resolve: (r: GenerationResult) => void;
  reject: (e: unknown) => void;
}

/**
 * Plays `jobs` in groups of `parallel` games. Reply k of game i samples with replySeed(gameSeed(seed, i), k)
 * (tasks/random.ts), as a served agent would, whatever shares its batch: a game's draws do not move when another
 * game ends sooner, so two policies playing the same jobs and seed draw the same random numbers game by game
 * (paired evaluations compare the policies, not the batches), and the result does not depend on `parallel`.
 */
export async function playBatched(
  policy: LoadedModel,
  jobs: readonly RolloutJob[],
  options: {
    /** `game`: the job's index, as CollaboratorFactory.create takes it (trainer/simulate.ts). */
    collaborator: (task: TaskContent, game: number) => Collaborator;
    sampling?: SamplingOptions;
    seed: number;
    parallel?: number;
    onResult?: (r: RolloutResult, index: number) => Promise<void> | void;
    /**
     * Give each reply its provenance (engine 'tfjs') with its exact tokens, named by the version's name and weights
     * version (tasks/agent.ts ownWeightsVersion): games that are stored (trainer/simulate.ts).
     */
    provenance?: { name: string; weightsVersion: string };
  },
): Promise<RolloutResult[]> {
  const sampling = options.sampling ?? DEFAULT_SAMPLING;
  const parallel = Math.max(1, options.parallel ?? 16);
  const ctx = policy.model.config.maxPositionEmbeddings;
  const results: RolloutResult[] = new Array(jobs.length);

  for (let start = 0; start < jobs.length; start += parallel) {
    const group = jobs.slice(start, start + parallel);
    let running = group.length;
    let waiting: Waiting[] = [];
    let flushing = false;

    const flush = async () => {
      flushing = true;
      const batch = waiting;
      waiting = [];
      try {
        const out = await generate(
          policy.model,
          policy.tokenizer,
          batch.map((w) => w.prompt),
          {
            temperature: sampling.temperature,
            topP: sampling.topP,
            maxTokens: sampling.maxTokens,
            seeds: batch.map((w) => w.seed),
          },
        );
        batch.forEach((w, i) => w.resolve(out[i]!));
      } catch (err) {
        batch.forEach((w) => w.reject(err));
      } finally {
        flushing = false;
      }
    };
    const maybeFlush = () => {
      if (!flushing && waiting.length > 0 && waiting.length >= running) void flush();
    };

    const agentOf = (game: number): Agent => ({
      name: 'policy',
      reply(dialogue) {
        return new Promise((resolve, reject) => {
          const { ids, cut } = encodePromptCut(policy, dialogue, ctx, sampling.maxTokens);
          // The reply's index is counted from the dialogue, as the served agents count it.
          const seed = replySeed(gameSeed(options.seed, game), dialogue.filter((m) => m.role === 'assistant').length);
          const w: Waiting = {
            prompt: ids,
            seed,
            asked: performance.now(),
            // Postgres text cannot hold NUL, which a byte-level model can emit: it becomes U+FFFD before anyone sees it.
            resolve: (r) =>
              resolve({
                text: sanitizeText(r.text),
                promptTokens: r.promptTokens,
                completionTokens: r.tokenIds.length,
                ...(options.provenance
                  ? { provenance: provenanceOf(options.provenance, r, { dialogue, cut, seed, asked: w.asked }) }
                  : {}),
              }),
            reject,
          };
          waiting.push(w);
          // Replies are gathered in the order games ask; every game asks before the batch goes.
          queueMicrotask(maybeFlush);
        });
      },
    });

    await Promise.all(
      group.map(async (job, k) => {
        const startedAt = new Date();
        let episode: Episode;
        try {
          episode = await playEpisode({
            task: job.task,
            agent: agentOf(start + k),
            collaborator: options.collaborator(job.task, start + k),
          });
        } finally {
          running--;
          queueMicrotask(maybeFlush);
        }
        const r: RolloutResult = { job, episode, startedAt, endedAt: new Date() };
        results[start + k] = r;
        await options.onResult?.(r, start + k);
      }),
    );
  }
  return results;

  function provenanceOf(
    v: { name: string; weightsVersion: string },
    r: GenerationResult,
    o: { dialogue: ChatMessage[]; cut: number; seed: number; asked: number },
  ): TurnProvenance {
    return {
      engine: 'tfjs',
      servedModel: v.name,
      adapter: null,
      sampling: { temperature: sampling.temperature, topP: sampling.topP, maxTokens: sampling.maxTokens, seed: o.seed },
      finishReason: r.finishReason,
      // From the request to the reply: the time it waited for its batch included.
      latencyMs: performance.now() - o.asked,
      firstTokenMs: null,
      prompt: o.dialogue.map((m) => ({ role: m.role, content: m.content })),
      droppedTurns: 0,
      ...(o.cut ? { cutTokens: o.cut } : {}),
      // They are in `tokens`, with the ids.
      logprobs: null,
      logprobsRequested: true,
      tokens: { ids: [...r.tokenIds], logprobs: [...r.tokenLogprobs], weightsVersion: v.weightsVersion },
    };
  }
}
