// `sweetloop env serve` as a person runs it: the real command in a child process over a real Postgres database,
// talked to over HTTP (and by the standard-library Python client, clients/python/sweetloop_env.py, when python3
// is here), then stopped with SIGTERM. Beyond loopback it needs ENV_SERVE_TOKEN: without it the command refuses
// to start, with it a request without the token is refused. The service's rules in detail are
// test/trainer/env-server.test.ts's (the same server, started in process).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { runSweetloop, startSweetloop, type RunningSweetloop } from '../../../testing/sweetloop-cli.ts';
import { importTasks, taskContent } from '../../../prisma/task-store.ts';
import { generateMiniTasks } from '../../../tasks/mini.ts';
import { createScorer } from '../../../tasks/scorer.ts';
import type { BackendTask } from '../../../tasks/model.ts';

const CLIENT = fileURLToPath(new URL('../../../clients/python/sweetloop_env.py', import.meta.url));
const PYTHON = '/usr/bin/python3';
const TOKEN = 'env-cli-token-0123456789abcdef';
const external = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && !a.internal && a.family === 'IPv4')?.address;

let t: TestDatabase;
let dir: string;
let task: BackendTask & { id: string };

beforeAll(async () => {
  t = await createTestDatabase();
  dir = mkdtempSync(join(tmpdir(), 'env-cli-'));
  await importTasks(t.prisma, generateMiniTasks({ seed: 9, count: 2, split: 'train' }));
  const row = await t.prisma.task.findFirstOrThrow({ orderBy: { externalId: 'asc' } });
  // The stored row as the scorer reads it (prisma/task-store.ts taskContent): a backend task, checked.
  task = { id: row.id, ...(taskContent(row) as BackendTask) };
}, 120_000);

afterAll(async () => {
  await t?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) => ({ LOG_LEVEL: 'warn', DATABASE_URL: t.url, ...extra });

/** The address the command says it listens on, once it says so (or its output when it exits first). */
function listening(run: RunningSweetloop): Promise<string> {
  return new Promise((resolve, reject) => {
    const look = () => {
      const m = /sweetloop env serve: (http:\/\/\S+) /.exec(run.stderr());
      if (m) resolve(m[1]!);
    };
    run.onStderr(look);
    look();
    const timer = setTimeout(() => reject(new Error(`env serve did not start:\n${run.stderr()}`)), 120_000);
    timer.unref();
  });
}

function python(args: string[], extra: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, args, { env: { PATH: process.env.PATH, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => (stderr ? reject(new Error(stderr)) : resolve({ code, stdout })));
  });
}

describe('sweetloop env serve (the command)', () => {
  it('refuses to listen beyond loopback without ENV_SERVE_TOKEN', async () => {
    const base = { ...process.env };
    delete base.ENV_SERVE_TOKEN;
    const r = await runSweetloop(['env', 'serve', '--host', '0.0.0.0', '--port', '0'], {
      env: { ...base, ...env() },
      timeoutMs: 120_000,
    });
    expect(r.code).not.toBe(0);
    expect(r.code).not.toBeNull();
    expect(r.stderr).toMatch(/refusing to listen on 0\.0\.0\.0.*ENV_SERVE_TOKEN/);
  });

  it('serves tasks, episodes and scores over HTTP with its token, refuses requests without it, and stops on SIGTERM', async () => {
    const run = startSweetloop(['env', 'serve', '--host', '0.0.0.0', '--port', '0'], env({ ENV_SERVE_TOKEN: TOKEN }));
    let stopped = false;
    try {
      const said = await listening(run);
      expect(run.stderr()).toContain('collaborators builtin, default builtin; token required');
      const port = Number(new URL(said).port);
      expect(port).toBeGreaterThan(0);
      if (!external) console.warn('no non-loopback IPv4 interface here: the client reaches the server over loopback');
      const url = `http://${external ?? '127.0.0.1'}:${port}`;
      const auth = { authorization: `Bearer ${TOKEN}` };
      const post = (path: string, body: unknown, headers: Record<string, string> = auth) =>
        fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify(body),
        });

      expect((await fetch(`${url}/v1/tasks`)).status).toBe(401);
      expect((await post('/v1/episodes', { task_id: task.id }, {})).status).toBe(401);
      const listed = (await (await fetch(`${url}/v1/tasks?kind=backend`, { headers: auth })).json()) as {
        total: number;
        tasks: { id: string }[];
      };
      expect(listed.total).toBe(2);
      expect(listed.tasks.map((x) => x.id)).toContain(task.id);
      expect(JSON.stringify(listed)).not.toContain(task.reference);

      // A whole episode over HTTP: a question, the collaborator's reply, the answer and its score.
      const scorer = createScorer();
      const bot = await scorer.evaluate(task, task.reference).finally(() => scorer.close());
      const started = (await (await post('/v1/episodes', { task_id: task.id })).json()) as {
        episode_id: string;
        messages: { role: string; content: string }[];
      };
      expect(started.messages.map((m) => m.role)).toEqual(['system', 'user']);
      expect(JSON.stringify(started)).not.toContain(task.reference);
      const asked = (await (
        await post(`/v1/episodes/${started.episode_id}/step`, { message: 'Should the result be rounded?' })
      ).json()) as { done: boolean; reply: string };
      expect(asked.done).toBe(false);
      expect(asked.reply.length).toBeGreaterThan(0);
      const answered = (await (
        await post(`/v1/episodes/${started.episode_id}/step`, { message: `I WANT TO ANSWER:\n${task.reference}` })
      ).json()) as Record<string, unknown>;
      expect(answered).toMatchObject({ done: true, end_reason: 'answered', score: bot.score, success: bot.success });
      expect(bot.score).toBe(1);
      const direct = (await (await post('/v1/score', { task_id: task.id, answer: task.reference })).json()) as Record<
        string,
        unknown
      >;
      expect(direct).toMatchObject({ score: bot.score, tests_passed: bot.testsPassed });

      // The same from Python's standard library, where python3 is here.
      if (existsSync(PYTHON)) {
        writeFileSync(join(dir, 'answer.py'), task.reference);
        const args = [CLIENT, '--url', url, '--task-id', task.id, '--message', 'Any edge cases?'];
        const played = await python([...args, '--answer-file', join(dir, 'answer.py')], { SWEETLOOP_ENV_TOKEN: TOKEN });
        expect(played.code).toBe(0);
        const out = played.stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, any>);
        expect(out.map((l) => Object.keys(l)[0])).toEqual(['started', 'step', 'step']);
        expect(out[2]!.step).toMatchObject({ done: true, score: bot.score, tests_passed: bot.testsPassed });
        const refused = await python(args);
        expect(refused.code).toBe(3);
        expect(JSON.parse(refused.stdout.trim())).toMatchObject({ status: 401 });
      } else console.warn(`no ${PYTHON} here: the Python client's part is skipped`);

      // SIGTERM: the command closes its server and exits cleanly; nothing listens any more.
      stopped = true;
      expect(await run.stop()).toBe(0);
      await expect(fetch(`${url}/health`)).rejects.toThrow();
    } finally {
      if (!stopped) await run.stop();
    }
  }, 300_000);
});
