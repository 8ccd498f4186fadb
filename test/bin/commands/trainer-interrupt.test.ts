// Ctrl-C during a real `sweetloop train` (a child process, SIGINT): one line says what the run kept and the
// command that resumes it, the process exits 130 as a shell reports an interrupted command, and the run stays
// resumable (running, not failed) with its finished phase recorded.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startSweetloop } from '../../../testing/sweetloop-cli.ts';
import { until } from '../../../testing/wait.ts';
import { unfinishedRuns } from '../../../trainer/runs.ts';
import { scratchDir, seedSessions } from '../../trainer/fixture.ts';

describe('sweetloop train stopped with Ctrl-C', () => {
  let t: TestDatabase;
  let root: string;
  beforeAll(async () => {
    t = await createTestDatabase();
    root = scratchDir('train-interrupt');
    // Expert and non-asking games of the same tasks: different rewards, so the critic has pairs.
    await seedSessions(t.prisma, 3);
  }, 180_000);
  afterAll(async () => {
    await t?.drop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('prints what was kept and the resume command, exits 130, and leaves the run resumable', async () => {
    const train = startSweetloop(
      ['train', '--algo', 'sweet', '--from', 'starter', '--data', 'simulated', '--max-steps', '1'],
      { DATABASE_URL: t.url, CHECKPOINT_DIR: join(root, 'ck'), LOG_LEVEL: 'warn' },
    );
    const said = (e: unknown) =>
      Object.assign(e as Error, { message: `${(e as Error).message}; train said:\n${train.stderr()}` });
    try {
      // The critic's one update is checkpointed and its phase finished before the candidates are sampled.
      await until(
        'the sampling of candidates',
        async () => (train.stderr().includes('actor: sampling') ? true : null),
        600_000,
      );
    } catch (e) {
      await train.stop('SIGKILL');
      throw said(e);
    }
    const code = await train.stop('SIGINT');
    const runId = /training run ([0-9a-f-]{36})/.exec(train.stderr())![1]!;
    const lines = train.stderr().trim().split('\n');
    expect(lines.at(-1), train.stderr()).toBe(
      `Stopped. Run ${runId} is kept up to its last checkpoint (critic done): resume it with \`sweetloop train --resume ${runId}\`.`,
    );
    expect(code).toBe(130);
    const run = await t.prisma.trainingRun.findUniqueOrThrow({ where: { id: runId } });
    expect(run.status).toBe('running');
    expect((await unfinishedRuns(t.prisma)).map((r) => r.id)).toContain(runId);
  }, 660_000);
});
