// npm run bench:prefix — what running shared tokens once saves in the trainer's four heavy operations, on a real
// credit-benchmark starter (bench/credit-starter.ts) and credit dialogues: a state's candidates generated
// (trainer/actor.ts pairsForState: 8 rows, one prompt), their reference log-probabilities, one DPO update of the
// actor (pairs from different states, which share the system prompt and the task's description) and one update of
// the critic or multi-turn DPO over whole dialogues (trainer/sequences.ts turnLogprobs). The yardstick, in the same
// run and alternating with it, is each operation with sharing off (every row runs all its tokens), which is what
// the trainer did before; both must give the same tokens and the same numbers.
//
//   npm run bench:prefix -- --starter DIR [--states 24] [--repeats 3]
//   DIR: a credit starter, e.g. built by `npx tsx bench/credit-starter.ts --design v6 --seed 101 --dir /tmp/cr/v6d`
//   (then DIR = /tmp/cr/v6d/seed-101)
import * as tf from '@tensorflow/tfjs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { CREDIT_KEYS, creditReply, generateCreditTasks, parseCreditReference, question } from '../tasks/credit.ts';
import type { DialogueTurn } from '../tasks/protocol.ts';
import { Rng } from '../tasks/random.ts';
import { dpoLoss } from '../trainer/losses.ts';
import { initBackend } from '../trainer/model/backend.ts';
import { generate } from '../trainer/model/generate.ts';
import { completionLogprobs, completionLogprobValues, sharedPrefix } from '../trainer/model/logprobs.ts';
import {
  criticDialogue,
  encodeAction,
  encodeDialogue,
  encodePrompt,
  loadModel,
  policyDialogue,
  turnLogprobs,
} from '../trainer/sequences.ts';

const { values: a } = parseArgs({
  options: {
    starter: { type: 'string' },
    states: { type: 'string', default: '24' },
    candidates: { type: 'string', default: '8' },
    repeats: { type: 'string', default: '3' },
    seed: { type: 'string', default: '101' },
  },
});
if (!a.starter) throw new Error('--starter DIR is required: a credit starter (see the header of bench/prefix.ts)');
const nStates = Number(a.states);
const nCand = Number(a.candidates);
const repeats = Number(a.repeats);
const seed = Number(a.seed);
const MAX_NEW = 48; // the credit benchmark's maxNewTokens

const backend = await initBackend();
const load0 = os.loadavg()[0]!;
const policy = await loadModel(a.starter, 'prefix-bench', true);
const ctx = policy.model.config.maxPositionEmbeddings;
const pad = policy.tokenizer.padTokenId;

// States as the collection meets them: 0-5 questions asked (told keys, repeats, keys not in the list), replies by the
// family's own rule.
const rng = Rng.derive(seed, 'prefix-bench');
const tasks = generateCreditTasks({ seed, count: nStates, split: 'train', design: 'v6' });
const states = tasks.map((task, i) => {
  const t = parseCreditReference(task.reference);
  const turns: DialogueTurn[] = [];
  const asked: string[] = [];
  for (let q = 0; q < i % 6; q++) {
    const key = rng.next() < 0.8 ? t.keys[Math.floor(rng.next() * t.keys.length)]! : CREDIT_KEYS[3 + (q % 9)]!;
    const text = question(key);
    turns.push({ role: 'agent', content: text }, { role: 'human', content: creditReply(t, asked, text).reply });
    asked.push(text);
  }
  return { task, turns };
});

type Op = 'candidates' | 'reference logprobs' | 'actor update' | 'critic update';
const seconds: Record<Op, { shared: number[]; yardstick: number[] }> = {
  candidates: { shared: [], yardstick: [] },
  'reference logprobs': { shared: [], yardstick: [] },
  'actor update': { shared: [], yardstick: [] },
  'critic update': { shared: [], yardstick: [] },
};
const cpu = () => process.cpuUsage().user / 1e6;
const prefixTokens: Record<string, number> = {};
// The first repeat's results of each way, compared at the end: the same candidates, log-probabilities and gradients.
type Way = 'shared' | 'yardstick';
const results: Record<Way, { candidates: string[]; logprobs: number[]; norms: number[] }> = {
  shared: { candidates: [], logprobs: [], norms: [] },
  yardstick: { candidates: [], logprobs: [], norms: [] },
};

async function timed<T>(op: Op, share: boolean, f: () => Promise<T> | T): Promise<T> {
  const c0 = cpu();
  const out = await f();
  (share ? seconds[op].shared : seconds[op].yardstick).push(cpu() - c0);
  return out;
}

// The norm of the gradient of an objective over every trainable weight, computed as a training step computes it.
const gradNorm = (objective: () => tf.Scalar): number => {
  const { value, grads } = tf.variableGrads(objective);
  const n = tf.tidy(() => tf.sqrt(tf.addN(Object.values(grads).map((g) => tf.sum(tf.square(g))))).dataSync()[0]!);
  tf.dispose([value, ...Object.values(grads)]);
  return n;
};

