// Sweetloop's SWEET-RL against the official code, number for number: test/trainer/golden/official.json holds seeded
// inputs and what the official functions (facebookresearch/sweet_rl, YifeiZhou02/collab_openrlhf, at the commits
// it records) computed from them, in float64; test/trainer/golden/README.md says how it was made and how to make it
// again. Here the same inputs go through Sweetloop's code (tfjs, float32) over the same bigram model. Agreement is
// to 1e-5 relative (a vector: its largest difference over its largest entry); where Sweetloop differs on purpose
// (docs/training.md, "Differences from the official code"), the size of the difference is asserted.
import { readFileSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { rankingRow } from '../../trainer/critic.ts';
import { bradleyTerryLoss, dialogueNll, dpoLoss, meanLogRatio, trajectoryAdvantages } from '../../trainer/losses.ts';
import type { Decoder } from '../../trainer/model/decoder.ts';
import { completionLogprobs, completionLogprobValues } from '../../trainer/model/logprobs.ts';
import { AdamW, clipByGlobalNorm, warmupCosine } from '../../trainer/model/optim.ts';
import { holdOutFirst, rewardPairs, topBottomPairs } from '../../trainer/pairs.ts';
import { trainConfig } from '../../trainer/presets.ts';
import { minibatchPhase } from '../../trainer/schedule.ts';
import { turnLogprobs, type EncodedDialogue } from '../../trainer/sequences.ts';

interface Seq {
  ids: number[];
  mask: number[];
}
interface DpoCase {
  chosen: Seq;
  rejected: Seq;
  preference: number;
  nll: number;
  total: number;
  grad?: number[];
  promptLength?: number;
}
const F = JSON.parse(readFileSync(new URL('./golden/official.json', import.meta.url), 'utf8'));
const V: number = F.vocabSize;
const PAD: number = F.tokens.pad;
const TOL = 1e-5;

/** Relative error: scalars |a - b| / |b|; vectors max |a - b| / max |b|. */
function rel(a: number | readonly number[], b: number | readonly number[]): number {
  const x = typeof a === 'number' ? [a] : a;
  const y = typeof b === 'number' ? [b] : b;
  expect(x.length).toBe(y.length);
  let diff = 0;
  let scale = 0;
  x.forEach((v, i) => {
    diff = Math.max(diff, Math.abs(v - y[i]!));
    scale = Math.max(scale, Math.abs(y[i]!));
  });
  return diff / scale;
}
let compared = 0;
let worst = 0;
function close(a: number | readonly number[], b: number | readonly number[], what: string): void {
  const r = rel(a, b);
  compared += typeof b === 'number' ? 1 : b.length;
  worst = Math.max(worst, r);
  expect(r, `${what}: relative error ${r}`).toBeLessThan(TOL);
}

/** The fixture's model: the logits of the next token are row `id` of a [V, V] table. Real tfjs ops, trainable. */
let models = 0; // tfjs variable names are process-global
function bigram(weights: number[], name: string): Decoder {
  const w = tf.variable(tf.tensor2d(weights, [V, V]), true, `golden-${name}-${models++}`);
  const model = {
    config: { vocabSize: V, maxPositionEmbeddings: 4096 },
    // A bigram reads no context, so its KV cache (trainer/model/logprobs.ts runs a shared prefix once) holds nothing.
    forward: (ids: tf.Tensor2D, opts: { returnCache?: boolean; cache?: unknown } = {}) => ({
      logits: tf.gather(w, ids),
      ...(opts.returnCache || opts.cache
        ? {
            cache: {
              layers: [],
              mask: tf.ones(ids.shape),
              count: tf.fill([ids.shape[0]], ids.shape[1]),
              length: ids.shape[1],
              batch: ids.shape[0],
            },
          }
        : {}),
    }),
    namedTrainableVariables: () => new Map([['w', w]]),
  };
  return model as unknown as Decoder;
}
const weightsOf = (m: Decoder) => m.namedTrainableVariables().get('w')!;

/** The official loss mask as Sweetloop's turns: each run of masked tokens is one agent turn, ids[start, end). */
function encoded(s: Seq): EncodedDialogue {
  const turns: { start: number; end: number }[] = [];
  s.mask.forEach((m, i) => {
    if (!m) return;
    const last = turns.at(-1);
    if (last && last.end === i) last.end = i + 1;
    else turns.push({ start: i, end: i + 1 });
  });
  return { ids: s.ids, turns };
}

/** Summed agent-turn log-probabilities of each sequence (differentiable) and token counts, as trainer/mtdpo.ts. */
function sums(model: Decoder, seqs: EncodedDialogue[]): tf.Tensor1D {
  const lp = turnLogprobs(model, seqs, PAD);
  return tf.unsortedSegmentSum(tf.sum(lp.logp, 1), tf.tensor1d(lp.owner, 'int32'), seqs.length) as tf.Tensor1D;
}
const tokens = (s: Seq) => s.mask.reduce((a, b) => a + b, 0);

function criticLoss(policy: Decoder, reference: Decoder, pairs: DpoCase[], beta: number): tf.Scalar {
  const seqs = [...pairs.map((p) => encoded(p.chosen)), ...pairs.map((p) => encoded(p.rejected))];
  const cur = turnLogprobs(policy, seqs, PAD);
  const ref = turnLogprobs(reference, seqs, PAD);
  const adv = trajectoryAdvantages(cur.logp, ref.logp, cur.mask, tf.tensor1d(cur.owner, 'int32'), seqs.length);
  return bradleyTerryLoss(adv.slice(0, pairs.length), adv.slice(pairs.length, pairs.length), beta);
}

function mtdpoLoss(policy: Decoder, reference: Decoder, pairs: DpoCase[], beta: number, nll: number): tf.Scalar {
  const seqs = [...pairs.map((p) => encoded(p.chosen)), ...pairs.map((p) => encoded(p.rejected))];
  const cur = sums(policy, seqs);
  const ref = sums(reference, seqs); // the reference's weights are not among those differentiated
  const n = pairs.length;
  return dpoLoss(
    {
      policyChosen: cur.slice(0, n),
      policyRejected: cur.slice(n, n),
      refChosen: ref.slice(0, n),
      refRejected: ref.slice(n, n),
      chosenLengths: tf.tensor1d(pairs.map((p) => tokens(p.chosen))),
    },
    beta,
    nll,
  ).loss;
}

function gradOf(model: Decoder, loss: () => tf.Scalar): { loss: number; grad: number[] } {
  const { value, grads } = tf.variableGrads(loss, [weightsOf(model)]);
  const out = { loss: value.dataSync()[0]!, grad: Array.from(Object.values(grads)[0]!.dataSync()) };
  value.dispose();
  Object.values(grads).forEach((g) => g.dispose());
  return out;
}

describe('golden: the official SWEET-RL code on the same inputs', () => {
  it('records both official commits', () => {
    expect(F.commits.sweet_rl).toMatch(/^[0-9a-f]{40}$/);
    expect(F.commits.collab_openrlhf).toMatch(/^[0-9a-f]{40}$/);
  });

  it('critic: Bradley-Terry over the mean log-ratio of all agent tokens, and its gradient', () => {
    const reference = bigram(F.weights.reference, 'ref');
    F.critic.pairs.forEach((p: DpoCase, i: number) => {
      const policy = bigram(F.weights.policy, `critic${i}`);
      const r = gradOf(policy, () => criticLoss(policy, reference, [p], F.critic.beta));
      close(r.loss, p.total, `critic loss, pair ${i}`);
      if (p.grad) close(r.grad, p.grad, `critic gradient, pair ${i}`);
    });
  });

  it('multi-turn DPO: sums over every agent turn, NLL averaged over those tokens, and its gradient', () => {
    const reference = bigram(F.weights.reference, 'ref');
    F.mtdpo.pairs.forEach((p: DpoCase, i: number) => {
      const policy = bigram(F.weights.policy, `mt${i}`);
      const r = gradOf(policy, () => mtdpoLoss(policy, reference, [p], F.mtdpo.beta, F.mtdpo.nll));
      close(r.loss, p.total, `multi-turn DPO loss, pair ${i}`);
      if (p.grad) close(r.grad, p.grad, `multi-turn DPO gradient, pair ${i}`);
    });
  });

  it('actor: DPO on the message equals the official; its NLL covers the message only (official: the whole sequence)', () => {
    const policy = bigram(F.weights.policy, 'actor');
    const reference = bigram(F.weights.reference, 'ref');
    let largest = 0;
    F.actor.pairs.forEach((p: DpoCase, i: number) => {
      const n = p.promptLength!;
      const rows = [p.chosen, p.rejected].map((s) => ({ prompt: s.ids.slice(0, n), completion: s.ids.slice(n) }));
      const lp = tf.tidy(() => {
        const cur = completionLogprobs(policy, rows, { padTokenId: PAD }).sums;
        const ref = completionLogprobs(reference, rows, { padTokenId: PAD }).sums;
        const x = {
          policyChosen: cur.slice(0, 1),
          policyRejected: cur.slice(1, 1),
          refChosen: ref.slice(0, 1),
          refRejected: ref.slice(1, 1),
          chosenLengths: tf.tensor1d([rows[0]!.completion.length]),
        };
        return [
          dpoLoss(x, F.actor.beta, 0).loss.dataSync()[0]!,
          dpoLoss(x, F.actor.beta, F.actor.nll).loss.dataSync()[0]!,
          cur.dataSync()[0]!,
        ];
      });
      const [preference, total, chosenSum] = lp as number[];
      close(preference!, p.preference, `actor DPO, pair ${i}`);
      // The difference is exactly the NLL coefficient times (ours over the message - official NLL over all chosen tokens).
      const ours = -chosenSum! / rows[0]!.completion.length;
      close(total!, p.total + F.actor.nll * (ours - p.nll), `actor DPO + NLL, pair ${i}`);
      largest = Math.max(largest, Math.abs(total! - p.total));
    });
    expect(largest).toBeGreaterThan(1e-3); // the difference is real: the prompt's tokens are in the official NLL
  });

  for (const [which, microBatch] of [
    ['mtdpo', 3],
    ['critic', 5],
  ] as const) {
    it(`one update over 8 pairs: ${which} in micro-batches of ${microBatch} equals 8 accumulated micro-batches of 1`, async () => {
      const policy = bigram(F.weights.policy, `acc-${which}`);
      const reference = bigram(F.weights.reference, 'ref');
      const pairs: DpoCase[] = F[which].pairs;
      const want = F.accumulation[which];
      const c = trainConfig('paper', {
        batchSize: 8,
        microBatch,
        lr: want.lr,
        criticLr: want.lr,
        warmupRatio: 0,
        maxGradNorm: 1,
      });
      const phase = minibatchPhase({
        name: which,
        model: policy,
        items: pairs,
        epochs: 1,
        peakLr: want.lr,
        config: c,
        shape: () => ({ rows: 2, tokens: 1 }),
        microStep: (micro) => ({
          loss:
            which === 'mtdpo'
              ? mtdpoLoss(policy, reference, micro, F.mtdpo.beta, F.mtdpo.nll)
              : criticLoss(policy, reference, micro, F.critic.beta),
        }),
      });
      const m = await phase.step(0);
      close(m.lr!, want.lr, `${which} update lr`);
      close(m.gradNorm!, want.gradNorm, `${which} gradient norm of the batch`);
      close(Array.from(weightsOf(policy).dataSync()), want.weights, `${which} weights after the update`);
      phase.dispose();
    });
  }

  it('rejection fine-tuning: each dialogue weighs the same however the batch is split (official: micro-batch 1)', () => {
    const seqs: (Seq & { loss: number })[] = F.rft.sequences;
    const policy = bigram(F.weights.policy, 'rft');
    for (const split of [1, 3, 8]) {
      // minibatchPhase's weighting: each micro-batch's mean times its share of the batch
      const r = gradOf(
        policy,
        () =>
          tf.addN(
            Array.from({ length: Math.ceil(seqs.length / split) }, (_, k) => {
              const micro = seqs.slice(k * split, (k + 1) * split).map(encoded);
              const lp = turnLogprobs(policy, micro, PAD);
              return tf.mul(dialogueNll(lp.logp, lp.mask, lp.owner, micro.length), micro.length / seqs.length);
            }),
          ) as tf.Scalar,
      );
      close(r.loss, seqs.reduce((a, s) => a + s.loss, 0) / seqs.length, `RFT loss, micro-batches of ${split}`);
      close(r.grad, F.rft.grad, `RFT gradient, micro-batches of ${split}`);
    }
  });

  it('trajectory pairs: the best of a task against each strictly worse one (evaluate_code.py); ours also where the best failed', () => {
    const { k, tasks, rewards } = F.trajectoryPairs as { k: number; tasks: number; rewards: number[][] };
    const items = [];
    for (let j = 0; j < k; j++)
      for (let i = 0; i < tasks; i++)
        items.push({
          id: `${j},${i}`,
          groupId: `task ${String(i).padStart(2, '0')}`,
          reward: rewards[j]![i]!,
          key: String(j),
        });
    const ours = rewardPairs(items, null).map((p) => `${p.chosen.id}>${p.rejected.id}`);
    const official = (F.trajectoryPairs.pairs as { chosen: number[]; rejected: number[] }[]).map(
      (p) => `${p.chosen.join(',')}>${p.rejected.join(',')}`,
    );
    expect(official.length).toBeGreaterThan(0);
    for (const p of official) expect(ours).toContain(p);
    // The difference: tasks whose best trajectory did not pass every test give pairs here, none there.
    let extra = 0;
    for (let i = 0; i < tasks; i++) {
      const col = rewards.map((row) => row[i]!);
      const best = Math.max(...col);
      if (best < 1) extra += col.filter((r) => r < best).length;
    }
    expect(extra).toBeGreaterThan(0);
    expect(ours.length - official.length).toBe(extra);
    compared += official.length;
  });

  it('actor pairs: a random one of the better half against a random one of the worse half (generate_random_pairs_from_ranks.py)', () => {
    const judge: number[][] = F.rankPairs.judge;
    const official: { state: number; chosen: number; rejected: number }[] = F.rankPairs.pairs;
    let dropped = 0;
    judge.forEach((scores, s) => {
      const mine = official.filter((p) => p.state === s);
      const tied = mine.filter((p) => scores[p.chosen] === scores[p.rejected]).length;
      dropped += tied;
      // Among equal scores the official argsort's order is its own: replay only the states without ties.
      if (new Set(scores).size < scores.length) return;
      const ranked = scores.map((_, i) => i).sort((a, b) => scores[b]! - scores[a]!);
      const half = scores.length / 2;
      for (const p of mine) {
        expect(ranked.indexOf(p.chosen)).toBeLessThan(half);
        expect(ranked.indexOf(p.rejected)).toBeGreaterThanOrEqual(half);
      }
      // Replay the official draws through our sampler: which place in each half each pair took.
      const draws = mine.flatMap((p) => [
        (ranked.indexOf(p.chosen) + 0.5) / half,
        (ranked.indexOf(p.rejected) - half + 0.5) / half,
      ]);
      let n = 0;
      const ours = topBottomPairs(
        scores.map((_, i) => i),
        (i) => scores[i]!,
        mine.length,
        () => draws[n++]!,
      );
      expect(ours.map((p) => [p.chosen, p.rejected])).toEqual(mine.map((p) => [p.chosen, p.rejected]));
      compared += ours.length;
    });
    // The difference: a pair of equal scores carries no preference here; the official script still emits it.
    expect(dropped).toBeGreaterThan(0);
  });

  it("ranking: the critic's mean log-probability minus the sampler's (rank_best_of_n.py), with the official options", async () => {
    const critic = bigram(F.weights.critic, 'critic');
    const eos: number = F.tokens.eos;
    let defaultGap = 0;
    for (const state of F.ranking.states as {
      prompt: number[];
      header: number[];
      candidates: { ids: number[]; samplerMean: number }[];
      judge: number[];
    }[]) {
      const rows = state.candidates.map((c) => ({ prompt: state.prompt, completion: [...c.ids, eos] }));
      const official = rows.map((r) => rankingRow(r, state.header.length, 1, 'official'));
      const at = await completionLogprobValues(critic, official, {
        padTokenId: PAD,
        temperature: F.ranking.temperature,
      });
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      close(
        at.map((lp, i) => mean(lp) - state.candidates[i]!.samplerMean),
        state.judge,
        'ranking scores (temperature 0.5, header counted, no end token)',
      );
      // Sweetloop's default: the critic's own log-probabilities (temperature 1) over the message and its end marker.
      const own = await completionLogprobValues(critic, rows, { padTokenId: PAD });
      const ours = own.map((lp, i) => mean(lp) - state.candidates[i]!.samplerMean);
      defaultGap = Math.max(defaultGap, rel(ours, state.judge));
      // meanLogRatio is the 'turn' score when the sampler's tokens are the same: consistent with the mean above.
      expect(meanLogRatio(own[0]!, own[0]!)).toBe(0);
    }
    expect(defaultGap).toBeGreaterThan(0.05); // the default ranks on other numbers: the option is not a no-op
  });

  it('AdamW, clipping at 1.0 and the warm-up-cosine schedule over 40 updates (warmupFromZero: the official schedule)', () => {
    const o = F.optimizer;
    for (const fromZero of [true, false]) {
      const p = tf.variable(tf.tensor1d(o.init), true, `golden-opt-${fromZero}-${models++}`);
      const warmupSteps = fromZero
        ? Math.ceil(o.steps * o.warmupRatio)
        : Math.max(1, Math.round(o.steps * o.warmupRatio));
      const lr = warmupCosine({ peakLr: o.peakLr, warmupSteps, totalSteps: o.steps, minRatio: o.minLrRatio, fromZero });
      const opt = new AdamW(new Map([['p', p]]), {
        lr,
        beta1: o.betas[0],
        beta2: o.betas[1],
        eps: o.eps,
        weightDecay: 0,
      });
      const lrs: number[] = [];
      const norms: number[] = [];
      for (let s = 0; s < o.steps; s++) {
        lrs.push(opt.currentLr());
        const c = clipByGlobalNorm(new Map([['p', tf.tensor1d(o.grads[s])]]), o.maxGradNorm);
        norms.push(c.norm);
        opt.apply(c.grads);
        c.grads.forEach((g) => g.dispose());
      }
      const last = Array.from(p.dataSync());
      if (fromZero) {
        close(lrs.slice(1), o.lrs.slice(1), 'learning rates');
        expect(lrs[0]).toBe(0);
        close(norms, o.gradNorms, 'gradient norms before clipping');
        close(last, o.params[o.steps - 1], 'parameters after 40 updates');
      } else {
        // The default: the first update at peak / warm-up instead of 0, so every parameter moves one step further.
        expect(lrs[0]).toBeGreaterThan(0);
        expect(rel(last, o.params[o.steps - 1])).toBeGreaterThan(1e-3);
      }
      opt.dispose();
      p.dispose();
    }
  });

  it('held out: the first 3 % of a pairs file (openrlhf/utils/utils.py)', () => {
    const items = Array.from({ length: 100 }, (_, i) => i);
    expect(holdOutFirst(items, 0.03)).toEqual(items.slice(3));
    expect(holdOutFirst(items.slice(0, 33), 0.03)).toEqual(items.slice(0, 33)); // int(33 * 0.03) = 0
    expect(holdOutFirst(items, 0)).toEqual(items);
  });

  it('reports how much was compared', () => {
    // eslint-disable-next-line no-console
    console.log(`golden: ${compared} quantities compared, largest relative error ${worst.toExponential(2)}`);
    expect(compared).toBeGreaterThan(100);
  });
});
