// Comparing the arms of an A/B (pure): each arm's figures, the differences over all sessions, the differences paired
// by task, and the status text; and the arms a study keeps when a comparison stops (prisma/experiment-store.ts
// armsAfter). The assignment itself is bot/assign.ts (test/bot/assign.test.ts).
import { describe, expect, it } from 'vitest';
import { compareArms, compareExperiment, type ArmPair, type ArmsStatus } from '../../bot/experiments.ts';
import { formatArmsStatus } from '../../bot/experiments-text.ts';
import { armsAfter, type ArmSession } from '../../prisma/experiment-store.ts';
import { wilcoxonSignedRank } from '../../tasks/paired-tests.ts';

const pair: ArmPair = { control: { id: 'v-base', name: 'base' }, candidate: { id: 'v-cand', name: 'cand' } };

function s(arm: 'control' | 'candidate', o: Partial<ArmSession> = {}): ArmSession {
  return {
    policyVersionId: pair[arm].id,
    taskId: 't1',
    kind: 'backend',
    status: 'answered',
    endReason: 'answered',
    turnCount: 3,
    evaluation: { score: 0.5, success: false },
    rating: 3,
    ...o,
  };
}

describe('comparing arms', () => {
  it('counts successes, abandonment (not agent failures) and leaves active sessions out of turns', () => {
    const sessions = [
      s('control'),
      s('control', { status: 'abandoned', endReason: 'stopped', evaluation: null, rating: null, turnCount: 1 }),
      s('control', {
        status: 'abandoned',
        endReason: 'agent-error: boom',
        evaluation: null,
        rating: null,
        turnCount: 2,
      }),
      s('candidate', { evaluation: { score: 1, success: true }, rating: 5 }),
      s('candidate', { evaluation: { score: 1, success: true }, rating: 4 }),
      s('candidate', { status: 'active', endReason: null, evaluation: null, rating: null, turnCount: 9 }),
      s('candidate', { kind: 'frontend' }),
      // Another version's session (not an arm of this pair) is left out.
      { ...s('candidate'), policyVersionId: 'v-other' },
    ];
    const c = compareArms(sessions, 'backend', pair);
    expect(c.control.sessions).toBe(3);
    expect(c.control.version).toBe('base');
    expect(c.candidate.version).toBe('cand');
    expect(c.control.abandonment.estimate).toBeCloseTo(1 / 3, 12);
    expect(c.candidate.ended).toBe(2);
    expect(c.candidate.turns.estimate).toBe(3);
    expect(c.candidate.success.estimate).toBe(1);
    expect(c.differences.success.difference.estimate).toBe(1);
    expect(c.differences.score.difference.estimate).toBeCloseTo(0.5, 12);
    expect(compareExperiment(sessions, pair).map((x) => x.kind)).toEqual(['backend', 'frontend']);
  });

  it('pairs by task: within-task differences over the tasks both arms played, with Wilcoxon over those tasks', () => {
    const candScores = [0.9, 0.8, 1, 0.7, 0.95, 0.6];
    const ctrlScores = [0.4, 0.5, 0.2, 0.7, 0.3, 0.1];
    const sessions = candScores.flatMap((score, i) => [
      s('candidate', { taskId: `t${i}`, evaluation: { score, success: score >= 0.9 } }),
      // Two control sessions on each task: the task's mean is compared.
      s('control', { taskId: `t${i}`, evaluation: { score: ctrlScores[i]! - 0.05, success: false } }),
      s('control', { taskId: `t${i}`, evaluation: { score: ctrlScores[i]! + 0.05, success: false } }),
    ]);
    // A task only the candidate played, and one only the control played: not paired.
    sessions.push(
      s('candidate', { taskId: 'lonely', evaluation: { score: 0, success: false } }),
      s('control', { taskId: 'alone', evaluation: { score: 1, success: true } }),
    );
    const c = compareArms(sessions, 'backend', pair);
    expect(c.paired.tasks).toBe(6);
    const d = candScores.map((x, i) => x - ctrlScores[i]!);
    expect(c.paired.score.difference.estimate).toBeCloseTo(d.reduce((a, x) => a + x, 0) / 6, 12);
    expect(c.paired.score.difference.lo).toBeLessThan(c.paired.score.difference.estimate);
    expect(c.paired.score.pValue).toBeCloseTo(
      wilcoxonSignedRank(
        candScores,
        ctrlScores.map((x) => x),
      ).pValue,
      12,
    );
    expect(c.paired.success.difference.estimate).toBeCloseTo(3 / 6, 12);
    // The unpaired comparison still counts every session.
    expect(c.candidate.sessions).toBe(7);
    expect(c.control.sessions).toBe(13);
    expect(compareArms([s('candidate'), s('control', { taskId: 't2' })], 'backend', pair).paired.tasks).toBe(0);
  });

  it('the status text shows the study, both arms, the paired line, and says when data is missing', () => {
    const study = {
      name: 'default',
      arms: [
        { share: 50, policyVersion: { name: 'base' } },
        { share: 50, policyVersion: { name: 'cand' } },
      ],
    };
    const e = {
      id: '7d3c1d1e-0000-4000-8000-000000000001',
      share: 50,
      status: 'running',
      outcome: null,
      startedAt: new Date('2026-12-01T10:00:00Z'),
      stoppedAt: null,
      candidate: { name: 'cand' },
      control: { name: 'base' },
      study: { name: 'default' },
    };
    const st = (comparisons: ArmsStatus['comparisons']) =>
      ({ study, experiment: e, comparisons }) as unknown as ArmsStatus;
    const text = formatArmsStatus(st(compareExperiment([s('control'), s('candidate')], pair)));
    expect(text).toContain(
      "Experiment 7d3c1d1e in study **default**: candidate **cand** vs control **base**, 50% of each task's sessions on the candidate; running since 2026-12-01T10:00 UTC.",
    );
    expect(text).toContain(
      '**backend** — control base: 1 session(s) (1 ended), candidate cand: 1 session(s) (1 ended)',
    );
    expect(text).toContain('success: control 0.0% [0.0%, 79.3%] · candidate 0.0% [0.0%, 79.3%] · difference +0.0 pts');
    expect(text).toContain('rating: control 3.00 (n=1) · candidate 3.00 (n=1) · difference +0.00');
    expect(text).toContain(
      'paired by task (1 task(s) played in both arms): success +0.0 pts, p=1.000; % tests passed +0.0 pts, p=1.000 (Wilcoxon signed-rank)',
    );
    expect(formatArmsStatus(st([]))).toContain('No session has been played in it yet.');
  });
});

