// The promotion gate deploys a candidate that is not worse than the deployed version (minus the margin) and
// keeps it otherwise; manual deploy and rollback switch versions; every change is audited and announced.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../bot/testing/database.ts';
import { passesGate, promote } from '../../trainer/promote.ts';
import { deployPolicyByName, rollbackPolicy } from '../../prisma/policy-store.ts';
import { deployedPolicy, POLICY_CHANNEL } from '../../prisma/policy-store.ts';
import { TRAINER_LOCK_KEY, tryTrainerLock } from '../../trainer/service.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

async function version(name: string, status: 'candidate' | 'deployed' = 'candidate') {
  return t.prisma.policyVersion.create({
    data: { name, algorithm: 'sweet', checkpointPath: `/nowhere/${name}`, checkpointSha256: '0'.repeat(64), status, ...(status === 'deployed' ? { deployedAt: new Date() } : {}) },
  });
}

describe('promotion gate', () => {
  it('applies candidate >= deployed - margin', () => {
    expect(passesGate({ candidate: 0.5, deployed: 0.5 }, 0)).toBe(true);
    expect(passesGate({ candidate: 0.49, deployed: 0.5 }, 0)).toBe(false);
    expect(passesGate({ candidate: 0.49, deployed: 0.5 }, 0.02)).toBe(true);
  });

  it('deploys a better candidate, keeps a worse one, rolls back, and notifies the bot each time', async () => {
    const notes: string[] = [];
    const unlisten = await t.db.listen(POLICY_CHANNEL, (p) => notes.push(p));
    const a = await version('a', 'deployed');
    const b = await version('b');
    const c = await version('c');
    const score = new Map([
      ['a', 0.3],
      ['b', 0.4],
      ['c', 0.2],
    ]);
    const evaluate = async (v: { name: string }) => score.get(v.name)!;

    const rb = await promote(t.db, 'b', 0, evaluate);
    expect(rb.decision).toBe('deployed');
    expect(rb.scores).toEqual({ candidate: 0.4, deployed: 0.3 });
    expect((await deployedPolicy(t.prisma))!.name).toBe('b');
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: a.id } })).status).toBe('retired');

    const rc = await promote(t.db, 'c', 0.1, evaluate);
    expect(rc.decision).toBe('kept');
    expect((await deployedPolicy(t.prisma))!.name).toBe('b');
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: c.id } })).status).toBe('candidate');

    // With a margin wide enough, the same candidate passes.
    const rc2 = await promote(t.db, 'c', 0.25, evaluate);
    expect(rc2.decision).toBe('deployed');

    const back = await rollbackPolicy(t.db, 'cli');
    expect(back.name).toBe('b');
    expect((await deployedPolicy(t.prisma))!.name).toBe('b');
    await deployPolicyByName(t.db, 'cli', 'a');
    expect((await deployedPolicy(t.prisma))!.name).toBe('a');
    await expect(deployPolicyByName(t.db, 'cli', 'a')).rejects.toThrow(/already deployed/);
    await expect(deployPolicyByName(t.db, 'cli', 'zzz')).rejects.toThrow(/no policy version/i);

    expect(await t.prisma.policyVersion.count({ where: { status: 'deployed' } })).toBe(1);
    const actions = (await t.prisma.auditLog.findMany({ orderBy: { createdAt: 'asc' } })).map((x) => `${x.action}:${x.target}`);
    expect(actions).toEqual(['policy.promote:b', 'policy.keep-candidate:c', 'policy.promote:c', 'policy.rollback:b', 'policy.deploy:a']);
    await new Promise((r) => setTimeout(r, 300));
    await unlisten();
    expect(notes).toEqual([b.id, c.id, b.id, a.id]);
  });
});

describe('trainer lock', () => {
  it('lets one of two concurrent trainers in, and the other after release', async () => {
    const [x, y] = await Promise.all([tryTrainerLock(t.db), tryTrainerLock(t.db)]);
    expect([x, y].filter(Boolean)).toHaveLength(1);
    // Visible to Postgres as an advisory lock on the trainer's key.
    const held = await t.prisma.$queryRawUnsafe<{ n: bigint }[]>(`SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = ${TRAINER_LOCK_KEY}`);
    expect(Number(held[0]!.n)).toBe(1);
    await (x ?? y)!.release();
    const z = await tryTrainerLock(t.db);
    expect(z).not.toBeNull();
    await z!.release();
  });
});
