// "Adapters from anywhere" end to end: the real `sweetloop` binary, a real Postgres database, real vLLM-like HTTP
// servers (testing/openai-server.ts: /v1/models, /v1/load_lora_adapter, /v1/unload_lora_adapter, chat
// completions) and adapter directories written as PEFT writes them. `policy add --adapter --on` checks, copies and
// registers; deploy loads it into the server, where the bot's loader (loadAgent) finds it; `policy update
// --endpoint` moves the server and the adapter follows; rollback; `policy remove` unloads it and keeps the row;
// `policy update --base-model-dir` records the served model's directory. Every refusal names its fault and
// creates nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../../testing/openai-server.ts';
import { writePeftAdapter, type PeftAdapterOptions } from '../../../testing/peft-adapter.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';
import { deployedPolicy } from '../../../prisma/policy-store.ts';
import { buildDialogue } from '../../../tasks/protocol.ts';
import type { BackendTask } from '../../../tasks/model.ts';
import { loadAgent } from '../../../trainer/policies/agent-for.ts';
import { adapterNameFor } from '../../../trainer/policies/vllm-adapters.ts';

const BASE = 'meta-llama/Llama-3.1-8B-Instruct';
const task: BackendTask = {
  kind: 'backend',
  description: 'A function that adds two numbers. The signature of the function is: def add(a, b)',
  reference: 'def add(a, b):\n    return a + b',
  testCases: ['add(1, 2)'],
};

let t: TestDatabase;
let first: OpenAiServer;
let second: OpenAiServer;
let root: string;
let adaptersDir: string;

function sweetloop(args: string[]): Promise<SweetloopRun> {
  return runSweetloop(args, {
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      DATABASE_URL: t.url,
      ADAPTERS_DIR: adaptersDir,
      VLLM_MAX_LORA_RANK: '64',
    },
    timeoutMs: 120_000,
  });
}

let n = 0;
const source = (o: Partial<PeftAdapterOptions> = {}) =>
  writePeftAdapter(join(root, 'made-elsewhere', `adapter-${++n}`), {
    baseModel: BASE,
    rank: 8,
    targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'],
    ...o,
  });

beforeAll(async () => {
  t = await createTestDatabase();
  root = await mkdtemp(join(tmpdir(), 'policy-adapter-'));
  adaptersDir = join(root, 'adapters');
  first = await startOpenAiServer({ model: BASE, maxModelLen: 8192 });
  second = await startOpenAiServer({ model: BASE, maxModelLen: 8192 });
}, 120_000);

