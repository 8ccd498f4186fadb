import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskRecord } from '../../tasks/model.ts';
import {
  canonicalJson,
  contentHash,
  exportTaskLine,
  parseTaskFile,
  parseTaskLines,
  splitJsonl,
} from '../../tasks/importer.ts';

// Records written for these tests in ColBench's published shape; not taken from ColBench.
const cb = (i: number, extra: Record<string, unknown> = {}) => ({
  problem_description: `Write a function that scales a number by ${i}. The signature of the function is: def scale_${i}(x)`,
  ground_truth: `def scale_${i}(x):\n    return x * ${i}`,
  test_cases: Object.fromEntries(Array.from({ length: 10 }, (_, k) => [`test${k + 1}`, `scale_${i}(${k})`])),
  ...extra,
});

describe('canonical content hash', () => {
  it('ignores key order and changes with any content field', () => {
    expect(canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] })).toBe('{"a":[2,{"c":4,"d":3}],"b":1}');
    const t = { kind: 'backend' as const, description: 'd', reference: 'r', testCases: ['f(1)'] };
    const h = contentHash(t);
    expect(h).toMatch(/^[0-9a-f]{64}$/);
    expect(contentHash({ testCases: ['f(1)'], reference: 'r', description: 'd', kind: 'backend' })).toBe(h);
    expect(contentHash({ ...t, testCases: ['f(2)'] })).not.toBe(h);
    expect(contentHash({ ...t, description: 'd ' })).not.toBe(h);
    expect(contentHash({ kind: 'frontend', description: 'd', reference: 'r' })).not.toBe(
      contentHash({ ...t, testCases: [] }),
    );
  });
});

