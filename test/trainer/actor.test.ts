import { describe, expect, it } from 'vitest';
import { selectStates } from '../../trainer/actor.ts';
import type { Trajectory } from '../../trainer/data.ts';
import { trainConfig } from '../../trainer/presets.ts';

// A game of `questions` question turns and a final answer: agent, human, agent, ..., agent.
function game(i: number, questions: number): Trajectory {
  const turns = Array.from({ length: questions }, (_, q) => [
    { role: 'agent' as const, content: `question ${q} of game ${i}?` },
    { role: 'human' as const, content: `reply ${q}` },
  ]).flat();
  turns.push({ role: 'agent', content: `I WANT TO ANSWER:\ndef f_${i}(): return ${i}` });
  return {
    sessionId: `s${i}`,
    taskId: `t${i}`,
    task: { kind: 'backend', description: `task ${i}`, reference: `def f_${i}(): return ${i}`, testCases: [] },
    turns,
    answer: `def f_${i}(): return ${i}`,
    score: 0,
    success: false,
    rating: null,
    reward: 0,
    simulated: true,
    policyVersionId: null,
  };
}

describe("the actor's states", () => {
  const games = Array.from({ length: 10 }, (_, i) => game(i, 1 + (i % 3)));

  it('takes every agent turn of the sampled trajectories by default, each with the dialogue before it', () => {
    const states = selectStates(games, 0.5, 7);
    const sessions = [...new Set(states.map((s) => s.sessionId))];
    expect(sessions).toHaveLength(5);
    for (const id of sessions) {
      const g = games.find((x) => x.sessionId === id)!;
      const mine = states.filter((s) => s.sessionId === id);
      expect(mine.map((s) => s.agentTurn)).toEqual(Array.from({ length: (g.turns.length + 1) / 2 }, (_, k) => k));
      mine.forEach((s) => expect(s.turns).toEqual(g.turns.slice(0, 2 * s.agentTurn)));
    }
  });

  it("takes only each sampled trajectory's last agent turn (its answer) with 'last', from the same trajectories", () => {
    const every = selectStates(games, 0.5, 7);
    const last = selectStates(games, 0.5, 7, 'last');
    expect(last.map((s) => s.sessionId)).toEqual([...new Set(every.map((s) => s.sessionId))]);
    for (const s of last) {
      const g = games.find((x) => x.sessionId === s.sessionId)!;
      expect(s.turns).toEqual(g.turns.slice(0, -1));
      expect(g.turns.at(-1)!.content).toContain('I WANT TO ANSWER');
    }
  });

  it("is 'every' in both presets, and a bad value is a clear error", () => {
    expect(trainConfig('paper').actorStates).toBe('every');
    expect(trainConfig('cpu-small').actorStates).toBe('every');
    expect(() => trainConfig('cpu-small', { actorStates: 'first' as never })).toThrow(/actorStates/);
  });
});
