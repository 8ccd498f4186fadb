// The SWEET-RL critic (arXiv 2503.15478, Sec. 4.2). A decoder initialised from the policy that reads, in its
// prompt, the training-time information c (the hidden reference) as well as the dialogue. As in the official
// implementation, a trajectory's score is the mean per-token log-ratio over ALL its agent tokens, critic
// against a frozen copy of the initial critic (same prompt, with c), trained with Bradley-Terry on pairs of
// trajectories of the same task (the best one against each worse one; people's pairwise judgements, when a run
// uses them, add pairs of their own). Candidate messages are then ranked by
// the critic's mean log-probability (with c) minus the sampling policy's (without c), as the official ranking
// script does. docs/training.md, "Differences from the official code", lists what differs.
// The critic is fully fine-tuned, or, in a LoRA run (an 8B base does not fit full fine-tuning), trains LoRA
// adapters over the frozen base: its checkpoints are then adapters (PEFT layout) and its frozen reference is the
// base itself, scored with the adapters set aside, so no second copy of the weights is loaded.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import type { TaskContent } from '../tasks/model.ts';
import type { DialogueTurn } from '../tasks/protocol.ts';
import type { Trajectory } from './data.ts';
import { bradleyTerryLoss, meanLogRatio, trajectoryAdvantages, type TrajectoryScore } from './losses.ts';
import type { Decoder } from './model/decoder.ts';
import { ADAPTER_CONFIG, addLora, loadLora, withoutLora } from './model/lora.ts';
import { completionLogprobValues } from './model/logprobs.ts';
import { canonicalOrder, holdOutFirst, rewardPairs, scoredTrajectories, type Pair, type Scored } from './pairs.ts';
import type { TrainConfig } from './presets.ts';
import { minibatchPhase, sequencePairShape, type Phase } from './schedule.ts';
import {
  criticDialogue,
  encodeAction,
  encodeDialogue,
  loadModel,
  padTurns,
  turnLogprobs,
  turnLogprobValues,
  type EncodedDialogue,
  type LoadedModel,
} from './sequences.ts';

/** A trajectory as the critic reads it, with the frozen reference's log-probabilities of its agent turns. */
export interface CriticExample {
  sessionId: string;
  seq: EncodedDialogue;
  refTurnLogp: number[][];
}

/** A turn state o_t: the task and the dialogue before the agent's next message. */
export interface TurnState {
  task: TaskContent;
  turns: readonly DialogueTurn[];
}

let instances = 0;

/** LoRA settings of a critic that trains adapters (rank, alpha, targets, and the seed of A's initialisation). */
export interface CriticLora {
  rank: number;
  alpha: number;
  targetModules?: string[];
  seed?: number;
}

export class Critic {
  private constructor(
    /** The critic being trained. */
    readonly current: LoadedModel,
    /** Where the frozen initial critic (pi_ref of the training loss) is loaded from, only while `prepare` needs it. */
    private readonly initialDir: string,
    private readonly id: number,
  ) {}

  /**
   * The critic starts as a copy of `initialDir` (the policy the data came from); `currentDir` resumes a
   * critic trained earlier (its reference is still the initial copy). A `currentDir` holding an adapter
   * (adapter_config.json) is loaded as that adapter over `initialDir`; otherwise, with `lora`, a fresh critic
   * gets new adapters over the frozen `initialDir`. A full checkpoint in `currentDir` (a run begun before
   * critics trained adapters) resumes as full fine-tuning.
   */
  static async load(
    initialDir: string,
    currentDir: string = initialDir,
    opts: { lora?: CriticLora | null } = {},
  ): Promise<Critic> {
    const id = instances++;
    const name = `critic-${id}`;
    if (currentDir !== initialDir && existsSync(join(currentDir, ADAPTER_CONFIG))) {
      const m = await loadModel(initialDir, name, false);
      await adopt(m, () => loadLora(currentDir, m.model));
      return new Critic(m, initialDir, id);
    }
    if (opts.lora && currentDir === initialDir) {
      const m = await loadModel(initialDir, name, false);
      const lora = opts.lora;
      await adopt(m, async () =>
        addLora(m.model, {
          rank: lora.rank,
          alpha: lora.alpha,
          ...(lora.targetModules ? { targetModules: lora.targetModules } : {}),
          seed: lora.seed ?? 0,
        }),
      );
      return new Critic(m, initialDir, id);
    }
    return new Critic(await loadModel(currentDir, name, true), initialDir, id);
  }

