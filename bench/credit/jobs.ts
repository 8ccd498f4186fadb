// Seeds in parallel (bench/credit.ts --jobs N): the tfjs wasm backend uses one core (trainer/model/backend.ts), so
// a seed is one process and N seeds run at once in N child processes of this same script, each given one seed.
// A child's log lines stream through with its seed in front; its report prints whole when it ends.
import { spawn } from 'node:child_process';
import { seedResultOf, type SeedResult } from './across.ts';

/** argv without every occurrence of the given flags (`--name value` and `--name=value`). */
function withoutFlags(argv: readonly string[], names: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i]!.replace(/^--/, '').split('=')[0]!;
    if (!argv[i]!.startsWith('--') || !names.includes(name)) out.push(argv[i]!);
    else if (!argv[i]!.includes('=')) i++;
  }
  return out;
}

function runChild(seed: number, argv: readonly string[]): Promise<SeedResult> {
  const args = [...process.execArgv, process.argv[1]!, ...withoutFlags(argv, ['seeds', 'jobs']), '--seeds', `${seed}`];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let partial = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop()!;
      for (const l of lines) console.error(`[seed ${seed}] ${l}`);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (partial) console.error(`[seed ${seed}] ${partial}`);
      process.stdout.write(out);
      const found = out
        .split('\n')
        .map(seedResultOf)
        .find((s) => s?.result.seed === seed)?.result;
      if (code === 0 && found) resolve(found);
      else reject(new Error(`seed ${seed}: its process ended with code ${code}${found ? '' : ' and no JSON line'}`));
    });
  });
}

/** Runs every seed in its own process, at most `jobs` at once; the seeds' results in the seeds' order. */
export async function runSeedsInChildren(
  seeds: readonly number[],
  jobs: number,
  argv: readonly string[],
): Promise<SeedResult[]> {
  const results = new Map<number, SeedResult>();
  const queue = [...seeds];
  const failures: Error[] = [];
  const worker = async () => {
    for (let seed = queue.shift(); seed !== undefined; seed = queue.shift()) {
      const s = seed;
      await runChild(s, argv).then(
        (r) => results.set(s, r),
        (e: Error) => failures.push(e),
      );
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, seeds.length) }, worker));
  for (const e of failures) console.error(e.message);
  return seeds.filter((s) => results.has(s)).map((s) => results.get(s)!);
}
