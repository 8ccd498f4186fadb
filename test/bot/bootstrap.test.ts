// `sweetloop start`'s first deploy (bot/bootstrap.ts ensureDeployedPolicy) goes through the one deploy path of
// prisma/deployment-store.ts: running bots and servers listening for policy_deployed hear of it, as of any deploy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { STARTER_ONLY_WARNING, ensureDeployedPolicy, warnIfOnlyStarter } from '../../bot/bootstrap.ts';
import { formatStudy, studyProgress } from '../../bot/study-progress.ts';
import { STARTER_ALGORITHM, registerVersion, servesOnlyStarter } from '../../prisma/policy-store.ts';
import { POLICY_CHANNEL, switchDeployedPolicy } from '../../prisma/deployment-store.ts';
import { createStudy, defaultStudy, type NewStudy, type StudyWithArms } from '../../prisma/study-store.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { builtinTasks } from '../../tasks/library.ts';
import type { Logger } from '../../tasks/logger.ts';
import { checkpointSha256 } from '../../trainer/model/checkpoint.ts';

let t: TestDatabase;
let dir: string;
beforeAll(async () => {
  t = await createTestDatabase();
  // A configured model directory (POLICY_MODEL_DIR): only its files' hashes matter here.
  dir = await mkdtemp(join(tmpdir(), 'bootstrap-model-'));
  await writeFile(join(dir, 'config.json'), '{"model_type":"llama"}');
}, 120_000);
afterAll(async () => {
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('ensureDeployedPolicy', () => {
  it('deploys the configured model with an audit entry and a notification, and keeps a deployed version', async () => {
    const sha = await checkpointSha256(dir);
    const name = `initial-${sha.slice(0, 8)}`;
    // Left by a start that stopped between registering and deploying: the same version, deployed now.
    const earlier = await registerVersion(t.prisma, {
      name,
      algorithm: 'external',
      checkpointPath: '/moved/since',
      checkpointSha256: sha,
    });
    const heard: string[] = [];
    const off = await t.db.listen(POLICY_CHANNEL, (id) => heard.push(id));
    try {
      const v = await ensureDeployedPolicy(t.db, { policyModelDir: dir, checkpointDir: '/unused', seed: 1 });
      expect(v).toMatchObject({
        id: earlier.id,
        name,
        algorithm: 'external',
        status: 'deployed',
        checkpointPath: dir,
        checkpointSha256: sha,
      });
      await expect.poll(() => heard).toEqual([v.id]);
      const audit = await t.prisma.auditLog.findMany({ where: { action: 'policy.deploy' } });
      expect(audit.map((a) => [a.actor, a.target, a.detail])).toEqual([
        ['bot', name, { versionId: v.id, previous: [], reason: 'no policy was deployed', checkpoint: dir }],
      ]);

      // A deployment already made (by a moderator, the trainer or an earlier start) is kept: no switch, no notification.
      const again = await ensureDeployedPolicy(t.db, {
        policyModelDir: '/never/read',
        checkpointDir: '/unused',
        seed: 1,
      });
      expect(again.id).toBe(v.id);
      expect(await t.prisma.auditLog.count({ where: { action: 'policy.deploy' } })).toBe(1);
      await new Promise((r) => setTimeout(r, 200));
      expect(heard).toEqual([v.id]);
    } finally {
      await off();
    }
  });
});

/** A Logger that keeps what was warned, as pino would write it (object, message). */
function recordingLogger(): Logger & { warnings: { obj: object; msg: string }[] } {
  const warnings: { obj: object; msg: string }[] = [];
  const keep = (obj: object | string, msg?: string) =>
    void warnings.push(typeof obj === 'string' ? { obj: {}, msg: obj } : { obj, msg: msg ?? '' });
  return { warnings, debug: () => {}, info: () => {}, error: () => {}, warn: keep } as Logger & {
    warnings: typeof warnings;
  };
}

describe('only the starter serving people', () => {
  it('is one rule: every serving version is the starter, and none serving is not', () => {
    expect(servesOnlyStarter([{ algorithm: STARTER_ALGORITHM }])).toBe(true);
    expect(servesOnlyStarter([{ algorithm: STARTER_ALGORITHM }, { algorithm: 'sweet' }])).toBe(false);
    expect(servesOnlyStarter([{ algorithm: 'external' }])).toBe(false);
    expect(servesOnlyStarter([])).toBe(false);
  });

  it("is warned at a Discord start and in a study's status, which names the version serving it", async () => {
    const starter = await registerVersion(t.prisma, {
      name: 'starter-0badc0de',
      algorithm: STARTER_ALGORITHM,
      checkpointPath: '/starter',
      checkpointSha256: 'f'.repeat(64),
    });
    const other = await registerVersion(t.prisma, {
      name: 'llama-8b-sweet',
      algorithm: 'sweet',
      checkpointPath: '/run',
      checkpointSha256: 'e'.repeat(64),
    });
    const deployed = await switchDeployedPolicy(t.db, 'cli', starter, 'policy.deploy');

    const log = recordingLogger();
    warnIfOnlyStarter(deployed, log);
    expect(log.warnings).toEqual([{ obj: { policy: 'starter-0badc0de' }, msg: STARTER_ONLY_WARNING }]);
    warnIfOnlyStarter(other, log);
    expect(log.warnings).toHaveLength(1);

    if ((await t.prisma.task.count()) === 0)
      await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 2));
    const taskIds = (await t.prisma.task.findMany({ select: { id: true }, take: 2 })).map((x) => x.id);
    const study = (name: string, arms: NewStudy['arms']) =>
      createStudy(
        t.prisma,
        'cli',
        {
          name,
          kind: 'backend',
          split: 'train',
          perTask: 1,
          seed: 1,
          taskIds,
          arms,
          consentText: null,
          payPerSessionCents: null,
          bonusSuccessCents: null,
          currency: 'USD',
          maxSessionsPerPerson: null,
          opensAt: null,
          closesAt: null,
          guildIds: [],
          channelIds: [],
        },
        { requireConsent: false },
      );
    const text = async (s: StudyWithArms) => formatStudy(s, await studyProgress(t.prisma, s));

    // The default study has no arms: the deployed starter serves it, and the status says so by name.
    const plain = await text(await defaultStudy(t.prisma));
    expect(plain).toContain('arms: the deployed version (starter-0badc0de)');
    expect(plain).toContain(`warning: ${STARTER_ONLY_WARNING}`);
    // Arms of the starter alone: warned; an arm of a trained version: not.
    expect(await text(await study('starter-arm', [{ policyVersionId: starter.id, share: 100 }]))).toContain(
      STARTER_ONLY_WARNING,
    );
    expect(
      await text(
        await study('mixed', [
          { policyVersionId: starter.id, share: 50 },
          { policyVersionId: other.id, share: 50 },
        ]),
      ),
    ).not.toContain(STARTER_ONLY_WARNING);
  });
});
