// The bot's local server (trainer/serve/local.ts) with the tfjs engine, through loadAgent's local path: a
// checkpoint version's agent is the endpoint agent against the local server (model = the version's name, tfjs
// provenance, the checkpoint's window), holds keep a version loaded, the last release unloads it, and a version
// that cannot be loaded fails with its reason and leaves nothing held. Real Postgres, a real tiny checkpoint.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../bot/testing/database.ts';
import { makeTinyCheckpoint } from '../../../bot/testing/tiny-checkpoint.ts';
import type { BackendTask } from '../../../tasks/model.ts';
import { buildDialogue } from '../../../tasks/protocol.ts';
import { loadAgent } from '../../../trainer/policies/agent-for.ts';
import { LocalServing } from '../../../trainer/serve/local.ts';

const task: BackendTask = {
  kind: 'backend',
  description: 'A function that converts a temperature. The signature of the function is: def convert(t)',
  reference: 'def convert(t):\n    return t * 9 / 5 + 32\n',
  testCases: ['convert(0)'],
};

describe('local serving (tfjs engine)', () => {
  let t: TestDatabase;
  let dir: string;
  let local: LocalServing;
  beforeAll(async () => {
    t = await createTestDatabase();
    dir = await makeTinyCheckpoint({ seed: 4, maxPositionEmbeddings: 1024 });
    local = await LocalServing.start({ prisma: t.prisma, engine: 'tfjs', maxBatch: 1, maxQueue: 4 });
  }, 60_000);
  afterAll(async () => {
    await local?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves a checkpoint version to the endpoint agent and unloads it on the last release', async () => {
    const v = await t.prisma.policyVersion.create({ data: { name: 'tiny-local', algorithm: 'starter', checkpointPath: dir } });
    const agent = await loadAgent(v, { local, seed: 7, sampling: { maxTokens: 8 } });
    expect(local.loaded()).toEqual(['tiny-local']);
    try {
      const r = await agent.reply(buildDialogue(task, []));
      expect(r.provenance).toMatchObject({ engine: 'tfjs', servedModel: 'tiny-local', adapter: null, sampling: { seed: 7, maxTokens: 8 } });
      expect(r.completionTokens).toBeLessThanOrEqual(8);
      // A second holder (the deployed version, say) keeps it loaded past the agent's close.
      const held = await local.acquire(v);
      expect(held).toMatchObject({ model: 'tiny-local', engine: 'tfjs', contextWindow: 1024, url: local.url });
    } finally {
      await agent.close();
    }
    expect(local.loaded()).toEqual(['tiny-local']);
    await local.release(v);
    expect(local.loaded()).toEqual([]);
    const health = (await (await fetch(`${local.server.url}/metrics`)).text()).split('\n');
    expect(health).toContain('sweetloop_serve_requests_total{status="200"} 1');
  }, 120_000);

  it('refuses versions it cannot load, with the reason, holding nothing', async () => {
    const missing = await t.prisma.policyVersion.create({ data: { name: 'gone', algorithm: 'starter', checkpointPath: '/nonexistent/checkpoint' } });
    await expect(loadAgent(missing, { local })).rejects.toThrow(/nonexistent/);
    expect(local.loaded()).toEqual([]);
    const endpoint = await t.prisma.policyVersion.create({
      data: { name: 'remote', algorithm: 'external', kind: 'endpoint', serving: { url: 'http://127.0.0.1:9/v1', model: 'm', contextWindow: 4096, temperature: 0.7, topP: 0.95, maxTokens: 256 } },
    });
    await expect(local.acquire(endpoint)).rejects.toThrow(/only checkpoints are served locally/);
  });
});
