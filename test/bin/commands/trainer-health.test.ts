// The trainer service's /health and /metrics, on a real `sweetloop trainer` process over a real Postgres.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../bot/testing/database.ts';
import { SWEETLOOP_ENTRY } from '../../../bot/testing/sweetloop-cli.ts';

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('sweetloop trainer health', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.prisma.trainingRun.create({ data: { algorithm: 'sweet', config: {}, status: 'failed' } });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('answers /health/ready and /metrics while the service waits for data', async () => {
    const port = await freePort();
    const base = { ...process.env };
    delete base.DISCORD_TOKEN;
    const child = spawn(process.execPath, [SWEETLOOP_ENTRY, 'trainer'], {
      env: { ...base, DATABASE_URL: t.url, TRAINER_HEALTH_PORT: String(port), HEALTH_HOST: '127.0.0.1', TRAINER_MIN_NEW_SESSIONS: '1000', TRAINER_POLL_SECONDS: '60', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    try {
      let ready: Response | null = null;
      for (let i = 0; i < 600 && !ready; i++) {
        ready = await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => null);
        if (!ready) await new Promise((r) => setTimeout(r, 100));
      }
      expect(ready, err).not.toBeNull();
      expect(ready!.status).toBe(200);
      expect(await ready!.json()).toEqual({ status: 'ready', checks: { database: true } });
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(/^sweetloop_training_runs\{status="failed"\} 1$/m);
      expect(metrics).toMatch(/^sweetloop_trainer_process_cpu_seconds_total /m);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
