import { afterAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ScoreInputError, scoreAnswerFiles } from '../../tasks/score-answers.ts';
import { parseBackendRecord, parseTaskLines, splitJsonl } from '../../tasks/importer.ts';
import { SWEETLOOP_ENTRY } from '../../testing/sweetloop-cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'sweetloop-score-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Two tasks of our own in ColBench's published format (test_cases as an object and as an array).
const tasks = [
  {
    problem_description: 'Shipping cost. The signature of the function is: def shipping(weight)',
    ground_truth: 'def shipping(weight):\n    return 5 if weight < 2 else 5 + (weight - 2) * 3\n',
    test_cases: { test1: 'shipping(1)', test2: 'shipping(2)', test10: 'shipping(4)', test3: 'shipping(3)' },
  },
  {
    problem_description: 'Initials. The signature of the function is: def initials(name)',
    ground_truth: "def initials(name):\n    return ''.join(p[0].upper() for p in name.split())\n",
    test_cases: ["initials('ada lovelace')", "initials('alan mathison turing')"],
  },
];
const tasksPath = join(dir, 'tasks.jsonl');
writeFileSync(tasksPath, tasks.map((t) => JSON.stringify(t)).join('\n') + '\n');

function answers(name: string, lines: unknown[]): string {
  const p = join(dir, name);
  writeFileSync(p, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  return p;
}

describe('scoreAnswerFiles', () => {
  it('orders test_cases test1..test10 numerically', () => {
    const t = parseBackendRecord(tasks[0]);
    expect(typeof t === 'object' && t.testCases).toEqual(['shipping(1)', 'shipping(2)', 'shipping(3)', 'shipping(4)']);
    expect(parseBackendRecord({ problem_description: 'p', ground_truth: 'x' })).toMatch(/test_cases/);
  });

  it('reads a task file as an import does, keys without a number included', async () => {
    const rec = {
      ...tasks[0]!,
      test_cases: { extra: 'shipping(9)', test2: 'shipping(2)', last: 'shipping(8)', test1: 'shipping(1)' },
    };
    const scored = parseBackendRecord(rec);
    const imported = (await parseTaskLines(splitJsonl(JSON.stringify(rec)), { kind: 'backend', split: 'test' }))
      .tasks[0]!;
    expect(typeof scored === 'object' && scored.testCases).toEqual([
      'shipping(1)',
      'shipping(2)',
      'shipping(9)',
      'shipping(8)',
    ]);
    expect(imported.kind === 'backend' && imported.testCases).toEqual(typeof scored === 'object' && scored.testCases);
  });

  it('scores each answer line against the task it names', async () => {
    const p = answers('answers.jsonl', [
      { task: 0, answer: tasks[0]!.ground_truth },
      { task: 1, answer: '```python\ndef initials(name):\n    return name[:1].upper()\n```' },
      { task: 0, answer: 'def shipping(weight):\n    return 5' },
    ]);
    const out = await scoreAnswerFiles({ tasksPath, answersPath: p });
    expect(out.results).toEqual([
      { task: 0, passed: 4, total: 4, score: 1, success: true },
      { task: 1, passed: 0, total: 2, score: 0, success: false },
      { task: 0, passed: 2, total: 4, score: 0.5, success: false },
    ]);
    expect(out.seconds).toBeGreaterThan(0);
  });

  it('reports every bad input line with its line number before running anything', async () => {
    const p = answers('bad.jsonl', [
      '{"task": 0, "answer": 1}',
      'not json',
      { task: 7, answer: '' },
      { task: -1, answer: '' },
    ]);
    const err = await scoreAnswerFiles({ tasksPath, answersPath: p }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ScoreInputError);
    expect((err as ScoreInputError).problems).toEqual([
      `${p}:1: "answer" must be a string`,
      expect.stringMatching(new RegExp(`^${p}:2: not JSON`)),
      `${p}:3: task 7 is past the end of ${tasksPath} (2 lines)`,
      `${p}:4: "task" must be a 0-based line number of ${tasksPath}`,
    ]);
  });
});

describe('sweetloop tasks score', () => {
  const cli = SWEETLOOP_ENTRY;
  it('prints exactly one JSON object with --json', () => {
    const p = answers('cli.jsonl', [{ task: 1, answer: tasks[1]!.ground_truth }]);
    const out = execFileSync(
      process.execPath,
      [cli, 'tasks', 'score', '--tasks', tasksPath, '--answers', p, '--json'],
      { encoding: 'utf8' },
    );
    expect(out.trim().split('\n')).toHaveLength(1);
    const parsed = JSON.parse(out);
    expect(parsed.results).toEqual([{ task: 1, passed: 2, total: 2, score: 1, success: true }]);
    expect(typeof parsed.seconds).toBe('number');
  });

  it('refuses without bubblewrap and exits non-zero', () => {
    const p = answers('cli2.jsonl', [{ task: 1, answer: tasks[1]!.ground_truth }]);
    const r = spawnSync(process.execPath, [cli, 'tasks', 'score', '--tasks', tasksPath, '--answers', p, '--json'], {
      encoding: 'utf8',
      env: { ...process.env, BWRAP_BIN: '/nonexistent/bwrap' },
    });
    expect(r.status).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/bubblewrap is not available at \/nonexistent\/bwrap/);
  });
});
