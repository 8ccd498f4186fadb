// `sweetloop doctor`: checks each thing Sweetloop needs from the machine, by using it, and says how to fix
// what is missing. Every check is independent: one failing does not hide the others. With DISCORD_TOKEN set it also
// checks the production settings (bin/doctor-production.ts: token, endpoints, operators, guilds, salt, key and database password). `sweetloop start` runs
// the tool checks too (toolChecks) and prints one summary of what is missing (missingToolsSummary).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BASE_FLAGS, chromiumSandbox } from '../tasks/chromium.ts';
import { ConfigError, parseConfig, type Config } from './config.ts';
import type { CheckResult } from './doctor-production.ts';

export type { CheckResult, CheckStatus } from './doctor-production.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  error?: string;
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<RunResult> {
  return new Promise((resolvePromise) => {
    let stdout = '';
    let stderr = '';
    let settled = false;
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish({ code: null, stdout, stderr, error: `timed out after ${timeoutMs / 1000} s` });
    }, timeoutMs);
    const finish = (r: RunResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolvePromise(r);
    };
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (err) => finish({ code: null, stdout, stderr, error: err.message }));
    child.on('close', (code) => finish({ code, stdout, stderr }));
  });
}

function firstLine(s: string): string {
  return s.trim().split('\n')[0]?.trim() ?? '';
}

export async function checkConfig(
  env: Record<string, string | undefined>,
): Promise<{ result: CheckResult; config: Config }> {
  try {
    const config = parseConfig(env);
    return { result: { name: 'configuration', status: 'ok', detail: 'all variables valid' }, config };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const bad = new Set(err.problems.map((p) => p.variable));
    const cleaned = Object.fromEntries(Object.entries(env).filter(([k]) => !bad.has(k)));
    return {
      result: {
        name: 'configuration',
        status: 'fail',
        detail: err.problems.map((p) => `${p.variable}: ${p.message}`).join('; '),
        fix: 'correct the variables named (environment or .env); the other checks below use their defaults',
      },
      config: parseConfig(cleaned),
    };
  }
}

export async function checkDatabase(config: Config): Promise<CheckResult> {
  const { openDatabase } = await import('../prisma/db.ts');
  const { migrationStatus } = await import('../prisma/migrate.ts');
  if (!config.DATABASE_URL && !existsSync(join(config.PGLITE_DIR, 'PG_VERSION'))) {
    return {
      name: 'database',
      status: 'warn',
      detail: `embedded PGlite at ${config.PGLITE_DIR}: not created yet`,
      fix: 'run `npx sweetloop db migrate` (or `npm start`) to create it, or set DATABASE_URL to use Postgres',
    };
  }
  let db;
  try {
    db = await openDatabase({
      databaseUrl: config.DATABASE_URL,
      pgliteDir: config.PGLITE_DIR,
      poolSize: config.DATABASE_POOL_SIZE,
    });
  } catch (err) {
    return {
      name: 'database',
      status: 'fail',
      detail: (err as Error).message,
      fix: config.DATABASE_URL
        ? 'start Postgres or correct DATABASE_URL'
        : 'stop the process holding the embedded database, or set DATABASE_URL',
    };
  }
  try {
    const s = await migrationStatus(db);
    if (s.upToDate && s.edited.length === 0) {
      return {
        name: 'database',
        status: 'ok',
        detail: `${db.label} (${db.kind}), ${s.applied.length} migration(s) applied, up to date`,
      };
    }
    return {
      name: 'database',
      status: 'warn',
      detail: `${db.label} (${db.kind}): ${s.pending.length} pending, ${s.failed.length} failed, ${s.edited.length} edited migration(s)`,
      fix: 'run `npx sweetloop db migrate` (`npx sweetloop db status` shows each migration)',
    };
  } catch (err) {
    return {
      name: 'database',
      status: 'fail',
      detail: `${db.label}: ${(err as Error).message}`,
      fix: 'see `npx sweetloop db status`',
    };
  } finally {
    await db.close();
  }
}

interface BackendModule {
  initBackend(forced?: 'tensorflow' | 'wasm' | 'cpu'): Promise<{ name: string; detail: string }>;
}

