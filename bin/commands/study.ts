// `sweetloop study create|list|show|pause|resume|close|consent|payouts|calibrate|arms`: studies (bot/studies.ts
// resolves the words, prisma/study-store.ts stores them and checks every rule before anything is written;
// bot/study-progress.ts and bot/study-payouts.ts read them; arms: bin/commands/study-arms.ts). With DISCORD_TOKEN
// set, a study does not open without a consent text.
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { withDatabase } from './with-database.ts';
import { choice, integerOption } from './options.ts';
import type { StudySpec } from '../../bot/studies.ts';
import { registerStudyArmsCommands } from './study-arms.ts';

/** The command's flags: the study's own words as bot/studies.ts takes them, plus what names files and lists. */
type CreateOptions = Partial<
  Pick<
    StudySpec,
    | 'kind'
    | 'sample'
    | 'seed'
    | 'policy'
    | 'payPerSession'
    | 'bonusSuccess'
    | 'currency'
    | 'maxSessionsPerPerson'
    | 'opens'
    | 'closes'
    | 'participantId'
    | 'completionCode'
  >
> &
  Pick<StudySpec, 'perTask'> & {
    tasks?: string;
    consentFile?: string;
    arm: string[];
    split: 'train' | 'test';
    guild: string[];
    channel: string[];
  };

const collect = (value: string, previous: string[]) => [...previous, value];

