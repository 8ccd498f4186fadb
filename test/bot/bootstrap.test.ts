// `sweetloop start`'s first deploy (bot/bootstrap.ts ensureDeployedPolicy) goes through the one deploy path of
// prisma/policy-store.ts: running bots and servers listening for policy_deployed hear of it, as of any deploy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../bot/testing/database.ts';
import { ensureDeployedPolicy } from '../../bot/bootstrap.ts';
import { POLICY_CHANNEL, registerVersion } from '../../prisma/policy-store.ts';
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
    const earlier = await registerVersion(t.prisma, { name, algorithm: 'external', checkpointPath: '/moved/since', checkpointSha256: sha });
    const heard: string[] = [];
    const off = await t.db.listen(POLICY_CHANNEL, (id) => heard.push(id));
    try {
      const v = await ensureDeployedPolicy(t.db, { policyModelDir: dir, checkpointDir: '/unused', seed: 1 });
      expect(v).toMatchObject({ id: earlier.id, name, algorithm: 'external', status: 'deployed', checkpointPath: dir, checkpointSha256: sha });
      await expect.poll(() => heard).toEqual([v.id]);
      const audit = await t.prisma.auditLog.findMany({ where: { action: 'policy.deploy' } });
      expect(audit.map((a) => [a.actor, a.target, a.detail])).toEqual([['bot', name, { versionId: v.id, previous: [], reason: 'no policy was deployed', checkpoint: dir }]]);

      // A deployment already made (by a moderator, the trainer or an earlier start) is kept: no switch, no notification.
      const again = await ensureDeployedPolicy(t.db, { policyModelDir: '/never/read', checkpointDir: '/unused', seed: 1 });
      expect(again.id).toBe(v.id);
      expect(await t.prisma.auditLog.count({ where: { action: 'policy.deploy' } })).toBe(1);
      await new Promise((r) => setTimeout(r, 200));
      expect(heard).toEqual([v.id]);
    } finally {
      await off();
    }
  });
});
