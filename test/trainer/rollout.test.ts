// playBatched gathers the replies of many games into one generation; a game's random draws must still be its
// own (seeded by the run's seed, its index and its reply), or two policies compared on "the same games" would
// draw different numbers as soon as one game of a batch ends sooner under one of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { createRuleSimulator } from '../../tasks/simulator.ts';
import { playBatched, type RolloutJob, type RolloutResult } from '../../trainer/rollout.ts';
import { loadModel, type LoadedModel } from '../../trainer/sequences.ts';
import { scratchDir, tinyPolicy } from './fixture.ts';

let root: string;
let policy: LoadedModel;
let jobs: RolloutJob[];

beforeAll(async () => {
  root = scratchDir('rollout');
  policy = await loadModel(await tinyPolicy(join(root, 'tiny'), 4), `rollout-${Date.now()}`, false);
  jobs = generateMiniTasks({ seed: 8, count: 6, split: 'test' }).map((task, i) => ({ task, ref: String(i) }));
}, 240_000);

afterAll(() => {
  policy?.model.dispose();
  if (root) rmSync(root, { recursive: true, force: true });
});

const sampling = { temperature: 1, topP: 0.95, maxTokens: 40 };
const play = (js: readonly RolloutJob[], parallel: number, seed = 3) =>
  playBatched(policy, js, { collaborator: (task) => createRuleSimulator(task), sampling, seed, parallel });
const transcript = (r: RolloutResult) => r.episode.turns.map((t) => `${t.role}: ${t.content}`);

describe('batched games', () => {
  it('play the same whatever shares their batch', async () => {
    const alone = await play(jobs, 1);
    const together = await play(jobs, jobs.length);
    expect(together.map(transcript)).toEqual(alone.map(transcript));
    // Sampled, not copies of one game: the games differ.
    expect(new Set(alone.map((r) => JSON.stringify(transcript(r)))).size).toBeGreaterThan(1);

    // Another task in slot 2 changes that game and leaves every other game as it was.
    const swapped = [...jobs.slice(0, 2), jobs[5]!, ...jobs.slice(3)];
    const beside = await play(swapped, jobs.length);
    for (const i of [0, 1, 3, 4, 5]) expect(transcript(beside[i]!)).toEqual(transcript(together[i]!));

    // The seed still decides the draws.
    const reseeded = await play(jobs, jobs.length, 4);
    expect(reseeded.map(transcript)).not.toEqual(together.map(transcript));
  }, 600_000);

  it("give each game's collaborator the game's index, so a collaborator with random parts meets game i alike", async () => {
    const met: [string, number][] = [];
    await playBatched(policy, jobs, {
      collaborator: (task, game) => {
        met.push([task.description, game]);
        return createRuleSimulator(task);
      },
      sampling,
      seed: 3,
      parallel: 4,
    });
    expect(met.sort((x, y) => x[1] - y[1])).toEqual(jobs.map((j, i) => [j.task.description, i]));
  }, 600_000);
});