describe('the arms a study keeps when a comparison stops', () => {
  const arm = (id: string, share: number) => ({ policyVersionId: id, share, policyVersion: { name: id } }) as never;
  it('promote leaves the version alone at 100; discard scales the others back to 100', () => {
    const named = { name: 'pilot', arms: [arm('a', 70), arm('b', 30)] };
    expect(armsAfter(named, 'b', 'promote')).toEqual([{ policyVersionId: 'b', share: 100 }]);
    expect(armsAfter(named, 'b', 'discard')).toEqual([{ policyVersionId: 'a', share: 100 }]);
    const three = { name: 'pilot', arms: [arm('a', 34), arm('b', 33), arm('c', 33)] };
    expect(armsAfter(three, 'a', 'discard')).toEqual([
      { policyVersionId: 'b', share: 50 },
      { policyVersionId: 'c', share: 50 },
    ]);
    const odd = armsAfter({ name: 'pilot', arms: [arm('a', 40), arm('b', 30), arm('c', 30)] }, 'b', 'discard');
    expect(odd.reduce((n, x) => n + x.share, 0)).toBe(100);
    expect(odd).toEqual([
      { policyVersionId: 'a', share: 57 },
      { policyVersionId: 'c', share: 43 },
    ]);
  });

  it('the default study goes back to no arms (the deployed version plays it)', () => {
    const def = { name: 'default', arms: [arm('base', 70), arm('cand', 30)] };
    expect(armsAfter(def, 'cand', 'promote')).toEqual([]);
    expect(armsAfter(def, 'cand', 'discard')).toEqual([]);
  });
});
