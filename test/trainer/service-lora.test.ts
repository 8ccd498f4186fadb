// The trainer service with an endpoint deployed whose --base-model-dir is a tiny Hugging Face directory, served by
// the real OpenAI-compatible test server: one cycle trains a fresh LoRA adapter on that base (rank
// TRAINER_LORA_RANK), publishes it as "adapter on endpoint" and puts it through the gate, then waits. With an
// adapter deployed a run continues that adapter; an adapter marked as trained on erased data is not trained on:
// the service goes back to the endpoint's base (and says so), `train --from` it is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../testing/openai-server.ts';
import { deployPolicyByName } from '../../prisma/deployment-store.ts';
import { importTasks } from '../../prisma/task-store.ts';
import type { PolicyVersion } from '../../prisma/generated/client.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { trainCommand } from '../../trainer/commands.ts';
import { serviceCommand } from '../../trainer/service-command.ts';
import type { TrainerSettings } from '../../trainer/settings.ts';
import { loadCheckpoint } from '../../trainer/model/checkpoint.ts';
import { addLora, saveLora } from '../../trainer/model/lora.ts';
import { readSafetensors } from '../../trainer/model/safetensors.ts';
import { registerAdapterVersion, registerEndpointVersion } from '../../trainer/policies/registry.ts';
import { ServiceStatus } from '../../trainer/service.ts';
import { trainingSource } from '../../trainer/training-source.ts';
import { scratchDir, seedSessions, tinyPolicy } from './fixture.ts';

let t: TestDatabase;
let server: OpenAiServer;
let root: string;
let baseDir: string;
let endpoint: PolicyVersion;

function settings(): TrainerSettings {
  return {
    checkpointRoot: join(root, 'ck'),
    seed: 3,
    ratingWeight: 0,
    promotionAlpha: 0.05,
    promotionMargin: 0,
    promotionEffect: 0.1,
    promotionPower: 0.8,
    promotionHumanAbShare: 0,
    minNewSessions: 1,
    pollSeconds: 1,
    bwrapPath: '/usr/bin/bwrap',
    pythonPath: '/usr/bin/python3',
    chromiumPath: 'chromium',
    progress: 'none',
    trainingData: { source: 'simulated', simulatedWeight: 1 },
    usePreferences: false,
    maxLoraRank: 16,
    loraRank: 4,
    maxBackoffSeconds: 4,
  };
}

beforeAll(async () => {
  t = await createTestDatabase();
  root = scratchDir('service-lora');
  baseDir = await tinyPolicy(join(root, 'base'));
  await seedSessions(t.prisma, 2);
  await importTasks(t.prisma, generateMiniTasks({ seed: 12, count: 2, split: 'test' }));
  // Every game ends at the first turn with an answer: the gate's games stay short.
  server = await startOpenAiServer({
    model: 'tiny-instruct',
    maxModelLen: 768,
    reply: () => 'I WANT TO ANSWER: def f(x):\n    return x',
  });
  endpoint = await registerEndpointVersion(t.prisma, {
    name: 'tiny-endpoint',
    url: server.url,
    model: 'tiny-instruct',
    baseModelDir: baseDir,
    maxTokens: 64,
  });
  await deployPolicyByName(t.db, 'test', 'tiny-endpoint');
}, 240_000);

afterAll(async () => {
  await server?.close();
  await t?.drop();
  if (root) rmSync(root, { recursive: true, force: true });
});

const config = (dir: string) =>
  JSON.parse(readFileSync(join(dir, 'adapter_config.json'), 'utf8')) as {
    r: number;
    lora_alpha: number;
    target_modules: string[];
  };

