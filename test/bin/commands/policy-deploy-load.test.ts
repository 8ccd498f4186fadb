// `sweetloop deploy` (and `rollback`) of an adapter version asks its server to load the adapter before switching,
// over a vLLM-like server that reads adapters as vLLM does (testing/openai-server.ts with maxLoraRank): the
// real `sweetloop` binary, a real Postgres database, PEFT adapter directories. A path the server cannot read and a
// rank above the server's are refused with the server's own message and nothing switches; a server that cannot be
// reached is refused too, unless --no-check; the load happens at deploy, not at the first session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../../testing/openai-server.ts';
import { writePeftAdapter } from '../../../testing/peft-adapter.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';
import { deployedPolicy } from '../../../prisma/policy-store.ts';
import { adapterNameFor } from '../../../trainer/policies/vllm-adapters.ts';

const BASE = 'meta-llama/Llama-3.1-8B-Instruct';

let t: TestDatabase;
let server: OpenAiServer;
let root: string;
let adaptersDir: string;

function sweetloop(args: string[]): Promise<SweetloopRun> {
  return runSweetloop(args, {
    env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: t.url, ADAPTERS_DIR: adaptersDir },
    timeoutMs: 120_000,
  });
}

async function addAdapter(name: string, rank: number): Promise<string> {
  const src = await writePeftAdapter(join(root, 'made-elsewhere', name), {
    baseModel: BASE,
    rank,
    targetModules: ['q_proj', 'v_proj'],
  });
  const r = await sweetloop(['policy', 'add', name, '--adapter', src, '--on', 'llama-8b']);
  expect(r.code, r.stderr).toBe(0);
  return adapterNameFor(await t.prisma.policyVersion.findUniqueOrThrow({ where: { name } }));
}

const deployedName = async () => (await deployedPolicy(t.prisma))?.name;

beforeAll(async () => {
  t = await createTestDatabase();
  root = await mkdtemp(join(tmpdir(), 'policy-deploy-load-'));
  adaptersDir = join(root, 'adapters');
  // The server's real --max-lora-rank is 16; the version below records 64, so registration lets a rank-32 adapter in.
  server = await startOpenAiServer({ model: BASE, maxModelLen: 8192, maxLoraRank: 16 });
  const e = await sweetloop([
    'policy',
    'add',
    'llama-8b',
    '--endpoint',
    server.url,
    '--model',
    BASE,
    '--max-lora-rank',
    '64',
  ]);
  expect(e.code, e.stderr).toBe(0);
  expect((await sweetloop(['deploy', 'llama-8b'])).code).toBe(0);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await t?.drop();
  if (root) await rm(root, { recursive: true, force: true });
});

describe('sweetloop deploy of an adapter version', () => {
  it('loads the adapter into its server before the switch, and rolls back to one the same way', async () => {
    const name = await addAdapter('tuned', 8);
    expect(server.adapterCalls).toEqual([]); // registering loads nothing
    const r = await sweetloop(['deploy', 'tuned']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`tuned: adapter ${name} loaded by ${server.url}\ndeployed tuned\n`);
    expect(server.adapterCalls).toEqual([{ op: 'load', name, path: join(adaptersDir, 'tuned') }]);
    expect(server.adapters.has(name)).toBe(true);
    expect(await deployedName()).toBe('tuned');

    // Back to the endpoint (nothing to load), then forward again by rollback: the server still has the adapter.
    expect((await sweetloop(['deploy', 'llama-8b'])).code).toBe(0);
    const back = await sweetloop(['rollback']);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stdout).toBe(`tuned: adapter ${name} already loaded on ${server.url}\nrolled back to tuned\n`);
    expect(server.adapterCalls).toHaveLength(1);
    expect((await sweetloop(['deploy', 'llama-8b'])).code).toBe(0);
  }, 300_000);

  it("refuses, with the server's reason, an adapter whose path the server cannot read or whose rank it cannot serve", async () => {
    const missing = await addAdapter('moved', 8);
    // The server reads the adapter from the path the bot hands it; gone from there (e.g. ADAPTERS_DIR not shared).
    await rm(join(adaptersDir, 'moved'), { recursive: true });
    const refused = await sweetloop(['deploy', 'moved']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`"moved" was not deployed: its server ${server.url} did not load the adapter`);
    expect(refused.stderr).toContain(
      `Loading lora ${missing} failed: No adapter found for ${join(adaptersDir, 'moved')}`,
    );
    expect(refused.stderr).toContain('it must see the same path');

    await addAdapter('wide', 32);
    const tooWide = await sweetloop(['deploy', 'wide']);
    expect(tooWide.code).toBe(1);
    expect(tooWide.stderr).toContain('LoRA rank 32 is greater than max_lora_rank 16.');
    expect(tooWide.stderr).toContain("Start vLLM with --max-lora-rank at least the adapter's rank");

    expect(await deployedName()).toBe('llama-8b');
    expect(
      await t.prisma.auditLog.count({ where: { action: 'policy.deploy', target: { in: ['moved', 'wide'] } } }),
    ).toBe(0);
  }, 300_000);

  it('refuses while the server cannot be reached, and deploys with --no-check without asking it', async () => {
    const name = await addAdapter('later', 8);
    const calls = server.adapterCalls.length;
    await server.down(60_000);
    try {
      const refused = await sweetloop(['deploy', 'later']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        `"later" was not deployed: its server ${server.url} cannot be reached to load the adapter`,
      );
      expect(refused.stderr).toContain('Deploy it with --no-check if the server is down on purpose');
      expect(await deployedName()).toBe('llama-8b');

      const forced = await sweetloop(['deploy', 'later', '--no-check']);
      expect(forced.code, forced.stderr).toBe(0);
      expect(forced.stdout).toBe('deployed later\n');
      expect(await deployedName()).toBe('later');
    } finally {
      await server.close();
    }
    expect(server.adapterCalls.length).toBe(calls);
    expect(server.adapters.has(name)).toBe(false);
  }, 300_000);
});
