// Trained versions reach the server, end to end: a tiny base model registered as an endpoint version whose local
// Hugging Face directory is its --base-model-dir, served (for chat and adapter loading) by the real
// OpenAI-compatible test server. `sweetloop train --algo sweet --from <endpoint> --lora 4` (trainCommand) trains
// LoRA adapters on that base, the critic included, and publishes "adapter A on endpoint E" in PEFT layout;
// deploying it and loading its agent sends POST /v1/load_lora_adapter with the adapter's name and directory, and
// requests then name the adapter as their model; rolling back switches requests to the base model and unloads
// the adapter. A second run of the same config, interrupted after the critic's first update and resumed, ends
// with the same critic and the same published adapter (the LoRA critic's checkpoint reloads identically).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../testing/openai-server.ts';
import { deployPolicyByName, rollbackPolicy } from '../../prisma/deployment-store.ts';
import type { PolicyVersion } from '../../prisma/generated/client.ts';
import { buildDialogue } from '../../tasks/protocol.ts';
import type { BackendTask } from '../../tasks/model.ts';
import { trainCommand } from '../../trainer/commands.ts';
import type { TrainerSettings } from '../../trainer/settings.ts';
import { loadCheckpoint } from '../../trainer/model/checkpoint.ts';
import { loadLora } from '../../trainer/model/lora.ts';
import { readSafetensors } from '../../trainer/model/safetensors.ts';
import { loadAgent, type LoadedAgent } from '../../trainer/policies/agent-for.ts';
import { registerEndpointVersion } from '../../trainer/policies/registry.ts';
import { resolveServing, servingOf } from '../../trainer/policies/serving.ts';
import { checkAdapterDir } from '../../trainer/policies/adapter-check.ts';
import { adapterNameFor } from '../../trainer/policies/vllm-adapters.ts';
import { createRun, executeRun, RunInterrupted, type RunConfig } from '../../trainer/runs.ts';
import { scratchDir, seedSessions, tinyPolicy } from './fixture.ts';

let t: TestDatabase;
let server: OpenAiServer;
let root: string;
let baseDir: string;
let endpoint: PolicyVersion;

const SERVED_MODEL = 'tiny-instruct';

const task: BackendTask = {
  kind: 'backend',
  description: 'A function that doubles a number. The signature of the function is: def double(x)',
  reference: 'def double(x):\n    return 2 * x',
  testCases: ['double(2)'],
};

function settings(checkpointRoot: string): TrainerSettings {
  return {
    checkpointRoot,
    seed: 3,
    ratingWeight: 0,
    promotionAlpha: 0.05,
    promotionMargin: 0,
    promotionEffect: 0.1,
    promotionPower: 0.8,
    promotionHumanAbShare: 0,
    minNewSessions: 1,
    pollSeconds: 60,
    bwrapPath: 'bwrap',
    pythonPath: 'python3',
    chromiumPath: 'chromium',
    progress: 'none',
    trainingData: { source: 'simulated', simulatedWeight: 1 },
    usePreferences: true,
    maxLoraRank: 16,
    loraRank: 4,
    maxBackoffSeconds: 60,
  };
}

beforeAll(async () => {
  t = await createTestDatabase();
  root = scratchDir('adapter-training');
  baseDir = await tinyPolicy(join(root, 'base'));
  await seedSessions(t.prisma, 4);
  server = await startOpenAiServer({ model: SERVED_MODEL, maxModelLen: 768 });
  endpoint = await registerEndpointVersion(t.prisma, {
    name: 'tiny-endpoint',
    url: server.url,
    model: SERVED_MODEL,
    baseModelDir: baseDir,
    maxTokens: 128,
  });
  await deployPolicyByName(t.db, 'test', 'tiny-endpoint');
}, 240_000);

afterAll(async () => {
  await server?.close();
  await t?.drop();
  if (root) rmSync(root, { recursive: true, force: true });
});

/** Every tensor of a safetensors file, as plain arrays by name. */
async function tensors(file: string): Promise<Map<string, number[]>> {
  return new Map([...(await readSafetensors(file))].map(([k, v]) => [k, [...v.data]]));
}

function maxDiff(a: Map<string, number[]>, b: Map<string, number[]>): number {
  expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
  let d = 0;
  for (const [k, x] of a) x.forEach((v, i) => (d = Math.max(d, Math.abs(v - b.get(k)![i]!))));
  return d;
}

