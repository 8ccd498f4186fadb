// `sweetloop tasks score`: scores a file of answers against a ColBench-format task file, offline, with the
// sandboxed backend evaluator. Input problems are reported all at once, with line numbers, before anything runs.
import { readFile } from 'node:fs/promises';
import type { BackendTask } from './model.ts';
import { evaluateBackendBatch, type BackendEvalOptions } from './backend-eval.ts';
import { parseBackendRecord } from './importer.ts';

export interface ScoreResult {
  /** 0-based line number in the tasks file. */
  task: number;
  passed: number;
  total: number;
  score: number;
  success: boolean;
  error?: string;
}

export interface ScoreOptions extends BackendEvalOptions {
  tasksPath: string;
  answersPath: string;
  concurrency?: number;
}

export class ScoreInputError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `cannot score: ${problems.length} problem(s) in the input\n  ${problems.slice(0, 20).join('\n  ')}${problems.length > 20 ? `\n  ... and ${problems.length - 20} more` : ''}`,
    );
    this.name = 'ScoreInputError';
  }
}

function lines(text: string): string[] {
  const all = text.split('\n');
  if (all.length > 0 && all[all.length - 1] === '') all.pop();
  return all.map((l) => l.replace(/\r$/, ''));
}

export async function scoreAnswerFiles(opts: ScoreOptions): Promise<{ results: ScoreResult[]; seconds: number }> {
  const started = performance.now();
  const [tasksText, answersText] = await Promise.all([
    readFile(opts.tasksPath, 'utf8'),
    readFile(opts.answersPath, 'utf8'),
  ]);
  const taskLines = lines(tasksText);
  const problems: string[] = [];
  const items: { taskIndex: number; task: BackendTask; answer: string }[] = [];
  const parsedTasks = new Map<number, BackendTask | string>();

  lines(answersText).forEach((line, i) => {
    const where = `${opts.answersPath}:${i + 1}`;
    if (line.trim() === '') return;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch (e) {
      problems.push(`${where}: not JSON (${(e as Error).message})`);
      return;
    }
    const r = rec as { task?: unknown; answer?: unknown };
    if (rec === null || typeof rec !== 'object' || !Number.isInteger(r.task) || (r.task as number) < 0) {
      problems.push(`${where}: "task" must be a 0-based line number of ${opts.tasksPath}`);
      return;
    }
    if (typeof r.answer !== 'string') {
      problems.push(`${where}: "answer" must be a string`);
      return;
    }
    const t = r.task as number;
    if (t >= taskLines.length) {
      problems.push(`${where}: task ${t} is past the end of ${opts.tasksPath} (${taskLines.length} lines)`);
      return;
    }
    if (!parsedTasks.has(t)) {
      let parsed: BackendTask | string;
      try {
        parsed = parseBackendRecord(JSON.parse(taskLines[t]!), t + 1);
      } catch (e) {
        parsed = `not JSON (${(e as Error).message})`;
      }
      parsedTasks.set(t, parsed);
      if (typeof parsed === 'string') problems.push(`${opts.tasksPath}:${t + 1} (task ${t}): ${parsed}`);
    }
    const task = parsedTasks.get(t)!;
    if (typeof task !== 'string') items.push({ taskIndex: t, task, answer: r.answer });
  });
  if (problems.length > 0) throw new ScoreInputError(problems);

  const evaluations = await evaluateBackendBatch(items, opts);
  const results = evaluations.map((e, i): ScoreResult => {
    const out: ScoreResult = {
      task: items[i]!.taskIndex,
      passed: e.passed,
      total: e.total,
      score: e.score,
      success: e.success,
    };
    if (e.error !== undefined) out.error = e.error;
    return out;
  });
  return { results, seconds: (performance.now() - started) / 1000 };
}
