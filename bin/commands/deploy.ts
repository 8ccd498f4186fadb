// `sweetloop deploy NAME` and `sweetloop rollback` switch rows (prisma/deployment-store.ts, the rules the bot's /mod
// commands use too); the one thing they ask a server first is to load an adapter version
// (trainer/policies/lifecycle.ts loadBeforeDeploy), unless --no-check. No model backend is started for them.
// `policy add --deploy` deploys through deployOrSay here.
import type { Command } from 'commander';
import { withDatabase } from './with-database.ts';

export function registerDeployCommands(program: Command): void {
  program
    .command('deploy <name>')
    .description(
      'Deploy a policy version now (the bot switches new sessions to it); an adapter version is loaded into its server first',
    )
    .option('--force', 'deploy a version marked as trained on erased data (privacy delete) all the same; audited')
    .option('--no-check', NO_CHECK)
    .action(async (name: string, o: { force?: boolean; check: boolean }) => {
      const { deployPolicyByName } = await import('../../prisma/deployment-store.ts');
      await withDatabase(async (db) =>
        console.log(
          `deployed ${(await deployPolicyByName(db, 'cli', name, { force: !!o.force, operator: true, ...loadFirst(db, o.check) })).name}`,
        ),
      );
    });

  program
    .command('rollback')
    .description(
      'Re-deploy the version that was deployed before the current one; an adapter version is loaded into its server first',
    )
    .option('--force', 'roll back to a version marked as trained on erased data (privacy delete) all the same; audited')
    .option('--no-check', NO_CHECK)
    .action(async (o: { force?: boolean; check: boolean }) => {
      const { rollbackPolicy } = await import('../../prisma/deployment-store.ts');
      await withDatabase(async (db) =>
        console.log(
          `rolled back to ${(await rollbackPolicy(db, 'cli', { force: !!o.force, operator: true, ...loadFirst(db, o.check) })).name}`,
        ),
      );
    });
}

export async function deployOrSay(
  db: import('../../prisma/db.ts').Database,
  name: string,
  deploy: boolean | undefined,
): Promise<void> {
  if (!deploy) return console.log(`deploy it with: sweetloop deploy ${name}`);
  const { deployPolicyByName } = await import('../../prisma/deployment-store.ts');
  console.log(`deployed ${(await deployPolicyByName(db, 'cli', name, loadFirst(db, true))).name}`);
}

const NO_CHECK =
  "switch without asking an adapter version's server to load it first (for a server that is down on purpose: the adapter is then loaded at the first session)";

/** The deploy's `prepare`: an adapter version is loaded into its server first, and the line says so (none with --no-check). */
function loadFirst(
  db: import('../../prisma/db.ts').Database,
  check: boolean,
): Pick<import('../../prisma/deployment-store.ts').SwitchOptions, 'prepare'> {
  if (!check) return {};
  return {
    prepare: async (v) => {
      // Only an adapter version has something to load (loadBeforeDeploy answers null for the others): a deploy of
      // any other kind does not pay for importing the server side.
      if (v.kind !== 'adapter') return;
      const { loadBeforeDeploy } = await import('../../trainer/policies/lifecycle.ts');
      const load = await loadBeforeDeploy(db.prisma, v);
      if (load)
        console.log(
          `${v.name}: adapter ${load.adapter} ${load.loaded ? 'loaded by' : 'already loaded on'} ${load.url}`,
        );
    },
  };
}