describe("LoRA training on an endpoint version's base model", () => {
  let adapter: PolicyVersion;

  it('publishes an adapter version on the endpoint, in PEFT layout, with a LoRA critic', async () => {
    const s = settings(join(root, 'straight'));
    adapter = await trainCommand(t.db, s, {
      algo: 'sweet',
      from: 'tiny-endpoint',
      preset: 'cpu-small',
      kind: 'backend',
      maxSteps: 2,
      lora: 4,
    });

    expect(adapter).toMatchObject({ kind: 'adapter', status: 'candidate', algorithm: 'sweet', parentId: endpoint.id });
    // The row refers to its endpoint version (whose address it follows) and holds nothing else of it.
    expect(adapter.serving).toEqual({ endpointVersionId: endpoint.id, adapterName: adapterNameFor(adapter) });
    const serving = await resolveServing(t.prisma, adapter);
    const base = servingOf(endpoint);
    expect(serving).toMatchObject({
      url: base.url,
      model: SERVED_MODEL,
      baseModelDir: base.baseModelDir,
      endpointVersionId: endpoint.id,
      adapterName: adapterNameFor(adapter),
    });
    expect(serving.adapterName).toMatch(/^sweet-[0-9a-f]{8}-[0-9a-f]{8}$/);

    // PEFT layout: the config and the adapter weights only (no base weights, no optimizer state).
    const dir = adapter.checkpointPath!;
    expect(readdirSync(dir).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8'))).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      r: 4,
      lora_alpha: 8,
      target_modules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'],
      base_model_name_or_path: base.baseModelDir,
    });
    // What the trainer writes passes the check an adapter made elsewhere gets (sweetloop policy add --adapter).
    expect(
      await checkAdapterDir(dir, {
        baseNames: [SERVED_MODEL, base.baseModelDir!],
        maxRank: 16,
        endpointName: endpoint.name,
      }),
    ).toMatchObject({ rank: 4, alpha: 8 });
    const weights = await readSafetensors(join(dir, 'adapter_model.safetensors'));
    const names = [...weights.keys()];
    expect(names.length).toBe(8); // 1 layer x 4 modules x (A, B)
    for (const n of names)
      expect(n).toMatch(/^base_model\.model\.model\.layers\.0\.self_attn\.[qkvo]_proj\.lora_[AB]\.weight$/);
    for (const [n, w] of weights) expect(n.includes('lora_A') ? w.shape[0] : w.shape[1]).toBe(4);
    // B starts at zero: a non-zero B means the actor's updates reached the published adapter.
    expect(names.filter((n) => n.includes('lora_B')).some((n) => weights.get(n)!.data.some((x) => x !== 0))).toBe(true);
    // It loads onto the base it was trained on.
    const { model } = await loadCheckpoint(baseDir, { name: 'adapter-check', trainable: false });
    try {
      await loadLora(dir, model);
      expect(model.adapters.size).toBe(4);
    } finally {
      model.dispose();
    }

    // The critic trained adapters over the same base too: its result is an adapter, not a copy of the model.
    const run = await t.prisma.trainingRun.findUniqueOrThrow({ where: { id: adapter.trainingRunId! } });
    const criticDir = join(run.checkpointDir!, 'critic');
    expect(existsSync(join(criticDir, 'adapter_config.json'))).toBe(true);
    expect(existsSync(join(criticDir, 'model.safetensors'))).toBe(false);
    expect(run.log).toMatch(/critic: \d+ trajectory pairs from 8 sessions \(LoRA\)/);
  }, 300_000);

  it('resumed after an interruption inside the critic phase, ends with the same critic and adapter', async () => {
    const straight = await t.prisma.trainingRun.findUniqueOrThrow({ where: { id: adapter.trainingRunId! } });
    const cfg = straight.config as unknown as RunConfig;
    // The same run, checkpointing after every update (checkpoints do not change what is learnt).
    const ctx = { prisma: t.prisma, checkpointRoot: join(root, 'resumed'), progress: 'none' as const };
    const run = await createRun(ctx, { ...cfg, train: { ...cfg.train, checkpointEvery: 1 } });
    await expect(executeRun({ ...ctx, stopAfterSteps: 1 }, run.id)).rejects.toBeInstanceOf(RunInterrupted);
    const mid = await t.prisma.trainingRun.findUniqueOrThrow({ where: { id: run.id } });
    expect(mid.progress).toMatchObject({ done: [], current: { phase: 'critic', step: 1 } });
    const ckpt = (mid.progress as { current: { dir: string } }).current.dir;
    expect(existsSync(join(ckpt, 'adapter_config.json'))).toBe(true);
    expect(existsSync(join(ckpt, 'model.safetensors'))).toBe(false);

    const resumed = await executeRun(ctx, run.id);
    const critic = (r: { checkpointDir: string | null }) =>
      join(r.checkpointDir!, 'critic', 'adapter_model.safetensors');
    expect(maxDiff(await tensors(critic(straight)), await tensors(critic(run)))).toBeLessThanOrEqual(1e-6);
    const published = (v: PolicyVersion) => join(v.checkpointPath!, 'adapter_model.safetensors');
    expect(maxDiff(await tensors(published(adapter)), await tensors(published(resumed)))).toBeLessThanOrEqual(1e-6);
    expect(resumed.kind).toBe('adapter');
  }, 300_000);

  it('deploy loads the adapter into the server and requests name it; rollback switches back and unloads it', async () => {
    const name = (await resolveServing(t.prisma, adapter)).adapterName!;
    server.adapterCalls.length = 0;
    server.setReply(() => 'Should it work on negative numbers too?');

    // What the bot's engine does on each deploy: load the deployed version's agent, close the one it replaces.
    const agents = new Map<string, LoadedAgent>();
    const follow = async (v: PolicyVersion): Promise<LoadedAgent> => {
      const next = await loadAgent(v, { prisma: t.prisma });
      for (const [id, old] of agents) if (id !== v.id) await old.close(), agents.delete(id);
      agents.set(v.id, next);
      return next;
    };

    const deployed = await deployPolicyByName(t.db, 'test', adapter.name);
    const onAdapter = await follow(deployed);
    expect(server.adapterCalls).toEqual([{ op: 'load', name, path: adapter.checkpointPath }]);
    expect([...server.adapters]).toEqual([[name, adapter.checkpointPath]]);
    const r = await onAdapter.reply(buildDialogue(task, []));
    expect(r.text).toBe('Should it work on negative numbers too?');
    expect(r.provenance).toMatchObject({ servedModel: name, adapter: name });
    expect(server.chatRequests().at(-1)!.body.model).toBe(name);

    const back = await rollbackPolicy(t.db, 'test');
    expect(back.name).toBe('tiny-endpoint');
    const onBase = await follow(back);
    expect(server.adapterCalls.slice(1)).toEqual([{ op: 'unload', name }]);
    expect(server.adapters.size).toBe(0);
    await onBase.reply(buildDialogue(task, []));
    expect(server.chatRequests().at(-1)!.body.model).toBe(SERVED_MODEL);
    for (const a of agents.values()) await a.close();
  }, 60_000);
});