async function readText(flag: string, file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(
      `${flag} ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
    );
  }
}

/** Whether a Discord bot is configured here: then a study needs a consent text to open. */
async function discordConfigured(): Promise<boolean> {
  const { loadConfig } = await import('../config.ts');
  return !!loadConfig().DISCORD_TOKEN;
}

export function registerStudyCommands(program: Command): void {
  const study = program
    .command('study')
    .description('Studies: a pool of tasks with k sessions a task, its policy or arms, consent, pay and dates');

  study
    .command('create <name>')
    .description('Create a study (nothing is stored when any of its rules is broken)')
    .option('--tasks <file>', 'the pool: a file of task ids (or external ids), one a line')
    .option(
      '--kind <kind>',
      'the pool: tasks of this kind (backend or frontend)',
      choice('kind', ['backend', 'frontend'] as const),
    )
    .option('--sample <n>', 'draw this many tasks (seeded) from the pool', integerOption('sample'))
    .option(
      '--seed <n>',
      'seeds the sample, the order tasks fill in and the arms (default: drawn at random and printed)',
      integerOption('seed'),
    )
    .requiredOption('--per-task <k>', 'sessions each task receives, from k different people', integerOption('per-task'))
    .option('--policy <version>', 'the policy version that plays (default: the deployed one)')
    .option('--arm <version:share>', 'an arm and its share in percent (repeat; shares sum to 100)', collect, [])
    .option('--consent-file <file>', 'the consent text people accept before their first session of the study')
    .option('--pay-per-session <amount>', 'pay for each answered session, e.g. 2.50')
    .option('--bonus-success <amount>', 'added when the answer succeeds')
    .option('--currency <code>', 'ISO 4217 code of the amounts, e.g. EUR')
    .option(
      '--max-sessions-per-person <n>',
      'at most this many sessions a person',
      integerOption('max-sessions-per-person'),
    )
    .option(
      '--participant-id <platform>',
      'ask each person their participant id on this recruiting platform once, before their first session (pay data)',
      choice('participant-id', ['prolific'] as const),
    )
    .option(
      '--completion-code <code>',
      "shown to a person after their last session of the study (the platform's completion code)",
    )
    .option('--opens <date>', 'when the study opens (ISO 8601; default now)')
    .option('--closes <date>', 'when the study closes (ISO 8601)')
    .option(
      '--split <split>',
      'train (training data) or test (an evaluation study)',
      choice('split', ['train', 'test'] as const),
      'train',
    )
    .option('--guild <id>', 'bind to a Discord guild (repeat)', collect, [])
    .option('--channel <id>', 'bind to a Discord channel (repeat)', collect, [])
    .action(async (name: string, o: CreateOptions) => {
      const [{ resolveStudy, taskIdLines }, { createStudy, consentSha256 }] = await Promise.all([
        import('../../bot/studies.ts'),
        import('../../prisma/study-store.ts'),
      ]);
      const taskIds = o.tasks ? taskIdLines(await readText('--tasks', o.tasks)) : undefined;
      const consentText = o.consentFile ? await readText('--consent-file', o.consentFile) : null;
      const seed = o.seed ?? Math.floor(Math.random() * 2 ** 31);
      const requireConsent = await discordConfigured();
      await withDatabase(async (db) => {
        const spec = await resolveStudy(db.prisma, {
          name,
          seed,
          perTask: o.perTask,
          split: o.split,
          consentText,
          ...(taskIds ? { taskIds } : {}),
          ...(o.kind ? { kind: o.kind } : {}),
          ...(o.sample !== undefined ? { sample: o.sample } : {}),
          ...(o.policy ? { policy: o.policy } : {}),
          arms: o.arm,
          ...(o.payPerSession !== undefined ? { payPerSession: o.payPerSession } : {}),
          ...(o.bonusSuccess !== undefined ? { bonusSuccess: o.bonusSuccess } : {}),
          ...(o.currency ? { currency: o.currency } : {}),
          ...(o.maxSessionsPerPerson !== undefined ? { maxSessionsPerPerson: o.maxSessionsPerPerson } : {}),
          ...(o.opens ? { opens: o.opens } : {}),
          ...(o.closes ? { closes: o.closes } : {}),
          guildIds: o.guild,
          channelIds: o.channel,
          ...(o.participantId ? { participantId: o.participantId } : {}),
          ...(o.completionCode ? { completionCode: o.completionCode } : {}),
        });
        const s = await createStudy(db.prisma, 'cli', spec, { requireConsent });
        const consent = s.consentText
          ? `consent version ${s.consentVersion} (sha256 ${consentSha256(s.consentText).slice(0, 12)}…)`
          : 'no consent text of its own';
        console.log(
          `created study ${s.name}: ${spec.taskIds.length} task(s), k = ${s.perTask}, arms ${s.arms.map((a) => `${a.policyVersion.name} ${a.share}%`).join(', ')}, ${consent}, seed ${s.seed}`,
        );
      });
    });

  study
    .command('list')
    .description('List the studies with their status and progress')
    .option('--json', 'print them as JSON')
    .action(async (o: { json?: boolean }) => {
      const [{ studyProgress }, { DEFAULT_STUDY }] = await Promise.all([
        import('../../bot/study-progress.ts'),
        import('../../prisma/study-store.ts'),
      ]);
      await withDatabase(async (db) => {
        const studies = await db.prisma.study.findMany({
          where: { name: { not: DEFAULT_STUDY } },
          include: { arms: { include: { policyVersion: true } } },
          orderBy: { createdAt: 'asc' },
        });
        const rows = [];
        for (const s of studies)
          rows.push({ name: s.name, status: s.status, perTask: s.perTask, ...(await studyProgress(db.prisma, s)) });
        if (o.json) return console.log(JSON.stringify(rows, null, 2));
        if (rows.length === 0) return console.log('no studies (sessions go to the default study)');
        const table = [
          ['name', 'status', 'k', 'tasks', 'complete', 'partial', 'untouched', 'answered', 'active'],
          ...rows.map((r) => [
            r.name,
            r.status,
            String(r.perTask),
            ...[r.tasks, r.complete, r.partial, r.untouched, r.answered, r.active].map(String),
          ]),
        ];
        const widths = table[0]!.map((_, i) => Math.max(...table.map((row) => row[i]!.length)));
        for (const row of table)
          console.log(
            row
              .map((c, i) => c.padEnd(widths[i]!))
              .join('  ')
              .trimEnd(),
          );
      });
    });

  study
    .command('show <name>')
    .description(
      'A study: its rules and progress (tasks complete, partial, untouched; sessions per arm; people active; critic pairs)',
    )
    .option('--json', 'print it as JSON')
    .action(async (name: string, o: { json?: boolean }) => {
      const [{ formatStudy, studyProgress }, { findStudy, StudyError }] = await Promise.all([
        import('../../bot/study-progress.ts'),
        import('../../prisma/study-store.ts'),
      ]);
      await withDatabase(async (db) => {
        const s = await findStudy(db.prisma, name);
        if (!s) throw new StudyError(`No study named "${name}".`);
        const progress = await studyProgress(db.prisma, s);
        if (o.json)
          return console.log(
            JSON.stringify(
              {
                name: s.name,
                status: s.status,
                perTask: s.perTask,
                consentVersion: s.consentVersion,
                consentSha256: s.consentSha256,
                ...progress,
              },
              null,
              2,
            ),
          );
        console.log(formatStudy(s, progress));
      });
    });

  for (const [verb, status, doing] of [
    ['pause', 'paused', 'Pause'],
    ['resume', 'open', 'Resume'],
    ['close', 'closed', 'Close for good'],
  ] as const) {
    study
      .command(`${verb} <name>`)
      .description(`${doing} a study (audited)`)
      .action(async (name: string) => {
        const { setStudyStatus } = await import('../../prisma/study-store.ts');
        const requireConsent = await discordConfigured();
        await withDatabase(async (db) =>
          console.log(
            `study ${(await setStudyStatus(db.prisma, 'cli', name, status, { requireConsent })).name} is ${status}`,
          ),
        );
      });
  }

  study
    .command('calibrate <name>')
    .description(
      "The simulated collaborator against the study's people: plays the tasks people answered with the same policy versions, k games a task, and compares them paired by task (bot/report/calibration.ts)",
    )
    .option(
      '--simulator <which>',
      'builtin (rule-based) or llm (SIMULATOR_LLM_URL)',
      choice('simulator', ['builtin', 'llm'] as const),
      'builtin',
    )
    .option('--per-task <k>', "games a task (default: the study's k)", integerOption('per-task'))
    .option('--seed <n>', "sampling seed (default: the study's)", integerOption('seed'))
    .option(
      '--out <dir>',
      'also write calibration.md, calibration.json and the figure (calibration.svg, calibration.png) here',
    )
    .action(async (name: string, o: import('../../bot/report/calibration.ts').CalibrateCommandOptions) => {
      const [{ withTrainer }, { calibrateCommand }] = await Promise.all([
        import('./trainer.ts'),
        import('../../bot/report/calibration.ts'),
      ]);
      await withTrainer((db, s) => calibrateCommand(db.prisma, s, name, o));
    });

  study
    .command('payouts <name>')
    .description(
      "Write what the study owes each person (csv: platform_id, sessions, active_minutes, amount, currency; prolific: Prolific's bulk-bonus participant_id,amount lines); audited",
    )
    .requiredOption('--out <file>', 'the file to write')
    .option(
      '--format <format>',
      'csv, or prolific (the bulk-bonus file, by the Prolific ids people gave)',
      choice('format', ['csv', 'prolific'] as const),
      'csv',
    )
    .option('--include-ids', 'confirm that the file may name people by their platform (Discord or Prolific) id')
    .action(async (name: string, o: { out: string; format: 'csv' | 'prolific'; includeIds?: boolean }) => {
      if (!o.includeIds) {
        throw new Error(
          'The payouts file names each person by their platform (Discord or Prolific) id, which is personal data: run it again with --include-ids to confirm, and keep the file where only whoever pays can read it.',
        );
      }
      const [
        { studyPayouts, payoutsCsv, prolificBonuses },
        { findStudy, recordPayoutsWritten, StudyError },
        { formatAmount },
      ] = await Promise.all([
        import('../../bot/study-payouts.ts'),
        import('../../prisma/study-store.ts'),
        import('../../bot/studies.ts'),
      ]);
      await withDatabase(async (db) => {
        const s = await findStudy(db.prisma, name);
        if (!s) throw new StudyError(`No study named "${name}".`);
        const p = await studyPayouts(db.prisma, s);
        const prolific = o.format === 'prolific' ? await prolificBonuses(db.prisma, s, p) : null;
        // Written aside first and moved into place once audited: no payouts file exists that the audit log lacks.
        const aside = `${o.out}.partial`;
        await rm(aside, { force: true }); // a leftover would keep its own permissions
        await writeFile(aside, prolific ? prolific.text : payoutsCsv(p), { mode: 0o600 });
        try {
          const erasedPeople = p.lines.filter((l) => l.erased).length;
          const people = prolific ? prolific.people : p.lines.length;
          const totalCents = prolific ? prolific.totalCents : p.totalCents;
          await recordPayoutsWritten(db.prisma, 'cli', s.name, {
            studyId: s.id,
            people,
            erasedPeople,
            sessions: p.sessions,
            totalCents,
            currency: p.currency,
            file: o.out,
            format: o.format,
          });
          await rename(aside, o.out);
        } catch (err) {
          await rm(aside, { force: true });
          throw err;
        }
        if (prolific) {
          console.log(
            `wrote ${o.out}: Prolific bonuses for ${prolific.people} person(s), ${formatAmount(prolific.totalCents, p.currency)} in all`,
          );
          const left = prolific.left.reduce((a, l) => a + l.amountCents, 0);
          if (prolific.left.length)
            console.error(
              `not in the file: ${prolific.left.length} person(s) owed ${formatAmount(left, p.currency)} without a Prolific id (erased since, or never gave one); settle them by hand (\`--format csv\` lists them)`,
            );
          return;
        }
        console.log(
          `wrote ${o.out}: ${p.lines.length} person(s), ${p.sessions} answered session(s), ${formatAmount(p.totalCents, p.currency)} in all`,
        );
      });
    });

  study
    .command('consent <name>')
    .description(
      'Set a new consent text: its version goes up, and people accept it before their next session of the study',
    )
    .requiredOption('--consent-file <file>', 'the new consent text')
    .action(async (name: string, o: { consentFile: string }) => {
      const { setStudyConsent } = await import('../../prisma/study-store.ts');
      const text = await readText('--consent-file', o.consentFile);
      await withDatabase(async (db) => {
        const s = await setStudyConsent(db.prisma, 'cli', name, text);
        console.log(`study ${s.name}: consent version ${s.consentVersion} (sha256 ${s.consentSha256})`);
      });
    });

  registerStudyArmsCommands(study); // arms start|status|stop: A/B tests with people (bin/commands/study-arms.ts)
}
