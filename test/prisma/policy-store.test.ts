// The DB-level deployment rules shared by the bot's /policy commands and the trainer: one deployed version, the
// previous one retired, rollback to the one deployed before, an audit entry per switch, and the NOTIFY rule.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import type { Database } from '../../prisma/db.ts';
import { deployedPolicy, PolicyError, registerVersion } from '../../prisma/policy-store.ts';
import {
  previouslyDeployedPolicy,
  rollbackDeployedPolicy,
  switchDeployedPolicy,
} from '../../prisma/deployment-store.ts';
import { startExperiment, stopArms } from '../../prisma/experiment-store.ts';
import { markTrainedOnErasedData } from '../../prisma/privacy-store.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

async function version(name: string) {
  return t.prisma.policyVersion.create({
    data: {
      name,
      algorithm: 'sweet',
      checkpointPath: `/nowhere/${name}`,
      checkpointSha256: '0'.repeat(64),
      status: 'candidate',
    },
  });
}

describe('policy store', () => {
  it('switches, audits, rolls back, and treats a failed NOTIFY as asked', async () => {
    expect(await rollbackDeployedPolicy(t.db, 'x')).toBeNull();
    const a = await version('a');
    const b = await version('b');
    await switchDeployedPolicy(t.db, 'mod', a, 'policy.deploy');
    expect(await previouslyDeployedPolicy(t.prisma)).toBeNull();
    expect(await rollbackDeployedPolicy(t.db, 'x')).toBeNull();

    // The NOTIFY runs after the commit: 'required' reports its failure, 'best-effort' does not; both switched.
    const broken: Database = {
      ...t.db,
      notify: async () => {
        throw new Error('notify down');
      },
    };
    await expect(switchDeployedPolicy(broken, 'mod', b, 'policy.deploy', { detail: { why: 'test' } })).rejects.toThrow(
      /notify down/,
    );
    expect((await deployedPolicy(t.prisma))!.name).toBe('b');
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: a.id } })).status).toBe('retired');
    expect((await previouslyDeployedPolicy(t.prisma))!.name).toBe('a');

    const back = await rollbackDeployedPolicy(broken, 'mod', { notify: 'best-effort' });
    expect(back!.name).toBe('a');
    expect(await t.prisma.policyVersion.count({ where: { status: 'deployed' } })).toBe(1);

    // Looked up by content, not creation time: three switches can share a millisecond.
    const audit = await t.prisma.auditLog.findMany();
    expect(audit.map((x) => `${x.action}:${x.target}`).sort()).toEqual([
      'policy.deploy:a',
      'policy.deploy:b',
      'policy.rollback:a',
    ]);
    expect(audit.find((x) => x.action === 'policy.deploy' && x.target === 'a')!.detail).toEqual({
      versionId: a.id,
      previous: [],
    });
    expect(audit.find((x) => x.action === 'policy.deploy' && x.target === 'b')!.detail).toEqual({
      versionId: b.id,
      previous: ['a'],
      why: 'test',
    });
    expect(audit.find((x) => x.action === 'policy.rollback')!.detail).toEqual({
      versionId: a.id,
      previous: ['b'],
      from: 'b',
    });
  });

  it('registers every new version as a candidate, with its audit entry, and reuses a name only when asked', async () => {
    const v = await registerVersion(t.prisma, {
      name: 'reg-adapter',
      algorithm: 'sweet',
      kind: 'adapter',
      checkpointPath: '/adapters/one',
      checkpointSha256: 'f'.repeat(64),
      metrics: { training: { actor: { loss: 0.5 } } },
      serving: (row) => ({ adapterName: `${row.name}:${row.id}` }),
      audit: { actor: 'trainer', action: 'policy.publish', detail: { runId: 'r1' } },
    });
    expect(v).toMatchObject({
      name: 'reg-adapter',
      algorithm: 'sweet',
      kind: 'adapter',
      status: 'candidate',
      deployedAt: null,
      checkpointPath: '/adapters/one',
    });
    // The serving settings were computed from the row itself (an adapter's server name carries its id).
    expect(v.serving).toEqual({ adapterName: `reg-adapter:${v.id}` });
    const audit = await t.prisma.auditLog.findFirstOrThrow({
      where: { action: 'policy.publish', target: 'reg-adapter' },
    });
    expect(audit.actor).toBe('trainer');
    expect(audit.detail).toEqual({ versionId: v.id, runId: 'r1' });

    await expect(
      registerVersion(t.prisma, { name: 'reg-adapter', algorithm: 'sweet', checkpointPath: '/elsewhere' }),
    ).rejects.toThrow();
    const again = await registerVersion(t.prisma, {
      name: 'reg-adapter',
      algorithm: 'sweet',
      checkpointPath: '/adapters/moved',
      ifExists: 'reuse',
    });
    expect(again.id).toBe(v.id);
    expect(again.checkpointPath).toBe('/adapters/moved');
    expect(again.serving).toEqual(v.serving);
    expect(await t.prisma.policyVersion.count({ where: { name: 'reg-adapter' } })).toBe(1);
  });

  it('commits the row, its audit entry and the writes alongside together, or none of them', async () => {
    const failing = registerVersion(
      t.prisma,
      {
        name: 'reg-never',
        algorithm: 'rft',
        checkpointPath: '/x',
        audit: { actor: 'trainer', action: 'policy.publish' },
      },
      async (tx) => {
        await tx.auditLog.create({ data: { actor: 'trainer', action: 'alongside', target: 'reg-never' } });
        throw new Error('the run could not be marked');
      },
    );
    await expect(failing).rejects.toThrow(/could not be marked/);
    expect(await t.prisma.policyVersion.count({ where: { name: 'reg-never' } })).toBe(0);
    expect(await t.prisma.auditLog.count({ where: { target: 'reg-never' } })).toBe(0);
  });

  it("puts a version trained on erased data in front of people only with an operator's force, in every path, audited", async () => {
    const run = await t.prisma.trainingRun.create({
      data: { algorithm: 'sweet', config: {}, dataSnapshot: { sessions: [{ id: 'erased-session', reward: 1 }] } },
    });
    await t.prisma.policyVersion.create({
      data: { name: 'marked', algorithm: 'sweet', checkpointPath: '/nowhere/marked', trainingRunId: run.id },
    });
    expect(await markTrainedOnErasedData(t.prisma, ['erased-session'])).toEqual(['marked']);
    const marked = await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'marked' } });
    const deployedBefore = (await deployedPolicy(t.prisma))!.name;
    const forced = () =>
      t.prisma.auditLog.findMany({ where: { action: 'policy.force-erased-data' }, orderBy: { createdAt: 'asc' } });

    await expect(switchDeployedPolicy(t.db, 'mod', marked, 'policy.deploy')).rejects.toThrow(PolicyError);
    await expect(
      switchDeployedPolicy(t.db, 'mod', marked, 'policy.deploy', { force: true, operator: false }),
    ).rejects.toThrow(/only an operator may force/);
    // An A/B puts it in front of people too.
    await expect(startExperiment(t.db, 'op', { study: 'default', candidate: 'marked', share: 10 })).rejects.toThrow(
      /needs an operator's explicit force/,
    );
    await expect(
      startExperiment(t.db, 'mod', { study: 'default', candidate: 'marked', share: 10, force: true, operator: false }),
    ).rejects.toThrow(/only an operator/);
    expect((await deployedPolicy(t.prisma))!.name).toBe(deployedBefore);
    expect(await forced()).toEqual([]);

    await startExperiment(t.db, 'op', {
      study: 'default',
      candidate: 'marked',
      share: 10,
      force: true,
      operator: true,
    });
    // Promoting it at the end of the A/B is a deploy: force again.
    await expect(stopArms(t.db, 'op', 'default', { outcome: 'promote' })).rejects.toThrow(
      /needs an operator's explicit force/,
    );
    const stopped = await stopArms(t.db, 'op', 'default', { outcome: 'promote', force: true, operator: true });
    expect(stopped.deployed!.name).toBe('marked');
    expect((await forced()).map((a) => [a.actor, a.target, (a.detail as { via: string }).via])).toEqual([
      ['op', 'marked', 'experiment.start'],
      ['op', 'marked', 'experiment.promote'],
    ]);
  });
});

