// `npm test` runs this before vitest: the suite needs Postgres, Chromium, bubblewrap and python3
// (vitest.config.ts, MACHINE_TESTS). When one is missing it stops at once with one message naming each and the
// one command that installs them, instead of failing dozens of tests minutes later. It looks where the tests
// look: BWRAP_BIN, CHROMIUM_PATH and PYTHON_BIN as bin/config.ts reads them, Postgres at TEST_POSTGRES_URL or
// 127.0.0.1:5432 (testing/database.ts). `npm run test:unit` needs none of them and skips this.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { checkConfig, type CheckResult } from '../bin/doctor.ts';
import { installCommand, toolChecks } from '../bin/doctor-tools.ts';
import { testPostgresProblem } from '../testing/database.ts';

/** The variable that points the tests at another copy of each program. */
const VARIABLE: Record<string, string> = {
  chromium: 'CHROMIUM_PATH',
  bubblewrap: 'BWRAP_BIN',
  python3: 'PYTHON_BIN',
  postgres: 'TEST_POSTGRES_URL',
};

export function postgresCheck(
  problem: Awaited<ReturnType<typeof testPostgresProblem>>,
  installed = existsSync('/usr/lib/postgresql'),
): CheckResult {
  if (!problem) return { name: 'postgres', status: 'ok', detail: 'answers' };
  const detail = `nothing usable answers at ${problem.server} (${problem.error})`;
  if (problem.fromEnv)
    return { name: 'postgres', status: 'fail', detail, fix: 'start the server TEST_POSTGRES_URL names, or correct it' };
  if (installed)
    return {
      name: 'postgres',
      status: 'fail',
      detail,
      fix: 'start it with trust auth for user postgres on 127.0.0.1:5432 (.ci/run shows how), or set TEST_POSTGRES_URL',
    };
  return {
    name: 'postgres',
    status: 'fail',
    detail,
    apt: 'postgresql',
    fix: 'once installed, start it with trust auth for user postgres on 127.0.0.1:5432 (.ci/run shows how), or set TEST_POSTGRES_URL',
  };
}

/** The one message for what failed, or null when nothing did. */
export function preflightMessage(checks: readonly CheckResult[], asRoot: boolean): string | null {
  const failed = checks.filter((c) => c.status === 'fail');
  if (failed.length === 0) return null;
  const install = installCommand(failed, asRoot);
  const names = failed.map((c) => c.name);
  const lacking = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;
  return [
    `npm test stopped before running any test: this machine lacks ${lacking}, which the suite needs.`,
    ...failed.map(
      (c) => `  - ${c.name}: ${c.detail}${VARIABLE[c.name] ? ` (set ${VARIABLE[c.name]} to use another)` : ''}`,
    ),
    ...(install
      ? ['Install with (Debian/Ubuntu; .ci/run installs and starts everything the suite needs):', `  ${install}`]
      : []),
    // What installing does not fix by itself (a tool that is there but fails, a server to start).
    ...failed.filter((c) => c.fix && (!c.apt || c.name === 'postgres')).map((c) => `To fix ${c.name}: ${c.fix}`),
    '`npm run test:unit` runs the tests that need none of these.',
  ].join('\n');
}

export async function preflight(env: Record<string, string | undefined>): Promise<string | null> {
  const { config } = await checkConfig(env);
  const [tools, postgres] = await Promise.all([toolChecks(config), testPostgresProblem()]);
  return preflightMessage([...tools, postgresCheck(postgres)], process.getuid?.() === 0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const message = await preflight(process.env);
  if (message) {
    console.error(message);
    process.exit(1);
  }
}
