import type { Command } from 'commander';
import { intOption, numberOption, choice } from './options.ts';
import { DATA_SOURCES } from '../../prisma/data-source.ts';
import { LINEAR_MODULES } from '../../trainer/model/lora-modules.ts';

/** Opens the configured database, initialises the model backend and runs `fn` with the trainer's settings. */
export async function withTrainer<T>(
  fn: (db: import('../../prisma/db.ts').Database, s: import('../../trainer/settings.ts').TrainerSettings) => Promise<T>,
): Promise<T> {
  const [{ loadConfig }, { openDatabase }, { initBackend }] = await Promise.all([
    import('../config.ts'),
    import('../../prisma/db.ts'),
    import('../../trainer/model/backend.ts'),
  ]);
  const config = loadConfig();
  await initBackend(config.TFJS_BACKEND);
  const db = await openDatabase({
    databaseUrl: config.DATABASE_URL,
    pgliteDir: config.PGLITE_DIR,
    poolSize: config.DATABASE_POOL_SIZE,
  });
  try {
    return await fn(db, {
      checkpointRoot: config.CHECKPOINT_DIR,
      seed: config.SEED,
      ratingWeight: config.REWARD_RATING_WEIGHT,
      promotionAlpha: config.PROMOTION_ALPHA,
      promotionMargin: config.PROMOTION_MARGIN,
      promotionEffect: config.PROMOTION_EFFECT,
      promotionPower: config.PROMOTION_POWER,
      promotionHumanAbShare: config.PROMOTION_HUMAN_AB_SHARE,
      minNewSessions: config.TRAINER_MIN_NEW_SESSIONS,
      pollSeconds: config.TRAINER_POLL_SECONDS,
      trainingData: {
        source: config.TRAINER_DATA,
        simulatedWeight: config.TRAINER_SIMULATED_WEIGHT,
        ...(config.TRAINER_MIN_QUALITY !== undefined ? { minQuality: config.TRAINER_MIN_QUALITY } : {}),
        ...(config.TRAINER_MIN_RATING !== undefined ? { minRating: config.TRAINER_MIN_RATING } : {}),
        ...(config.TRAINER_STUDY !== undefined ? { study: config.TRAINER_STUDY } : {}),
      },
      usePreferences: config.TRAINER_USE_PREFERENCES,
      maxLoraRank: config.VLLM_MAX_LORA_RANK,
      loraRank: config.TRAINER_LORA_RANK,
      maxBackoffSeconds: config.TRAINER_MAX_BACKOFF_SECONDS,
      bwrapPath: config.BWRAP_BIN,
      pythonPath: config.PYTHON_BIN,
      chromiumPath: config.CHROMIUM_PATH,
      ...(config.CLIP_MODEL_DIR ? { clipModelDir: config.CLIP_MODEL_DIR } : {}),
      ...(config.SIMULATOR_LLM_URL && config.SIMULATOR_LLM_MODEL
        ? {
            llmSimulator: {
              url: config.SIMULATOR_LLM_URL,
              model: config.SIMULATOR_LLM_MODEL,
              ...(config.SIMULATOR_LLM_KEY ? { key: config.SIMULATOR_LLM_KEY } : {}),
            },
          }
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
const SOURCES = ['builtin', 'generated', 'colbench'] as const;

export function registerTrainerCommands(program: Command): void {
  program
    .command('simulate')
    .description(
      'Play sessions between a policy and the simulated collaborator on stored tasks; evaluate and store them (marked simulated)',
    )
    .requiredOption('--policy <version>', 'policy version name, or starter / deployed')
    .option('--tasks <split>', 'train or test', choice('tasks', SPLITS), 'train')
    .option('--episodes <n>', 'games to play', intOption('episodes', 1), 20)
    .option('--kind <kind>', 'backend or frontend', choice('kind', KINDS), 'backend')
    .option(
      '--source <source>',
      'only stored tasks of this source: builtin, generated (ColBench-mini, what the starter learnt on) or colbench',
      choice('source', SOURCES),
    )
    .option(
      '--per-task <k>',
      'play each task k times in a row (training pairs need two games of a task with different rewards)',
      intOption('per-task', 1),
    )
    .option('--seed <n>', 'sampling seed (default: SEED)', intOption('seed', 0))
    .action(
      async (o: {
        policy: string;
        tasks: 'train' | 'test';
        episodes: number;
        kind: 'backend' | 'frontend';
        source?: 'builtin' | 'generated' | 'colbench';
        perTask?: number;
        seed?: number;
      }) => {
        await withTrainer(async (db, s) => (await import('../../trainer/commands.ts')).simulateCommand(db, s, o));
      },
    );

  program
    .command('evaluate')
    .description(
      'Evaluate a policy on held-out tasks with the simulated collaborator (% tests passed and success rate, or similarity and win rate, with 95% intervals); --compare A B plays both on the same games and prints the paired differences with p-values',
    )
    .option('--policy <version>', 'policy version name, or starter / deployed')
    .option('--compare <versions...>', 'two versions (names, starter or deployed) to compare on the same games')
    .option('--tasks <split>', 'train or test', choice('tasks', SPLITS), 'test')
    .option('--episodes <n>', 'games to play', intOption('episodes', 1), 40)
    .option('--kind <kind>', 'backend or frontend', choice('kind', KINDS), 'backend')
    .option('--against <version>', 'also evaluate this version on the same games and report the win rate')
    .option('--seed <n>', 'sampling seed (default: SEED)', intOption('seed', 0))
    .option('--json', 'print the report as JSON')
    .action(async (o) => {
      await withTrainer(async (db, s) => (await import('../../trainer/commands.ts')).evaluateCommand(db, s, o));
    });

  program
    .command('train')
    .description(
      'Train a candidate policy (SWEET-RL, multi-turn DPO or rejection fine-tuning) on the stored sessions; resumable',
    )
    .option('--algo <algo>', 'sweet, mtdpo or rft', choice('algo', ALGOS), 'sweet')
    .option('--from <version>', 'policy to start from: a version name, starter or deployed', 'deployed')
    .option(
      '--preset <name>',
      "cpu-small (the starter policy on a CPU), paper (the paper's hyper-parameters, full fine-tuning) or paper-lora (the paper's recipe with rates for LoRA adapters, rank 16)",
      'cpu-small',
    )
    .option('--kind <kind>', 'backend or frontend sessions', choice('kind', KINDS), 'backend')
    .option('--max-steps <n>', 'stop each phase after this many updates', intOption('max-steps', 1))
    .option(
      '--lora <rank>',
      'train LoRA adapters of this rank (policy and critic; merged into the published weights, or published as an adapter when training from an endpoint version; from an adapter version its adapter is continued)',
      intOption('lora', 1),
    )
    .option(
      '--lora-alpha <a>',
      'LoRA alpha: the update is scaled by alpha / rank (default: 2 x rank)',
      numberOption('lora-alpha', 0, 10000, true),
    )
    .option(
      '--lora-targets <modules>',
      `comma-separated projection matrices that get adapters, of ${LINEAR_MODULES.join(', ')} (default: q_proj,k_proj,v_proj,o_proj)`,
      (v: string) =>
        v
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
    )
    .option(
      '--lr <rate>',
      "peak learning rate of the policy (actor, DPO, SFT) (default: the preset's)",
      numberOption('lr', 0, 1, true),
    )
    .option(
      '--critic-lr <rate>',
      "peak learning rate of the critic (default: the preset's)",
      numberOption('critic-lr', 0, 1, true),
    )
    .option(
      '--epochs <n>',
      "passes of the policy phase over its data (actor, multi-turn DPO, RFT; default: the preset's)",
      intOption('epochs', 1),
    )
    .option(
      '--critic-epochs <n>',
      "passes of the critic over its pairs (default: the preset's)",
      intOption('critic-epochs', 1),
    )
    .option('--resume <runId>', 'resume an interrupted run')
    .option('--promote', 'run the promotion gate afterwards')
    .option(
      '--eval-episodes <n>',
      'games per version in the promotion gate (default: chosen from PROMOTION_EFFECT and PROMOTION_POWER)',
      intOption('eval-episodes', 1),
    )
    .option(
      '--data <source>',
      'train on sessions with people (human), with simulated collaborators (simulated), or both (default: TRAINER_DATA)',
      choice('data', DATA_SOURCES),
    )
    .option(
      '--simulated-weight <w>',
      'with --data both: share of simulated sessions kept, in (0, 1] (default: TRAINER_SIMULATED_WEIGHT)',
      numberOption('simulated-weight', 0, 1, true),
    )
    .option(
      '--min-quality <q>',
      'leave out the sessions of people whose quality score is below q, in [0, 1] (default: TRAINER_MIN_QUALITY)',
      numberOption('min-quality', 0, 1),
    )
    .option(
      '--min-rating <r>',
      'leave out human sessions rated below r (1-5) and unrated ones (default: TRAINER_MIN_RATING)',
      numberOption('min-rating', 1, 5),
    )
    .option(
      '--study <name>',
      "train on that study's answered sessions only (not an evaluation study; default: TRAINER_STUDY)",
    )
    .option(
      '--preferences',
      "sweet: use people's pairwise preferences between the run's sessions as extra critic pairs (default: TRAINER_USE_PREFERENCES)",
    )
    .option('--no-preferences', "sweet: do not use people's pairwise preferences")
    .action(async (o) => {
      await withTrainer(async (db, s) => {
        await (await import('../../trainer/commands.ts')).trainCommand(db, s, o, { interruptible: true });
      });
    });

  program
    .command('trainer')
    .description(
      'Run the trainer service: wait for TRAINER_MIN_NEW_SESSIONS new sessions, train, evaluate, promote; forever',
    )
    .option('--algo <algo>', 'sweet, mtdpo or rft', choice('algo', ALGOS), 'sweet')
    .option('--preset <name>', 'preset of runs from an own checkpoint: cpu-small, paper or paper-lora', 'cpu-small')
    .option(
      '--lora-preset <name>',
      "preset of LoRA runs on an endpoint's base model (rank: TRAINER_LORA_RANK)",
      'paper-lora',
    )
    .option('--kind <kind>', 'backend or frontend', choice('kind', KINDS), 'backend')
    .option(
      '--eval-episodes <n>',
      'games per version in the promotion gate (default: chosen from PROMOTION_EFFECT and PROMOTION_POWER)',
      intOption('eval-episodes', 1),
    )
    .action(async (o) => {
      const { loadConfig } = await import('../config.ts');
      const { HEALTH_HOST, TRAINER_HEALTH_PORT } = loadConfig();
      await withTrainer(async (db, s) => {
        // The service's health and metrics (bot/health.ts): ready when the database answers and the service can
        // train what is deployed without its last cycle having failed (trainer/service.ts ServiceStatus).
        const { startHealthServer, trainerMetrics } = await import('../../bot/health.ts');
        const { ServiceStatus, TRAINER_STATES } = await import('../../trainer/service.ts');
        const status = new ServiceStatus();
        const health = TRAINER_HEALTH_PORT
          ? await startHealthServer({
              port: TRAINER_HEALTH_PORT,
              host: HEALTH_HOST,
              metrics: trainerMetrics(
                async () =>
                  Object.fromEntries(
                    (await db.prisma.trainingRun.groupBy({ by: ['status'], _count: { _all: true } })).map((g) => [
                      g.status,
                      g._count._all,
                    ]),
                  ),
                { states: TRAINER_STATES, now: () => status },
              ),
              ready: {
                database: async () => (await db.prisma.$queryRaw`SELECT 1`, true),
                training: () => status.readiness(),
              },
            })
          : null;
        try {
          await (await import('../../trainer/service-command.ts')).serviceCommand(db, s, o, { status });
        } finally {
          await health?.close();
        }
      });
    });
}
