// docs/training.md's quick path, run as written on a fresh embedded database (PGlite, no DATABASE_URL), as a
// newcomer runs it after `npm start`: ColBench-mini tasks, the starter's games on them, a SWEET-RL smoke run that
// publishes a candidate. Before it, the dead end it replaces: the starter's games on the built-in library all
// score 0, and `train` refuses before a run starts, naming these very commands.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runSweetloop } from '../testing/sweetloop-cli.ts';
import { BACKEND_QUICK_PATH } from '../trainer/learnable.ts';

/** The fenced block of docs/training.md that holds the quick path, as commands without their comments. */
function quickPath(): string[] {
  const doc = readFileSync('docs/training.md', 'utf8');
  const block = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .find((b) => b.includes('--source generated'));
  expect(block, 'docs/training.md has the quick path block').toBeDefined();
  return block!
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
}

describe("docs/training.md's quick path", () => {
  const root = mkdtempSync(join(tmpdir(), 'sweetloop-quick-path-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PGLITE_DIR: join(root, 'pglite'),
    CHECKPOINT_DIR: join(root, 'checkpoints'),
  };
  delete env.DATABASE_URL;
  delete env.DISCORD_TOKEN;
  const sweetloop = async (line: string) => {
    const r = await runSweetloop(line.split(' ').slice(1), { env, timeoutMs: 1_800_000 });
    return { ...r, said: `${line} (exit ${r.code}):\n${r.stdout}\n${r.stderr}` };
  };
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('is the list the refusal names', () => {
    expect(quickPath()).toEqual(BACKEND_QUICK_PATH);
  });

  it('trains on a fresh database, after the refusal that names it', async () => {
    // What `npm start` did first: the schema and the built-in library.
    for (const line of ['sweetloop db migrate', 'sweetloop tasks seed --mini 0']) {
      const r = await sweetloop(line);
      expect(r.code, r.said).toBe(0);
    }
    const library = await sweetloop('sweetloop simulate --policy starter --source builtin --per-task 2 --episodes 4');
    expect(library.code, library.said).toBe(0);
    expect(library.stdout).toContain('mean score 0.0%');
    const refused = await sweetloop('sweetloop train --algo sweet --from starter --data both');
    expect(refused.code, refused.said).toBe(1);
    expect(refused.stderr).toContain('critic: no trajectory pairs');
    expect(refused.stderr).toContain('every reward is 0');
    for (const command of BACKEND_QUICK_PATH) expect(refused.stderr).toContain(command);
    expect(refused.stderr).not.toContain('training run');

    const outputs: string[] = [];
    for (const line of quickPath()) {
      const r = await sweetloop(line);
      expect(r.code, r.said).toBe(0);
      outputs.push(r.stdout);
    }
    expect(outputs[1]).toMatch(/stored 32 simulated backend sessions of starter-\w+ on train tasks/);
    expect(outputs[2]).toMatch(/candidate policy version sweet-[0-9a-f]{8} \(sha256 [0-9a-f]{64}\)/);
  }, 3_600_000);
});
