// The critic learns to rank: trained with Bradley-Terry on pairs from some tasks (the expert's session, which
// asks and passes, against the non-asking agent's, which guesses and fails), it ranks the pair of a task it
// never saw the same way. Also checks that a fresh critic gives every trajectory a score of exactly 0 (it is
// its own reference), that candidates are scored per state against the sampling policy, and that the paper's
// trajectory score ('turn-sum') is the sum of the turn advantages and what a phase so configured trains on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { pairsForState, type CandidateRanker } from '../../trainer/actor.ts';
import { Critic, criticPairs, criticPhase } from '../../trainer/critic.ts';
import type { TrajectoryScore } from '../../trainer/losses.ts';
import { loadTrajectories } from '../../trainer/data.ts';
import { trainConfig } from '../../trainer/presets.ts';
import { completionLogprobValues } from '../../trainer/model/logprobs.ts';
import { criticDialogue, encodeAction, loadModel, policyDialogue } from '../../trainer/sequences.ts';
import { scratchDir, seedSessions, tinyPolicy } from './fixture.ts';

let t: TestDatabase;
let root: string;
let policyDir: string;

beforeAll(async () => {
  t = await createTestDatabase();
  root = scratchDir('critic');
  policyDir = await tinyPolicy(join(root, 'tiny'), 9);
  await seedSessions(t.prisma, 7, 21);
}, 240_000);