describe('the trainer service on a served base model', () => {
  it("one cycle trains a fresh LoRA adapter on the endpoint's base, publishes it on the endpoint and gates it", async () => {
    const status = new ServiceStatus();
    const controller = new AbortController();
    const lines: string[] = [];
    const log = console.error;
    console.error = (l: string) => lines.push(String(l));
    let gated: PolicyVersion | null = null;
    try {
      const service = serviceCommand(
        t.db,
        settings(),
        { algo: 'rft', preset: 'cpu-small', loraPreset: 'cpu-small', kind: 'backend', evalEpisodes: 2, maxSteps: 1 },
        { status, signal: controller.signal },
      );
      const end = Date.now() + 240_000;
      while (!gated && Date.now() < end && status.failures === 0) {
        gated = await t.prisma.policyVersion.findFirst({
          where: { kind: 'adapter', metrics: { path: ['gate'], not: 'null' } },
        });
        if (!gated) await new Promise((r) => setTimeout(r, 250));
      }
      controller.abort();
      await service;
    } finally {
      console.error = log;
    }
    expect(status.failures, lines.join('\n')).toBe(0);
    expect(gated, lines.join('\n')).not.toBeNull();
    expect(lines.join('\n')).toMatch(
      /next run: from "tiny-endpoint": a fresh adapter, LoRA rank 4 \(alpha 8; q_proj, k_proj, v_proj, o_proj\), on the base model .*base of "tiny-endpoint" \("tiny-endpoint" is the base model itself, with no adapter deployed on it\), preset cpu-small/,
    );
    expect(gated).toMatchObject({ kind: 'adapter', parentId: endpoint.id, algorithm: 'rft' });
    expect(config(gated!.checkpointPath!)).toMatchObject({ r: 4, lora_alpha: 8 });
    expect(await t.prisma.trainingRun.count({ where: { status: 'succeeded' } })).toBe(1);
    expect(['waiting', 'training']).toContain(status.state);
  }, 300_000);

  it('with an adapter deployed, a run continues it; marked as trained on erased data, it is not trained on', async () => {
    // A hand-made adapter whose B is far from a fresh one's zeros: continuing it keeps B near 0.5.
    const dir = join(root, 'adapters', 'made');
    const { model } = await loadCheckpoint(baseDir, { name: 'made-adapter', trainable: false });
    addLora(model, { rank: 2, alpha: 2, targetModules: ['q_proj', 'v_proj'], seed: 1 });
    for (const ad of model.adapters.values()) ad.b.assign(tf.fill(ad.b.shape, 0.5));
    await saveLora(dir, model, baseDir);
    model.dispose();
    const made = await registerAdapterVersion(t.prisma, {
      name: 'made',
      endpoint,
      adapterDir: dir,
      algorithm: 'external',
      parentId: endpoint.id,
    });
    await deployPolicyByName(t.db, 'test', 'made');

    const s = settings();
    const child = await trainCommand(t.db, s, {
      algo: 'rft',
      from: 'deployed',
      preset: 'cpu-small',
      kind: 'backend',
      maxSteps: 1,
    });
    expect(child).toMatchObject({ kind: 'adapter', parentId: made.id });
    expect(config(child.checkpointPath!)).toMatchObject({ r: 2, lora_alpha: 2, target_modules: ['q_proj', 'v_proj'] });
    const w = await readSafetensors(join(child.checkpointPath!, 'adapter_model.safetensors'));
    const bs = [...w].filter(([n]) => n.includes('lora_B')).flatMap(([, v]) => [...v.data]);
    expect(bs.length).toBeGreaterThan(0);
    for (const b of bs) expect(Math.abs(b - 0.5)).toBeLessThan(0.05);
    // Explicit LoRA settings that differ from the adapter's are refused rather than ignored.
    await expect(
      trainCommand(t.db, s, { algo: 'rft', from: 'made', preset: 'cpu-small', kind: 'backend', maxSteps: 1, lora: 8 }),
    ).rejects.toThrow(/continues that adapter, so LoRA rank 8 .* does not apply/);

    // /privacy delete marks it: the service goes back to the endpoint's base, `train --from` it is refused.
    await t.prisma.policyVersion.update({ where: { id: made.id }, data: { metrics: { trainedOnErasedData: true } } });
    const lora = { rank: 4, alpha: 8, targetModules: ['q_proj' as const] };
    const service = await trainingSource(
      t.prisma,
      await t.prisma.policyVersion.findUniqueOrThrow({ where: { id: made.id } }),
      { onErased: 'ancestor', lora, loraExplicit: false, defaultMaxLoraRank: 16 },
    );
    expect(service).toMatchObject({ ok: true, fromId: endpoint.id, baseDir, lora });
    expect(service.ok && service.continueAdapter).toBeFalsy();
    expect(service.ok && service.summary).toMatch(
      /^"made" was trained on sessions since erased .*: training from "tiny-endpoint", the nearest version before it, instead; from "tiny-endpoint": a fresh adapter/,
    );
    const runs = await t.prisma.trainingRun.count();
    await expect(
      trainCommand(t.db, s, { algo: 'rft', from: 'made', preset: 'cpu-small', kind: 'backend', maxSteps: 1 }),
    ).rejects.toThrow(/"made" was trained on sessions since erased.*Start from "tiny-endpoint"/);
    // The child descends from it: refused too, and no run row was made for either refusal.
    await expect(
      trainCommand(t.db, s, { algo: 'rft', from: child.name, preset: 'cpu-small', kind: 'backend', maxSteps: 1 }),
    ).rejects.toThrow(new RegExp(`"${child.name}" descends from "made"`));
    expect(await t.prisma.trainingRun.count()).toBe(runs);
  }, 300_000);
});