  /** True when the critic trains LoRA adapters (its checkpoints are adapters over `initialDir`). */
  get lora(): boolean {
    return this.current.model.adapters.size > 0;
  }

  get model(): Decoder {
    return this.current.model;
  }

  private get ctx(): number {
    return this.current.model.config.maxPositionEmbeddings;
  }

  private get pad(): number {
    return this.current.tokenizer.padTokenId;
  }

  /**
   * Encodes trajectories for the critic and scores their turns under the frozen reference once, in content
   * order (which sequences share a padded batch then never depends on database order).
   */
  async prepare(data: readonly Trajectory[], truncation: 'left' | 'right' = 'left'): Promise<CriticExample[]> {
    const trajectories = canonicalOrder(data);
    const seqs = trajectories.map((t) =>
      encodeDialogue(this.current, criticDialogue(t.task, t.turns), this.ctx, truncation),
    );
    const ref = await this.referenceTurnLogprobs(seqs);
    return trajectories.map((t, i) => ({ sessionId: t.sessionId, seq: seqs[i]!, refTurnLogp: ref[i]! }));
  }

  /** The frozen initial critic's log-probabilities of every agent turn: the base alone for a LoRA critic. */
  private async referenceTurnLogprobs(seqs: readonly EncodedDialogue[]): Promise<number[][][]> {
    if (this.lora) return withoutLora(this.current.model, () => turnLogprobValues(this.current.model, seqs, this.pad));
    const reference = await loadModel(this.initialDir, `critic-ref-${this.id}-${instances++}`, false);
    try {
      return await turnLogprobValues(reference.model, seqs, this.pad);
    } finally {
      reference.model.dispose();
    }
  }

  /**
   * Each agent turn's advantage under the critic as trained so far: its mean per-token log-probability minus the
   * frozen reference's (the turn's share of the trajectory score). Stored per turn for the dashboard, so a reader
   * sees which questions the critic credited.
   */
  async turnAdvantages(examples: readonly CriticExample[]): Promise<{ sessionId: string; advantages: number[] }[]> {
    const cur = await turnLogprobValues(
      this.current.model,
      examples.map((e) => e.seq),
      this.pad,
    );
    return examples.map((e, i) => ({
      sessionId: e.sessionId,
      advantages: cur[i]!.map((lp, k) => meanLogRatio(lp, e.refTurnLogp[k]!)),
    }));
  }

  /**
   * [B] score of each example: mean log-ratio over all its agent tokens, or the sum of its turns' means
   * ('turn-sum'); differentiable in the critic's weights.
   */
  scores(examples: readonly CriticExample[], score: TrajectoryScore = 'token-mean'): tf.Tensor1D {
    return tf.tidy(() => {
      const lp = turnLogprobs(
        this.current.model,
        examples.map((e) => e.seq),
        this.pad,
      );
      if (lp.owner.length === 0) return tf.zeros([examples.length]) as tf.Tensor1D;
      const ref = padTurns(
        examples.flatMap((e) => e.refTurnLogp),
        lp.logp.shape[1],
      );
      return trajectoryAdvantages(lp.logp, ref, lp.mask, tf.tensor1d(lp.owner, 'int32'), examples.length, score);
    });
  }

  /** Bradley-Terry loss of a batch of pairs, with how many pairs the critic already orders correctly. */
  loss(
    pairs: readonly Pair<CriticExample>[],
    beta: number,
    score: TrajectoryScore = 'token-mean',
  ): { loss: tf.Scalar; correct: tf.Scalar } {
    return tf.tidy(() => {
      const s = this.scores([...pairs.map((p) => p.chosen), ...pairs.map((p) => p.rejected)], score);
      const chosen = s.slice(0, pairs.length);
      const rejected = s.slice(pairs.length, pairs.length);
      return {
        loss: bradleyTerryLoss(chosen, rejected, beta),
        correct: tf.sum(tf.cast(tf.greater(chosen, rejected), 'float32')) as tf.Scalar,
      };
    });
  }