afterAll(async () => {
  await first?.close();
  await second?.close();
  await t?.drop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('sweetloop policy add --adapter / update / remove', () => {
  it('adds a PEFT adapter, deploys and loads it, follows its server to a new address, rolls back and removes it', async () => {
    const endpoint = await sweetloop([
      'policy',
      'add',
      'llama-8b',
      '--endpoint',
      first.url,
      '--model',
      BASE,
      '--max-lora-rank',
      '16',
    ]);
    expect(endpoint.code, endpoint.stderr).toBe(0);

    const src = await source();
    const add = await sweetloop(['policy', 'add', 'tuned', '--adapter', src, '--on', 'llama-8b']);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain(
      `registered tuned (adapter on llama-8b, candidate): rank 8, 8 modules, base ${BASE}, copied to ${join(adaptersDir, 'tuned')}`,
    );
    const e = await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'llama-8b' } });
    const v = await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'tuned' } });
    const adapterName = adapterNameFor(v);
    // The adapter refers to its endpoint version and copies nothing of it (no URL).
    expect(v).toMatchObject({
      kind: 'adapter',
      status: 'candidate',
      algorithm: 'external',
      checkpointPath: join(adaptersDir, 'tuned'),
      serving: { endpointVersionId: e.id, adapterName },
    });
    expect(Object.keys(v.serving as object).sort()).toEqual(['adapterName', 'endpointVersionId']);
    expect(v.checkpointSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(readdirSync(join(adaptersDir, 'tuned')).sort()).toEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
    ]);
    expect(
      (await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'policy.add', target: 'tuned' } })).detail,
    ).toMatchObject({ kind: 'adapter', endpoint: 'llama-8b', source: src });

    // Deploy (after the endpoint itself, so there is something to roll back to): the deploy loads it into the
    // server (test/bin/commands/policy-deploy-load.test.ts), and the bot's loader finds it there.
    expect((await sweetloop(['deploy', 'llama-8b'])).code).toBe(0);
    expect((await sweetloop(['deploy', 'tuned'])).stdout.trim()).toBe(
      `tuned: adapter ${adapterName} loaded by ${first.url}\ndeployed tuned`,
    );
    const deployed = (await deployedPolicy(t.prisma))!;
    const onFirst = await loadAgent(deployed, { prisma: t.prisma });
    expect(first.adapterCalls).toEqual([{ op: 'load', name: adapterName, path: join(adaptersDir, 'tuned') }]);
    first.setReply(() => 'Should it add floats too?');
    expect((await onFirst.reply(buildDialogue(task, []))).provenance).toMatchObject({
      servedModel: adapterName,
      adapter: adapterName,
    });
    expect(first.chatRequests().at(-1)!.body.model).toBe(adapterName);
    await onFirst.close(); // still deployed: stays loaded

    // Never the deployed version; never an endpoint its adapters still use.
    const deployedRefused = await sweetloop(['policy', 'remove', 'tuned']);
    expect(deployedRefused.code).toBe(1);
    expect(deployedRefused.stderr).toContain(
      '"tuned" is the deployed version: deploy another one (or roll back) before removing it.',
    );
    const inUse = await sweetloop(['policy', 'remove', 'llama-8b']);
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toContain('adapter version(s) "tuned" are served on "llama-8b": remove them first.');
    const adapterUpdate = await sweetloop(['policy', 'update', 'tuned', '--endpoint', second.url]);
    expect(adapterUpdate.code).toBe(1);
    expect(adapterUpdate.stderr).toContain(
      '"tuned" is an adapter version: it follows its endpoint version; update that one instead',
    );

    // vLLM moves to another host: one update, and the adapter version follows.
    const moved = await sweetloop(['policy', 'update', 'llama-8b', '--endpoint', second.url]);
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout.trim()).toBe(`updated llama-8b: ${second.url} ${BASE}; its adapter versions follow: tuned`);
    expect(
      (await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'policy.update', target: 'llama-8b' } })).detail,
    ).toMatchObject({ changed: { url: { from: first.url, to: second.url } } });
    const onSecond = await loadAgent((await deployedPolicy(t.prisma))!, { prisma: t.prisma });
    expect(second.adapterCalls).toEqual([{ op: 'load', name: adapterName, path: join(adaptersDir, 'tuned') }]);
    second.setReply(() => 'Integers only?');
    expect((await onSecond.reply(buildDialogue(task, []))).text).toBe('Integers only?');
    expect(second.chatRequests().at(-1)!.body.model).toBe(adapterName);

    const back = await sweetloop(['rollback']);
    expect(back.stdout.trim()).toBe('rolled back to llama-8b');

    // Removed: unloaded from the server that has it, the row kept as 'removed', audited.
    const removed = await sweetloop(['policy', 'remove', 'tuned']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout.trim()).toBe('removed tuned (adapter); adapter unloaded from its server');
    expect(second.adapterCalls.at(-1)).toEqual({ op: 'unload', name: adapterName });
    expect(second.adapters.size).toBe(0);
    const row = await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'tuned' } });
    expect(row.status).toBe('removed');
    expect(row.retiredAt).not.toBeNull();
    expect(
      (await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'policy.remove', target: 'tuned' } })).detail,
    ).toMatchObject({ versionId: v.id, kind: 'adapter', previousStatus: 'retired', adapterName, unload: 'unloaded' });
    await onSecond.close(); // a removed version: its unload finds nothing left to unload
    expect(second.adapters.size).toBe(0);

    // A removed version is never deployed, rolled back to, loaded or removed again.
    const redeploy = await sweetloop(['deploy', 'tuned']);
    expect(redeploy.code).toBe(1);
    expect(redeploy.stderr).toContain('"tuned" was removed (sweetloop policy remove): it cannot be deployed.');
    await expect(loadAgent(row, { prisma: t.prisma })).rejects.toThrow('policy version "tuned" was removed');
    expect((await sweetloop(['policy', 'add', 'other', '--endpoint', second.url, '--model', BASE])).code).toBe(0);
    expect((await sweetloop(['deploy', 'other'])).code).toBe(0);
    expect((await sweetloop(['rollback'])).stdout.trim()).toBe('rolled back to llama-8b');
    expect((await sweetloop(['policy', 'remove', 'tuned'])).stderr).toContain('"tuned" was removed already.');

    const list = await sweetloop(['policy', 'list']);
    expect(list.stdout).toMatch(
      new RegExp(
        `^tuned\\s+adapter\\s+removed\\s+no\\s+on llama-8b \\(${second.url.replace(/[.]/g, '\\.')} ${BASE.replace(/[.]/g, '\\.')}\\) \\+ adapter ${adapterName} \\(${join(adaptersDir, 'tuned').replace(/[.]/g, '\\.')}\\)$`,
        'm',
      ),
    );
  }, 300_000);

  it('refuses a wrong base, a rank too high, missing tensors or config, an unknown endpoint and a taken name, creating nothing', async () => {
    const before = await t.prisma.policyVersion.count();
    const audits = await t.prisma.auditLog.count();
    const copies = readdirSync(adaptersDir).sort();
    const refused = async (args: string[], message: string | RegExp) => {
      const r = await sweetloop(['policy', 'add', ...args]);
      expect(r.code, r.stdout).toBe(1);
      if (typeof message === 'string') expect(r.stderr).toContain(message);
      else expect(r.stderr).toMatch(message);
    };
    await refused(
      ['x', '--adapter', await source({ baseModel: 'Qwen/Qwen2.5-7B-Instruct' }), '--on', 'llama-8b'],
      `wrong base: the adapter was trained on "Qwen/Qwen2.5-7B-Instruct", but "llama-8b" serves "${BASE}"`,
    );
    // The endpoint version records --max-lora-rank 16, which wins over VLLM_MAX_LORA_RANK (64 here).
    await refused(
      ['x', '--adapter', await source({ rank: 32 }), '--on', 'llama-8b'],
      "rank too high: the adapter's rank is 32, above the server's maximum LoRA rank 16",
    );
    await refused(
      ['x', '--adapter', await source({ omitModules: ['v_proj'] }), '--on', 'llama-8b'],
      'missing tensors: no lora_A/lora_B weights for target module(s) v_proj in adapter_model.safetensors',
    );
    await refused(
      ['x', '--adapter', await source({ without: 'adapter_model.safetensors' }), '--on', 'llama-8b'],
      /missing tensors: .* has no adapter_model\.safetensors/,
    );
    await refused(
      ['x', '--adapter', await source({ without: 'adapter_config.json' }), '--on', 'llama-8b'],
      /missing adapter_config\.json: .* has no adapter_config\.json/,
    );
    await refused(
      ['x', '--adapter', await source(), '--on', 'no-such-endpoint'],
      'unknown endpoint version "no-such-endpoint": endpoint versions are other, llama-8b',
    );
    await refused(
      ['tuned', '--adapter', await source(), '--on', 'llama-8b'],
      'a policy version named "tuned" already exists: choose another name',
    );
    await refused(['x', '--adapter', await source()], '--adapter needs --on ENDPOINT_VERSION');

    expect(await t.prisma.policyVersion.count()).toBe(before);
    expect(await t.prisma.auditLog.count()).toBe(audits);
    expect(readdirSync(adaptersDir).sort()).toEqual(copies);
    expect(existsSync(join(adaptersDir, 'x'))).toBe(false);

    // With the rank recorded higher, the same adapter goes in.
    expect((await sweetloop(['policy', 'update', 'llama-8b', '--max-lora-rank', '32'])).code).toBe(0);
    const ok = await sweetloop(['policy', 'add', 'wide', '--adapter', await source({ rank: 32 }), '--on', 'llama-8b']);
    expect(ok.code, ok.stderr).toBe(0);
  }, 300_000);

  it("records the served model's directory on a version registered without it, and refuses one without a tokenizer", async () => {
    const plain = await sweetloop(['policy', 'add', 'no-base', '--endpoint', first.url, '--model', BASE]);
    expect(plain.code, plain.stderr).toBe(0);
    const empty = join(root, 'not-a-model');
    await mkdir(empty, { recursive: true });
    const bad = await sweetloop(['policy', 'update', 'no-base', '--base-model-dir', empty]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      `${empty} has no tokenizer.json: --base-model-dir must be the served model's Hugging Face directory`,
    );
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'no-base' } })).serving).not.toHaveProperty(
      'baseModelDir',
    );

    const dir = join(root, 'hf-base');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'tokenizer.json'), '{}');
    const ok = await sweetloop(['policy', 'update', 'no-base', '--base-model-dir', dir]);
    expect(ok.code, ok.stderr).toBe(0);
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'no-base' } })).serving).toMatchObject({
      baseModelDir: dir,
      url: first.url,
    });
    const audit = await t.prisma.auditLog.findFirstOrThrow({ where: { action: 'policy.update', target: 'no-base' } });
    expect(audit.detail).toMatchObject({ changed: { baseModelDir: { from: null, to: dir } } });

    // How many requests the server takes at once (vLLM --max-num-seqs): recorded at add or later, audited.
    const capped = await sweetloop([
      'policy',
      'add',
      'capped',
      '--endpoint',
      first.url,
      '--model',
      BASE,
      '--max-in-flight',
      '64',
    ]);
    expect(capped.code, capped.stderr).toBe(0);
    expect((await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'capped' } })).serving).toMatchObject({
      maxInFlight: 64,
    });
    expect((await sweetloop(['policy', 'update', 'capped', '--max-in-flight', '0'])).stderr).toContain('max-in-flight');
    const raised = await sweetloop(['policy', 'update', 'capped', '--max-in-flight', '256']);
    expect(raised.code, raised.stderr).toBe(0);
    const inFlightAudit = await t.prisma.auditLog.findFirstOrThrow({
      where: { action: 'policy.update', target: 'capped' },
    });
    expect(inFlightAudit.detail).toMatchObject({ changed: { maxInFlight: { from: 64, to: 256 } } });
    const onAdapter = await sweetloop([
      'policy',
      'add',
      'x',
      '--adapter',
      dir,
      '--on',
      'capped',
      '--max-in-flight',
      '8',
    ]);
    expect(onAdapter.code).toBe(1);
    expect(onAdapter.stderr).toContain("--adapter takes its endpoint version's settings: drop --max-in-flight");
  }, 120_000);
});
