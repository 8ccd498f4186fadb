// `sweetloop policy add NAME --gguf FILE|hf:...` end to end: the real binary, a real database, a foreign GGUF
// written in the test (its own vocabulary and chat template). Registered after a check and a load in a child
// process, with its file, sha256 and quantization; a malformed file refused with the fault named and nothing
// written; an hf: URI without a network refused at once; listed, deployed, rolled back like any version; and
// `sweetloop simulate` plays stored, scored games on it through the project's llama.cpp engine.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { runSweetloop, type SweetloopRun } from '../../../testing/sweetloop-cli.ts';
import { makeForeignGguf, type ForeignGguf } from '../../../testing/tiny-checkpoint.ts';
import { deployedPolicy, registerVersion } from '../../../prisma/policy-store.ts';
import { importTasks } from '../../../prisma/task-store.ts';
import type { TurnProvenance } from '../../../tasks/agent.ts';
import { generateMiniTasks } from '../../../tasks/mini.ts';

let t: TestDatabase;
let work: string;
let foreign: ForeignGguf;

function sweetloop(args: string[], env: Record<string, string> = {}): Promise<SweetloopRun> {
  return runSweetloop(args, {
    env: {
      ...process.env,
      LOG_LEVEL: 'warn',
      DATABASE_URL: t.url,
      MODELS_DIR: join(work, 'models'),
      CHECKPOINT_DIR: join(work, 'ckpt'),
      ...env,
    },
    timeoutMs: 300_000,
  });
}

beforeAll(async () => {
  t = await createTestDatabase();
  work = await mkdtemp(join(tmpdir(), 'policy-gguf-'));
  foreign = await makeForeignGguf(join(work, 'Foreign-Tiny-Instruct-F16.gguf'));
  await importTasks(t.prisma, generateMiniTasks({ seed: 8, count: 3, split: 'test' }));
}, 180_000);

afterAll(async () => {
  await t?.drop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('sweetloop policy add --gguf', () => {
  it('refuses a malformed file naming the fault, and an hf: URI without a network, writing nothing', async () => {
    const bad = await makeForeignGguf(join(work, 'no-ffn.gguf'), { metadata: { drop: ['llama.feed_forward_length'] } });
    const r = await sweetloop(['policy', 'add', 'broken', '--gguf', bad.file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('required key llama.feed_forward_length is missing');
    const net = await sweetloop([
      'policy',
      'add',
      'remote',
      '--gguf',
      'hf:sweetloop-tests/no-such-model-GGUF/none-q4_k_m.gguf',
    ]);
    expect(net.code).toBe(1);
    expect(net.stderr).toMatch(/cannot reach huggingface\.co|has no repository|refused access/);
    expect(await t.prisma.policyVersion.count()).toBe(0);
  });

  it('registers, lists, deploys and rolls back a GGUF version, and simulate plays scored games on it', async () => {
    const before = await registerVersion(t.prisma, {
      name: 'starter-x',
      algorithm: 'starter',
      checkpointPath: '/nowhere/starter',
    });
    await t.prisma.policyVersion.update({
      where: { id: before.id },
      data: { status: 'deployed', deployedAt: new Date() },
    });
    const add = await sweetloop([
      'policy',
      'add',
      'foreign',
      '--gguf',
      foreign.file,
      '--max-tokens',
      '48',
      '--temperature',
      '0.5',
      '--deploy',
    ]);
    expect(add.code, add.stderr).toBe(0);
    const v = await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'foreign' } });
    expect(v).toMatchObject({ kind: 'gguf', algorithm: 'external', checkpointPath: foreign.file });
    expect(v.checkpointSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(v.serving).toMatchObject({
      source: foreign.file,
      quantization: 'F16',
      architecture: 'llama',
      modelName: 'Foreign-Tiny-Instruct',
      contextLength: 8192,
      maxTokens: 48,
      temperature: 0.5,
    });
    expect(add.stdout).toContain(
      `registered foreign (gguf, candidate): ${foreign.file} (GGUF F16, llama.cpp), sha256 ${v.checkpointSha256}`,
    );
    expect(add.stdout).toContain('deployed foreign');
    expect((await deployedPolicy(t.prisma))?.name).toBe('foreign');

    const list = await sweetloop(['policy', 'list']);
    expect(list.stdout).toMatch(
      new RegExp(
        `foreign\\s+gguf\\s+deployed\\s+no\\s+${foreign.file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(GGUF F16, llama\\.cpp\\)`,
      ),
    );

    const sim = await sweetloop([
      'simulate',
      '--policy',
      'foreign',
      '--tasks',
      'test',
      '--episodes',
      '2',
      '--seed',
      '3',
    ]);
    expect(sim.code, sim.stderr).toBe(0);
    expect(sim.stdout).toContain('stored 2 simulated backend sessions of foreign on test tasks');
    const sessions = await t.prisma.session.findMany({
      where: { policyVersionId: v.id },
      include: { turns: { orderBy: { index: 'asc' } }, evaluation: true },
    });
    expect(sessions).toHaveLength(2);
    for (const s of sessions) {
      expect(s.evaluation).not.toBeNull();
      const agent = s.turns.find((x) => x.role === 'agent')!;
      const p = agent.provenance as unknown as TurnProvenance;
      expect(p).toMatchObject({
        engine: 'llama',
        servedModel: 'foreign',
        weights: { file: foreign.file, sha256: v.checkpointSha256, quantization: 'F16' },
      });
      expect(p.sampling).toMatchObject({ temperature: 0.5 });
      expect(agent.promptTokens).toBeGreaterThan(0);
    }

    const back = await sweetloop(['rollback']);
    expect(back.code, back.stderr).toBe(0);
    expect((await deployedPolicy(t.prisma))?.name).toBe('starter-x');
  });
});
