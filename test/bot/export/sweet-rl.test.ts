import { describe, expect, it } from 'vitest';
import { toTrajectory } from '../../../bot/export/sweet-rl.ts';
import { testCasesOf, type ExportRecord } from '../../../bot/export/record.ts';

function record(turns: [ExportRecord['turns'][number]['role'], string][], extra: Partial<ExportRecord['session']> = {}): ExportRecord {
  return {
    session: { id: 's', channel: 'console', simulated: false, status: 'answered', startedAt: '2026-01-01T00:00:00.000Z', endedAt: null, endReason: null, durationMs: null, turnCount: 1, answer: 'ANSWER', reward: 0.25, ...extra },
    task: { id: 't', kind: 'backend', source: 'builtin', externalId: null, split: 'train', problemDescription: 'DESCRIPTION', groundTruth: 'REF', testCases: ['f(1)', 'f(2)'] },
    participant: { pseudonym: 'p_x', role: 'participant' },
    policyVersion: null,
    turns: turns.map(([role, content], index) => ({ index, role, content, rawOutput: null, promptTokens: null, completionTokens: null, latencyMs: null, createdAt: '2026-01-01T00:00:00.000Z', offsetMs: 0 })),
    evaluation: null,
    ratings: [],
    ratingMean: null,
    flags: [],
  };
}

describe('sweet-rl trajectories', () => {
  it('prepend the description as the first user message unless the session already opened with it', () => {
    const a = toTrajectory(record([['agent', 'Q?'], ['system', 'notice'], ['human', 'A.'], ['agent', 'done']]));
    expect(a.dialogue_history).toEqual([
      { role: 'user', content: 'DESCRIPTION' }, { role: 'assistant', content: 'Q?' }, { role: 'user', content: 'A.' }, { role: 'assistant', content: 'done' },
    ]);
    const b = toTrajectory(record([['human', 'DESCRIPTION'], ['agent', 'Q?']]));
    expect(b.dialogue_history).toEqual([{ role: 'user', content: 'DESCRIPTION' }, { role: 'assistant', content: 'Q?' }]);
    expect(a.task.test_cases).toEqual({ test1: 'f(1)', test2: 'f(2)' });
    expect(a.answer).toBe('ANSWER');
    expect(a.reward).toBe(0.25);
  });

  it('refuses a session without a reward', () => {
    expect(() => toTrajectory(record([], { reward: null }))).toThrow(/no reward/);
  });

  it('test cases: arrays and ColBench objects are accepted, anything else is a named error', () => {
    expect(testCasesOf(['a', 'b'])).toEqual(['a', 'b']);
    expect(testCasesOf({ test1: 'a', test2: 'b' })).toEqual(['a', 'b']);
    expect(testCasesOf(null)).toBeNull();
    expect(() => testCasesOf([1, 2], 'task-9')).toThrow(/task task-9: testCases/);
  });
});
