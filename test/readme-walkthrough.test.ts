// A newcomer's first hour, in the README's order, on a fresh embedded database (no DATABASE_URL, no Discord
// token): `npm start` in a terminal with the dashboard beside it; while it runs, in other processes, an export
// with too few sessions (it says why, writes nothing), one console session played to its rating, an export with
// it, `policy list`, the dashboard as its own command, a second `npm start` refused naming the first; answering
// `n` to "Start another session?" leaves the dashboard up until the process is asked to stop; Ctrl-C, then or in
// the middle of a console, closes what it opened. Every other command
// of the README's quick start is run by the test named for it below (the quick path trains for minutes: it is
// not run twice); the first check holds that list to the README, so a new quick-start command needs a test.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runSweetloop } from '../testing/sweetloop-cli.ts';
import { makeTinyCheckpoint } from '../testing/tiny-checkpoint.ts';
import { Terminal, consoleEnv, hasScript } from './helpers/terminal.ts';

const ROOT = resolve(import.meta.dirname, '..');

/** The commands of the README's quick start and dashboard sections (indented blocks), without their comments. */
function quickStartCommands(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = (title: string) => readme.split(`\n## ${title}\n`)[1]!.split('\n## ')[0]!;
  return [section('Quick start'), section('The dashboard'), section('Training at scale: the official pipeline')]
    .flatMap((s) => s.split('\n'))
    .filter((l) => /^ {4}(npm|npx|sweetloop) /.test(l))
    .map((l) => l.replace(/\s+#.*$/, '').trim());
}

/** Where each quick-start command runs as written: this file, or the test that owns it (and a line it holds). */
const EXERCISED: [command: RegExp, where: string, holds: string][] = [
  [/^npm ci$/, '.ci/run', 'npm ci'],
  [/^npm start$/, 'test/readme-walkthrough.test.ts', "'npm start --silent'"],
  [/^npx sweetloop policy add \S+ --gguf hf:\S+ --deploy$/, 'test/bin/commands/policy-gguf.test.ts', "'hf:"],
  [/^npm test$/, '.ci/run', 'npm test'],
  [/^npx sweetloop dashboard$/, 'test/readme-walkthrough.test.ts', "['dashboard', '--port'"],
  [
    /^sweetloop export --format sweet-rl --kind backend --per-task 3 --out colbench.jsonl$/,
    'test/bot/export/official-pipeline.test.ts',
    '--per-task 3 --out colbench.jsonl',
  ],
];

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

describe('the README, in order, on a fresh clone', () => {
  it("names a test that runs each of its quick-start commands as written (the quick path: docs/training.md's own test)", () => {
    const commands = quickStartCommands();
    expect(commands).toContain('npm start');
    for (const command of commands) {
      const entry = EXERCISED.find(([re]) => re.test(command));
      expect(entry, `no test runs the README's \`${command}\`: add one and name it in EXERCISED`).toBeDefined();
      expect(readFileSync(join(ROOT, entry![1]), 'utf8')).toContain(entry![2]);
    }
    expect(readFileSync(join(ROOT, 'docs/training.md'), 'utf8')).toContain(
      '`test/training-quick-path.test.ts` runs these three lines',
    );
  });

  describe.skipIf(!hasScript)('npm start, and the commands beside it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sweetloop-walkthrough-'));
    let start: Terminal | undefined;
    let second: Terminal | undefined;
    afterAll(() => {
      start?.kill();
      second?.kill();
      rmSync(dir, { recursive: true, force: true });
    });

    it('start, export (too few, then one), a session, policy list, the dashboard twice, a second start refused', async () => {
      const ckpt = await makeTinyCheckpoint({ dir: join(dir, 'tiny'), maxPositionEmbeddings: 16384 });
      const port = await freePort();
      const env = consoleEnv(dir, {
        POLICY_MODEL_DIR: ckpt,
        MAX_TURNS: '2',
        LOG_LEVEL: 'warn',
        DASHBOARD_PORT: String(port),
      });
      const sweetloop = async (args: string[]) => {
        const r = await runSweetloop(args, { env, timeoutMs: 120_000 });
        return { ...r, said: `sweetloop ${args.join(' ')} (exit ${r.code}):\n${r.stdout}\n${r.stderr}` };
      };
      start = new Terminal('npm start --silent', env, ROOT);
      let at = await start.expect(`Dashboard: http://127.0.0.1:${port}/`);
      at = await start.expect('Do you accept? [y/N]', at);

      // The README's export while npm start runs, before any session: why there is nothing, and nothing written.
      const colbench = join(dir, 'colbench.jsonl');
      const tooFew = await sweetloop([
        'export',
        '--format',
        'sweet-rl',
        '--kind',
        'backend',
        '--per-task',
        '3',
        '--out',
        colbench,
      ]);
      expect(tooFew.code, tooFew.said).toBe(1);
      expect(tooFew.stderr, tooFew.said).toContain('nothing to export: 0 session(s) stored');
      expect(existsSync(colbench)).toBe(false);

      start.type('y');
      at = await start.expect('Which kind of task?', at);
      start.type('b');
      at = await start.expect('Agent (message 1 of 2)', at);
      at = await start.expect('You: ', at);
      start.type('Round to two decimals, please.');
      at = await start.expect('How helpful was the agent?', at);
      start.type('4');
      at = await start.expect('A comment', at);
      start.type('');
      at = await start.expect('Start another session? [y/N]', at);
      start.type('n');
      at = await start.expect('The dashboard stays up until this process is asked to stop (Ctrl-C).', at);
      // Still up, and still sharing its database, after the console is done.
      await new Promise((r) => setTimeout(r, 1_000));
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(401); // up; the login link opens it

      const sessions = join(dir, 'sessions.jsonl');
      const one = await sweetloop(['export', '--format', 'jsonl', '--out', sessions]);
      expect(one.code, one.said).toBe(0);
      expect(one.stdout, one.said).toContain('exported 1 sessions');
      expect(readFileSync(sessions, 'utf8').trim().split('\n')).toHaveLength(1);

      const list = await sweetloop(['policy', 'list']);
      expect(list.code, list.said).toBe(0);
      expect(list.stdout, list.said).toMatch(/deployed/);

      // The dashboard as its own command, on another port, reads the same database through npm start.
      const dashPort = await freePort();
      const dash = new Terminal(`node bin/sweetloop.cjs dashboard --port ${dashPort}`, env, ROOT);
      try {
        await dash.expect('login?token=');
        const link = /(http:\/\/127\.0\.0\.1:\d+\/login\?token=\S+)/.exec(dash.out)![1]!;
        const login = await fetch(link, { redirect: 'manual' });
        const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
        const page = await (await fetch(`http://127.0.0.1:${dashPort}/sessions`, { headers: { cookie } })).text();
        expect(page).toMatch(/<td>answered /); // the session played above
      } finally {
        dash.kill();
        await dash.exited;
      }

      // A second bot or console cannot share one PGlite: it says who holds it and what to do.
      second = new Terminal('npm start --silent', env, ROOT);
      await second.expect('a second bot or console cannot run beside it');
      expect(second.out).toContain('(`sweetloop start`)');
      expect(await second.exited).not.toBe(0);

      // Asked to stop (Ctrl-C), it stops: the dashboard goes with it, and so do the socket it shared and its lock.
      // npm reports 130, as a shell does for a command stopped by Ctrl-C, possibly before its child has closed.
      start.interrupt();
      expect([0, 130]).toContain(await start.exited);
      for (let i = 0; i < 100 && existsSync(`${env.PGLITE_DIR}.lock`); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(existsSync(`${env.PGLITE_DIR}.lock`), start.out.slice(-2000)).toBe(false);
      expect(existsSync(`${env.PGLITE_DIR}.socket`)).toBe(false);
      await expect(fetch(`http://127.0.0.1:${port}/`)).rejects.toThrow();

      // Ctrl-C in the middle of the console (its Chromium running, whose Playwright handlers used to exit(130) at
      // once): it still closes what it opened.
      const again = new Terminal('npm start --silent', env, ROOT);
      await again.expect('Which kind of task?');
      expect(existsSync(`${env.PGLITE_DIR}.socket`)).toBe(true);
      again.interrupt();
      await again.expect('Stopped.');
      expect([0, 130]).toContain(await again.exited);
      for (let i = 0; i < 100 && existsSync(`${env.PGLITE_DIR}.lock`); i++)
        await new Promise((r) => setTimeout(r, 100));
      expect(existsSync(`${env.PGLITE_DIR}.lock`), again.out.slice(-2000)).toBe(false);
      expect(existsSync(`${env.PGLITE_DIR}.socket`)).toBe(false);
    }, 420_000);
  });
});