describe('parseTaskLines', () => {
  it('reads ColBench backend records, orders test1..test10 numerically', async () => {
    const rec = cb(3, { hidden_information: cb(3).ground_truth });
    // JSON key order test10 first: the numeric suffix decides.
    const shuffled = { ...rec, test_cases: Object.fromEntries(Object.entries(rec.test_cases).reverse()) };
    const r = await parseTaskLines(splitJsonl(JSON.stringify(shuffled) + '\n'), {
      kind: 'backend',
      split: 'test',
      name: 'x.jsonl',
    });
    expect(r.invalid).toEqual([]);
    expect(r.tasks).toHaveLength(1);
    const t = r.tasks[0]!;
    expect(t).toMatchObject({ kind: 'backend', source: 'colbench', externalId: 'x.jsonl:1', split: 'test', line: 1 });
    expect(t.kind === 'backend' && t.testCases).toEqual(Array.from({ length: 10 }, (_, k) => `scale_3(${k})`));
    expect(t.meta).toBeUndefined(); // hidden_information equal to ground_truth is not kept twice
    expect(t.contentHash).toBe(contentHash(t));
  });

  it('puts tests whose keys have no number after the numbered ones, in file order; takes a list as it is', async () => {
    const rec = cb(3, { test_cases: { zeta: 'z()', test10: 't10()', alpha: 'a()', test2: 't2()', 'test 1': 't1()' } });
    const listed = cb(4, { test_cases: ['b()', 'a()'] });
    const r = await parseTaskLines(splitJsonl([rec, listed].map((x) => JSON.stringify(x)).join('\n')), {
      kind: 'backend',
      split: 'test',
    });
    expect(r.invalid).toEqual([]);
    expect(r.tasks.map((t) => t.kind === 'backend' && t.testCases)).toEqual([
      ['t1()', 't2()', 't10()', 'z()', 'a()'],
      ['b()', 'a()'],
    ]);
  });

  it('reports each bad line with its number and reason, keeps the good ones', async () => {
    const lines = [
      JSON.stringify(cb(1)), // 1 good
      '{"problem_description": "oops"', // 2 bad JSON
      '', // 3 empty
      JSON.stringify({ problem_description: 'p', test_cases: { test1: 'f()' } }), // 4 missing ground_truth
      JSON.stringify({ ...cb(4), test_cases: 'f(1)' }), // 5 wrong type
      JSON.stringify({ ...cb(5), problem_description: 7 }), // 6 wrong type
      JSON.stringify(cb(1)), // 7 duplicate of 1
      '[1, 2]', // 8 not an object
      JSON.stringify({ ...cb(6), test_cases: undefined }), // 9 backend without tests
      JSON.stringify({ ...cb(7), ground_truth: 'bad\u0000' }), // 10 NUL
      JSON.stringify({ hello: 'world' }), // 11 not a task
      JSON.stringify(cb(2)), // 12 good
    ];
    const r = await parseTaskLines(splitJsonl(lines.join('\n')), { kind: 'backend', split: 'train' });
    expect(r.lines).toBe(12);
    expect(r.tasks.map((t) => t.line)).toEqual([1, 12]);
    expect(r.duplicates).toEqual([{ line: 7, firstLine: 1 }]);
    const reasons = Object.fromEntries(r.invalid.map((e) => [e.line, e.reason]));
    expect(Object.keys(reasons).map(Number)).toEqual([2, 3, 4, 5, 6, 8, 9, 10, 11]);
    expect(reasons[2]).toMatch(/not valid JSON/);
    expect(reasons[3]).toMatch(/empty line/);
    expect(reasons[4]).toMatch(/ground_truth/);
    expect(reasons[5]).toMatch(/test_cases/);
    expect(reasons[6]).toMatch(/problem_description/);
    expect(reasons[8]).toMatch(/array/);
    expect(reasons[9]).toMatch(/test_cases: missing/);
    expect(reasons[10]).toMatch(/NUL/);
    expect(reasons[11]).toMatch(/not a task/);
  });

  it('checks the kind: frontend records have no tests', async () => {
    const fe = { problem_description: 'Cafe: a menu page.', ground_truth: '<html><body>menu</body></html>' };
    const ok = await parseTaskLines(splitJsonl(JSON.stringify(fe)), { kind: 'frontend', split: 'train' });
    expect(ok.tasks[0]).toMatchObject({
      kind: 'frontend',
      description: fe.problem_description,
      reference: fe.ground_truth,
    });
    const wrong = await parseTaskLines(splitJsonl(JSON.stringify(cb(1))), { kind: 'frontend', split: 'train' });
    expect(wrong.invalid[0]!.reason).toMatch(/looks like a backend task/);
  });

  it('reads back our own export format, with the split the caller chose', async () => {
    const own: TaskRecord[] = [
      {
        kind: 'backend',
        description: 'd1',
        reference: 'def f():\n    return 1',
        testCases: ['f()'],
        source: 'builtin',
        externalId: 'one',
        split: 'train',
        meta: { note: 1 },
      },
      {
        kind: 'frontend',
        description: 'd2',
        reference: '<html></html>',
        source: 'generated',
        externalId: 'two',
        split: 'test',
      },
    ];
    const r = await parseTaskLines(splitJsonl(own.map(exportTaskLine).join('\n')), { kind: 'backend', split: 'test' });
    expect(r.tasks).toHaveLength(1);
    expect(r.tasks[0]).toMatchObject({ ...own[0], split: 'test' });
    expect(r.invalid).toEqual([{ line: 2, reason: 'kind: the record is frontend, but --kind is backend' }]);
  });

  it('streams a file from disk (CRLF, BOM, no trailing newline)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sweetloop-import-'));
    try {
      const path = join(dir, 'tasks.jsonl');
      writeFileSync(path, '\uFEFF' + [cb(1), cb(2), cb(3)].map((x) => JSON.stringify(x)).join('\r\n'));
      const r = await parseTaskFile(path, { kind: 'backend', split: 'train' });
      expect(r.invalid).toEqual([]);
      expect(r.tasks.map((t) => t.externalId)).toEqual(['tasks.jsonl:1', 'tasks.jsonl:2', 'tasks.jsonl:3']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
