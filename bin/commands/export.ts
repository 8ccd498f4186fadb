import { Command, InvalidArgumentError, Option } from 'commander';
import { DATA_SOURCES, DEFAULT_DATA_SOURCE, type DataSource } from '../../prisma/data-source.ts';

function parseDate(flag: string) {
  return (v: string): Date => {
    const d = new Date(v);
    if (Number.isNaN(d.getTime()))
      throw new InvalidArgumentError(`${flag}: expected a date such as 2026-03-01 or 2026-03-01T12:00:00Z`);
    return d;
  };
}

function parseRating(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 1 || n > 5) throw new InvalidArgumentError('expected a number from 1 to 5');
  return n;
}

function parseStatuses(v: string): string[] {
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const known = ['active', 'answered', 'abandoned', 'expired'];
  for (const s of list)
    if (!known.includes(s)) throw new InvalidArgumentError(`unknown status "${s}" (expected ${known.join(', ')})`);
  return list;
}

interface FilterFlags {
  since?: Date;
  until?: Date;
  kind?: 'backend' | 'frontend';
  policy?: string;
  minRating?: number;
  split?: 'train' | 'test';
  includeFlagged?: boolean;
  status?: string[];
}

function addFilterOptions(cmd: Command): Command {
  return cmd
    .option(
      '--since <date>',
      'sessions started at or after this date/time (UTC unless an offset is given)',
      parseDate('--since'),
    )
    .option('--until <date>', 'sessions started before this date/time', parseDate('--until'))
    .addOption(new Option('--kind <kind>', 'task kind').choices(['backend', 'frontend']))
    .option('--policy <name>', 'policy version name (or id) that played the agent')
    .option('--min-rating <n>', 'mean human rating at least n (1-5); unrated sessions are left out', parseRating)
    .addOption(new Option('--split <split>', 'task split').choices(['train', 'test']))
    .option('--include-flagged', 'include sessions with an unresolved moderation flag', false)
    .option(
      '--status <list>',
      'comma-separated session statuses (answered, abandoned, expired, active)',
      parseStatuses,
    );
}

/** The report's filters: every source unless --humans-only (bot/report/aggregate.ts reportFilters). */
function reportFiltersFrom(o: FilterFlags & { humansOnly: boolean }) {
  return {
    since: o.since,
    until: o.until,
    kind: o.kind,
    policy: o.policy,
    minRating: o.minRating,
    split: o.split,
    source: o.humansOnly ? ('human' as const) : undefined,
    includeFlagged: o.includeFlagged,
    statuses: o.status as ('active' | 'answered' | 'abandoned' | 'expired')[] | undefined,
  };
}

