// The arm choice of A/B experiments (pure): blocks, the probability of each arm, per-stratum balance and
// reproducibility; and the arm comparison on hand-made sessions.
import { describe, expect, it } from 'vitest';
import { armFor, blockOf, compareArms, compareExperiment, formatExperimentStatus } from '../../bot/experiments.ts';
import type { ArmSession } from '../../prisma/experiment-store.ts';
import { wilsonCount } from '../../tasks/stats.ts';

const E = { id: '7d3c1d1e-0000-4000-8000-000000000001', seed: 42, share: 0.3 };

describe('arm assignment', () => {
  it('blocks hold the share exactly', () => {
    expect(blockOf(0.5)).toEqual({ size: 2, candidates: 1 });
    expect(blockOf(0.3)).toEqual({ size: 10, candidates: 3 });
    expect(blockOf(0.37)).toEqual({ size: 100, candidates: 37 });
    expect(() => blockOf(0)).toThrow(RangeError);
    expect(() => blockOf(1)).toThrow(RangeError);
  });

  it('every full block of a stratum has exactly the share; the same inputs give the same arms', () => {
    for (const stratum of ['task-a', 'task-b']) {
      const arms = Array.from({ length: 50 }, (_, n) => armFor(E, stratum, n));
      for (let b = 0; b < 5; b++) expect(arms.slice(b * 10, b * 10 + 10).filter((a) => a === 'candidate')).toHaveLength(3);
      expect(Array.from({ length: 50 }, (_, n) => armFor(E, stratum, n))).toEqual(arms);
    }
    // Another seed shuffles differently.
    const a = Array.from({ length: 40 }, (_, n) => armFor(E, 'task-a', n)).join();
    const b = Array.from({ length: 40 }, (_, n) => armFor({ ...E, seed: 43 }, 'task-a', n)).join();
    expect(a).not.toBe(b);
  });

  it('the first session of many strata is on the candidate with probability share', () => {
    const n = 4000;
    const k = Array.from({ length: n }, (_, i) => armFor(E, `task-${i}`, 0)).filter((a) => a === 'candidate').length;
    const ci = wilsonCount(k, n, 0.999);
    expect(ci.lo).toBeLessThan(0.3);
    expect(ci.hi).toBeGreaterThan(0.3);
  });
});

function s(arm: 'control' | 'candidate', o: Partial<ArmSession> = {}): ArmSession {
  return { arm, kind: 'backend', status: 'answered', endReason: 'answered', turnCount: 3, evaluation: { score: 0.5, success: false }, rating: 3, ...o };
}

describe('comparing arms', () => {
  it('counts successes, abandonment (not agent failures) and leaves active sessions out of turns', () => {
    const sessions = [
      s('control'),
      s('control', { status: 'abandoned', endReason: 'stopped', evaluation: null, rating: null, turnCount: 1 }),
      s('control', { status: 'abandoned', endReason: 'agent-error: boom', evaluation: null, rating: null, turnCount: 2 }),
      s('candidate', { evaluation: { score: 1, success: true }, rating: 5 }),
      s('candidate', { evaluation: { score: 1, success: true }, rating: 4 }),
      s('candidate', { status: 'active', endReason: null, evaluation: null, rating: null, turnCount: 9 }),
      s('candidate', { kind: 'frontend' }),
    ];
    const c = compareArms(sessions, 'backend');
    expect(c.control.sessions).toBe(3);
    expect(c.control.abandonment.estimate).toBeCloseTo(1 / 3, 12);
    expect(c.candidate.ended).toBe(2);
    expect(c.candidate.turns.estimate).toBe(3);
    expect(c.candidate.success.estimate).toBe(1);
    expect(c.differences.success.difference.estimate).toBe(1);
    expect(c.differences.score.difference.estimate).toBeCloseTo(0.5, 12);
    expect(compareExperiment(sessions).map((x) => x.kind)).toEqual(['backend', 'frontend']);
  });

  it('the status text shows both arms and says when data is missing', () => {
    const e = {
      id: E.id, seed: 1, share: 0.5, status: 'running', outcome: null, startedAt: new Date('2026-12-01T10:00:00Z'), stoppedAt: null,
      candidate: { name: 'cand' }, control: { name: 'base' },
    } as never;
    const text = formatExperimentStatus(e, compareExperiment([s('control'), s('candidate')]));
    expect(text).toContain('candidate **cand** vs control **base**, 50% of new sessions on the candidate');
    expect(text).toContain('success: control 0.0% [0.0%, 79.3%] · candidate 0.0% [0.0%, 79.3%] · difference +0.0 pts');
    expect(text).toContain('rating: control 3.00 (n=1) · candidate 3.00 (n=1) · difference +0.00');
    expect(formatExperimentStatus(e, [])).toContain('No session has been played in it yet.');
  });
});
