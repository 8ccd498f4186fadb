import type { Command } from 'commander';
import { withDatabase } from './with-database.ts';

/** The `tasks` group, created once whichever module registers into it first. */
function tasksGroup(program: Command): Command {
  return (
    program.commands.find((c) => c.name() === 'tasks') ??
    program.command('tasks').description('ColBench tasks: import, list, seed and score')
  );
}

function parseChoice<T extends string>(name: string, choices: readonly T[]) {
  return (value: string): T => {
    if (!(choices as readonly string[]).includes(value))
      throw new Error(`--${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(value)}`);
    return value as T;
  };
}

function nonNegativeInt(name: string, value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new Error(`--${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return n;
}

function printImport(
  label: string,
  counts: { inserted: number; duplicates: number; invalid: number },
  extra = '',
): void {
  console.log(
    `${label}: ${counts.inserted} stored, ${counts.duplicates} already stored or repeated, ${counts.invalid} invalid${extra}`,
  );
}

export function registerTasksCommands(program: Command): void {
  const tasks = tasksGroup(program);

  tasks
    .command('import')
    .description('Import a JSONL task file (ColBench as published, or our own export format)')
    .argument('<file>', 'JSONL file, one task per line')
    .requiredOption('--kind <kind>', 'backend or frontend', parseChoice('kind', ['backend', 'frontend'] as const))
    .requiredOption('--split <split>', 'train or test', parseChoice('split', ['train', 'test'] as const))
    .action(async (file: string, opts: { kind: 'backend' | 'frontend'; split: 'train' | 'test' }) => {
      const { existsSync } = await import('node:fs');
      if (!existsSync(file)) throw new Error(`no such file: ${file}`);
      const { parseTaskFile } = await import('../../tasks/importer.ts');
      const parsed = await parseTaskFile(file, { kind: opts.kind, split: opts.split });
      for (const e of parsed.invalid) console.error(`${file}:${e.line}: ${e.reason}`);
      for (const d of parsed.duplicates) console.error(`${file}:${d.line}: same task as line ${d.firstLine}, skipped`);
      const counts = await withDatabase(async (db) => {
        const { importTasks } = await import('../../prisma/task-store.ts');
        return importTasks(db.prisma, parsed.tasks, { split: opts.split });
      });
      printImport(
        file,
        {
          inserted: counts.inserted,
          duplicates: counts.duplicates + parsed.duplicates.length,
          invalid: parsed.invalid.length + counts.invalid,
        },
        ` (${parsed.lines} lines)`,
      );
      for (const e of counts.errors) console.error(`${file}:${e.line}: ${e.reason}`);
      if (parsed.invalid.length + counts.invalid > 0) process.exitCode = 1;
    });

  tasks
    .command('list')
    .description('Summarise the stored tasks by kind, source and split')
    .option('--json', 'print JSON instead of a table')
    .action(async (opts: { json?: boolean }) => {
      const rows = await withDatabase(async (db) => {
        const { listTasks } = await import('../../prisma/task-store.ts');
        return listTasks(db.prisma);
      });
      if (opts.json) {
        console.log(JSON.stringify({ tasks: rows, total: rows.reduce((s, r) => s + r.count, 0) }));
        return;
      }
      if (rows.length === 0) {
        console.log(
          'No tasks stored. Add some with `sweetloop tasks seed` or `sweetloop tasks import FILE --kind K --split S`.',
        );
        return;
      }
      const header = ['kind', 'source', 'split', 'count'];
      const body = rows.map((r) => [r.kind, r.source, r.split, String(r.count)]);
      body.push(['total', '', '', String(rows.reduce((s, r) => s + r.count, 0))]);
      const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
      const fmt = (row: string[]) =>
        row
          .map((c, i) => (i === 3 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
          .join('  ')
          .trimEnd();
      console.log([fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(fmt)].join('\n'));
    });

  tasks
    .command('seed')
    .description('Store the built-in task library and a ColBench-mini set (idempotent)')
    .option('--mini <count>', 'how many ColBench-mini tasks to generate', (v) => nonNegativeInt('mini', v), 200)
    .option('--seed <n>', 'generator seed (default: SEED from the configuration)', (v) => nonNegativeInt('seed', v))
    .action(async (opts: { mini: number; seed?: number }) => {
      const [{ builtinTasks }, { generateMiniTasks }, { loadConfig }] = await Promise.all([
        import('../../tasks/library.ts'),
        import('../../tasks/mini.ts'),
        import('../config.ts'),
      ]);
      const seed = opts.seed ?? loadConfig().SEED;
      const sets = [
        { label: 'built-in library', records: builtinTasks() },
        { label: `ColBench-mini (seed ${seed})`, records: generateMiniTasks({ seed, count: opts.mini }) },
      ];
      const results = await withDatabase(async (db) => {
        const { importTasks } = await import('../../prisma/task-store.ts');
        const out = [];
        for (const set of sets) out.push({ ...set, counts: await importTasks(db.prisma, set.records) });
        return out;
      });
      for (const { label, records, counts } of results) {
        for (const e of counts.errors) console.error(`${label}, record ${e.line}: ${e.reason}`);
        printImport(`${label} (${records.length} tasks)`, counts);
        if (counts.invalid > 0) process.exitCode = 1;
      }
    });

  tasks
    .command('score')
    .description('Score answers against ColBench backend tasks in the sandbox (no database needed)')
    .requiredOption('--tasks <file>', 'ColBench backend JSONL (problem_description, ground_truth, test_cases)')
    .requiredOption(
      '--answers <file>',
      'JSONL, one {"task": <0-based line in --tasks>, "answer": "<raw answer>"} a line',
    )
    .option('--json', 'print one JSON object {results, seconds}')
    .action(async (opts: { tasks: string; answers: string; json?: boolean }) => {
      const { loadConfig } = await import('../config.ts');
      const config = loadConfig();
      const { scoreAnswerFiles } = await import('../../tasks/score-answers.ts');
      const out = await scoreAnswerFiles({
        tasksPath: opts.tasks,
        answersPath: opts.answers,
        bwrapPath: config.BWRAP_BIN,
        pythonPath: config.PYTHON_BIN,
      });
      if (opts.json) {
        console.log(JSON.stringify(out));
        return;
      }
      for (const r of out.results) {
        console.log(
          `task ${r.task}: ${r.passed}/${r.total} tests${r.success ? ' (success)' : ''}${r.error ? ` - ${r.error}` : ''}`,
        );
      }
      const n = out.results.length;
      const mean = n ? out.results.reduce((s, r) => s + r.score, 0) / n : 0;
      const ok = out.results.filter((r) => r.success).length;
      console.log(`${n} answers: mean score ${mean.toFixed(3)}, success ${ok}/${n}, ${out.seconds.toFixed(1)} s`);
    });
}
