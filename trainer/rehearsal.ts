// Rehearsal: beside each policy update's own loss (DPO of the actor or of multi-turn DPO, SFT of rejection
// fine-tuning), a token NLL on a few dialogues of the kind the starter was built from: scripted expert games on
// train-split ColBench-mini tasks, half of them on varied tasks, with copy drills mixed in. It is InstructGPT's
// "pretraining mix" (PPO-ptx, Ouyang et al. 2022) for a model small enough to forget: under preference updates
// alone the ~1M-parameter starter lost what it had learnt to copy and wrote code that no longer loaded. With it,
// one round of any method leaves the starter level instead of 4-5 points worse (bench/HISTORY.md, "Rehearsal").
// Off in the paper's preset: an 8B model at lr 2e-7 has no such problem, and a real model's own pre-training
// data is not ours to replay.
//
//   loss = L_update + lambda_rehearsal * ( -(1/|R|) * sum over agent tokens y of the update's rehearsal
//                                          dialogues R of log pi(y | prefix) )
import * as tf from '@tensorflow/tfjs';
import { tokenNll } from './losses.ts';
import type { TrainConfig } from './presets.ts';
import { DEFAULT_RECIPE, recipeGameDialogues } from './recipes/starter.ts';
import { Rng, type PhaseAnchor } from './schedule.ts';
import { encodeDialogue, turnLogprobs, type EncodedDialogue, type LoadedModel } from './sequences.ts';

/**
 * The rehearsal dialogues of a run, encoded for `policy`: the starter recipe's game mix (expert games, or the
 * configured demonstrator mix; varied tasks, copy drills, compact answers) from the run's seed, i.e. the first
 * of the dialogues a starter of that seed was built from (replay of the original data). Train-split tasks
 * only, as in the starter. Empty when the configuration has no rehearsal.
 */
export async function rehearsalSet(
  policy: Pick<LoadedModel, 'chat' | 'tokenizer' | 'model'>,
  c: TrainConfig,
): Promise<EncodedDialogue[]> {
  if (!c.rehearsal || c.rehearsal.coefficient === 0) return [];
  const dialogues = await recipeGameDialogues({
    ...DEFAULT_RECIPE,
    seed: c.seed,
    games: c.rehearsal.games,
    demonstrators: c.rehearsal.demonstrators ?? DEFAULT_RECIPE.demonstrators,
  });
  const ctx = policy.model.config.maxPositionEmbeddings;
  return dialogues.map((d) => encodeDialogue(policy, d, ctx)).filter((e) => e.turns.length > 0);
}

/**
 * The anchor term of a policy phase: update k adds lambda_rehearsal times the NLL of `perUpdate` rehearsal
 * dialogues, taken in a seeded order that depends only on (seed, k), so a resumed run replays the same ones.
 */
export function rehearsalAnchor(
  policy: LoadedModel,
  set: readonly EncodedDialogue[],
  c: TrainConfig,
): PhaseAnchor | undefined {
  const r = c.rehearsal;
  if (!r || r.coefficient === 0 || set.length === 0) return undefined;
  const order = Rng.derive(c.seed, 'rehearsal-order').shuffle(Array.from({ length: set.length }, (_, i) => i));
  const pad = policy.tokenizer.padTokenId;
  return {
    loss: (index) => {
      const batch = Array.from(
        { length: r.perUpdate },
        (_, j) => set[order[(index * r.perUpdate + j) % order.length]!]!,
      );
      const lp = turnLogprobs(policy.model, batch, pad);
      const nll = tokenNll(lp.logp, lp.mask);
      return { loss: tf.mul(nll, r.coefficient) as tf.Scalar, metrics: { rehearsalNll: nll.dataSync()[0]! } };
    },
  };
}