export async function checkTfjs(config: Config): Promise<CheckResult> {
  const file = join(root, 'trainer', 'model', 'backend.ts');
  if (!existsSync(file)) {
    return {
      name: 'tfjs backend',
      status: 'warn',
      detail: 'not checked: trainer/model/backend.ts is missing; the default would be wasm (SIMD, one thread)',
    };
  }
  try {
    const mod = (await import(pathToFileURL(file).href)) as BackendModule;
    const info = await mod.initBackend(config.TFJS_BACKEND);
    const fast = info.name === 'tensorflow' || info.name === 'wasm';
    return {
      name: 'tfjs backend',
      status: fast ? 'ok' : 'warn',
      detail: `${info.name}: ${info.detail}`,
      ...(fast
        ? {}
        : {
            fix: 'install dependencies with `npm ci` (brings @tensorflow/tfjs-backend-wasm); a GPU host gets tensorflow via tfjs-node-gpu',
          }),
    };
  } catch (err) {
    return {
      name: 'tfjs backend',
      status: 'fail',
      detail: (err as Error).message,
      fix: config.TFJS_BACKEND
        ? `unset TFJS_BACKEND (now ${config.TFJS_BACKEND}) to pick the best available backend`
        : 'run `npm ci`',
    };
  }
}

/** `render: false` only checks that the executable runs (fast, for `sweetloop start`); the default renders a page. */
export async function checkChromium(config: Config, opts: { render?: boolean } = {}): Promise<CheckResult> {
  const path = config.CHROMIUM_PATH;
  const fix = `apt-get install chromium (Debian), or set CHROMIUM_PATH to a Chromium/Chrome executable`;
  const affects = 'frontend tasks are off (pages cannot be rendered)';
  if (!existsSync(path))
    return { name: 'chromium', status: 'fail', detail: `${path} does not exist`, fix, apt: 'chromium', affects };
  const version = await run(path, ['--version'], 30_000);
  if (opts.render === false) {
    if (version.code === 0) return { name: 'chromium', status: 'ok', detail: firstLine(version.stdout) || path };
    return {
      name: 'chromium',
      status: 'fail',
      detail: `${path} --version failed: ${version.error ?? (firstLine(version.stderr) || `exit ${version.code}`)}`,
      fix,
      affects,
    };
  }
  // Rendering a page is the real test: a binary that prints its version can still lack libraries or fonts. With
  // the renderer's flags and sandbox rule (tasks/chromium.ts), so a host without user namespaces fails here too.
  const render = await run(
    path,
    [...BASE_FLAGS, ...(chromiumSandbox() ? [] : ['--no-sandbox']), '--dump-dom', 'data:text/html,<p>sweetloop-ok</p>'],
    60_000,
  );
  if (render.code === 0 && render.stdout.includes('sweetloop-ok')) {
    return { name: 'chromium', status: 'ok', detail: `${firstLine(version.stdout) || path}, headless rendering works` };
  }
  return {
    name: 'chromium',
    status: 'fail',
    detail: `${path} could not render a page: ${render.error ?? firstLine(render.stderr) ?? `exit ${render.code}`}`,
    fix,
    affects,
  };
}

export async function checkBubblewrap(config: Config): Promise<CheckResult> {
  const bwrap = config.BWRAP_BIN;
  const installFix = 'apt-get install bubblewrap (the backend evaluator runs candidate code only inside it)';
  const affects = 'backend answers cannot be scored (they are kept, and scored by a later start once it works)';
  if (!existsSync(bwrap))
    return {
      name: 'bubblewrap',
      status: 'fail',
      detail: `${bwrap} does not exist`,
      fix: installFix,
      apt: 'bubblewrap',
      affects,
    };
  const r = await run(bwrap, ['--ro-bind', '/', '/', '--unshare-all', '--die-with-parent', 'true'], 30_000);
  if (r.code === 0) {
    // The evaluator's own sandbox, with every limit it promises: how memory is bounded here, or why it refuses.
    const { runSandboxed } = await import('../tasks/sandbox.ts');
    try {
      const s = await runSandboxed({ bwrapPath: bwrap, argv: ['/usr/bin/true'], limits: { wallMs: 30_000 } });
      return {
        name: 'bubblewrap',
        status: 'ok',
        detail: `${bwrap}: a sandbox with no network and private namespaces starts; memory bounded by ${s.memoryDetail}`,
      };
    } catch (err) {
      const fix =
        'run as root where cgroup v1 is writable, or allow unprivileged user namespaces and install util-linux (setpriv) for the rlimits mode';
      return {
        name: 'bubblewrap',
        status: 'fail',
        detail: `${bwrap}: the sandbox refuses to start: ${(err as Error).message}`,
        fix,
        affects,
      };
    }
  }
  return {
    name: 'bubblewrap',
    status: 'fail',
    detail: `${bwrap} --unshare-all failed: ${r.error ?? (firstLine(r.stderr) || `exit ${r.code}`)}`,
    fix: 'allow user namespaces (sysctl kernel.unprivileged_userns_clone=1), or in a container run it with --privileged or a seccomp/AppArmor profile that permits them',
    affects,
  };
}

