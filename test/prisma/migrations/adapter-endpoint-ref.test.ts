// prisma/migrations/20261205134500_adapter_endpoint_ref: adapter versions stored with a copy of their endpoint
// version's settings (URL and all) keep only their reference and adapter name, so they follow an update of the
// endpoint; an adapter on a checkpoint version (sweetloop serve) and endpoint versions are untouched; and a
// version can be marked 'removed'.
import { describe, expect, it } from 'vitest';
import { databaseBeforeMigration } from '../../helpers/migration.ts';
import { resolveServing } from '../../../trainer/policies/serving.ts';

const MIGRATION = '20261205134500_adapter_endpoint_ref';
const t = databaseBeforeMigration(MIGRATION);

describe(`migration ${MIGRATION}`, () => {
  it('keeps only the endpoint reference and adapter name of adapters on endpoint versions', async () => {
    const q = t.sql;
    const endpoint = '11111111-1111-4111-8111-111111111111';
    const adapter = '22222222-2222-4222-8222-222222222222';
    const checkpoint = '33333333-3333-4333-8333-333333333333';
    const onCheckpoint = '44444444-4444-4444-8444-444444444444';
    const endpointServing = {
      url: 'http://old-host:8000/v1',
      model: 'm',
      apiKeyEnv: 'KEY',
      contextWindow: 8192,
      temperature: 0.7,
      topP: 0.95,
      maxTokens: 512,
      baseModelDir: '/models/m',
    };
    const insert = (id: string, name: string, kind: string, serving: unknown, path: string | null) =>
      q(
        `INSERT INTO "PolicyVersion" (id, name, algorithm, kind, "checkpointPath", serving) VALUES ($1::uuid, $2, 'external', $3, $4, $5::jsonb)`,
        id,
        name,
        kind,
        path,
        serving === null ? null : JSON.stringify(serving),
      );
    await insert(endpoint, 'e', 'endpoint', endpointServing, null);
    await insert(
      adapter,
      'a',
      'adapter',
      { ...endpointServing, endpointVersionId: endpoint, adapterName: 'a-22222222' },
      '/adapters/a',
    );
    await insert(checkpoint, 'c', 'checkpoint', null, '/ckpt/c');
    await insert(
      onCheckpoint,
      'ac',
      'adapter',
      { endpointVersionId: checkpoint, adapterName: 'ac-lora', baseModelDir: '/ckpt/c' },
      '/adapters/ac',
    );

    const { applied } = await t.migrateRest();
    expect(applied[0]).toBe(MIGRATION);

    const rows = new Map((await t.db.prisma.policyVersion.findMany()).map((v) => [v.name, v]));
    expect(rows.get('a')!.serving).toEqual({ endpointVersionId: endpoint, adapterName: 'a-22222222' });
    expect(rows.get('e')!.serving).toEqual(endpointServing);
    expect(rows.get('ac')!.serving).toEqual({
      endpointVersionId: checkpoint,
      adapterName: 'ac-lora',
      baseModelDir: '/ckpt/c',
    });
    // The adapter now reads its endpoint's settings, and follows them.
    expect(await resolveServing(t.db.prisma, rows.get('a')!)).toEqual({
      ...endpointServing,
      endpointVersionId: endpoint,
      adapterName: 'a-22222222',
    });
    await t.db.prisma.policyVersion.update({
      where: { id: endpoint },
      data: { serving: { ...endpointServing, url: 'http://new-host:8000/v1' } },
    });
    expect((await resolveServing(t.db.prisma, rows.get('a')!)).url).toBe('http://new-host:8000/v1');

    expect(
      (await t.db.prisma.policyVersion.update({ where: { id: adapter }, data: { status: 'removed' } })).status,
    ).toBe('removed');
  });
});