describe('one policy name for every command (resolvePolicyName)', () => {
  it('reads starter, deployed, a name and an id, and names the recent versions for an unknown one', async () => {
    const { resolvePolicyName } = await import('../../prisma/policy-store.ts');
    const { resolveStudy } = await import('../../bot/studies.ts');
    const { importTasks } = await import('../../prisma/task-store.ts');
    const { builtinTasks } = await import('../../tasks/library.ts');
    // The bot registers the starter under a name of its checkpoint's hash, never plain "starter".
    const starter = await t.prisma.policyVersion.create({
      data: {
        name: 'starter-1a2b3c',
        algorithm: 'starter',
        checkpointPath: '/nowhere/s',
        checkpointSha256: '1'.repeat(64),
      },
    });
    const deployed = await deployedPolicy(t.prisma);
    expect((await resolvePolicyName(t.prisma, 'starter')).id).toBe(starter.id);
    expect((await resolvePolicyName(t.prisma, 'deployed')).id).toBe(deployed!.id);
    expect((await resolvePolicyName(t.prisma, 'starter-1a2b3c')).id).toBe(starter.id);
    expect((await resolvePolicyName(t.prisma, starter.id)).name).toBe('starter-1a2b3c');
    expect((await resolvePolicyName(t.prisma, 'starter', { starter: async () => deployed! })).id).toBe(deployed!.id);
    await expect(resolvePolicyName(t.prisma, 'no-such')).rejects.toThrow(
      /^No policy version named "no-such"\. Recent versions: starter-1a2b3c, .* \(or starter, deployed\)\.$/,
    );
    // study create --arm starter:50 --arm deployed:50 (docs/running-a-study.md).
    await importTasks(t.prisma, builtinTasks({ kind: 'backend', split: 'train' }).slice(0, 2));
    const study = await resolveStudy(t.prisma, {
      name: 'arms',
      kind: 'backend',
      seed: 1,
      perTask: 2,
      split: 'train',
      arms: ['starter:50', 'deployed:50'],
      consentText: null,
    });
    expect(study.arms).toEqual([
      { policyVersionId: starter.id, share: 50 },
      { policyVersionId: deployed!.id, share: 50 },
    ]);
  });
});
