import type { Command } from 'commander';

function intOption(name: string, min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got ${JSON.stringify(value)}`);
    return n;
  };
}

function choice<T extends string>(name: string, options: readonly T[]) {
  return (value: string): T => {
    if (!options.includes(value as T)) throw new Error(`--${name} must be one of ${options.join(', ')}, got ${JSON.stringify(value)}`);
    return value as T;
  };
}

/** Opens the configured database, initialises the model backend and runs `fn` with the trainer's settings. */
async function withTrainer<T>(fn: (db: import('../../prisma/db.ts').Database, s: import('../../trainer/cli.ts').TrainerSettings) => Promise<T>): Promise<T> {
  const [{ loadConfig }, { openDatabase }, { initBackend }] = await Promise.all([
    import('../config.ts'),
    import('../../prisma/db.ts'),
    import('../../trainer/model/backend.ts'),
  ]);
  const config = loadConfig();
  await initBackend(config.TFJS_BACKEND);
  const db = await openDatabase({ databaseUrl: config.DATABASE_URL, pgliteDir: config.PGLITE_DIR });
  try {
    return await fn(db, {
      checkpointRoot: config.CHECKPOINT_DIR,
      seed: config.SEED,
      ratingWeight: config.REWARD_RATING_WEIGHT,
      promotionMargin: config.PROMOTION_MARGIN,
      minNewSessions: config.TRAINER_MIN_NEW_SESSIONS,
      pollSeconds: config.TRAINER_POLL_SECONDS,
      bwrapPath: config.BWRAP_BIN,
      pythonPath: config.PYTHON_BIN,
      chromiumPath: config.CHROMIUM_PATH,
      ...(config.CLIP_MODEL_DIR ? { clipModelDir: config.CLIP_MODEL_DIR } : {}),
      ...(config.SIMULATOR_LLM_URL && config.SIMULATOR_LLM_MODEL
        ? { llmSimulator: { url: config.SIMULATOR_LLM_URL, model: config.SIMULATOR_LLM_MODEL, ...(config.SIMULATOR_LLM_KEY ? { key: config.SIMULATOR_LLM_KEY } : {}) } }
        : {}),
      progress: process.stderr.isTTY ? 'bar' : 'lines',
    });
  } finally {
    await db.close();
  }
}

const KINDS = ['backend', 'frontend'] as const;
const SPLITS = ['train', 'test'] as const;
const ALGOS = ['sweet', 'mtdpo', 'rft'] as const;

export function registerTrainerCommands(program: Command): void {
  program
    .command('simulate')
    .description('Play sessions between a policy and the simulated collaborator on stored tasks; evaluate and store them (marked simulated)')
    .requiredOption('--policy <version>', 'policy version name, or starter / deployed')
    .option('--tasks <split>', 'train or test', choice('tasks', SPLITS), 'train')
    .option('--episodes <n>', 'games to play', intOption('episodes', 1), 20)
    .option('--kind <kind>', 'backend or frontend', choice('kind', KINDS), 'backend')
    .option('--seed <n>', 'sampling seed (default: SEED)', intOption('seed', 0))
    .action(async (o: { policy: string; tasks: 'train' | 'test'; episodes: number; kind: 'backend' | 'frontend'; seed?: number }) => {
      await withTrainer(async (db, s) => (await import('../../trainer/cli.ts')).simulateCommand(db, s, o));
    });

  program
    .command('evaluate')
    .description('Evaluate a policy on held-out tasks with the simulated collaborator (% tests passed and success rate, or similarity and win rate, with 95% intervals)')
    .requiredOption('--policy <version>', 'policy version name, or starter / deployed')
    .option('--tasks <split>', 'train or test', choice('tasks', SPLITS), 'test')
    .option('--episodes <n>', 'games to play', intOption('episodes', 1), 40)
    .option('--kind <kind>', 'backend or frontend', choice('kind', KINDS), 'backend')
    .option('--against <version>', 'also evaluate this version on the same games and report the win rate')
    .option('--seed <n>', 'sampling seed (default: SEED)', intOption('seed', 0))
    .option('--json', 'print the report as JSON')
    .action(async (o) => {
      await withTrainer(async (db, s) => (await import('../../trainer/cli.ts')).evaluateCommand(db, s, o));
    });

  program
    .command('train')
    .description('Train a candidate policy (SWEET-RL, multi-turn DPO or rejection fine-tuning) on the stored sessions; resumable')
    .option('--algo <algo>', 'sweet, mtdpo or rft', choice('algo', ALGOS), 'sweet')
    .option('--from <version>', 'policy to start from: a version name, starter or deployed', 'deployed')
    .option('--preset <name>', 'cpu-small (the starter policy on a CPU) or paper (the paper\'s hyper-parameters)', 'cpu-small')
    .option('--kind <kind>', 'backend or frontend sessions', choice('kind', KINDS), 'backend')
    .option('--max-steps <n>', 'stop each phase after this many updates', intOption('max-steps', 1))
    .option('--lora <rank>', 'train LoRA adapters of this rank (merged into the published weights)', intOption('lora', 1))
    .option('--resume <runId>', 'resume an interrupted run')
    .option('--promote', 'run the promotion gate afterwards')
    .option('--eval-episodes <n>', 'games per version in the promotion gate', intOption('eval-episodes', 1), 40)
    .action(async (o) => {
      await withTrainer(async (db, s) => {
        await (await import('../../trainer/cli.ts')).trainCommand(db, s, o);
      });
    });

  program
    .command('trainer')
    .description('Run the trainer service: wait for TRAINER_MIN_NEW_SESSIONS new sessions, train, evaluate, promote; forever')
    .option('--algo <algo>', 'sweet, mtdpo or rft', choice('algo', ALGOS), 'sweet')
    .option('--preset <name>', 'cpu-small or paper', 'cpu-small')
    .option('--kind <kind>', 'backend or frontend', choice('kind', KINDS), 'backend')
    .option('--eval-episodes <n>', 'games per version in the promotion gate', intOption('eval-episodes', 1), 40)
    .action(async (o) => {
      await withTrainer(async (db, s) => (await import('../../trainer/cli.ts')).serviceCommand(db, s, o));
    });

  program
    .command('deploy')
    .description('Deploy a policy version now (the bot switches new sessions to it)')
    .requiredOption('--version <name>', 'policy version name')
    .action(async (o: { version: string }) => {
      await withTrainer(async (db) => (await import('../../trainer/cli.ts')).deployCommand(db, o.version));
    });

  program
    .command('rollback')
    .description('Re-deploy the version that was deployed before the current one')
    .action(async () => {
      await withTrainer(async (db) => (await import('../../trainer/cli.ts')).rollbackCommand(db));
    });
}
