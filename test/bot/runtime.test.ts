// The runtime's default agent loader on checkpoint versions: sessions are answered by Sweetloop's own
// OpenAI-compatible server started inside the process (trainer/serve/local.ts) through the endpoint agent, and a
// deploy (LISTEN/NOTIFY) loads the new version while a session that started on the old one keeps being answered
// by it; the old version is unloaded once no session holds it. Real Postgres, real tiny checkpoints, the real
// llama.cpp engine (the default LOCAL_SERVE_ENGINE).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acceptConsent } from '../../prisma/participant-store.ts';
import { createRuntime, type Runtime } from '../../bot/runtime.ts';
import { createTestDatabase } from '../../testing/database.ts';
import { makeTinyCheckpoint } from '../../testing/tiny-checkpoint.ts';
import { openDatabase } from '../../prisma/db.ts';
import { deployPolicyByName } from '../../prisma/deployment-store.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { builtinTasks } from '../../tasks/library.ts';
import type { TurnProvenance } from '../../tasks/agent.ts';

/** The value of a counter line in Prometheus text, 0 when absent. */
function metric(text: string, line: string): number {
  const hit = text.split('\n').find((l) => l.startsWith(`${line} `));
  return hit ? Number(hit.slice(line.length + 1)) : 0;
}

describe('runtime: checkpoint versions through the local server', () => {
  let t: Awaited<ReturnType<typeof createTestDatabase>>;
  let rt: Runtime;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sweetloop-runtime-'));
    t = await createTestDatabase();
    await importTasks(t.prisma, builtinTasks({ kind: 'backend' }).slice(0, 3), { split: 'train' });
    const [a, b] = await Promise.all([
      makeTinyCheckpoint({ dir: join(dir, 'a'), seed: 1, maxPositionEmbeddings: 2048 }),
      makeTinyCheckpoint({ dir: join(dir, 'b'), seed: 2, maxPositionEmbeddings: 2048 }),
    ]);
    await t.prisma.policyVersion.create({
      data: {
        name: 'ck1',
        algorithm: 'external',
        kind: 'checkpoint',
        checkpointPath: a,
        status: 'deployed',
        deployedAt: new Date(),
      },
    });
    await t.prisma.policyVersion.create({
      data: { name: 'ck2', algorithm: 'sweet', kind: 'checkpoint', checkpointPath: b },
    });
    rt = await createRuntime({
      channel: 'console',
      db: t.db,
      maxTurns: 4,
      idleMinutes: 30,
      render: null,
      policyPollMs: 60_000,
      localServe: { engine: 'llama', maxBatch: 4, maxQueue: 8 },
    });
  }, 120_000);
  afterAll(async () => {
    await rt?.close();
    await t?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function provenanceOf(turnId: string): Promise<TurnProvenance> {
    const turn = await t.prisma.turn.findUniqueOrThrow({ where: { id: turnId } });
    return turn.provenance as unknown as TurnProvenance;
  }

  it('answers a session through the local server, follows a deploy, and keeps the old version for its running session', async () => {
    await acceptConsent(t.prisma, 'console:old', 'old');
    const old = await rt.engine.start({ externalId: 'console:old', displayName: 'old' }, 'backend');
    const s1 = await rt.engine.agentStep(old.sessionId);
    const local = rt.localServing();
    expect(local).not.toBeNull();
    const p1 = await provenanceOf(s1!.turnId);
    expect(p1).toMatchObject({ engine: 'llama', servedModel: 'ck1', adapter: null });
    // LOCAL_SERVE_LOGPROBS is off by default: the bot does not ask its own server for them.
    expect(p1).toMatchObject({ logprobs: null, logprobsRequested: false });
    expect(local!.loaded()).toEqual(['ck1']);
    const m1 = await (await fetch(`${local!.server.url}/metrics`)).text();
    expect(metric(m1, 'sweetloop_serve_requests_total{status="200"}')).toBe(1);
    expect(metric(m1, 'sweetloop_serve_generated_tokens_total')).toBeGreaterThan(0);

    // Another process deploys ck2: the notification makes the local server load it; ck1 stays for the old session.
    const other = await openDatabase({ databaseUrl: t.url, pgliteDir: '/nonexistent' });
    try {
      await deployPolicyByName(other, 'trainer', 'ck2');
    } finally {
      await other.close();
    }
    const deadline = Date.now() + 60_000;
    while (!local!.loaded().includes('ck2') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(local!.loaded().sort()).toEqual(['ck1', 'ck2']);
    const models = (await (await fetch(`${local!.url}/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['ck2', 'ck1']);

    await rt.engine.humanTurn(old.sessionId, 'Round to two decimals, please.', null);
    const s2 = await rt.engine.agentStep(old.sessionId);
    expect(await provenanceOf(s2!.turnId)).toMatchObject({ engine: 'llama', servedModel: 'ck1' });

    await acceptConsent(t.prisma, 'console:new', 'new');
    const fresh = await rt.engine.start({ externalId: 'console:new', displayName: 'new' }, 'backend');
    const n1 = await rt.engine.agentStep(fresh.sessionId);
    expect(await provenanceOf(n1!.turnId)).toMatchObject({ engine: 'llama', servedModel: 'ck2' });
    const m2 = await (await fetch(`${local!.server.url}/metrics`)).text();
    expect(metric(m2, 'sweetloop_serve_requests_total{status="200"}')).toBe(3);

    // The old session ends: its agent is closed on eviction and ck1 leaves the server.
    await rt.engine.stop('console:old');
    expect(await rt.engine.evictRetired()).toHaveLength(1);
    expect(local!.loaded()).toEqual(['ck2']);
    const gone = await fetch(`${local!.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'ck1', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
    });
    expect(gone.status).toBe(404);
  }, 300_000);
});
