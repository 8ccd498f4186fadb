import { describe, expect, it } from 'vitest';
import { parseRunOutcome } from '../../tasks/backend-results.ts';

const LIMITS = { maxNodes: 1_000, maxChars: 10_000, maxDepth: 201 };
const parse = (lines: string[], calls = 3) => parseRunOutcome(Buffer.from(lines.join('\n') + '\n'), calls, LIMITS);

describe("parseRunOutcome: a run's result lines, read without trusting them", () => {
  it('reads values, errors, load errors and the end mark; the first record of a test counts', () => {
    const r = parse([
      '{"i": 0, "v": 3}',
      '{"i": 1, "err": "ZeroDivisionError: division by zero"}',
      '{"i": 0, "v": 4}',
      '{"done": true}',
    ]);
    expect(r.done).toBe(true);
    expect(r.tests.get(0)).toEqual({ value: { t: 'int', v: '3' } });
    expect(r.tests.get(1)).toEqual({ error: 'ZeroDivisionError: division by zero' });
    expect(r.tests.has(2)).toBe(false);
    expect(parse(['{"exec_error": "SyntaxError: invalid syntax"}']).execError).toBe('SyntaxError: invalid syntax');
  });

  it('never throws: junk is counted, a malformed value fails its test, texts are cut short', () => {
    const r = parse([
      'not json',
      '{"i": 0, "v": ["int", "1e9"]}',
      `{"i": 1, "err": "${'x'.repeat(5000)}"}`,
      '{"i": 2}',
      '{"i": 7, "v": 1}',
      '{"i": 1.5, "v": 1}',
      'null',
      '"done"',
      '{"i": -1, "v": 1}',
      '{"i": 0, "v": 5}',
      '{"done": false}',
    ]);
    expect(r.junk).toBe(7);
    expect(r.done).toBe(false);
    expect(r.tests.get(0)).toEqual({ error: 'malformed result: bad int 1e9' });
    expect((r.tests.get(1) as { error: string }).error).toHaveLength(303);
    expect(r.tests.get(2)).toEqual({ error: 'malformed result: no value' });
    expect(parseRunOutcome(Buffer.from([0xff, 0xfe, 0x0a, 0x7b]), 1, LIMITS)).toMatchObject({ junk: 2, done: false });
  });
});
