// The line `sweetloop train` prints on Ctrl-C (trainer/interrupt.ts stoppedRunLine): what the run kept, from the
// progress a resume reads, and the command that resumes it.
import { describe, expect, it } from 'vitest';
import { stoppedRunLine } from '../../trainer/interrupt.ts';

const rng = { algorithm: 'mulberry32' as const, seed: 1 };

describe('the line train prints when stopped', () => {
  it('names the phases done and the last checkpoint, with the resume command', () => {
    expect(
      stoppedRunLine('run-1', {
        done: ['critic'],
        current: { phase: 'actor', step: 20, dir: '/x' },
        totals: { critic: 8, actor: 64 },
        rng,
      }),
    ).toBe(
      'Stopped. Run run-1 is kept up to its last checkpoint (critic done; actor at update 20 of 64): resume it with `sweetloop train --resume run-1`.',
    );
    expect(stoppedRunLine('run-1', { done: ['critic'], collected: 5, totals: { collect: 20 }, rng })).toBe(
      'Stopped. Run run-1 is kept up to its last checkpoint (critic done; 5 of 20 turn states sampled): resume it with `sweetloop train --resume run-1`.',
    );
  });

  it('says when nothing was kept yet, and when no run existed', () => {
    expect(stoppedRunLine('run-1', null)).toBe(
      "Stopped before run run-1's first checkpoint: `sweetloop train --resume run-1` starts it again from the beginning, on the same data.",
    );
    expect(stoppedRunLine('run-1', { done: [], rng })).toContain("before run run-1's first checkpoint");
    expect(stoppedRunLine(null, null)).toBe(
      'Stopped before a training run was created: nothing to resume; the same command starts again.',
    );
    // The progress could not be read in time: still the resume command.
    expect(stoppedRunLine('run-1', undefined)).toBe(
      'Stopped. Run run-1 is kept up to its last checkpoint: resume it with `sweetloop train --resume run-1`.',
    );
  });
});
