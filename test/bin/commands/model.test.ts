import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { initBackend } from '../../../trainer/model/backend.ts';
import { LoadedPolicy } from '../../../trainer/model/loaded-policy.ts';
import { generate } from '../../../trainer/model/generate.ts';
import { makeTinyCheckpoint } from '../../../testing/tiny-checkpoint.ts';
import { SWEETLOOP_ENTRY } from '../../../testing/sweetloop-cli.ts';

const run = promisify(execFile);
let dir: string;
let engine: LoadedPolicy;
let backend: string;

/** Runs the real `sweetloop` launcher on the same tfjs backend as this process. */
function sweetloop(args: string[]) {
  return run(process.execPath, [SWEETLOOP_ENTRY, ...args], {
    env: { ...process.env, TFJS_BACKEND: backend, LOG_LEVEL: 'silent' },
    maxBuffer: 64 * 1024 * 1024,
  });
}

beforeAll(async () => {
  backend = (await initBackend()).name;
  dir = await makeTinyCheckpoint({ seed: 5 });
  engine = await LoadedPolicy.load(dir);
});

afterAll(async () => {
  engine?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('sweetloop model', () => {
  it('logits --json prints the same logits as the in-process forward pass', async () => {
    const ids = [1, 40, 7, 200, 3];
    const { stdout } = await sweetloop(['model', 'logits', '--checkpoint', dir, '--ids', ids.join(','), '--json']);
    const printed = JSON.parse(stdout) as { logits: number[][] };
    const expected = await engine.logits(ids);
    expect(printed.logits).toHaveLength(ids.length);
    for (const [t, row] of expected.entries()) {
      expect(printed.logits[t]).toHaveLength(engine.model.config.vocabSize);
      for (const [v, x] of row.entries())
        expect(Math.abs(printed.logits[t]![v]! - x)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(x)));
    }
  });

  it('generate prints the completion the library generates', async () => {
    const { stdout } = await sweetloop([
      'model',
      'generate',
      '--checkpoint',
      dir,
      '--prompt',
      'def scale(values',
      '--max-tokens',
      '12',
      '--temperature',
      '0',
      '--json',
    ]);
    const printed = JSON.parse(stdout);
    const [expected] = await generate(engine.model, engine.tokenizer, [engine.tokenizer.encode('def scale(values')], {
      maxTokens: 12,
      temperature: 0,
    });
    expect(printed.tokenIds).toEqual(expected!.tokenIds);
    const plain = await sweetloop([
      'model',
      'generate',
      '--checkpoint',
      dir,
      '--prompt',
      'def scale(values',
      '--max-tokens',
      '12',
      '--temperature',
      '0',
    ]);
    expect(plain.stdout).toBe(expected!.text + '\n');
  });

  it('refuses bad arguments with a clear message', async () => {
    await expect(sweetloop(['model', 'logits', '--checkpoint', dir, '--ids', '1,x', '--json'])).rejects.toMatchObject({
      stderr: expect.stringMatching(/--ids must be/),
    });
    await expect(
      sweetloop(['model', 'logits', '--checkpoint', dir, '--ids', '1,99999', '--json']),
    ).rejects.toMatchObject({ stderr: expect.stringMatching(/outside/) });
    await expect(sweetloop(['model', 'logits', '--checkpoint', `${dir}/nope`, '--ids', '1'])).rejects.toMatchObject({
      stderr: expect.stringMatching(/no such checkpoint/),
    });
  });
});
