// `sweetloop policy list`, `deploy` and `rollback` with a version trained on erased data (marked by deletion,
// prisma/privacy-store.ts): the real binary and a real database. Marked in the list, refused without --force,
// deployed with it and audited. The Discord side (/mod deploy force, refused to a non-operator) is
// test/bot/discord/privacy-delete.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';
import { deployedPolicy } from '../../../prisma/policy-store.ts';
import { markTrainedOnErasedData } from '../../../prisma/privacy-store.ts';

let t: TestDatabase;

function sweetloop(args: string[]): Promise<SweetloopRun> {
  return runSweetloop(args, { env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: t.url }, timeoutMs: 120_000 });
}

beforeAll(async () => {
  t = await createTestDatabase();
}, 120_000);

afterAll(async () => {
  await t?.drop();
});

describe('a version trained on erased data', () => {
  it('is marked in policy list, refused by deploy and rollback without --force, and deployed with it (audited)', async () => {
    await t.prisma.policyVersion.create({
      data: {
        name: 'clean-1',
        algorithm: 'starter',
        checkpointPath: '/ckpt/a',
        status: 'deployed',
        deployedAt: new Date(),
      },
    });
    const run = await t.prisma.trainingRun.create({
      data: { algorithm: 'sweet', config: {}, dataSnapshot: { sessions: [{ id: 'gone-session', reward: 1 }] } },
    });
    await t.prisma.policyVersion.create({
      data: { name: 'tainted-1', algorithm: 'sweet', checkpointPath: '/ckpt/b', trainingRunId: run.id },
    });
    expect(await markTrainedOnErasedData(t.prisma, ['gone-session'])).toEqual(['tainted-1']);

    const list = await sweetloop(['policy', 'list']);
    expect(list.code, list.stderr).toBe(0);
    const lines = list.stdout.split('\n');
    expect(lines.find((l) => l.startsWith('clean-1'))).not.toContain('erased');
    expect(lines.find((l) => l.startsWith('tainted-1'))).toMatch(/candidate.*\[trained on erased data\]$/);
    expect(list.stdout).toContain('deploying it needs `--force`');
    const json = JSON.parse((await sweetloop(['policy', 'list', '--json'])).stdout) as {
      name: string;
      trainedOnErasedData: boolean;
    }[];
    expect(json.map((r) => [r.name, r.trainedOnErasedData])).toEqual([
      ['clean-1', false],
      ['tainted-1', true],
    ]);

    const refused = await sweetloop(['deploy', 'tainted-1']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /"tainted-1" was trained on sessions of a person whose data has since been deleted.*--force/,
    );
    expect((await deployedPolicy(t.prisma))!.name).toBe('clean-1');

    const forced = await sweetloop(['deploy', 'tainted-1', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toContain('deployed tainted-1');
    const audit = await t.prisma.auditLog.findMany({ where: { action: 'policy.force-erased-data' } });
    expect(audit.map((a) => [a.actor, a.target, (a.detail as { via: string }).via])).toEqual([
      ['cli', 'tainted-1', 'policy.deploy'],
    ]);

    // Back to the clean version, then a rollback to the marked one needs --force as well.
    expect((await sweetloop(['deploy', 'clean-1'])).code).toBe(0);
    const back = await sweetloop(['rollback']);
    expect(back.code).toBe(1);
    expect(back.stderr).toMatch(/"tainted-1" was trained on sessions of a person whose data has since been deleted/);
    const backForced = await sweetloop(['rollback', '--force']);
    expect(backForced.code, backForced.stderr).toBe(0);
    expect(backForced.stdout).toContain('rolled back to tainted-1');
    expect(
      await t.prisma.auditLog.count({
        where: { action: 'policy.force-erased-data', detail: { path: ['via'], equals: 'policy.rollback' } },
      }),
    ).toBe(1);
  });
});
