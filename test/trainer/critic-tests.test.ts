// The critic against the tests (trainer/critic-tests.ts): same-task pairs the tests tell apart, counted by whether
// the critic orders them the same way; Spearman over all sessions.
import { describe, expect, it } from 'vitest';
import { criticAgainstTests, formatCriticTests } from '../../trainer/critic-tests.ts';

describe('criticAgainstTests', () => {
  it('counts same-task pairs with different test scores, agreeing, disagreeing and tied, and skips pairs the tests tie', () => {
    const sessions = [
      { taskId: 'a', score: 1 },
      { taskId: 'a', score: 0.5 },
      { taskId: 'a', score: 0.5 },
      { taskId: 'b', score: 0 },
      { taskId: 'b', score: 1 },
      { taskId: 'c', score: 0.2 }, // alone: no pair
    ];
    // Task a: (0,1) critic agrees, (0,2) critic agrees, (1,2) the tests tie: skipped. Task b: (3,4) the critic ties.
    const c = criticAgainstTests(sessions, [2, 1, 0, 0.3, 0.3, 9]);
    expect(c).toMatchObject({ sessions: 6, tasks: 2, pairs: 3, agree: 2, criticTies: 1 });
    expect(c.agreement).toBeCloseTo(2.5 / 3, 12);
    expect(c.spearman).not.toBeNull();
    expect(formatCriticTests(c)).toMatch(
      /of 3 same-task pairs the tests tell apart \(2 tasks\), the critic orders 2 as the tests do \(1 ties\): 83\.3%/,
    );
  });

  it('a critic ordering every pair the other way agrees on none; Spearman -1 on a reversed ranking', () => {
    const sessions = [0, 0.25, 0.5, 1].map((score) => ({ taskId: 't', score }));
    const c = criticAgainstTests(sessions, [4, 3, 2, 1]);
    expect(c).toMatchObject({ pairs: 6, agree: 0, criticTies: 0, agreement: 0 });
    expect(c.spearman).toBeCloseTo(-1, 12);
  });

  it('has no agreement without pairs and no correlation under three sessions, and refuses mismatched lists', () => {
    const c = criticAgainstTests(
      [
        { taskId: 'x', score: 1 },
        { taskId: 'y', score: 0 },
      ],
      [1, 0],
    );
    expect(c).toMatchObject({ pairs: 0, agreement: null, spearman: null, spearmanP: null });
    expect(() => criticAgainstTests([{ taskId: 'x', score: 1 }], [])).toThrow(/1 sessions but 0/);
  });
});
