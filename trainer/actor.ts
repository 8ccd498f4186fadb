// The SWEET-RL actor (arXiv 2503.15478, Sec. 4.3). For a share of the turn states o_t in the data, sample N
// candidate messages from the policy, score each with the critic's advantage, pair a random top-half candidate
// (chosen) with a random bottom-half one (rejected), and train the policy with DPO (+ NLL on the chosen one)
// against the frozen initial policy.
import * as tf from '@tensorflow/tfjs';
import type { Trajectory } from './data.ts';
import type { Critic, TurnState } from './critic.ts';
import { dpoLoss } from './losses.ts';
import { generate } from './model/generate.ts';
import { completionLogprobs, completionLogprobValues } from './model/logprobs.ts';
import { topBottomPairs } from './pairs.ts';
import type { TrainConfig } from './presets.ts';
import { minibatchPhase, Rng, type Phase } from './schedule.ts';
import { encodeAction, encodePrompt, policyDialogue, type LoadedModel } from './sequences.ts';

export interface ActorState extends TurnState {
  sessionId: string;
  /** Which agent turn of the session this state precedes (0-based). */
  agentTurn: number;
}

/** One DPO pair of the actor: token ids, and the frozen reference's summed log-probabilities. */
export interface ActionPair {
  sessionId: string;
  agentTurn: number;
  /** Prompt ids of each side (the same dialogue, cut on the left by each side's length to fit the context). */
  chosenPrompt: number[];
  rejectedPrompt: number[];
  chosen: number[];
  rejected: number[];
  refChosen: number;
  refRejected: number;
  /** Critic advantages of the two candidates (for the log). */
  chosenScore: number;
  rejectedScore: number;
}

/** Every agent-turn state of the data, then a seeded `fraction` of them (at least one). */
export function selectStates(trajectories: readonly Trajectory[], fraction: number, seed: number): ActorState[] {
  const all: ActorState[] = [];
  for (const t of trajectories) {
    for (let i = 0; i < t.turns.length; i += 2) {
      if (t.turns[i]!.role !== 'agent') continue;
      all.push({ sessionId: t.sessionId, agentTurn: i / 2, task: t.task, turns: t.turns.slice(0, i) });
    }
  }
  const keep = Math.max(1, Math.round(all.length * fraction));
  return Rng.derive(seed, 'actor-states').shuffle(all).slice(0, Math.min(keep, all.length));
}

/**
 * Samples candidates for one state from `policy`, scores them with the critic and returns the actor's pairs.
 * `policy` must still be the reference policy (collection happens before any actor update), so its
 * log-probabilities are the reference's. Seeded per state: state k gives the same pairs in any run.
 */
export async function pairsForState(policy: LoadedModel, critic: Critic, state: ActorState, c: TrainConfig, stateSeed: number): Promise<ActionPair[]> {
  const ctx = policy.model.config.maxPositionEmbeddings;
  const dialogue = policyDialogue(state.task, state.turns);
  const prompt = encodePrompt(policy, dialogue, ctx, c.maxNewTokens);
  const results = await generate(policy.model, policy.tokenizer, Array.from({ length: c.candidates }, () => prompt), {
    temperature: c.temperature,
    maxTokens: c.maxNewTokens,
    seed: stateSeed,
  });
  const texts = results.map((r) => r.text);
  const scores = await critic.scoreCandidates(state, texts);
  const rng = Rng.derive(stateSeed, 'pairs');
  const picked = topBottomPairs(texts.map((_, i) => i), (i) => scores[i]!, c.pairsPerState, () => rng.next());
  if (picked.length === 0) return [];
  const rows = picked.flatMap((p) => [encodeAction(policy, dialogue, texts[p.chosen]!, ctx), encodeAction(policy, dialogue, texts[p.rejected]!, ctx)]);
  const ref = await completionLogprobValues(policy.model, rows, { padTokenId: policy.tokenizer.padTokenId });
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return picked.map((p, k) => ({
    sessionId: state.sessionId,
    agentTurn: state.agentTurn,
    chosenPrompt: rows[2 * k]!.prompt,
    rejectedPrompt: rows[2 * k + 1]!.prompt,
    chosen: rows[2 * k]!.completion,
    rejected: rows[2 * k + 1]!.completion,
    refChosen: sum(ref[2 * k]!),
    refRejected: sum(ref[2 * k + 1]!),
    chosenScore: scores[p.chosen]!,
    rejectedScore: scores[p.rejected]!,
  }));
}

/** DPO (+ NLL) of the policy on the actor's pairs: actorEpochs passes, batchSize pairs an update. */
export function actorPhase(policy: LoadedModel, pairs: readonly ActionPair[], c: TrainConfig, name = 'actor'): Phase {
  if (pairs.length === 0) throw new Error(`${name}: no candidate pairs (the critic scored every candidate of every state alike)`);
  const pad = policy.tokenizer.padTokenId;
  return minibatchPhase({
    name,
    model: policy.model,
    items: pairs,
    epochs: c.actorEpochs,
    peakLr: c.lr,
    config: c,
    microStep: (micro) => {
      const lp = completionLogprobs(
        policy.model,
        [...micro.map((p) => ({ prompt: p.chosenPrompt, completion: p.chosen })), ...micro.map((p) => ({ prompt: p.rejectedPrompt, completion: p.rejected }))],
        { padTokenId: pad },
      );
      const n = micro.length;
      const out = dpoLoss(
        {
          policyChosen: lp.sums.slice(0, n),
          policyRejected: lp.sums.slice(n, n),
          refChosen: tf.tensor1d(micro.map((p) => p.refChosen)),
          refRejected: tf.tensor1d(micro.map((p) => p.refRejected)),
          chosenLengths: tf.tensor1d(micro.map((p) => p.chosen.length)),
        },
        c.beta,
        c.nllCoefficient,
      );
      return { loss: out.loss, metrics: { margin: out.margin.dataSync()[0]!, accuracy: out.accuracy.dataSync()[0]! } };
    },
  });
}
