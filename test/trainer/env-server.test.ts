// `sweetloop env serve` played from Python: the standard-library client (clients/python/sweetloop_env.py) plays a
// whole backend episode (questions, the rule-based collaborator's replies, an answer) against the real server over
// the real Postgres, and its score equals the scorer the bot evaluates with (tasks/scorer.ts) on the same answer.
// Off loopback the server needs its token: a client without it is refused, and it does not listen without one.
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { importTasks, taskContent } from '../../prisma/task-store.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { createScorer, type Scorer } from '../../tasks/scorer.ts';
import { startEnvServer, type EnvServer } from '../../trainer/env-server.ts';
import { RULE_SIMULATOR } from '../../trainer/simulate.ts';
import type { BackendTask } from '../../tasks/model.ts';

const CLIENT = fileURLToPath(new URL('../../clients/python/sweetloop_env.py', import.meta.url));
const TOKEN = 'env-test-token-0123456789abcdef';

function python(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', args, {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** fetch will not send another Host header: http.request does. */
function statusWithHost(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/tasks', headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

const lines = (out: string) =>
  out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, any>);
const external = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && !a.internal && a.family === 'IPv4')?.address;

let t: TestDatabase;
let scorer: Scorer;
let dir: string;
let task: BackendTask & { id: string };

beforeAll(async () => {
  t = await createTestDatabase();
  scorer = createScorer();
  dir = mkdtempSync(join(tmpdir(), 'env-serve-'));
  const [record] = generateMiniTasks({ seed: 5, count: 1, split: 'train' });
  await importTasks(t.prisma, [record!]);
  const row = await t.prisma.task.findFirstOrThrow();
  // The stored row as the scorer reads it (prisma/task-store.ts taskContent): a backend task, checked.
  task = { id: row.id, ...(taskContent(row) as BackendTask) };
}, 180_000);