export async function checkPython(config: Config): Promise<CheckResult> {
  const py = config.PYTHON_BIN;
  const fix = 'apt-get install python3 (or set PYTHON_BIN to a Python 3 interpreter outside pyenv shims)';
  const affects = 'backend answers cannot be scored (they are kept, and scored by a later start once it works)';
  if (!existsSync(py))
    return { name: 'python3', status: 'fail', detail: `${py} does not exist`, fix, apt: 'python3', affects };
  const r = await run(py, ['-c', 'import sys, json, ast; print(sys.version.split()[0])'], 30_000);
  if (r.code === 0 && /^3\./.test(r.stdout.trim()))
    return { name: 'python3', status: 'ok', detail: `${py}: Python ${r.stdout.trim()}` };
  return {
    name: 'python3',
    status: 'fail',
    detail: `${py} did not run as Python 3: ${r.error ?? (firstLine(r.stderr) || r.stdout.trim())}`,
    fix,
    affects,
  };
}

/** The oldest Docker Compose that reads docker-compose.yml (`env_file` with `required`); bin/compose-check.sh checks it too. */
export const MIN_COMPOSE = [2, 24] as const;

/** Why this `docker compose version --short` output cannot run docker-compose.yml, or null when it can. */
export function composeVersionProblem(version: string): string | null {
  const m = /^v?(\d+)\.(\d+)/.exec(version.trim());
  if (!m) return `cannot read the version "${version.trim()}"`;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  const [wantMajor, wantMinor] = MIN_COMPOSE;
  if (major > wantMajor || (major === wantMajor && minor >= wantMinor)) return null;
  return `Docker Compose ${version.trim()} is older than ${wantMajor}.${wantMinor}, which docker-compose.yml needs`;
}

/**
 * Docker Compose, only where Docker is installed (Sweetloop itself does not need it): a warning when the compose
 * file cannot be read by what is there. Null without Docker.
 */
export async function checkCompose(): Promise<CheckResult | null> {
  const fix = `install the Docker Compose v2 plugin, ${MIN_COMPOSE.join('.')} or later (\`docker compose\`; Compose v1, \`docker-compose\`, cannot read docker-compose.yml)`;
  const v2 = await run('docker', ['compose', 'version', '--short'], 30_000);
  if (v2.code === 0) {
    const problem = composeVersionProblem(v2.stdout);
    return problem
      ? { name: 'docker compose', status: 'warn', detail: problem, fix }
      : {
          name: 'docker compose',
          status: 'ok',
          detail: `Docker Compose ${v2.stdout.trim()}: reads docker-compose.yml`,
        };
  }
  const v1 = await run('docker-compose', ['version', '--short'], 30_000);
  if (v1.code === 0)
    return {
      name: 'docker compose',
      status: 'warn',
      detail: `only Compose v1 (docker-compose ${v1.stdout.trim()}), which cannot read docker-compose.yml`,
      fix,
    };
  if (v2.error?.includes('ENOENT')) return null;
  return {
    name: 'docker compose',
    status: 'warn',
    detail: `docker is installed but \`docker compose\` is not: ${firstLine(v2.stderr) || `exit ${v2.code}`}`,
    fix,
  };
}

export interface DoctorReport {
  checks: CheckResult[];
  ok: boolean;
}

