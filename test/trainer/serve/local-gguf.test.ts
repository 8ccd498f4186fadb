// The bot's local server with gguf versions (trainer/serve/local.ts through loadAgent, as the bot loads agents):
// a foreign GGUF's agent counts its prompt with the file's own template and vocabulary and records the file in
// each turn's provenance; a deployed version whose file went bad after it was registered is refused with the
// fault named, in this process that goes on serving (llama.cpp never saw the file: it would have aborted us),
// and the version before still answers. Real Postgres, real llama.cpp.
import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/database.ts';
import { startFakeHub } from '../../../testing/fake-hub.ts';
import { makeForeignGguf, renderForeign, type ForeignGguf } from '../../../testing/tiny-checkpoint.ts';
import type { BackendTask } from '../../../tasks/model.ts';
import { buildDialogue } from '../../../tasks/protocol.ts';
import { TextTokenizer } from '../../../trainer/model/tokenizer.ts';
import { loadAgent } from '../../../trainer/policies/agent-for.ts';
import { registerGgufVersion } from '../../../trainer/policies/registry.ts';
import { LocalServing } from '../../../trainer/serve/local.ts';
import { startServing } from '../../../trainer/serve/service.ts';
import pino from 'pino';

const task: BackendTask = {
  kind: 'backend',
  description: 'A function that converts a temperature. The signature of the function is: def convert(t)',
  reference: 'def convert(t):\n    return t * 9 / 5 + 32\n',
  testCases: ['convert(0)'],
};

let t: TestDatabase;
let work: string;
let foreign: ForeignGguf;
let local: LocalServing;

beforeAll(async () => {
  t = await createTestDatabase();
  work = await mkdtemp(join(tmpdir(), 'local-gguf-'));
  foreign = await makeForeignGguf(join(work, 'foreign.gguf'));
  local = await LocalServing.start({ prisma: t.prisma, engine: 'llama', maxBatch: 4, maxQueue: 8 });
}, 120_000);
afterAll(async () => {
  await local?.close();
  await t?.drop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('local serving of gguf versions', () => {
  it('answers with the file as provenance and counts prompts with its own template and vocabulary', async () => {
    const { version } = await registerGgufVersion(t.prisma, {
      name: 'foreign',
      source: foreign.file,
      modelsDir: join(work, 'models'),
      maxTokens: 32,
    });
    const agent = await loadAgent(version, { prisma: t.prisma, local, seed: 1 });
    try {
      const dialogue = buildDialogue(task, [], { maxTurns: 2 });
      const r = await agent.reply(dialogue);
      const independent = new TextTokenizer({
        tokenizerJson: foreign.tokenizerJson,
        tokenizerConfig: { eos_token: '<|end|>', clean_up_tokenization_spaces: false },
      });
      expect(r.promptTokens).toBe(independent.encode(renderForeign(r.provenance!.prompt)).length);
      expect(r.provenance).toMatchObject({
        engine: 'llama',
        servedModel: 'foreign',
        weights: { file: foreign.file, sha256: version.checkpointSha256, quantization: 'F16' },
      });
      expect(r.provenance!.sampling.maxTokens).toBe(32);
    } finally {
      await agent.close();
    }
  });

  it('refuses a version whose file went bad, naming the fault, and the same process still serves the good one', async () => {
    const good = await t.prisma.policyVersion.findUniqueOrThrow({ where: { name: 'foreign' } });
    await local.follow(good);
    expect(local.loaded()).toEqual(['foreign']);
    // Registered when it was fine; replaced since by a file llama.cpp would abort the process on.
    const later = join(work, 'later.gguf');
    await copyFile(foreign.file, later);
    const { version: bad } = await registerGgufVersion(t.prisma, {
      name: 'later',
      source: later,
      modelsDir: join(work, 'models'),
    });
    await makeForeignGguf(later, { metadata: { drop: ['llama.attention.head_count'] } });
    await expect(local.acquire(bad)).rejects.toThrow(/required key llama\.attention\.head_count is missing/);
    // Deployed anyway: logged, nothing loaded for it, and the process goes on.
    await local.follow(bad);
    expect(local.loaded()).not.toContain('later');
    // The same process still answers on the good version.
    const agent = await loadAgent(good, { prisma: t.prisma, local, seed: 2 });
    try {
      expect((await agent.reply(buildDialogue(task, [], { maxTurns: 2 }))).provenance?.engine).toBe('llama');
    } finally {
      await agent.close();
    }
    // A file changed into another valid model is refused too: the version names the file it was registered with.
    await makeForeignGguf(later, { seed: 99 });
    await expect(local.acquire(bad)).rejects.toThrow(/changed since it was registered/);
  });

  it('is served over the OpenAI protocol by `sweetloop serve --policy NAME`, rendered with its own template', async () => {
    const serving = await startServing(t.db, {
      policy: 'foreign',
      port: 0,
      host: '127.0.0.1',
      engine: 'llama',
      maxBatch: 2,
      maxQueue: 2,
      checkpointRoot: join(work, 'ckpt'),
      seed: 1,
      log: pino({ level: 'silent' }),
    });
    try {
      await serving.ready;
      const messages = [{ role: 'user', content: 'Which units?' }];
      const res = await fetch(`${serving.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'foreign', messages, max_tokens: 8, temperature: 0 }),
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { model: string; usage: { prompt_tokens: number } };
      const independent = new TextTokenizer({
        tokenizerJson: foreign.tokenizerJson,
        tokenizerConfig: { eos_token: '<|end|>', clean_up_tokenization_spaces: false },
      });
      expect(body.model).toBe('foreign');
      expect(body.usage.prompt_tokens).toBe(independent.encode(renderForeign(messages)).length);
    } finally {
      await serving.close();
    }
  });

  it("deletes a download whose sha256 is not the hub's and registers nothing", async () => {
    const body = await readFile(foreign.file);
    const hub = await startFakeHub({
      owner: 'acme',
      repo: 'Foreign-GGUF',
      file: 'foreign-f16.gguf',
      body,
      sha256: 'ab'.repeat(32),
    });
    const models = join(work, 'hub-models');
    try {
      await expect(
        registerGgufVersion(t.prisma, {
          name: 'hub',
          source: 'hf:acme/Foreign-GGUF/foreign-f16.gguf',
          modelsDir: models,
          hubEndpoint: hub.url,
        }),
      ).rejects.toThrow(
        /the download's sha256 [0-9a-f]{64} is not the hub's abab.*: the file was deleted; run the command again/,
      );
      expect(existsSync(join(models, 'acme', 'Foreign-GGUF', 'foreign-f16.gguf'))).toBe(false);
      expect(await t.prisma.policyVersion.findUnique({ where: { name: 'hub' } })).toBeNull();
    } finally {
      await hub.close();
    }
  });
});
