// `sweetloop serve`: the OpenAI-compatible server over the project's checkpoints (trainer/serve/service.ts),
// configured here from bin/config.ts and the command's options.
import type { Command } from 'commander';
import { intOption, choice } from './options.ts';
import { SERVE_DEFAULTS } from '../../trainer/serve/defaults.ts';

const ENGINES = ['llama', 'tfjs'] as const;

export function registerServeCommands(program: Command): void {
  program
    .command('serve')
    .description(
      'Serve a policy over the OpenAI chat-completions protocol (/v1/chat/completions, /v1/models, /health, /metrics), following deploys with --policy deployed',
    )
    .option(
      '--policy <name>',
      'policy version name, starter, or deployed (switch whenever another version is deployed)',
      'deployed',
    )
    .option('--port <n>', 'TCP port (0: any free port)', intOption('port', 0, 65535), SERVE_DEFAULTS.port)
    .option('--host <host>', 'address to listen on', SERVE_DEFAULTS.host)
    .option(
      '--engine <engine>',
      'llama (llama.cpp, batched; falls back to tfjs when it cannot run) or tfjs (the one-request-at-a-time worker)',
      choice('engine', ENGINES),
      SERVE_DEFAULTS.engine,
    )
    .option(
      '--max-batch <n>',
      'most sequences decoded together',
      intOption('max-batch', 1, 1024),
      SERVE_DEFAULTS.maxBatch,
    )
    .option(
      '--max-queue <n>',
      'most requests waiting beyond the batch before answering 429',
      intOption('max-queue', 0),
      SERVE_DEFAULTS.maxQueue,
    )
    .action(
      async (o: {
        policy: string;
        port: number;
        host: string;
        engine: (typeof ENGINES)[number];
        maxBatch: number;
        maxQueue: number;
      }) => {
        const [{ loadConfig }, { createLogger }, { openDatabase }, { startServing }] = await Promise.all([
          import('../config.ts'),
          import('../log.ts'),
          import('../../prisma/db.ts'),
          import('../../trainer/serve/service.ts'),
        ]);
        const config = loadConfig();
        const log = createLogger(config, 'sweetloop-serve');
        const db = await openDatabase({
          databaseUrl: config.DATABASE_URL,
          pgliteDir: config.PGLITE_DIR,
          poolSize: config.DATABASE_POOL_SIZE,
          log,
        });
        const serving = await startServing(db, {
          policy: o.policy,
          port: o.port,
          host: o.host,
          engine: o.engine,
          maxBatch: o.maxBatch,
          maxQueue: o.maxQueue,
          checkpointRoot: config.CHECKPOINT_DIR,
          seed: config.SEED,
          log,
          ...(config.TFJS_BACKEND ? { backend: config.TFJS_BACKEND } : {}),
        });
        const shutdown = async () => {
          await serving.close();
          await db.close();
        };
        try {
          await serving.ready;
        } catch (err) {
          await shutdown();
          throw err;
        }
        console.error(
          `sweetloop serve: ${serving.url}/v1 (model ${serving.server.slot.engine?.modelName ?? 'none yet'}); Ctrl-C stops`,
        );
        await new Promise<void>((resolve) => {
          const stop = () => resolve();
          process.once('SIGINT', stop);
          process.once('SIGTERM', stop);
        });
        await shutdown();
      },
    );
}
