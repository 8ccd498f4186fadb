// The critic alone (README.md, "The critic gate"): SWEET-RL's critic trained on a seed's collection with given
// settings, through the trainer's own critic phase (trainer/critic.ts criticPairs, criticPhase), then gated, with
// no actor trained and no run recorded. What decides the critic's settings and the benchmark's sizes before any
// method is compared; the benchmark itself trains the critic inside SWEET-RL's run (seed.ts trainMethod).
import { Critic, criticPairs, criticPhase } from '../../trainer/critic.ts';
import { collectedTrajectories, type PreparedSeed } from './seed.ts';
import { methodConfig, type Overrides } from './settings.ts';
import { criticGate, stateProbabilities, type CriticGate } from './states.ts';
import { loadModel } from '../../trainer/sequences.ts';

/** The critic trained with `overrides`, gated against both ranking references (the sampler's, the initial critic's). */
export async function trainAndGateCritic(
  p: PreparedSeed,
  overrides: Overrides,
): Promise<{
  gate: CriticGate;
  gateInitial: CriticGate;
  pairs: number;
  updates: number;
  trainAccuracy: number;
  /** The initial critic's key contrast in its own view (the hidden information in the prompt): what it starts from. */
  initialKeyContrast: number;
}> {
  const cfg = methodConfig(overrides, p.o.seed);
  const trajectories = await collectedTrajectories(p);
  const critic = await Critic.load(p.starterDir, p.starterDir);
  const sampler = await loadModel(p.starterDir, `critic-only-sampler-${Date.now()}`, false);
  try {
    const initialKeyContrast = (await stateProbabilities(sampler, p.stateTasks, { view: 'critic', design: p.o.design }))
      .keyContrast;
    const examples = await critic.prepare(trajectories, cfg.truncation);
    const pairs = criticPairs(trajectories, examples, cfg.maxPairsPerTask);
    const phase = criticPhase(critic, pairs, cfg);
    let accuracy = 0;
    for (let s = 0; s < phase.totalSteps; s++) accuracy = (await phase.step(s)).accuracy ?? 0;
    phase.dispose();
    return {
      gate: await criticGate(critic, sampler, p.stateTasks, 'sampler', p.o.design),
      gateInitial: await criticGate(critic, sampler, p.stateTasks, 'initial', p.o.design),
      pairs: pairs.length,
      updates: phase.totalSteps,
      trainAccuracy: accuracy,
      initialKeyContrast,
    };
  } finally {
    critic.dispose();
    sampler.model.dispose();
  }
}
