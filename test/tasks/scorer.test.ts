import { describe, expect, it } from 'vitest';
import type { BackendTask } from '../../tasks/model.ts';
import { createScorer } from '../../tasks/scorer.ts';

const add: BackendTask = {
  kind: 'backend',
  description: 'Add. The signature of the function is: def add(a, b)',
  reference: 'def add(a, b):\n    return a + b\n',
  testCases: ['add(1, 2)'],
};

function recorder() {
  const lines: { level: string; obj: object; msg?: string }[] = [];
  const at = (level: string) => (obj: object | string, msg?: string) =>
    void lines.push({
      level,
      obj: typeof obj === 'string' ? {} : obj,
      ...(typeof obj === 'string' ? { msg: obj } : msg ? { msg } : {}),
    });
  return { lines, log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('createScorer', () => {
  it('says once how the sandbox bounds memory, and once why it refuses to start', async () => {
    const { lines, log } = recorder();
    const scorer = createScorer({ renderer: null, log });
    for (let i = 0; i < 2; i++)
      expect(await scorer.evaluate(add, add.reference)).toMatchObject({
        score: 1,
        evaluatorVersion: 'backend-bwrap-v2',
      });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      msg: 'sandbox ready for backend answers',
      obj: { memoryMode: expect.stringMatching(/^(cgroup|rlimits)$/) },
    });

    const broken = createScorer({ renderer: null, log, bwrapPath: '/nonexistent/bwrap' });
    for (let i = 0; i < 3; i++)
      await expect(broken.evaluate(add, add.reference)).rejects.toThrow(/bubblewrap is not available/);
    expect(lines.slice(1)).toEqual([
      {
        level: 'error',
        obj: { err: expect.stringMatching(/refusing to run untrusted code/) },
        msg: expect.stringMatching(/refuses to start/),
      },
    ]);
  });
});
