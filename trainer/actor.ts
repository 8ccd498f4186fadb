// The SWEET-RL actor (arXiv 2503.15478, Sec. 4.3), as the official scripts do it: take a share of the
// trajectories (paper: 10%) and every agent-turn state o_t of them; sample N candidate messages per state from
// the policy (temperature 1 in the paper's preset); score each with the critic's advantage (critic with c minus
// the sampling policy without c, mean per token); pair a random top-half candidate (chosen) with a random
// bottom-half one (rejected), `pairsPerState` times; train the policy with DPO (+ NLL on the chosen message)
// against the frozen initial policy.
import { readFile } from 'node:fs/promises';
import * as tf from '@tensorflow/tfjs';
import type { Trajectory } from './data.ts';
import type { RankingReference, RankingTokens, TurnState } from './critic.ts';
import { dpoLoss } from './losses.ts';
import { generate } from './model/generate.ts';
import { completionLogprobs, completionLogprobValues } from './model/logprobs.ts';
import { canonicalOrder, holdOutFirst, topBottomPairs } from './pairs.ts';
import type { TrainConfig } from './presets.ts';
import { minibatchPhase, Rng, type Phase, type PhaseAnchor } from './schedule.ts';
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
  /** The two candidates' texts (what exports show; absent in files collected before they were kept). */
  chosenText?: string;
  rejectedText?: string;
  refChosen: number;
  refRejected: number;
  /** Critic advantages of the two candidates (for the log). */
  chosenScore: number;
  rejectedScore: number;
}

/**
 * What ranks the actor's candidates in a state: the learned critic (trainer/critic.ts), or a stand-in a
 * benchmark's control supplies through RunContext.ranker (the true move values, or noise) to test the rest of the
 * actor's machinery. `policyLogp[i]` is the sampler's per-token log-probabilities of candidate i's tokens.
 */
export interface CandidateRanker {
  scoreCandidates(
    state: TurnState,
    candidates: readonly string[],
    policyLogp: readonly (readonly number[])[],
    options?: { temperature?: number; tokens?: RankingTokens; reference?: RankingReference },
  ): Promise<number[]>;
  dispose(): void;
}

/** The collection of the actor's candidate pairs (selectStates, pairsForState), as runs record it (progress). */
export const COLLECT_PHASE = 'collect';

/**
 * A seeded `fraction` of the trajectories (at least one), and every agent-turn state of each (or only the last,
 * `which` = 'last'), in a fixed order.
 * The official script takes the first 10% of its data file; a seeded sample of the content-ordered
 * trajectories is the same thing without depending on the order rows come out of a database.
 */
export function selectStates(
  trajectories: readonly Trajectory[],
  fraction: number,
  seed: number,
  which: TrainConfig['actorStates'] = 'every',
): ActorState[] {
  const ordered = canonicalOrder(trajectories);
  const keep = Math.min(ordered.length, Math.max(1, Math.round(ordered.length * fraction)));
  const chosen = Rng.derive(seed, 'actor-trajectories').shuffle(ordered).slice(0, keep);
  const states: ActorState[] = [];
  for (const t of chosen) {
    const agentTurns: ActorState[] = [];
    for (let i = 0; i < t.turns.length; i += 2) {
      if (t.turns[i]!.role !== 'agent') continue;
      agentTurns.push({ sessionId: t.sessionId, agentTurn: i / 2, task: t.task, turns: t.turns.slice(0, i) });
    }
    states.push(...(which === 'last' ? agentTurns.slice(-1) : agentTurns));
  }
  return states;
}

/**
 * Samples candidates for one state from `policy`, scores them with the critic and returns the actor's pairs.
 * `policy` must still be the reference policy (collection happens before any actor update), so its
 * log-probabilities are the reference's. Seeded per state: state k gives the same pairs in any run.
 */
