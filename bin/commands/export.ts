import { Command, InvalidArgumentError, Option } from 'commander';

function parseDate(flag: string) {
  return (v: string): Date => {
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) throw new InvalidArgumentError(`${flag}: expected a date such as 2026-03-01 or 2026-03-01T12:00:00Z`);
    return d;
  };
}

function parseRating(v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n < 1 || n > 5) throw new InvalidArgumentError('expected a number from 1 to 5');
  return n;
}

function parseStatuses(v: string): string[] {
  const list = v.split(',').map((s) => s.trim()).filter(Boolean);
  const known = ['active', 'answered', 'abandoned', 'expired'];
  for (const s of list) if (!known.includes(s)) throw new InvalidArgumentError(`unknown status "${s}" (expected ${known.join(', ')})`);
  return list;
}

interface FilterFlags {
  since?: Date;
  until?: Date;
  kind?: 'backend' | 'frontend';
  policy?: string;
  minRating?: number;
  split?: 'train' | 'test';
  includeSimulated?: boolean;
  includeFlagged?: boolean;
  status?: string[];
}

function addFilterOptions(cmd: Command, simulatedDefault: 'excluded' | 'included'): Command {
  cmd
    .option('--since <date>', 'sessions started at or after this date/time (UTC unless an offset is given)', parseDate('--since'))
    .option('--until <date>', 'sessions started before this date/time', parseDate('--until'))
    .addOption(new Option('--kind <kind>', 'task kind').choices(['backend', 'frontend']))
    .option('--policy <name>', 'policy version name (or id) that played the agent')
    .option('--min-rating <n>', 'mean human rating at least n (1-5); unrated sessions are left out', parseRating)
    .addOption(new Option('--split <split>', 'task split').choices(['train', 'test']))
    .option('--include-flagged', 'include sessions with an unresolved moderation flag', false)
    .option('--status <list>', 'comma-separated session statuses (answered, abandoned, expired, active)', parseStatuses);
  if (simulatedDefault === 'excluded') cmd.option('--include-simulated', 'include sessions with simulated collaborators', false);
  else cmd.option('--humans-only', 'leave out sessions with simulated collaborators', false);
  return cmd;
}

function filtersFrom(o: FilterFlags & { humansOnly?: boolean }) {
  return {
    since: o.since,
    until: o.until,
    kind: o.kind,
    policy: o.policy,
    minRating: o.minRating,
    split: o.split,
    includeSimulated: o.humansOnly !== undefined ? !o.humansOnly : o.includeSimulated,
    includeFlagged: o.includeFlagged,
    statuses: o.status as ('active' | 'answered' | 'abandoned' | 'expired')[] | undefined,
  };
}

export function registerExportCommands(program: Command): void {
  addFilterOptions(
    program
      .command('export')
      .description('Export consented sessions as a dataset (sweet-rl trajectories, full JSONL or Parquet) with a dataset card')
      .addOption(new Option('--format <format>', 'output format').choices(['sweet-rl', 'jsonl', 'parquet']).makeOptionMandatory())
      .requiredOption('--out <file>', 'output file; the dataset card is written beside it as <file>.README.md')
      .option('--exclude-comments', 'leave out free-text rating comments and moderation reasons', false)
      .option('--batch-size <n>', 'sessions per page / Parquet row group', (v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new InvalidArgumentError('expected an integer from 1 to 100000');
        return n;
      }),
    'excluded',
  ).action(async (o: FilterFlags & { format: 'sweet-rl' | 'jsonl' | 'parquet'; out: string; excludeComments: boolean; batchSize?: number }) => {
    const { loadConfig, configSchema } = await import('../config.ts');
    const { createLogger } = await import('../log.ts');
    const { openDatabase } = await import('../../prisma/db.ts');
    const { exportSessions, terminalProgress } = await import('../../bot/export/export.ts');
    const config = loadConfig();
    const log = createLogger(config.LOG_LEVEL);
    const defaultSalt = config.EXPORT_SALT === configSchema.shape.EXPORT_SALT.parse(undefined);
    if (defaultSalt) log.warn('EXPORT_SALT is the development default: set your own before sharing an export');
    const db = await openDatabase({ databaseUrl: config.DATABASE_URL, pgliteDir: config.PGLITE_DIR, log });
    const progress = terminalProgress(process.stderr, `export ${o.format}`);
    try {
      const r = await exportSessions(
        db.prisma,
        {
          format: o.format,
          filters: filtersFrom(o),
          salt: config.EXPORT_SALT,
          excludeComments: o.excludeComments,
          batchSize: o.batchSize,
          onProgress: progress.onProgress,
          defaultSalt,
        },
        o.out,
      );
      progress.stop();
      console.log(`exported ${r.sessions} sessions (${r.turns} turns) to ${r.path}; dataset card: ${r.cardPath}`);
    } finally {
      progress.stop();
      await db.close();
    }
  });

  addFilterOptions(
    program
      .command('report')
      .description('Per policy version and task kind: success, tests passed / similarity, win rate, ratings, turns, with 95% intervals and plots')
      .requiredOption('--out <dir>', 'directory for report.md, report.json and the SVG/PNG plots')
      .option('--reference-policy <name>', 'policy the frontend win rate compares against (default: the oldest)')
      .option('--no-png', 'write the plots as SVG only (no Chromium needed)'),
    'included',
  ).action(async (o: FilterFlags & { out: string; referencePolicy?: string; png: boolean; humansOnly: boolean }) => {
    const { loadConfig } = await import('../config.ts');
    const { createLogger } = await import('../log.ts');
    const { openDatabase } = await import('../../prisma/db.ts');
    const { writeReport } = await import('../../bot/report/report.ts');
    const config = loadConfig();
    const log = createLogger(config.LOG_LEVEL);
    const db = await openDatabase({ databaseUrl: config.DATABASE_URL, pgliteDir: config.PGLITE_DIR, log });
    try {
      const r = await writeReport(db.prisma, {
        outDir: o.out,
        filters: filtersFrom(o),
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
}