export function registerExportCommands(program: Command): void {
  addFilterOptions(
    program
      .command('export')
      .description(
        'Export consented sessions as a dataset (sweet-rl trajectories, full JSONL, Parquet, a Hugging Face dataset folder, or TRL and verl training sets) with a dataset card',
      )
      .addOption(
        new Option(
          '--format <format>',
          'output format (hf: a dataset folder with one Parquet file per kind and split; trl-*: JSON lines, verl-*: Parquet)',
        )
          .choices(['sweet-rl', 'jsonl', 'parquet', 'hf', 'trl-sft', 'trl-dpo', 'verl-rl', 'verl-sft'])
          .makeOptionMandatory(),
      )
      .requiredOption(
        '--out <path>',
        'output file (hf: a new folder); the dataset card is written beside it as <file>.README.md (hf: <folder>/README.md)',
      )
      .addOption(
        new Option('--source <who>', `who played the collaborator (default: ${DEFAULT_DATA_SOURCE})`).choices(
          DATA_SOURCES,
        ),
      )
      .option(
        '--per-task <k>',
        'sweet-rl: only tasks with at least k sessions, written as k blocks over the same tasks (what the official scripts pair)',
        (v) => {
          const n = Number(v);
          if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a whole number of at least 1');
          return n;
        },
      )
      .option(
        '--study <name>',
        "only this study's sessions; sweet-rl: its complete k-blocks (tasks with fewer than k sessions are left out and counted)",
      )
      .option(
        '--chat-template <name>',
        "sweet-rl: template that renders each assistant entry's input: llama3 (default), chatml, or a path to a tokenizer_config.json under the working directory",
      )
      .option(
        '--candidates <run>',
        "trl-dpo: also the per-turn pairs of a SWEET-RL run's critic-ranked candidates (the run id, or the path of its actor-pairs.jsonl)",
      )
      .option('--exclude-comments', 'leave out free-text rating comments and moderation reasons', false)
      .option(
        '--allow-empty',
        'write the file and its card even when no session is selected (otherwise that is an error saying which filter left none)',
        false,
      )
      .option('--batch-size <n>', 'sessions per page / Parquet row group', (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1 || n > 100_000)
          throw new InvalidArgumentError('expected an integer from 1 to 100000');
        return n;
      }),
  ).action(
    async (
      o: FilterFlags & {
        format: 'sweet-rl' | 'jsonl' | 'parquet' | 'hf' | 'trl-sft' | 'trl-dpo' | 'verl-rl' | 'verl-sft';
        candidates?: string;
        out: string;
        excludeComments: boolean;
        allowEmpty: boolean;
        batchSize?: number;
        source?: DataSource;
        perTask?: number;
        chatTemplate?: string;
        study?: string;
      },
    ) => {
      const { loadConfig } = await import('../config.ts');
      const { isPublicSecret } = await import('../config-privacy.ts');
      const { createLogger } = await import('../log.ts');
      const { openDatabase } = await import('../../prisma/db.ts');
      const { exportSessions } = await import('../../bot/export/export.ts');
      const { terminalProgress } = await import('../../bot/export/progress.ts');
      const { parseExportRequest, filtersOf } = await import('../../bot/export/options.ts');
      const { describeFlagExclusions } = await import('../../prisma/moderation-store.ts');
      // The same request schema as /mod export: one set of checks for both front ends.
      const req = parseExportRequest({
        format: o.format,
        kind: o.kind,
        split: o.split,
        since: o.since,
        until: o.until,
        policy: o.policy,
        status: o.status,
        minRating: o.minRating,
        source: o.source,
        includeFlagged: o.includeFlagged ?? false,
        excludeComments: o.excludeComments,
        perTask: o.perTask,
        chatTemplate: o.chatTemplate,
      });
      const config = loadConfig();
      const log = createLogger(config);
      const defaultSalt = isPublicSecret(config.EXPORT_SALT);
      if (defaultSalt && config.DISCORD_TOKEN) {
        // Real people's data: pseudonyms under a public salt could be reversed by anyone with their Discord ids.
        throw new Error(
          'EXPORT_SALT is the development default while a Discord bot is configured: set EXPORT_SALT to a long random secret (e.g. `openssl rand -hex 32`) and export again.',
        );
      }
      if (defaultSalt) log.warn('EXPORT_SALT is the development default: set your own before sharing an export');
      const db = await openDatabase({
        databaseUrl: config.DATABASE_URL,
        pgliteDir: config.PGLITE_DIR,
        poolSize: config.DATABASE_POOL_SIZE,
        log,
      });
      const progress = terminalProgress(process.stderr, `export ${o.format}`);
      try {
        const r = await exportSessions(
          db.prisma,
          {
            format: req.format,
            filters: filtersOf(req),
            salt: config.EXPORT_SALT,
            excludeComments: req.excludeComments,
            chatTemplate: req.chatTemplate,
            chromiumPath: config.CHROMIUM_PATH,
            batchSize: o.batchSize,
            onProgress: progress.onProgress,
            defaultSalt,
            allowEmpty: o.allowEmpty,
            ...(o.study !== undefined ? { study: o.study } : {}),
            ...(o.candidates !== undefined ? { candidates: o.candidates } : {}),
          },
          o.out,
        );
        progress.stop();
        console.log(`exported ${r.sessions} sessions (${r.turns} turns) to ${r.path}; dataset card: ${r.cardPath}`);
        if (r.empty) console.log(`the file is empty (--allow-empty): ${r.empty}`);
        const flagged = r.flagged ? describeFlagExclusions(r.flagged) : null;
        if (flagged) console.log(flagged);
        if (r.study) {
          const k = r.study.perTask;
          console.log(
            `study ${r.study.name} (consent version ${r.study.consentVersion}): ${r.study.partialTasksLeftOut} partial task(s) with fewer than ${k ?? 'k'} sessions left out`,
          );
        }
        if (r.assetsDir) console.log(`screenshots of the final pages: ${r.assetsDir}`);
      } finally {
        progress.stop();
        await db.close();
      }
    },
  );

  addFilterOptions(
    program
      .command('report')
      .description(
        'Per policy version and task kind: success, tests passed / similarity, win rate, ratings, turns, with 95% intervals and plots',
      )
      .requiredOption('--out <dir>', 'directory for report.md, report.json and the SVG/PNG plots')
      .option('--reference-policy <name>', 'policy the frontend win rate compares against (default: the oldest)')
      .option('--no-png', 'write the plots as SVG only (no Chromium needed)')
      .option('--humans-only', 'leave out sessions with simulated collaborators', false),
  ).action(async (o: FilterFlags & { out: string; referencePolicy?: string; png: boolean; humansOnly: boolean }) => {
    const { loadConfig } = await import('../config.ts');
    const { createLogger } = await import('../log.ts');
    const { openDatabase } = await import('../../prisma/db.ts');
    const { writeReport } = await import('../../bot/report/report.ts');
    const config = loadConfig();
    const log = createLogger(config);
    const db = await openDatabase({
      databaseUrl: config.DATABASE_URL,
      pgliteDir: config.PGLITE_DIR,
      poolSize: config.DATABASE_POOL_SIZE,
      log,
    });
    try {
      const r = await writeReport(db.prisma, {
        outDir: o.out,
        filters: reportFiltersFrom(o),
        referencePolicy: o.referencePolicy,
        chromiumPath: o.png ? config.CHROMIUM_PATH : null,
      });
      const sessions = r.data.groups.reduce((a, g) => a + g.sessions, 0);
      console.log(`report over ${sessions} sessions in ${r.data.groups.length} groups:`);
      for (const f of r.files) console.log(`  ${f}`);
    } finally {
      await db.close();
    }
  });
  program
    .command('export-preferences')
    .description(
      "People's pairwise preferences (/compare: which of two agents helped more) as JSON lines, raters pseudonymised",
    )
    .requiredOption('--out <file>', 'where to write the JSON lines')
    .option(
      '--allow-empty',
      'write the file even when there is no preference to export (otherwise that is an error saying why)',
      false,
    )
    .action(async (o: { out: string; allowEmpty: boolean }) => {
      const { loadConfig } = await import('../config.ts');
      const { openDatabase } = await import('../../prisma/db.ts');
      const { exportPreferences, preferencesEmptyReason } = await import('../../bot/export/preferences.ts');
      const { createWriteStream } = await import('node:fs');
      const { finished } = await import('node:stream/promises');
      const config = loadConfig();
      const db = await openDatabase({
        databaseUrl: config.DATABASE_URL,
        pgliteDir: config.PGLITE_DIR,
        poolSize: config.DATABASE_POOL_SIZE,
      });
      try {
        const empty = await preferencesEmptyReason(db.prisma);
        if (empty && !o.allowEmpty)
          throw new Error(`nothing to export: ${empty}. Nothing was written (--allow-empty writes the empty file).`);
        const out = createWriteStream(o.out);
        const n = await exportPreferences(db.prisma, config.EXPORT_SALT, out);
        out.end();
        await finished(out);
        console.log(`exported ${n} preference(s) to ${o.out}${empty ? ` (empty: ${empty})` : ''}`);
      } finally {
        await db.close();
      }
    });
}
