// A run whose data gives its algorithm nothing to learn from is refused before it starts, saying why (which
// tasks, which rewards) and what works instead, rather than dead-ending in a phase with "no trajectory pairs".
import { describe, expect, it } from 'vitest';
import { BACKEND_QUICK_PATH, nothingToLearn, type LearnableOptions } from '../../trainer/learnable.ts';
import type { Trajectory } from '../../trainer/pairs.ts';

const session = (id: string, task: string, reward: number): Trajectory => ({
  sessionId: id,
  taskId: task,
  task: { kind: 'backend', description: `task ${task}`, reference: 'def f(): pass', testCases: ['f()'] },
  turns: [{ role: 'agent', content: `I WANT TO ANSWER:\ndef f(): return ${id}` }],
  answer: `def f(): return ${id}`,
  score: reward,
  success: reward >= 1,
  rating: null,
  reward,
  simulated: true,
  policyVersionId: null,
});

const opts = (o: Partial<LearnableOptions> = {}): LearnableOptions => ({
  algorithm: 'sweet',
  kind: 'backend',
  rftThreshold: 1,
  preferencePairs: 0,
  ...o,
});

describe('nothingToLearn', () => {
  it('says every backend reward is 0 and names the quick path that trains (the starter on the built-in library)', () => {
    const data = [session('a', 'x', 0), session('b', 'x', 0), session('c', 'y', 0)];
    const why = nothingToLearn(data, opts())!;
    expect(why).toMatch(/^critic: no trajectory pairs/);
    expect(why).toContain('the 3 backend session(s) over 2 task(s) give none');
    expect(why).toContain(
      '1 task(s) were played once, 1 task(s) had every session rewarded the same; every reward is 0',
    );
    for (const command of BACKEND_QUICK_PATH) expect(why).toContain(command);
    expect(why).toContain('--kind frontend');
    expect(why).toContain('--gguf');
    expect(nothingToLearn(data, opts({ algorithm: 'mtdpo' }))).toMatch(/^mtdpo: no trajectory pairs/);
  });

  it('does not send people to ColBench-mini when rewards differ, only between tasks', () => {
    const why = nothingToLearn([session('a', 'x', 0.5), session('b', 'y', 0.2)], opts())!;
    expect(why).toContain('2 task(s) were played once');
    expect(why).not.toContain('every reward is');
    expect(why).not.toContain('ColBench-mini');
    expect(why).toContain('--per-task 4');
  });

  it('lets a run through with one pair, or (sweet only) with a judgement of people', () => {
    const tied = [session('a', 'x', 0), session('b', 'x', 0)];
    expect(nothingToLearn([...tied, session('c', 'x', 0.1)], opts())).toBeNull();
    expect(nothingToLearn(tied, opts({ preferencePairs: 1 }))).toBeNull();
    expect(nothingToLearn(tied, opts({ algorithm: 'mtdpo', preferencePairs: 1 }))).not.toBeNull();
  });

  it('rft needs a session at the threshold, and points at sweet when the data has pairs', () => {
    const data = [session('a', 'x', 0.4), session('b', 'x', 0.9)];
    const why = nothingToLearn(data, opts({ algorithm: 'rft' }))!;
    expect(why).toMatch(
      /^rft: nothing to imitate: none of the 2 backend session\(s\) has reward >= 1 \(the best has 0.9\)/,
    );
    expect(why).toContain('--algo sweet or --algo mtdpo: this data gives 1 pair(s)');
    expect(nothingToLearn(data, opts({ algorithm: 'rft', rftThreshold: 0.9 }))).toBeNull();
  });

  it('frontend data is not told about backend-only remedies', () => {
    const front = [session('a', 'x', 0), session('b', 'x', 0)].map((t) => ({
      ...t,
      task: { ...t.task, kind: 'frontend' as const },
    }));
    const why = nothingToLearn(front, opts({ kind: 'frontend' }))!;
    expect(why).toContain('2 frontend session(s)');
    expect(why).not.toContain('ColBench-mini');
    expect(why).not.toContain('--kind frontend');
  });
});
