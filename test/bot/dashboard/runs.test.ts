// The runs page's reading of a run's progress (bot/dashboard/runs.ts): each phase's state and bar from the
// progress the trainer keeps, runs from before it named its phases, and long loss curves thinned for drawing.
import { describe, expect, it } from 'vitest';
import { curveOf, phaseViews } from '../../../bot/dashboard/runs.ts';

describe('phaseViews', () => {
  it('a SWEET-RL run in its actor phase: critic and collect done, actor part-way by its recorded updates', () => {
    const v = phaseViews(
      'running',
      {
        done: ['critic', 'collect'],
        current: { phase: 'actor', step: 4 },
        collected: 6,
        phases: ['critic', 'collect', 'actor'],
        totals: { critic: 10, collect: 6, actor: 20 },
      },
      new Map([
        ['critic', 10],
        ['actor', 5],
      ]),
    );
    expect(v).toEqual([
      { name: 'critic', state: 'done', done: 10, total: 10, fraction: 1, unit: 'updates' },
      { name: 'collect', state: 'done', done: 6, total: 6, fraction: 1, unit: 'states' },
      { name: 'actor', state: 'running', done: 5, total: 20, fraction: 0.25, unit: 'updates' },
    ]);
  });

  it('a failed run stopped where it was, the phases after it waiting; a run without named phases shows what it met', () => {
    const failed = phaseViews(
      'failed',
      { done: ['critic'], collected: 2, phases: ['critic', 'collect', 'actor'], totals: { critic: 4, collect: 8 } },
      new Map([['critic', 4]]),
    );
    expect(failed.map((p) => `${p.name}:${p.state}:${p.done}/${p.total}`)).toEqual([
      'critic:done:4/4',
      'collect:stopped:2/8',
      'actor:waiting:null/null',
    ]);
    const old = phaseViews('succeeded', { done: [], current: { phase: 'rft', step: 30 } }, new Map([['rft', 30]]));
    expect(old).toEqual([{ name: 'rft', state: 'done', done: 30, total: null, fraction: 1, unit: 'updates' }]);
    expect(phaseViews('queued', null, new Map())).toEqual([]);
  });
});

describe('curveOf', () => {
  it('keeps every update up to 400, thins beyond while keeping the last, and reports the whole range', () => {
    const points = Array.from({ length: 1001 }, (_, step) => ({
      step,
      loss: step === 500 ? 0.01 : 1 + 1 / (step + 1),
    }));
    const c = curveOf('critic', points);
    expect(c.updates).toBe(1001);
    expect(c.points.length).toBeLessThanOrEqual(401);
    expect(c.points.at(-1)!.step).toBe(1000);
    expect([c.first, c.last, c.min, c.max]).toEqual([2, 1 + 1 / 1001, 0.01, 2]);
    expect(curveOf('actor', points.slice(0, 50)).points).toHaveLength(50);
  });
});
