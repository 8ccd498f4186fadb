// test/preflight.ts as `npm test` runs it (package.json's "test" script before `&& vitest run`): with a program
// missing it stops within seconds with one message naming it and the one command that installs it. It only
// ever runs pointed at missing programs, so this test needs none of them (it belongs to `npm run test:unit`).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { CheckResult } from '../bin/doctor.ts';
import { postgresCheck, preflightMessage } from './preflight.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
// The preflight, the formatter's check (biome.json), then the suite.
const [preflightCommand, formatCommand, suiteCommand] = scripts.test!.split(' && ');

function runPreflight(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    // npm puts node_modules/.bin on PATH for its scripts; so does this.
    const child = spawn('sh', ['-c', preflightCommand!], {
      cwd: root,
      env: {
        ...process.env,
        PATH: `${join(root, 'node_modules', '.bin')}${delimiter}${process.env.PATH ?? ''}`,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started }));
  });
}

const installLines = (text: string) => text.split('\n').filter((l) => /^ {2}(sudo )?apt-get install/.test(l));

describe('npm test preflight', () => {
  it('runs before the suite; test:unit runs without it', () => {
    expect(preflightCommand).toBe('tsx test/preflight.ts');
    expect(formatCommand).toBe('biome format');
    expect(suiteCommand).toBe('vitest run');
    expect(scripts['test:unit']).toBe('vitest run --mode unit');
  });

  it('BWRAP_BIN=/nonexistent: stops within a minute with one message naming bubblewrap and the command that installs it', async () => {
    const r = await runPreflight({ BWRAP_BIN: '/nonexistent' });
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(60_000);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^npm test stopped before running any test: this machine lacks .*bubblewrap.*, which the suite needs\.$/,
    );
    expect(lines).toContain('  - bubblewrap: /nonexistent does not exist (set BWRAP_BIN to use another)');
    expect(installLines(r.stderr)).toEqual([
      expect.stringMatching(/^ {2}(sudo )?apt-get install -y (\S+ )*bubblewrap( \S+)*$/),
    ]);
    expect(lines.at(-1)).toBe('`npm run test:unit` runs the tests that need none of these.');
  });

  it('names every missing program at once, with one install command for all of them', async () => {
    const r = await runPreflight({
      CHROMIUM_PATH: '/nonexistent/chromium',
      BWRAP_BIN: '/nonexistent/bwrap',
      PYTHON_BIN: '/nonexistent/python3',
      TEST_POSTGRES_URL: 'postgres://postgres@127.0.0.1:1/postgres',
    });
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')[0]).toBe(
      'npm test stopped before running any test: this machine lacks chromium, bubblewrap, python3 and postgres, which the suite needs.',
    );
    expect(r.stderr).toContain('  - postgres: nothing usable answers at 127.0.0.1:1 (');
    expect(installLines(r.stderr)).toEqual([
      expect.stringMatching(/^ {2}(sudo )?apt-get install -y chromium bubblewrap python3$/),
    ]);
    expect(r.stderr).toContain('To fix postgres: start the server TEST_POSTGRES_URL names, or correct it');
  });

  it('is silent when nothing failed, and installs Postgres only where there is none', () => {
    const ok: CheckResult[] = ['chromium', 'bubblewrap', 'python3'].map((name) => ({
      name,
      status: 'ok',
      detail: 'fine',
    }));
    expect(preflightMessage([...ok, postgresCheck(null)], false)).toBeNull();
    const down = { server: '127.0.0.1:5432', fromEnv: false, error: 'connect ECONNREFUSED 127.0.0.1:5432' };
    const absent = preflightMessage([...ok, postgresCheck(down, false)], false)!;
    expect(installLines(absent)).toEqual(['  sudo apt-get install -y postgresql']);
    expect(absent).toMatch(
      /To fix postgres: once installed, start it with trust auth for user postgres on 127\.0\.0\.1:5432/,
    );
    const stopped = preflightMessage([...ok, postgresCheck(down, true)], true)!;
    expect(installLines(stopped)).toEqual([]);
    expect(stopped).toMatch(/To fix postgres: start it with trust auth .* or set TEST_POSTGRES_URL/);
  });
});