for (let r = 0; r < repeats; r++) {
  // Alternate which goes first, so that a warm cache or a load change does not favour one.
  for (const share of r % 2 === 0 ? [true, false] : [false, true]) {
    const pairs: { prompt: number[]; chosen: number[]; rejected: number[] }[] = [];
    const kept = r === 0 ? results[share ? 'shared' : 'yardstick'] : undefined;
    for (const [i, s] of states.entries()) {
      const dialogue = policyDialogue(s.task, s.turns);
      const prompt = encodePrompt(policy, dialogue, ctx, MAX_NEW);
      const gen = await timed('candidates', share, () =>
        generate(
          policy.model,
          policy.tokenizer,
          Array.from({ length: nCand }, () => prompt),
          { temperature: 1, maxTokens: MAX_NEW, seed: seed * 1000 + i, sharePrompts: share },
        ),
      );
      kept?.candidates.push(gen.map((g) => g.tokenIds.join(',')).join('|'));
      const rows = gen.map((g) => encodeAction(policy, dialogue, g.text, ctx));
      prefixTokens['reference logprobs'] = sharedPrefix(rows);
      const lp = await timed('reference logprobs', share, () =>
        completionLogprobValues(policy.model, rows, { padTokenId: pad, sharePrefix: share }),
      );
      kept?.logprobs.push(...lp.flat());
      pairs.push({ prompt: rows[0]!.prompt, chosen: rows[0]!.completion, rejected: rows[1]!.completion });
    }
    // The actor's DPO update: 8 pairs of different states a micro-batch (trainer/actor.ts actorPhase).
    const norms: number[] = [];
    for (let i = 0; i + 8 <= pairs.length; i += 8) {
      const micro = pairs.slice(i, i + 8);
      const items = [
        ...micro.map((p) => ({ prompt: p.prompt, completion: p.chosen })),
        ...micro.map((p) => ({ prompt: p.prompt, completion: p.rejected })),
      ];
      prefixTokens['actor update'] = sharedPrefix(items);
      norms.push(
        await timed('actor update', share, () =>
          gradNorm(() => {
            const lp = completionLogprobs(policy.model, items, { padTokenId: pad, sharePrefix: share });
            const zeros = tf.zeros([8]) as tf.Tensor1D;
            return dpoLoss(
              {
                policyChosen: lp.sums.slice(0, 8),
                policyRejected: lp.sums.slice(8, 8),
                refChosen: zeros,
                refRejected: zeros,
                chosenLengths: tf.tensor1d(micro.map((p) => p.chosen.length)),
              },
              0.1,
              1,
            ).loss;
          }),
        ),
      );
    }
    // The critic's (and multi-turn DPO's) update: whole dialogues with the hidden information, 8 a micro-batch.
    for (let i = 0; i + 8 <= states.length; i += 8) {
      const seqs = states
        .slice(i, i + 8)
        .map((s) =>
          encodeDialogue(
            policy,
            criticDialogue(s.task, [...s.turns, { role: 'agent', content: 'I WANT TO ANSWER:' }]),
            ctx,
          ),
        );
      norms.push(
        await timed('critic update', share, () =>
          gradNorm(() => tf.sum(turnLogprobs(policy.model, seqs, pad, share).logp) as tf.Scalar),
        ),
      );
    }
    kept?.norms.push(...norms);
  }
}
const { shared, yardstick } = results;
const sameTokens = shared.candidates.every((c, i) => c === yardstick.candidates[i]);
const maxLogprobDiff = Math.max(...shared.logprobs.map((x, i) => Math.abs(x - yardstick.logprobs[i]!)));
const maxDiff = Math.max(
  ...shared.norms.map((x, i) => Math.abs(x - yardstick.norms[i]!) / Math.abs(yardstick.norms[i]!)),
);

const rows = (Object.keys(seconds) as Op[]).map((op) => {
  const per = nStates * repeats;
  const count = op === 'actor update' || op === 'critic update' ? Math.floor(nStates / 8) * repeats : per;
  const y = seconds[op].yardstick.reduce((s, x) => s + x, 0) / count;
  const s = seconds[op].shared.reduce((s2, x) => s2 + x, 0) / count;
  return { op, count, yardstickMs: y * 1000, sharedMs: s * 1000, speedup: y / s };
});
console.log(
  `bench:prefix — starter ${a.starter}, backend ${backend.name}, ${nStates} states x ${nCand} candidates, ${repeats} repeats, load ${load0.toFixed(2)} -> ${os.loadavg()[0]!.toFixed(2)}`,
);
console.log(
  '| operation | calls | every row all its tokens, CPU ms a call | shared tokens once, CPU ms a call | speed-up |',
);
console.log('|---|---|---|---|---|');
for (const r of rows)
  console.log(
    `| ${r.op} | ${r.count} | ${r.yardstickMs.toFixed(1)} | ${r.sharedMs.toFixed(1)} | ${r.speedup.toFixed(2)}x |`,
  );
console.log(
  `same candidates both ways: ${sameTokens}; log-probabilities' largest difference ${maxLogprobDiff.toExponential(2)}; gradient norms' largest relative difference ${maxDiff.toExponential(2)}; tokens run once (last call): ${JSON.stringify(prefixTokens)}`,
);
console.log(
  JSON.stringify({
    bench: 'prefix',
    backend: backend.name,
    states: nStates,
    candidates: nCand,
    repeats,
    load: [load0, os.loadavg()[0]],
    rows,
    sameTokens,
    maxLogprobDiff,
    maxRelativeGradDiff: maxDiff,
  }),
);
policy.model.dispose();
