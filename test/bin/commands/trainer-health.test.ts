// The trainer service's /health and /metrics, on a real `sweetloop trainer` process over a real Postgres.
// Deployed: an endpoint version without a local base model. The service says "cannot train" once over several
// polls, creates no run, is not ready (with the reason) and shows the state in its gauge; once a trainable
// version is deployed it waits for data and is ready.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startSweetloop } from '../../../testing/sweetloop-cli.ts';
import { freePort, until } from '../../../testing/wait.ts';
import { registerVersion } from '../../../prisma/policy-store.ts';
import { deployPolicyByName } from '../../../prisma/deployment-store.ts';
import { registerEndpointVersion } from '../../../trainer/policies/registry.ts';
import { scratchDir, tinyPolicy } from '../../trainer/fixture.ts';

describe('sweetloop trainer health', () => {
  let t: TestDatabase;
  let root: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    root = scratchDir('trainer-health');
    await t.prisma.trainingRun.create({ data: { algorithm: 'sweet', config: {}, status: 'failed' } });
    await registerEndpointVersion(t.prisma, {
      name: 'served-8b',
      url: 'http://127.0.0.1:9/v1',
      model: 'llama-8b',
      contextWindow: 4096,
      maxTokens: 256,
      check: false,
    });
    await deployPolicyByName(t.db, 'test', 'served-8b');
  });
  afterAll(async () => {
    await t?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('reports "cannot train" once, stays not ready and creates no run; ready once a trainable version is deployed', async () => {
    const port = await freePort();
    const trainer = startSweetloop(['trainer'], {
      DATABASE_URL: t.url,
      CHECKPOINT_DIR: join(root, 'ck'),
      TRAINER_HEALTH_PORT: String(port),
      HEALTH_HOST: '127.0.0.1',
      TRAINER_MIN_NEW_SESSIONS: '1000',
      TRAINER_POLL_SECONDS: '1',
      LOG_LEVEL: 'warn',
    });
    const url = (p: string) => `http://127.0.0.1:${port}${p}`;
    const polls = async () =>
      Number(/^sweetloop_trainer_polls (\d+)$/m.exec(await (await fetch(url('/metrics'))).text())?.[1] ?? 0);
    try {
      await until('4 polls', async () => ((await polls()) >= 4 ? true : null), 120_000);
      const ready = await fetch(url('/health/ready'));
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as {
        status: string;
        checks: Record<string, boolean>;
        reasons: Record<string, string>;
      };
      expect(body).toMatchObject({ status: 'not ready', checks: { database: true, training: false } });
      expect(body.reasons.training).toMatch(
        /^cannot train: "served-8b" is served by http:\/\/127\.0\.0\.1:9\/v1 \(model llama-8b\) without a local copy of its base model/,
      );
      const metrics = await (await fetch(url('/metrics'))).text();
      expect(metrics).toMatch(/^sweetloop_trainer_state\{state="cannot-train"\} 1$/m);
      expect(metrics).toMatch(/^sweetloop_trainer_state\{state="waiting"\} 0$/m);
      expect(metrics).toMatch(/^sweetloop_training_runs\{status="failed"\} 1$/m);
      expect(metrics).toMatch(/^sweetloop_trainer_process_cpu_seconds_total /m);
      // Said once over the polls, and no run was created for it.
      expect(trainer.stderr().match(/cannot train/g)?.length, trainer.stderr()).toBe(1);
      expect(await t.prisma.trainingRun.count()).toBe(1);

      // A trainable version deployed: picked up at the next poll; it now waits for data and is ready.
      const dir = await tinyPolicy(join(root, 'own'));
      await registerVersion(t.prisma, { name: 'own-1', algorithm: 'sweet', checkpointPath: dir });
      await deployPolicyByName(t.db, 'test', 'own-1');
      const ok = await until('ready', async () => {
        const r = await fetch(url('/health/ready'));
        return r.status === 200 ? ((await r.json()) as unknown) : null;
      });
      expect(ok).toEqual({ status: 'ready', checks: { database: true, training: true } });
      expect(await (await fetch(url('/metrics'))).text()).toMatch(/^sweetloop_trainer_state\{state="waiting"\} 1$/m);
      expect(trainer.stderr()).toMatch(/next run: from "own-1": all parameters on .*own, preset cpu-small/);
      expect(await t.prisma.trainingRun.count()).toBe(1);
    } finally {
      await trainer.stop();
    }
  }, 240_000);
});
