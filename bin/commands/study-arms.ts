// `sweetloop study arms start|status|stop NAME`: A/B tests with people as a study's arms, for operators, the same
// as /mod experiment in Discord (prisma/experiment-store.ts changes the arms and records the period, audited with
// the actor "cli"; bot/experiments.ts compares the arms). `default` names the study the bot collects in where no
// other is open.
import type { Command } from 'commander';
import { withDatabase } from './with-database.ts';
import { integerOption } from './options.ts';

export function registerStudyArmsCommands(study: Command): void {
  const arms = study
    .command('arms')
    .description(
      "A/B tests with people as a study's arms: start one, compare the arms, stop with promote or discard (audited)",
    );

  arms
    .command('start <name>')
    .description(
      'Make the study play a candidate against its control (its own policy, or the deployed version in the default study)',
    )
    .requiredOption('--candidate <version>', 'the candidate version')
    .requiredOption('--share <percent>', "the candidate's share of each task's sessions (1-99)", integerOption('share'))
    .option(
      '--force',
      'start it with a candidate marked as trained on erased data (privacy delete) all the same; audited',
    )
    .action(async (name: string, o: { candidate: string; share: number; force?: boolean }) => {
      const [{ startExperiment }, { describeExperiment }] = await Promise.all([
        import('../../prisma/experiment-store.ts'),
        import('../../bot/experiments-text.ts'),
      ]);
      await withDatabase(async (db) =>
        console.log(
          `started: ${plain(describeExperiment(await startExperiment(db, 'cli', { study: name, candidate: o.candidate, share: o.share, force: !!o.force, operator: true })))}`,
        ),
      );
    });

  arms
    .command('status <name>')
    .description("Each arm's results with 95% intervals, the differences with p-values, and the same paired by task")
    .option('--json', 'print it as JSON')
    .action(async (name: string, o: { json?: boolean }) => {
      const [{ armsStudy }, { armsStatus }, { formatArmsStatus }] = await Promise.all([
        import('../../prisma/experiment-store.ts'),
        import('../../bot/experiments.ts'),
        import('../../bot/experiments-text.ts'),
      ]);
      await withDatabase(async (db) => {
        const st = await armsStatus(db.prisma, await armsStudy(db.prisma, name));
        if (!o.json) return console.log(plain(formatArmsStatus(st)));
        const e = st.experiment;
        console.log(
          JSON.stringify(
            {
              study: st.study.name,
              arms: st.study.arms.map((a) => ({ policy: a.policyVersion.name, share: a.share })),
              experiment: e && {
                id: e.id,
                candidate: e.candidate.name,
                control: e.control.name,
                share: e.share,
                status: e.status,
                outcome: e.outcome,
                startedAt: e.startedAt,
                stoppedAt: e.stoppedAt,
              },
              comparisons: st.comparisons,
            },
            (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v),
            2,
          ),
        );
      });
    });

  arms
    .command('stop <name>')
    .description(
      'End the comparison: --promote deploys the version and leaves it alone in the study; --discard drops it from the arms',
    )
    .option(
      '--promote <version>',
      "deploy this arm (the running A/B's candidate, or an arm of a study made with several)",
    )
    .option('--discard <version>', 'drop this arm; the others play on')
    .option(
      '--force',
      'with --promote: deploy a version marked as trained on erased data (privacy delete) all the same; audited',
    )
    .action(async (name: string, o: { promote?: string; discard?: string; force?: boolean }) => {
      if ((o.promote === undefined) === (o.discard === undefined))
        throw new Error('Give exactly one of --promote VERSION or --discard VERSION.');
      const [{ armsStudy }, { stopStudyArms }] = await Promise.all([
        import('../../prisma/experiment-store.ts'),
        import('../../bot/experiments.ts'),
      ]);
      const request =
        o.promote !== undefined
          ? { outcome: 'promote' as const, version: o.promote, force: !!o.force, operator: true }
          : { outcome: 'discard' as const, version: o.discard! };
      await withDatabase(async (db) => {
        const r = await stopStudyArms(db, 'cli', await armsStudy(db.prisma, name), request);
        const now = r.study.arms.map((a) => `${a.policyVersion.name} ${a.share}%`).join(', ') || 'the deployed version';
        console.log(
          `${r.version.name} ${request.outcome === 'promote' ? 'promoted and deployed' : 'discarded'}; study ${r.study.name} is now played by ${now}`,
        );
      });
    });
}

/** Discord's bold markers, left out in a terminal. */
const plain = (text: string) => text.replace(/\*\*/g, '');