afterAll(async () => {
  await scorer?.close();
  await t?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const serve = (host: string, token?: string) =>
  startEnvServer({
    prisma: t.prisma,
    host,
    port: 0,
    token,
    scorer,
    collaborators: { builtin: RULE_SIMULATOR },
    fallback: 'builtin',
    limits: { maxEpisodes: 2, scoring: 2 },
  });

describe('env serve, from the Python client', () => {
  it('plays a whole backend episode off loopback with the token, scored as the bot scores; without the token it is refused', async () => {
    const host = external ?? '127.0.0.1';
    if (!external)
      console.warn('no non-loopback IPv4 interface here: the client reaches the 0.0.0.0 server over loopback');
    const server: EnvServer = await serve('0.0.0.0', TOKEN);
    try {
      const url = `http://${host}:${server.port}`;
      // A near miss: one decimal where the reference rounds to whole percents, so some tests pass and some fail.
      const answer = task.reference.replace('DECIMALS = 0', 'DECIMALS = 1');
      expect(answer).not.toBe(task.reference);
      writeFileSync(join(dir, 'answer.py'), answer);
      const args = [
        CLIENT,
        '--url',
        url,
        '--task-id',
        task.id,
        '--message',
        'Which price comes first in the call, the old one or the new one?',
        '--message',
        'How many decimal places should the percentage have?',
        '--answer-file',
        join(dir, 'answer.py'),
      ];

      const played = await python(args, { SWEETLOOP_ENV_TOKEN: TOKEN });
      expect(played.stderr).toBe('');
      expect(played.code).toBe(0);
      const out = lines(played.stdout);
      expect(out).toHaveLength(4);
      const started = out[0]!.started;
      expect(started).toMatchObject({
        task_id: task.id,
        kind: 'backend',
        collaborator: 'rule-simulator',
        max_turns: 10,
      });
      expect(started.messages.map((m: { role: string }) => m.role)).toEqual(['system', 'user']);
      expect(started.messages[1].content).toBe(task.description);
      const [q1, q2, end] = out.slice(1).map((l) => l.step);
      expect(q1).toMatchObject({ done: false, turn: 1 });
      expect(q2).toMatchObject({ done: false, turn: 2 });
      // The rule-based collaborator answers from the reference: the new price first, no decimals.
      expect(q1.reply).toMatch(/new/i);
      expect(q2.reply).toMatch(/\b0\b|no decimal|whole|zero/i);
      expect(q2.messages.map((m: { role: string }) => m.role)).toEqual([
        'system',
        'user',
        'assistant',
        'user',
        'assistant',
        'user',
      ]);

      const bot = await scorer.evaluate(task, answer);
      expect(bot.score).toBeGreaterThan(0);
      expect(bot.score).toBeLessThan(1);
      expect(end).toMatchObject({
        done: true,
        turn: 3,
        end_reason: 'answered',
        score: bot.score,
        success: bot.success,
        tests_passed: bot.testsPassed,
        tests_total: 10,
        evaluator_version: bot.evaluatorVersion,
      });
      expect(end.answer).toBe(answer.trim());
      expect(end.detail).toEqual(JSON.parse(JSON.stringify(bot.detail)));
      // Before the answer (which copies it), nothing the client was sent holds the hidden reference's code.
      for (const seen of [started, q1, q2])
        expect(JSON.stringify(seen)).not.toMatch(/return round|def percent_change\(price_a, price_b\):/);

      // Scoring directly gives the same verdict.
      const direct = await python([
        '-c',
        `import sys; sys.path.insert(0, ${JSON.stringify(join(CLIENT, '..'))}); import json, sweetloop_env as s; print(json.dumps(s.EnvClient(${JSON.stringify(url)}, token=${JSON.stringify(TOKEN)}).score(${JSON.stringify(task.id)}, open(${JSON.stringify(join(dir, 'answer.py'))}).read())))`,
      ]);
      expect(direct.stderr).toBe('');
      expect(JSON.parse(direct.stdout)).toMatchObject({ score: bot.score, tests_passed: bot.testsPassed });

      // A second client without the token: refused, and nothing was opened for it.
      const refused = await python(args);
      expect(refused.code).toBe(3);
      expect(lines(refused.stdout)).toEqual([{ error: expect.stringMatching(/token/), status: 401 }]);
      const wrong = await python(args, { SWEETLOOP_ENV_TOKEN: 'not-the-token-at-all-0000' });
      expect(lines(wrong.stdout)[0]).toMatchObject({ status: 401 });
      expect(server.episodes.open).toBe(0);
      // Health says whether it is up, and nothing else, without the token.
      expect((await fetch(`${url}/health`)).status).toBe(200);
      expect((await fetch(`${url}/v1/tasks`)).status).toBe(401);
    } finally {
      await server.close();
    }
  });

  it('does not listen beyond loopback without a token', async () => {
    await expect(serve('0.0.0.0')).rejects.toThrow(/refusing to listen on 0\.0\.0\.0.*ENV_SERVE_TOKEN/);
  });

  it('on loopback without a token: admits local requests, refuses another Host, bad input and too many episodes', async () => {
    const server = await serve('127.0.0.1');
    try {
      const url = `http://127.0.0.1:${server.port}`;
      const post = (path: string, body: unknown) =>
        fetch(`${url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const listed = (await (await fetch(`${url}/v1/tasks?kind=backend&split=train`)).json()) as {
        total: number;
        tasks: Record<string, unknown>[];
      };
      expect(listed.total).toBe(1);
      expect(listed.tasks[0]).toEqual({
        id: task.id,
        kind: 'backend',
        split: 'train',
        source: 'generated',
        external_id: 'mini:5:0',
        description: task.description,
        tests: 10,
      });
      expect((await fetch(`${url}/v1/tasks?split=test`).then((r) => r.json())) as { total: number }).toMatchObject({
        total: 0,
      });
      // DNS rebinding: a page elsewhere whose name resolves to 127.0.0.1.
      expect(await statusWithHost(server.port, 'evil.example')).toBe(403);
      expect(await statusWithHost(server.port, `localhost:${server.port}`)).toBe(200);

      expect((await post('/v1/episodes', { task_id: 'nope' })).status).toBe(400);
      expect((await post('/v1/episodes', { task_id: '00000000-0000-4000-8000-000000000000' })).status).toBe(404);
      expect((await post('/v1/episodes', { task_id: task.id, collaborator: 'llm' })).status).toBe(400);
      const a = (await (await post('/v1/episodes', { task_id: task.id })).json()) as { episode_id: string };
      const b = (await (await post('/v1/episodes', { task_id: task.id })).json()) as { episode_id: string };
      const third = await post('/v1/episodes', { task_id: task.id });
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('5');
      expect((await post(`/v1/episodes/${a.episode_id}/step`, { message: '' })).status).toBe(400);
      expect((await post(`/v1/episodes/${a.episode_id}/step`, { message: 'x'.repeat(9000) })).status).toBe(413);
      // The episode goes on after a refused message.
      const asked = (await (
        await post(`/v1/episodes/${a.episode_id}/step`, {
          message: 'What should it return when the old price is zero?',
        })
      ).json()) as { done: boolean; reply: string };
      expect(asked).toMatchObject({ done: false });
      expect(asked.reply).toContain('n/a');
      expect((await fetch(`${url}/v1/episodes/${a.episode_id}`, { method: 'DELETE' })).status).toBe(204);
      expect((await post(`/v1/episodes/${a.episode_id}/step`, { message: 'hello?' })).status).toBe(404);
      expect((await post('/v1/episodes', { task_id: task.id })).status).toBe(201);
      // On the tenth message, the whole message is the answer (ColBench's rule, tasks/protocol.ts).
      let last: Record<string, unknown> = {};
      for (let i = 0; i < 10; i++)
        last = (await (
          await post(`/v1/episodes/${b.episode_id}/step`, {
            message: i < 9 ? `Question ${i}: anything else?` : task.reference,
          })
        ).json()) as Record<string, unknown>;
      expect(last).toMatchObject({ done: true, turn: 10, end_reason: 'turn-limit', score: 1, success: true });
    } finally {
      await server.close();
    }
  });
});
