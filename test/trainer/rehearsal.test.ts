// Rehearsal: the starter recipe's dialogues replayed beside every policy update, and the anchor term that
// minibatchPhase adds to the batch mean (its gradient must be exactly the anchor's, however the batch is split).
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trainConfig } from '../../trainer/presets.ts';
import { rehearsalAnchor, rehearsalSet } from '../../trainer/rehearsal.ts';
import { minibatchPhase, phaseOptimizer } from '../../trainer/schedule.ts';
import { loadModel, turnLogprobValues, type LoadedModel } from '../../trainer/sequences.ts';
import { TrainStep } from '../../trainer/model/train-step.ts';
import { rftPhase } from '../../trainer/rft.ts';
import type { Trajectory } from '../../trainer/data.ts';
import { scratchDir, tinyPolicy } from './fixture.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { createExpertAgent } from '../../tasks/expert.ts';
import { playEpisode } from '../../tasks/protocol.ts';
import { createRuleSimulator } from '../../tasks/simulator.ts';

let root: string;
let dir: string;
const rehearsal = { coefficient: 1, games: 6, perUpdate: 2 };

beforeAll(async () => {
  root = scratchDir('rehearsal');
  dir = await tinyPolicy(join(root, 'tiny'), 7);
}, 120_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

const load = (name: string): Promise<LoadedModel> => loadModel(dir, `${name}-${Date.now()}`, true);

describe('rehearsal', () => {
  it('replays the starter mix from the run seed: expert games (or the configured demonstrators) and their copy drills, each with agent tokens; none when off', async () => {
    const m = await load('set');
    try {
      expect(await rehearsalSet(m, trainConfig('paper'))).toEqual([]);
      expect(await rehearsalSet(m, trainConfig('cpu-small', { rehearsal: { ...rehearsal, coefficient: 0 } }))).toEqual(
        [],
      );
      const c = trainConfig('cpu-small', { rehearsal, seed: 4 });
      const set = await rehearsalSet(m, c);
      // 6 games and one drill for every two games (the recipe's copyDrills 0.5).
      expect(set).toHaveLength(9);
      for (const s of set) expect(s.turns.length).toBeGreaterThan(0);
      expect(await rehearsalSet(m, c)).toEqual(set);
      expect(await rehearsalSet(m, { ...c, seed: 5 })).not.toEqual(set);
      // The expert asks before it answers; a starter built from hasty games alone is rehearsed on games that
      // answer at once (one agent turn each, like the drills).
      expect(set.slice(0, 6).every((s) => s.turns.length > 1)).toBe(true);
      const hasty = await rehearsalSet(
        m,
        trainConfig('cpu-small', {
          rehearsal: { ...rehearsal, demonstrators: { expert: 0, hasty: 1, noisy: 0, noise: 0 } },
          seed: 4,
        }),
      );
      expect(hasty.map((s) => s.turns.length)).toEqual(Array(9).fill(1));
    } finally {
      m.model.dispose();
    }
  });

  it('adds exactly the anchor gradient to an update, whatever the micro-batch split', async () => {
    const a = await load('a');
    const b = await load('b');
    try {
      const c = trainConfig('cpu-small', { rehearsal, batchSize: 4, microBatch: 2, seed: 4 });
      const set = await rehearsalSet(a, c);
      // An algorithm loss with zero gradient: the update is then the anchor's alone.
      const first = [...a.model.namedTrainableVariables().values()][0]!;
      const phase = minibatchPhase({
        name: 'zero',
        model: a.model,
        items: [1, 2, 3, 4],
        epochs: 1,
        peakLr: 1e-3,
        config: c,
        shape: () => ({ rows: 1, tokens: 1 }),
        microStep: () => ({ loss: tf.mul(tf.sum(first), 0) as tf.Scalar }),
        anchor: rehearsalAnchor(a, set, c)!,
      });
      const viaPhase = await phase.step(0);
      phase.dispose();
      // The same anchor loss as one plain update of a second copy.
      const anchorB = rehearsalAnchor(b, set, c)!;
      const optimizer = phaseOptimizer(b.model.namedTrainableVariables(), 1e-3, 1, c);
      const direct = new TrainStep({ optimizer, maxGradNorm: c.maxGradNorm });
      const r = direct.run(() => anchorB.loss(0).loss);
      expect(viaPhase.gradNorm).toBeCloseTo(r.gradNorm!, 4);
      expect(viaPhase.loss).toBeCloseTo(r.loss, 4);
      expect(viaPhase.rehearsalNll).toBeCloseTo(r.loss, 4);
      optimizer.dispose();
    } finally {
      a.model.dispose();
      b.model.dispose();
    }
  });

  it('keeps the rehearsal dialogues likely under updates that would otherwise move away from them', async () => {
    // RFT on a few expert sessions of other tasks, with and without rehearsal: the rehearsal NLL after the
    // phase is lower with it.
    const tasks = generateMiniTasks({ seed: 31, count: 8, split: 'train' });
    const expert = createExpertAgent({ tasks, name: 'expert' });
    const data: Trajectory[] = [];
    for (const task of tasks) {
      const episode = await playEpisode({ task, agent: expert, collaborator: createRuleSimulator(task) });
      data.push({
        sessionId: task.externalId,
        taskId: task.externalId,
        task,
        turns: episode.turns,
        answer: episode.answer ?? '',
        score: 1,
        success: true,
        rating: null,
        reward: 1,
        simulated: true,
        policyVersionId: null,
      });
    }
    const nllAfter = async (withRehearsal: boolean): Promise<number> => {
      const m = await load(withRehearsal ? 'with' : 'without');
      try {
        const c = trainConfig('cpu-small', {
          rehearsal: withRehearsal ? rehearsal : null,
          lr: 3e-3,
          sftEpochs: 6,
          batchSize: 2,
          microBatch: 2,
          seed: 4,
        });
        const set = await rehearsalSet(m, trainConfig('cpu-small', { rehearsal, seed: 4 }));
        const phase = rftPhase(m, data, c, rehearsalAnchor(m, set, c));
        for (let s = 0; s < phase.totalSteps; s++) await phase.step(s);
        phase.dispose();
        const lp = await turnLogprobValues(m.model, set, m.tokenizer.padTokenId);
        const tokens = lp.flat(2);
        return -tokens.reduce((x, y) => x + y, 0) / tokens.length;
      } finally {
        m.model.dispose();
      }
    };
    expect(await nllAfter(true)).toBeLessThan(await nllAfter(false));
  }, 120_000);
});
