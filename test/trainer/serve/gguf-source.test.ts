// Where a --gguf comes from: a local path as it is, and hf:OWNER/REPO/FILE.gguf, which needs the Hugging Face hub.
// This machine has no route to huggingface.co, so the no-network case is the real one: it must end in seconds
// with a sentence saying what to do (node-llama-cpp's own resolver kept retrying for minutes), leaving nothing in
// the models directory. Where the hub is reachable, the same URI names no repository and gets the hub's answer.
import { createHash } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeHub } from '../../../testing/fake-hub.ts';
import { GgufSourceError, parseHfUri, resolveGgufSource } from '../../../trainer/serve/gguf-source.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gguf-source-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('GGUF sources', () => {
  it('parses hf: URIs and refuses malformed ones with the expected form', () => {
    expect(parseHfUri('hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf')).toEqual({
      owner: 'Qwen',
      repo: 'Qwen2.5-0.5B-Instruct-GGUF',
      file: 'qwen2.5-0.5b-instruct-q4_k_m.gguf',
    });
    expect(parseHfUri('./model.gguf')).toBeNull();
    expect(() => parseHfUri('hf:Qwen/model.gguf')).toThrow(/hf:OWNER\/REPO\/FILE\.gguf/);
    expect(() => parseHfUri('hf:a/b/../c.gguf')).toThrow(GgufSourceError);
  });

  it("takes owner and repository names only as the hub's rules allow (they become folders under MODELS_DIR)", () => {
    expect(parseHfUri('hf:a.b_c/x-y.z/sub/dir/m.gguf')).toEqual({
      owner: 'a.b_c',
      repo: 'x-y.z',
      file: 'sub/dir/m.gguf',
    });
    expect(parseHfUri(`hf:${'o'.repeat(96)}/r/m.gguf`)?.owner).toHaveLength(96);
    for (const bad of [
      'hf:owner/../x.gguf',
      'hf:../repo/x.gguf',
      'hf:./repo/x.gguf',
      'hf:owner/./x.gguf',
      'hf:ow..ner/r/x.gguf',
      'hf:a--b/r/x.gguf',
      'hf:-a/r/x.gguf',
      'hf:a/r-/x.gguf',
      'hf:.a/r/x.gguf',
      'hf:a/r./x.gguf',
      'hf:a/r.git/x.gguf',
      `hf:${'o'.repeat(97)}/r/x.gguf`,
      'hf:a b/r/x.gguf',
      'hf:a/r//x.gguf',
      'hf:a/r/x.bin',
      'hf:/r/x.gguf',
    ]) {
      expect(() => parseHfUri(bad), bad).toThrow(/not a Hugging Face file URI.*as the hub names them/);
    }
  });

  it('takes a local file as it is and names a missing one', async () => {
    const file = join(dir, 'x.gguf');
    await writeFile(file, 'GGUF');
    await expect(resolveGgufSource(file, { modelsDir: dir })).resolves.toEqual({
      file,
      downloaded: false,
      hubSha256: null,
    });
    await expect(resolveGgufSource(join(dir, 'missing.gguf'), { modelsDir: dir })).rejects.toThrow(
      /missing\.gguf: no such file/,
    );
  });

  it('an hf: URI without a network fails fast with what to do, and leaves nothing behind', async () => {
    const models = join(dir, 'models');
    const uri = 'hf:sweetloop-tests/no-such-model-GGUF/none-q4_k_m.gguf';
    const online = await lookup('huggingface.co').then(
      () => true,
      () => false,
    );
    const started = Date.now();
    const err = await resolveGgufSource(uri, { modelsDir: models }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(GgufSourceError);
    if (online) expect((err as Error).message).toMatch(/refused access|has no repository/);
    else
      expect((err as Error).message).toMatch(
        /^cannot reach huggingface\.co to download hf:sweetloop-tests\/no-such-model-GGUF\/none-q4_k_m\.gguf \(.+\): is this machine online\? Otherwise download the file where there is a network and give its path/,
      );
    // Not minutes of retries: the hub's listing has a 15 s deadline, and a failed name lookup ends at once.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await readdir(models).catch(() => [])).toEqual([]);
  });

  it("downloads an hf: file once from the hub (progress, the hub's sha256 returned) and then uses it offline", async () => {
    const body = Buffer.alloc(300_000, 7);
    const sha256 = createHash('sha256').update(body).digest('hex');
    const hub = await startFakeHub({ owner: 'acme', repo: 'Tiny-GGUF', file: 'tiny-q8_0.gguf', body, sha256 });
    try {
      const models = join(dir, 'hub-models');
      const progress: number[] = [];
      const got = await resolveGgufSource('hf:acme/Tiny-GGUF/tiny-q8_0.gguf', {
        modelsDir: models,
        endpoint: hub.url,
        onProgress: (p) => progress.push(p.downloadedBytes),
      });
      expect(got).toEqual({
        file: join(models, 'acme', 'Tiny-GGUF', 'tiny-q8_0.gguf'),
        downloaded: true,
        hubSha256: sha256,
      });
      expect((await readFile(got.file)).equals(body)).toBe(true);
      expect(progress.at(-1)).toBe(body.length);
      // Once: the second time the hub is not asked.
      const asked = hub.requests.length;
      expect(
        await resolveGgufSource('hf:acme/Tiny-GGUF/tiny-q8_0.gguf', { modelsDir: models, endpoint: hub.url }),
      ).toEqual({ file: got.file, downloaded: false, hubSha256: null });
      expect(hub.requests.length).toBe(asked);
      // A file the repository does not have: its GGUF files are listed.
      await expect(
        resolveGgufSource('hf:acme/Tiny-GGUF/other.gguf', { modelsDir: models, endpoint: hub.url }),
      ).rejects.toThrow(/acme\/Tiny-GGUF has no file other\.gguf; its GGUF files: tiny-q8_0\.gguf/);
    } finally {
      await hub.close();
    }
  });
});