  /** Trajectory scores as numbers (no gradient). */
  async trajectoryScores(
    examples: readonly CriticExample[],
    score: TrajectoryScore = 'token-mean',
    batchSize = 4,
  ): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < examples.length; i += batchSize) {
      const s = this.scores(examples.slice(i, i + batchSize), score);
      out.push(...((await s.data()) as Float32Array));
      s.dispose();
    }
    return out;
  }

  /**
   * The critic's advantage of each candidate next message in a state, as the official ranking computes it: the
   * mean per-token log-probability of the candidate under the critic, with the hidden information in the
   * prompt, minus its mean per-token log-probability under the policy that sampled it, without it
   * (`policyLogp[i]`: the sampler's per-token log-probabilities of candidate i's tokens).
   */
  async scoreCandidates(
    state: TurnState,
    candidates: readonly string[],
    policyLogp: readonly (readonly number[])[],
    options: { temperature?: number; tokens?: RankingTokens; batchSize?: number; reference?: RankingReference } = {},
  ): Promise<number[]> {
    if (policyLogp.length !== candidates.length)
      throw new Error(`scoreCandidates: ${candidates.length} candidates but ${policyLogp.length} reference rows`);
    const prompt = criticDialogue(state.task, state.turns);
    const tok = this.current.tokenizer;
    const chat = this.current.chat;
    // How many tokens the assistant header (the generation prompt) and the end-of-turn marker take.
    const header = Math.max(
      0,
      tok.encode(chat.format(prompt, { addGenerationPrompt: true })).length - tok.encode(chat.format(prompt)).length,
    );
    const rows = candidates.map((c) => {
      const row = encodeAction(this.current, prompt, c, this.ctx);
      const end = Math.max(0, row.completion.length - tok.encode(c).length);
      return rankingRow(row, header, end, options.tokens ?? 'turn');
    });
    const cur = await completionLogprobValues(this.current.model, rows, {
      padTokenId: this.pad,
      batchSize: options.batchSize ?? 8,
      temperature: options.temperature,
    });
    if (options.reference === 'initial') {
      // Against the frozen initial critic on the same rows: the advantage its training fitted (mean log-ratio).
      const ref = await this.initialLogprobs(rows, {
        batchSize: options.batchSize ?? 8,
        temperature: options.temperature,
      });
      return rows.map((_, i) => meanLogRatio(cur[i]!, ref[i]!));
    }
    // 'official': the two means cover different tokens (header + message against message + end), as there.
    const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
    return rows.map((_, i) =>
      (options.tokens ?? 'turn') === 'turn'
        ? meanLogRatio(cur[i]!, policyLogp[i]!)
        : mean(cur[i]!) - mean(policyLogp[i]!),
    );
  }

  /** The frozen initial critic, loaded once when ranking asks for it (the base alone for a LoRA critic). */
  private initial?: LoadedModel;

  private async initialLogprobs(
    rows: readonly { prompt: number[]; completion: number[] }[],
    o: { batchSize: number; temperature?: number },
  ): Promise<number[][]> {
    const score = (m: Decoder) => completionLogprobValues(m, rows, { padTokenId: this.pad, ...o });
    if (this.lora) return withoutLora(this.current.model, () => score(this.current.model));
    this.initial ??= await loadModel(this.initialDir, `critic-initial-${this.id}-${instances++}`, false);
    return score(this.initial.model);
  }

  dispose(): void {
    this.current.model.dispose();
    this.initial?.model.dispose();
  }
}

export type RankingTokens = 'turn' | 'official';
export type RankingReference = 'sampler' | 'initial';

/**
 * The tokens of one candidate the critic's ranking mean covers. 'turn': the assistant segment after the prompt
 * (message and end-of-turn marker), the same tokens as the sampler's mean. 'official': as rank_best_of_n.py, the
 * `header` tokens that open the assistant turn (the end of the prompt) and the message, without the `end` marker.
 */
