// The doctor's checks of the tools sessions use, apart from bin/doctor.ts because `sweetloop start` runs them too.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { BASE_FLAGS, chromiumSandbox } from '../tasks/chromium.ts';
import type { Config } from './config.ts';
import type { CheckResult } from './doctor-production.ts';

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