/** Runs every check; `ok` is false when any failed (warnings do not count). */
export async function runDoctor(
  env: Record<string, string | undefined>,
  opts: { skip?: string[] } = {},
): Promise<DoctorReport> {
  const skip = new Set(opts.skip ?? []);
  const { result: configResult, config } = await checkConfig(env);
  const checks: CheckResult[] = [configResult];
  const guarded = async (name: string, fn: () => Promise<CheckResult>) => {
    if (skip.has(name)) return;
    try {
      checks.push(await fn());
    } catch (err) {
      checks.push({ name, status: 'fail', detail: `check crashed: ${(err as Error).message}` });
    }
  };
  await guarded('database', () => checkDatabase(config));
  await guarded('tfjs backend', () => checkTfjs(config));
  await guarded('chromium', () => checkChromium(config));
  await guarded('bubblewrap', () => checkBubblewrap(config));
  await guarded('python3', () => checkPython(config));
  if (!skip.has('docker compose')) {
    const compose = await checkCompose().catch(
      (err: Error): CheckResult => ({
        name: 'docker compose',
        status: 'warn',
        detail: `check crashed: ${err.message}`,
      }),
    );
    if (compose) checks.push(compose);
  }
  // Production (DISCORD_TOKEN set): what real people's sessions need besides the machine (bin/doctor-production.ts).
  if (config.DISCORD_TOKEN) {
    const p = await import('./doctor-production.ts');
    await guarded('discord token', () => p.checkDiscordToken(config));
    if (!skip.has('operators')) checks.push(p.checkOperators(config));
    if (!skip.has('guilds')) checks.push(p.checkGuilds(config));
    if (!skip.has('secrets')) checks.push(...p.checkSecrets(config));
    if (!skip.has('endpoints')) {
      try {
        checks.push(...(await p.checkEndpoints(await p.registeredEndpoints(config))));
      } catch (err) {
        checks.push({
          name: 'endpoints',
          status: 'fail',
          detail: `could not read the registered versions: ${(err as Error).message}`,
          fix: 'see the database check above',
        });
      }
    }
  }
  return { checks, ok: checks.every((c) => c.status !== 'fail') };
}

export function formatReport(report: DoctorReport): string {
  const mark = { ok: 'ok  ', warn: 'warn', fail: 'FAIL' } as const;
  const lines = report.checks.flatMap((c) => [
    `[${mark[c.status]}] ${c.name}: ${c.detail}${c.affects && c.status !== 'ok' ? `; ${c.affects}` : ''}`,
    ...(c.fix && c.status !== 'ok' ? [`       fix: ${c.fix}`] : []),
  ]);
  const failed = report.checks.filter((c) => c.status === 'fail').length;
  const warned = report.checks.filter((c) => c.status === 'warn').length;
  lines.push(
    failed
      ? `${failed} check(s) failed, ${warned} warning(s).`
      : `All checks passed${warned ? ` (${warned} warning(s))` : ''}.`,
  );
  return lines.join('\n');
}

/**
 * The checks of the tools sessions use (Chromium, bubblewrap, python3), at once and quickly (Chromium is only
 * started, not asked to render): what `sweetloop start` runs before serving anyone.
 */
export async function toolChecks(config: Config): Promise<CheckResult[]> {
  const guarded = (name: string, fn: () => Promise<CheckResult>) =>
    fn().catch((err: Error): CheckResult => ({ name, status: 'fail', detail: `check crashed: ${err.message}` }));
  return Promise.all([
    guarded('chromium', () => checkChromium(config, { render: false })),
    guarded('bubblewrap', () => checkBubblewrap(config)),
    guarded('python3', () => checkPython(config)),
  ]);
}

/** The one command that installs every missing Debian package of `checks`, or null when none is missing. */
export function installCommand(checks: readonly CheckResult[], asRoot: boolean): string | null {
  const packages = [...new Set(checks.filter((c) => c.status === 'fail' && c.apt).map((c) => c.apt!))];
  return packages.length ? `${asRoot ? '' : 'sudo '}apt-get install -y ${packages.join(' ')}` : null;
}

/**
 * What a person reads at start when tools are missing: each one with what it stops, then the single command
 * that installs them (and the fix of any failure that installing does not cure). null when nothing failed.
 */
export function missingToolsSummary(checks: readonly CheckResult[], asRoot: boolean): string | null {
  const failed = checks.filter((c) => c.status === 'fail');
  if (failed.length === 0) return null;
  const install = installCommand(failed, asRoot);
  const lines = [
    'Sweetloop starts, but this machine lacks what some of it needs:',
    ...failed.map((c) => `  - ${c.name}: ${c.detail}; ${c.affects ?? 'see `npx sweetloop doctor`'}.`),
    ...(install ? ['Install with (Debian/Ubuntu):', `  ${install}`] : []),
    ...failed.filter((c) => !c.apt && c.fix).map((c) => `To fix ${c.name}: ${c.fix}`),
    '`npx sweetloop doctor` checks everything again.',
  ];
  return lines.join('\n');
}
