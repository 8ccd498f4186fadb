import type { Command } from 'commander';

function intOption(name: string, min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min)
      throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
    return n;
  };
}

function numberOption(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < min || n > max)
      throw new Error(`--${name} must be a number in [${min}, ${max}], got ${JSON.stringify(value)}`);
    return n;
  };
}

function parseIds(value: string): number[] {
  const parts = value.split(',').map((s) => s.trim());
  const ids = parts.map(Number);
  if (parts.length === 0 || parts.some((p) => p === '') || ids.some((n) => !Number.isInteger(n) || n < 0)) {
    throw new Error(`--ids must be comma-separated non-negative integers, got ${JSON.stringify(value)}`);
  }
  return ids;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Loads a checkpoint in this process on the configured backend. */
async function loadPolicy(dir: string) {
  const [{ loadConfig }, { existsSync }] = await Promise.all([import('../config.ts'), import('node:fs')]);
  const config = loadConfig();
  if (!existsSync(dir)) throw new Error(`no such checkpoint directory: ${dir}`);
  const { initBackend } = await import('../../trainer/model/backend.ts');
  await initBackend(config.TFJS_BACKEND);
  const { LoadedPolicy } = await import('../../trainer/model/loaded-policy.ts');
  return LoadedPolicy.load(dir);
}

export function registerModelCommands(program: Command): void {
  const model = program
    .command('model')
    .description('Run a policy checkpoint (a Hugging Face model directory) or build the starter policy');

  model
    .command('logits')
    .description('Print the logits of every position of a token sequence')
    .requiredOption('--checkpoint <dir>', 'Hugging Face model directory')
    .requiredOption('--ids <ids>', 'comma-separated token ids, e.g. 1,2,3', parseIds)
    .option('--json', 'print {"logits": number[][]} (one row a position, full vocabulary)')
    .action(async (opts: { checkpoint: string; ids: number[]; json?: boolean }) => {
      const policy = await loadPolicy(opts.checkpoint);
      try {
        const logits = await policy.logits(opts.ids);
        if (opts.json) {
          process.stdout.write(JSON.stringify({ logits }) + '\n');
          return;
        }
        logits.forEach((row, t) => {
          const top = row
            .map((v, id) => [id, v] as const)
            .sort((a, b) => b[1] - a[1])
            .slice(0, 5)
            .map(([id, v]) => `${id}:${JSON.stringify(policy.tokenizer.idToToken(id) ?? '')}=${v.toFixed(3)}`);
          console.log(`position ${t} (token ${opts.ids[t]}): top ${top.join('  ')}`);
        });
      } finally {
        policy.dispose();
      }
    });

  model
    .command('generate')
    .description('Print a completion of a prompt')
    .requiredOption('--checkpoint <dir>', 'Hugging Face model directory')
    .requiredOption('--prompt <text>', 'prompt text')
    .option('--chat', 'treat the prompt as one user message and apply the chat template')
    .option('--system <text>', 'system message (with --chat)')
    .option('--max-tokens <n>', 'most new tokens', intOption('max-tokens', 1), 128)
    .option('--temperature <t>', 'sampling temperature (0 = greedy)', numberOption('temperature', 0, 100), 1)
    .option('--top-p <p>', 'nucleus sampling mass', numberOption('top-p', Number.MIN_VALUE, 1), 1)
    .option('--seed <n>', 'sampling seed', intOption('seed', 0))
    .option('--stop <text>', 'stop string (repeatable)', collect, [] as string[])
    .option('--json', 'print the whole result as JSON')
    .action(
      async (opts: {
        checkpoint: string;
        prompt: string;
        chat?: boolean;
        system?: string;
        maxTokens: number;
        temperature: number;
        topP: number;
        seed?: number;
        stop: string[];
        json?: boolean;
      }) => {
        const policy = await loadPolicy(opts.checkpoint);
        try {
          const messages = [
            ...(opts.system !== undefined ? [{ role: 'system' as const, content: opts.system }] : []),
            { role: 'user' as const, content: opts.prompt },
          ];
          const [result] = await policy.generate([opts.chat ? { messages } : { text: opts.prompt }], {
            maxTokens: opts.maxTokens,
            temperature: opts.temperature,
            topP: opts.topP,
            stop: opts.stop,
            ...(opts.seed !== undefined ? { seed: opts.seed } : {}),
          });
          if (opts.json) process.stdout.write(JSON.stringify(result) + '\n');
          else process.stdout.write(result!.text + '\n');
        } finally {
          policy.dispose();
        }
      },
    );

  model
    .command('gguf <dir> <out>')
    .description(
      'Write a checkpoint directory as a GGUF file (llama.cpp, Ollama, LM Studio, `policy add --gguf`), checked after writing',
    )
    .option('--dtype <type>', 'F32 or F16 matrices (norms stay F32)', 'F16')
    .action(async (dir: string, out: string, opts: { dtype: string }) => {
      if (opts.dtype !== 'F32' && opts.dtype !== 'F16')
        throw new Error(`--dtype must be F32 or F16, got ${opts.dtype}`);
      const [{ convertCheckpointToGguf }, { inspectForeignGguf }] = await Promise.all([
        import('../../trainer/serve/gguf-convert.ts'),
        import('../../trainer/serve/gguf-foreign.ts'),
      ]);
      const r = await convertCheckpointToGguf(dir, out, { dtype: opts.dtype });
      const info = await inspectForeignGguf(r.path).catch(() => null);
      console.log(
        `wrote ${r.path} (${opts.dtype}${info ? `, ${(info.sizeBytes / 1e6).toFixed(1)} MB, sha256 ${info.sha256}` : ''})`,
      );
    });

  model
    .command('starter')
    .description('Build the starter policy: a small model trained on ColBench-mini expert dialogues')
    .option('--seed <n>', 'seed (default: SEED)', intOption('seed', 0))
    .option('--out <dir>', 'output directory (default: CHECKPOINT_DIR/starter)')
    .option('--steps <n>', 'optimizer steps (default: the standard budget)', intOption('steps', 1))
    .option('--force', 'rebuild even if a valid starter policy exists')
    .option(
      '--verify',
      'rebuild the starter the repository ships for the seed from scratch (minutes; into --out, default CHECKPOINT_DIR/starter-verify) and check every file is identical; exit 1 if not',
    )
    .action(async (opts: { seed?: number; out?: string; steps?: number; force?: boolean; verify?: boolean }) => {
      const [{ loadConfig }, path] = await Promise.all([import('../config.ts'), import('node:path')]);
      const config = loadConfig();
      const { initBackend } = await import('../../trainer/model/backend.ts');
      const backend = await initBackend(config.TFJS_BACKEND);
      if (opts.verify) {
        const [{ reproduceStarter }, { shippedStarterDir }] = await Promise.all([
          import('../../trainer/recipes/starter-reproduce.ts'),
          import('../../trainer/recipes/starter.ts'),
        ]);
        const from = shippedStarterDir(opts.seed ?? config.SEED);
        const r = await reproduceStarter({
          from,
          scratchDir: opts.out ?? path.join(config.CHECKPOINT_DIR, 'starter-verify'),
          progress: process.stderr.isTTY ? 'bar' : 'lines',
          log: (line) => console.error(line),
        });
        for (const [file, sha] of Object.entries(r.sha256.original)) {
          console.log(
            `${r.differences.includes(file) ? 'DIFFERS' : 'same   '} ${file} ${sha.slice(0, 16)} / ${(r.sha256.rebuilt[file] ?? 'missing').slice(0, 16)}`,
          );
        }
        console.log(
          `${r.differences.length ? 'the rebuild differs from' : 'the rebuild is identical to'} ${from} ` +
            `(backend ${backend.name}, ${r.report.seconds.toFixed(0)} s, ${r.report.cpuSeconds.toFixed(0)} CPU s)`,
        );
        if (r.differences.length) process.exitCode = 1;
        return;
      }
      const { ensureStarterPolicy } = await import('../../trainer/recipes/starter.ts');
      const out = opts.out ?? path.join(config.CHECKPOINT_DIR, 'starter');
      const result = await ensureStarterPolicy({
        dir: out,
        seed: opts.seed ?? config.SEED,
        ...(opts.steps !== undefined ? { steps: opts.steps } : {}),
        force: opts.force === true,
        progress: process.stderr.isTTY ? 'bar' : 'lines',
        log: (line) => console.error(line),
      });
      console.log(
        `${result.reused ? 'reused' : 'built'} starter policy at ${out} (${result.numParameters.toLocaleString('en')} parameters, ` +
          `sha256 ${result.sha256.slice(0, 12)}, backend ${backend.name}` +
          (result.report
            ? `, loss ${result.report.initialLoss.toFixed(3)} -> ${result.report.finalLoss.toFixed(3)} in ${result.report.seconds.toFixed(0)} s`
            : '') +
          ')',
      );
    });
}