afterAll(async () => {
  await t?.drop();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('SWEET-RL critic', () => {
  it('ranks a held-out pair correctly after Bradley-Terry training on a separable set', async () => {
    const data = await loadTrajectories(t.prisma, { ratingWeight: 0, source: 'both' });
    const critic = await Critic.load(policyDir);
    try {
      const examples = await critic.prepare(data);
      const pairs = criticPairs(data, examples, 4);
      expect(pairs.length).toBeGreaterThanOrEqual(4);
      // Untrained: the critic is its own reference, so every score is exactly 0.
      expect(await critic.trajectoryScores(examples.slice(0, 3))).toEqual([0, 0, 0]);

      const heldOut = pairs[pairs.length - 1]!;
      const train = pairs.slice(0, -1);
      const c = trainConfig('cpu-small', {
        batchSize: train.length,
        microBatch: 4,
        criticEpochs: 12,
        criticLr: 3e-3,
        criticBeta: 1,
        seed: 2,
      });
      const phase = criticPhase(critic, train, c);
      const losses: number[] = [];
      for (let s = 0; s < phase.totalSteps; s++) losses.push((await phase.step(s)).loss!);
      phase.dispose();
      expect(losses[losses.length - 1]!).toBeLessThan(losses[0]!);

      const [chosen, rejected] = await critic.trajectoryScores([heldOut.chosen, heldOut.rejected]);
      expect(chosen!).toBeGreaterThan(rejected!);

      // 'turn-sum' (the paper's equation): a trajectory's score is the sum of its turns' advantages, and a phase so
      // configured trains on it: its first update reports the turn-sum loss of the batch, not the token mean's.
      const few = examples.slice(0, 3);
      const advantages = await critic.turnAdvantages(few);
      const sums = await critic.trajectoryScores(few, 'turn-sum');
      sums.forEach((x, i) =>
        expect(x).toBeCloseTo(
          advantages[i]!.advantages.reduce((a, b) => a + b, 0),
          4,
        ),
      );
      const lossOf = (score: TrajectoryScore) => {
        const r = critic.loss(train, 1, score);
        const v = r.loss.dataSync()[0]!;
        r.loss.dispose();
        r.correct.dispose();
        return v;
      };
      const [turnSum, tokenMean] = [lossOf('turn-sum'), lossOf('token-mean')];
      expect(Math.abs(turnSum - tokenMean)).toBeGreaterThan(1e-3);
      const again = criticPhase(critic, train, { ...c, criticEpochs: 1, criticTrajectoryScore: 'turn-sum' });
      expect((await again.step(0)).loss!).toBeCloseTo(turnSum, 4);
      again.dispose();

      // Candidate scoring: a state's candidates get one finite advantage each, against the sampling policy's
      // log-probabilities without the hidden information. Against the critic's own log-probabilities (with it)
      // every advantage is exactly 0, so the reference really is what the caller passes.
      const traj = data.find((d) => d.sessionId === heldOut.chosen.sessionId)!;
      const candidates = [traj.turns[0]!.content, 'I WANT TO ANSWER: def f(): pass'];
      const policy = await loadModel(policyDir, 'critic-test-policy', false);
      try {
        const ctx = policy.model.config.maxPositionEmbeddings;
        const policyRows = candidates.map((c) => encodeAction(policy, policyDialogue(traj.task, []), c, ctx));
        const policyLogp = await completionLogprobValues(policy.model, policyRows, {
          padTokenId: policy.tokenizer.padTokenId,
        });
        const scores = await critic.scoreCandidates({ task: traj.task, turns: [] }, candidates, policyLogp);
        expect(scores).toHaveLength(2);
        expect(scores.every(Number.isFinite)).toBe(true);
        const criticRows = candidates.map((c) => encodeAction(critic.current, criticDialogue(traj.task, []), c, ctx));
        const own = await completionLogprobValues(critic.model, criticRows, {
          padTokenId: critic.current.tokenizer.padTokenId,
        });
        expect(await critic.scoreCandidates({ task: traj.task, turns: [] }, candidates, own)).toEqual([0, 0]);
        await expect(
          critic.scoreCandidates({ task: traj.task, turns: [] }, candidates, own.slice(0, 1)),
        ).rejects.toThrow(/reference rows/);
        // rankingReference 'initial': against the frozen initial critic on the same rows (with the hidden
        // information), i.e. the advantage Bradley-Terry fitted; exactly 0 for a critic not trained yet.
        const initial = await loadModel(policyDir, 'critic-test-initial', false);
        try {
          const initialLogp = await completionLogprobValues(initial.model, criticRows, {
            padTokenId: initial.tokenizer.padTokenId,
          });
          const viaInitial = await critic.scoreCandidates({ task: traj.task, turns: [] }, candidates, policyLogp, {
            reference: 'initial',
          });
          const expected = await critic.scoreCandidates({ task: traj.task, turns: [] }, candidates, initialLogp);
          viaInitial.forEach((x, i) => expect(x).toBeCloseTo(expected[i]!, 5));
          expect(viaInitial).not.toEqual(scores);
        } finally {
          initial.model.dispose();
        }
        const fresh = await Critic.load(policyDir);
        try {
          expect(
            await fresh.scoreCandidates({ task: traj.task, turns: [] }, candidates, policyLogp, {
              reference: 'initial',
            }),
          ).toEqual([0, 0]);
        } finally {
          fresh.dispose();
        }
      } finally {
        policy.model.dispose();
      }
    } finally {
      critic.dispose();
    }
  }, 600_000);

  it("ranks the actor's candidates through any CandidateRanker (a benchmark's control stands in for the critic)", async () => {
    const data = await loadTrajectories(t.prisma, { ratingWeight: 0, source: 'both' });
    const policy = await loadModel(policyDir, 'critic-test-ranked', false);
    try {
      const seen: string[][] = [];
      // Ranks candidates by their position in the sample: the pairs must follow it, whatever the critic would say.
      const ranker: CandidateRanker = {
        async scoreCandidates(_state, texts) {
          seen.push([...texts]);
          return texts.map((_, i) => i);
        },
        dispose() {},
      };
      const c = trainConfig('cpu-small', { candidates: 4, pairsPerState: 4, maxNewTokens: 8, seed: 3 });
      const pairs = await pairsForState(
        policy,
        ranker,
        { sessionId: 's', agentTurn: 0, task: data[0]!.task, turns: [] },
        c,
        11,
      );
      expect(seen).toHaveLength(1);
      expect(seen[0]).toHaveLength(4);
      expect(pairs.length).toBeGreaterThan(0);
      for (const p of pairs) {
        expect(p.chosenScore).toBeGreaterThanOrEqual(2);
        expect(p.rejectedScore).toBeLessThan(2);
      }
    } finally {
      policy.model.dispose();
    }
  }, 300_000);
});