export async function pairsForState(
  policy: LoadedModel,
  critic: CandidateRanker,
  state: ActorState,
  c: TrainConfig,
  stateSeed: number,
): Promise<ActionPair[]> {
  const ctx = policy.model.config.maxPositionEmbeddings;
  const dialogue = policyDialogue(state.task, state.turns);
  const prompt = encodePrompt(policy, dialogue, ctx, c.maxNewTokens);
  const results = await generate(
    policy.model,
    policy.tokenizer,
    Array.from({ length: c.candidates }, () => prompt),
    {
      temperature: c.temperature,
      maxTokens: c.maxNewTokens,
      seed: stateSeed,
    },
  );
  const texts = results.map((r) => r.text);
  // The sampler's own per-token log-probabilities of every candidate: the critic's reference in the ranking, and
  // (summed) the frozen reference of the DPO pairs, since no actor update has happened yet.
  const rows = texts.map((text) => encodeAction(policy, dialogue, text, ctx));
  const ref = await completionLogprobValues(policy.model, rows, { padTokenId: policy.tokenizer.padTokenId });
  const scores = await critic.scoreCandidates(state, texts, ref, {
    temperature: c.rankingTemperature,
    tokens: c.rankingTokens,
    reference: c.rankingReference,
  });
  const rng = Rng.derive(stateSeed, 'pairs');
  const picked = topBottomPairs(
    texts.map((_, i) => i),
    (i) => scores[i]!,
    c.pairsPerState,
    () => rng.next(),
  );
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return picked.map((p) => ({
    sessionId: state.sessionId,
    agentTurn: state.agentTurn,
    chosenPrompt: rows[p.chosen]!.prompt,
    rejectedPrompt: rows[p.rejected]!.prompt,
    chosen: rows[p.chosen]!.completion,
    rejected: rows[p.rejected]!.completion,
    chosenText: texts[p.chosen]!,
    rejectedText: texts[p.rejected]!,
    refChosen: sum(ref[p.chosen]!),
    refRejected: sum(ref[p.rejected]!),
    chosenScore: scores[p.chosen]!,
    rejectedScore: scores[p.rejected]!,
  }));
}

/** The actor's pairs stored by a run: its actor-pairs.jsonl, one line `{ state, pairs }` a sampled state. */
export async function readActorPairs(file: string): Promise<ActionPair[]> {
  const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
  return lines.flatMap((l) => (JSON.parse(l) as { pairs: ActionPair[] }).pairs);
}

/** How much surer the critic is of the chosen side than of the rejected one. */
export const criticGap = (p: ActionPair): number => p.chosenScore - p.rejectedScore;

/** The actor's training phase, as runs record it (TrainingStep.phase, progress). */
export const ACTOR_PHASE = 'actor';

/** DPO (+ NLL, + the rehearsal `anchor` when given) of the policy on the actor's pairs: actorEpochs passes, batchSize pairs an update. */
export function actorPhase(
  policy: LoadedModel,
  pairs: readonly ActionPair[],
  c: TrainConfig,
  anchor?: PhaseAnchor,
): Phase {
  if (pairs.length === 0)
    throw new Error(`${ACTOR_PHASE}: no candidate pairs (the critic scored every candidate of every state alike)`);
  const pad = policy.tokenizer.padTokenId;
  return minibatchPhase({
    name: ACTOR_PHASE,
    model: policy.model,
    items: holdOutFirst(pairs, c.heldOutShare),
    epochs: c.actorEpochs,
    updates: c.policyUpdates,
    peakLr: c.lr,
    config: c,
    anchor,
    shape: (p) => ({
      rows: 2,
      tokens: Math.max(p.chosenPrompt.length + p.chosen.length, p.rejectedPrompt.length + p.rejected.length),
    }),
    microStep: (micro) => {
      const lp = completionLogprobs(
        policy.model,
        [
          ...micro.map((p) => ({ prompt: p.chosenPrompt, completion: p.chosen })),
          ...micro.map((p) => ({ prompt: p.rejectedPrompt, completion: p.rejected })),
        ],
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