export function rankingRow(
  row: { prompt: number[]; completion: number[] },
  header: number,
  end: number,
  tokens: RankingTokens,
): { prompt: number[]; completion: number[] } {
  if (tokens === 'turn') return row;
  const h = Math.min(header, row.prompt.length - 1);
  return {
    prompt: row.prompt.slice(0, row.prompt.length - h),
    completion: [
      ...row.prompt.slice(row.prompt.length - h),
      ...row.completion.slice(0, Math.max(0, row.completion.length - end)),
    ],
  };
}

/** Runs `attach` on a freshly loaded model, freeing the model when it fails (a bad adapter directory). */
async function adopt(m: LoadedModel, attach: () => Promise<void>): Promise<void> {
  try {
    await attach();
  } catch (err) {
    m.model.dispose();
    throw err;
  }
}

/** A pair the critic trains on, and where its order came from: the rewards, or a person's judgement. */
export type CriticPair = Pair<CriticExample> & { from: 'rewards' | 'people' };

/** A person's judgement of two sessions of one task (prisma/preference-store.ts peoplePairs). */
export interface PeoplePair {
  chosen: string;
  rejected: string;
}

/**
 * Pairs of trajectories of the same task for the critic: the task's best against each strictly worse one, then
 * the pairs people judged (`people`, the session picked as chosen), an extra signal that may contradict the
 * rewards: each judgement is one pair, so the critic weighs disagreeing evidence by how much there is. People's
 * pairs whose sessions are not both among the trajectories, or are of different tasks, are left out; at most
 * `maxPairsPerTask` of them per task (as for the rewards' pairs), in content order, so no database order or id
 * decides which batch a pair lands in.
 */
export function criticPairs(
  trajectories: readonly Trajectory[],
  examples: readonly CriticExample[],
  maxPairsPerTask: number | null,
  people: readonly PeoplePair[] = [],
): CriticPair[] {
  const byId = new Map(examples.map((e) => [e.sessionId, e]));
  const scored = scoredTrajectories(trajectories);
  const fromRewards: CriticPair[] = rewardPairs(scored, maxPairsPerTask).map((p) => ({
    chosen: byId.get(p.chosen.id)!,
    rejected: byId.get(p.rejected.id)!,
    from: 'rewards',
  }));
  const keyed = new Map(scored.map((x) => [x.id, x]));
  const judged = people
    .map((p) => ({ c: keyed.get(p.chosen), r: keyed.get(p.rejected) }))
    .filter(
      (p): p is { c: Scored; r: Scored } =>
        !!p.c && !!p.r && p.c.groupId === p.r.groupId && byId.has(p.c.id) && byId.has(p.r.id),
    )
    .map((p) => ({ ...p, order: `${p.c.groupId}:${p.c.key}:${p.r.key}:${p.c.id}:${p.r.id}` }))
    .sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
  const perTask = new Map<string, number>();
  const fromPeople: CriticPair[] = [];
  for (const p of judged) {
    const n = perTask.get(p.c.groupId) ?? 0;
    if (n >= (maxPairsPerTask ?? Infinity)) continue;
    perTask.set(p.c.groupId, n + 1);
    fromPeople.push({ chosen: byId.get(p.c.id)!, rejected: byId.get(p.r.id)!, from: 'people' });
  }
  return [...fromRewards, ...fromPeople];
}

/** The critic's training phase, as runs record it (TrainingStep.phase, progress). */
export const CRITIC_PHASE = 'critic';

/** Bradley-Terry training of the critic over trajectory pairs: criticEpochs passes, batchSize pairs an update. */
export function criticPhase(critic: Critic, pairs: readonly Pair<CriticExample>[], c: TrainConfig): Phase {
  if (pairs.length === 0)
    throw new Error(`${CRITIC_PHASE}: no trajectory pairs (every task needs sessions with different rewards)`);
  return minibatchPhase({
    name: CRITIC_PHASE,
    model: critic.model,
    items: holdOutFirst(pairs, c.heldOutShare),
    epochs: c.criticEpochs,
    peakLr: c.criticLr,
    config: c,
    shape: sequencePairShape,
    microStep: (micro) => {
      const { loss, correct } = critic.loss(micro, c.criticBeta, c.criticTrajectoryScore);
      return { loss, metrics: { accuracy: correct.dataSync()[0]! / micro.length } };
    },
  });
}
