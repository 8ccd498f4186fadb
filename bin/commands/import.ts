// `sweetloop import-sessions`: sweet-rl trajectory files (the SWEET-RL authors' published rollouts, or a Sweetloop
// export) into the database as simulated sessions. The work is in bot/export/import.ts.
import { InvalidArgumentError, Option, type Command } from 'commander';

export function registerImportCommands(program: Command): void {
  program
    .command('import-sessions')
    .description('Import a sweet-rl trajectory file (official rollouts or a Sweetloop export) as simulated sessions')
    .argument('<file>', 'JSONL file, one trajectory a line')
    .addOption(
      new Option('--kind <kind>', 'task kind of every line').choices(['backend', 'frontend']).makeOptionMandatory(),
    )
    .option('--collaborator <name>', 'who played the collaborator (default: import:<file name>)', (v) => {
      if (v.trim() === '' || v.length > 200) throw new InvalidArgumentError('expected a name of 1 to 200 characters');
      return v.trim();
    })
    .addOption(
      new Option('--split <split>', 'split of tasks not stored yet').choices(['train', 'test']).default('train'),
    )
    .option('--rescore', "score every answer with Sweetloop's own evaluator instead of taking the file's reward", false)
    .action(
      async (
        file: string,
        o: { kind: 'backend' | 'frontend'; collaborator?: string; split: 'train' | 'test'; rescore: boolean },
      ) => {
        const { existsSync } = await import('node:fs');
        if (!existsSync(file)) throw new Error(`no such file: ${file}`);
        const { loadConfig } = await import('../config.ts');
        const { createLogger } = await import('../log.ts');
        const { openDatabase } = await import('../../prisma/db.ts');
        const { importSessions } = await import('../../bot/export/import.ts');
        const config = loadConfig();
        const log = createLogger(config);
        const db = await openDatabase({
          databaseUrl: config.DATABASE_URL,
          pgliteDir: config.PGLITE_DIR,
          poolSize: config.DATABASE_POOL_SIZE,
          log,
        });
        const scorer = o.rescore
          ? (await import('../../tasks/scorer.ts')).createScorer({
              bwrapPath: config.BWRAP_BIN,
              chromiumPath: config.CHROMIUM_PATH,
            })
          : undefined;
        try {
          const r = await importSessions(db.prisma, file, {
            kind: o.kind,
            split: o.split,
            ...(o.collaborator ? { collaborator: o.collaborator } : {}),
            ...(scorer ? { scorer } : {}),
          });
          for (const e of r.invalid) console.error(`${file}:${e.line}: ${e.reason}`);
          console.log(
            `${file}: ${r.lines} lines, ${r.stored} sessions stored, ${r.repeats} already stored, ${r.invalid.length} invalid; ${r.tasksCreated} new tasks`,
          );
          if (r.invalid.length > 0) process.exitCode = 1;
        } finally {
          await scorer?.close();
          await db.close();
        }
      },
    );
}
