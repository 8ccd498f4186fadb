// The trainer service backing off after real failing cycles: a real `sweetloop trainer` process over a real
// Postgres, the deployed checkpoint's weights file broken after registration, so each training cycle fails when
// it loads them. The waits double from TRAINER_POLL_SECONDS up to TRAINER_MAX_BACKOFF_SECONDS (trainer/service.ts
// backoffSeconds), readiness fails with the count and the error, the gauge shows backing-off; once the file is
// repaired the next cycle gets past loading and the failures stop counting.
import { copyFileSync, rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startSweetloop } from '../../../testing/sweetloop-cli.ts';
import { freePort, until } from '../../../testing/wait.ts';
import { registerVersion } from '../../../prisma/policy-store.ts';
import { deployPolicyByName } from '../../../prisma/deployment-store.ts';
import { scratchDir, seedSessions, tinyPolicy } from '../../trainer/fixture.ts';

describe('sweetloop trainer back-off', () => {
  let t: TestDatabase;
  let root: string;
  let weights: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    root = scratchDir('trainer-backoff');
    const dir = await tinyPolicy(join(root, 'own'));
    await registerVersion(t.prisma, { name: 'own-1', algorithm: 'sweet', checkpointPath: dir });
    await deployPolicyByName(t.db, 'test', 'own-1');
    await seedSessions(t.prisma, 2);
    weights = join(dir, 'model.safetensors');
    copyFileSync(weights, join(root, 'good.safetensors'));
    truncateSync(weights, 100);
  }, 120_000);
  afterAll(async () => {
    await t?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('doubles its wait after each failing cycle up to the cap, is not ready meanwhile, and stops counting once a cycle gets through', async () => {
    const port = await freePort();
    const trainer = startSweetloop(['trainer', '--eval-episodes', '1'], {
      DATABASE_URL: t.url,
      CHECKPOINT_DIR: join(root, 'ck'),
      TRAINER_HEALTH_PORT: String(port),
      HEALTH_HOST: '127.0.0.1',
      TRAINER_MIN_NEW_SESSIONS: '1',
      TRAINER_DATA: 'simulated',
      TRAINER_POLL_SECONDS: '1',
      TRAINER_MAX_BACKOFF_SECONDS: '4',
      LOG_LEVEL: 'warn',
    });
    // When each failure was said, by this process's clock: the waits between them are at least the stated ones.
    const failedAt: number[] = [];
    trainer.onStderr((text) => {
      for (const _ of text.matchAll(/training cycle failed \(\d+ in a row\)/g)) failedAt.push(Date.now());
    });
    const url = (p: string) => `http://127.0.0.1:${port}${p}`;
    const said = (e: unknown) =>
      Object.assign(e as Error, { message: `${(e as Error).message}; the trainer said:\n${trainer.stderr()}` });
    try {
      await until('three failed cycles', async () => (failedAt.length >= 3 ? true : null), 60_000);
      const lines = [
        ...trainer.stderr().matchAll(/training cycle failed \((\d+) in a row\): (.*?); next try in (\d+) s/g),
      ].map((m) => [Number(m[1]), Number(m[3])]);
      expect(lines.slice(0, 3)).toEqual([
        [1, 2],
        [2, 4],
        [3, 4],
      ]);
      // The first wait is 2 s, the second 4 s (the cap); a poll's own work only adds to them.
      expect(failedAt[1]! - failedAt[0]!).toBeGreaterThanOrEqual(1_900);
      expect(failedAt[2]! - failedAt[1]!).toBeGreaterThanOrEqual(3_900);

      const ready = await fetch(url('/health/ready'));
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as { reasons: Record<string, string> };
      expect(body.reasons.training).toMatch(/^\d+ failed cycle\(s\) in a row, the last: .*safetensors/i);
      expect(await (await fetch(url('/metrics'))).text()).toMatch(
        /^sweetloop_trainer_state\{state="backing-off"\} 1$/m,
      );

      // Repaired: the next cycle loads the weights and trains; no further failure is said.
      copyFileSync(join(root, 'good.safetensors'), weights);
      const failuresBefore = failedAt.length;
      await until(
        'a run that succeeds',
        async () => ((await t.prisma.trainingRun.count({ where: { status: 'succeeded' } })) > 0 ? true : null),
        600_000,
      );
      expect(failedAt.length).toBeLessThanOrEqual(failuresBefore + 1);
      // No listener piles up per poll: Node warns past 10 on one signal, so wait for more polls than that.
      const polls = async () =>
        Number(/^sweetloop_trainer_polls (\d+)$/m.exec(await (await fetch(url('/metrics'))).text())?.[1] ?? 0);
      await until('12 polls', async () => ((await polls()) >= 12 ? true : null), 60_000);
      expect(trainer.stderr()).not.toContain('MaxListenersExceededWarning');
    } catch (e) {
      throw said(e);
    } finally {
      await trainer.stop();
    }
  }, 900_000);
});
