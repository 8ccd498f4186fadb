// `sweetloop doctor` really uses each tool: a broken one is reported with a fix and a failing exit code.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { runDoctor } from '../../bin/doctor.ts';
import {
  checkBubblewrap,
  checkPython,
  composeVersionProblem,
  installCommand,
  missingToolsSummary,
  toolChecks,
} from '../../bin/doctor-tools.ts';
import { parseConfig } from '../../bin/config.ts';
import { SWEETLOOP_ENTRY } from '../../testing/sweetloop-cli.ts';

const exec = promisify(execFile);

describe('sweetloop doctor', () => {
  it('a missing bubblewrap or python fails with a one-line fix', async () => {
    const config = parseConfig({ BWRAP_BIN: '/nonexistent/bwrap', PYTHON_BIN: '/bin/false' });
    const b = await checkBubblewrap(config);
    expect(b.status).toBe('fail');
    expect(b.fix).toMatch(/apt-get install bubblewrap/);
    const p = await checkPython(config);
    expect(p.status).toBe('fail');
    expect(p.detail).toMatch(/did not run as Python 3/);
    expect(p.fix).toMatch(/apt-get install python3/);
  });

  it('sums up at start what is missing, what that stops, and the one command that installs it', async () => {
    const missing = await toolChecks(
      parseConfig({
        CHROMIUM_PATH: '/nonexistent/chromium',
        BWRAP_BIN: '/nonexistent/bwrap',
        PYTHON_BIN: '/usr/bin/python3',
      }),
    );
    expect(missing.map((c) => [c.name, c.status, c.apt])).toEqual([
      ['chromium', 'fail', 'chromium'],
      ['bubblewrap', 'fail', 'bubblewrap'],
      ['python3', 'ok', undefined],
    ]);
    expect(installCommand(missing, false)).toBe('sudo apt-get install -y chromium bubblewrap');
    expect(installCommand(missing, true)).toBe('apt-get install -y chromium bubblewrap');
    const text = missingToolsSummary(missing, false)!;
    expect(text).toContain('chromium: /nonexistent/chromium does not exist; frontend tasks are off');
    expect(text).toContain('bubblewrap: /nonexistent/bwrap does not exist; backend answers cannot be scored');
    expect(text.match(/apt-get install/g)).toHaveLength(1);
    expect(text).not.toContain('python3');

    // A bubblewrap that exists but cannot start a sandbox is not cured by installing: its own fix is printed.
    const broken = await toolChecks(parseConfig({ BWRAP_BIN: '/bin/false' }));
    const summary = missingToolsSummary(broken, true)!;
    expect(summary).toContain('bubblewrap: /bin/false --unshare-all failed');
    expect(summary).toMatch(/To fix bubblewrap: allow user namespaces/);

    const healthy = await toolChecks(parseConfig({}));
    for (const c of healthy) expect(c.status, `${c.name}: ${c.detail}`).toBe('ok');
    // It says which way the sandbox bounds memory here (tasks/sandbox-memory.ts).
    expect(healthy.find((c) => c.name === 'bubblewrap')!.detail).toMatch(
      /memory bounded by (memory cgroup per sandbox|rlimits)/,
    );
    expect(missingToolsSummary(healthy, false)).toBeNull();
  });

  it('reports a bad variable, still runs the other checks, and exits 1', async () => {
    const report = await runDoctor(
      { MAX_TURNS: 'many', PYTHON_BIN: '/usr/bin/python3' },
      { skip: ['database', 'tfjs backend', 'chromium', 'bubblewrap', 'docker compose'] },
    );
    expect(report.ok).toBe(false);
    expect(report.checks.map((c) => [c.name, c.status])).toEqual([
      ['configuration', 'fail'],
      ['python3', 'ok'],
    ]);
    expect(report.checks[0]!.detail).toMatch(/MAX_TURNS/);

    const err = await exec(
      process.execPath,
      [SWEETLOOP_ENTRY, 'doctor', '--json', '--skip', 'database,tfjs backend,chromium'],
      {
        env: { ...process.env, BWRAP_BIN: '/nonexistent/bwrap' },
      },
    ).then(
      () => null,
      (e: { code: number; stdout: string }) => e,
    );
    expect(err?.code).toBe(1);
    const json = JSON.parse(err!.stdout) as { ok: boolean; checks: { name: string; status: string }[] };
    expect(json.ok).toBe(false);
    expect(json.checks.find((c) => c.name === 'bubblewrap')?.status).toBe('fail');
  });

  it('reads which Docker Compose versions can read docker-compose.yml', () => {
    for (const ok of ['2.24.0', '2.26.1-4', 'v2.40.3', '3.0.0']) expect(composeVersionProblem(ok), ok).toBeNull();
    expect(composeVersionProblem('2.23.3\n')).toBe(
      'Docker Compose 2.23.3 is older than 2.24, which docker-compose.yml needs',
    );
    expect(composeVersionProblem('1.29.2')).toMatch(/older than 2\.24/);
    expect(composeVersionProblem('dev')).toBe('cannot read the version "dev"');
  });

  it('on a machine set up as .ci/run sets it up, every tool check passes', async () => {
    const { stdout } = await exec(
      process.execPath,
      [SWEETLOOP_ENTRY, 'doctor', '--json', '--skip', 'database,docker compose'],
      { timeout: 180_000 },
    );
    const json = JSON.parse(stdout) as { ok: boolean; checks: { name: string; status: string; detail: string }[] };
    for (const c of json.checks) expect(c.status, `${c.name}: ${c.detail}`).not.toBe('fail');
    expect(json.checks.map((c) => c.name)).toEqual([
      'configuration',
      'tfjs backend',
      'chromium',
      'bubblewrap',
      'python3',
    ]);
  });
});
