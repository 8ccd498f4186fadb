// `sweetloop env serve`: the ColBench environment as an HTTP service (trainer/env-server.ts), configured here from
// bin/config.ts (ENV_SERVE_TOKEN, SCORING_POOL_SIZE, the simulator's endpoint) and the command's options.
import type { Command } from 'commander';
import { choice, intOption } from './options.ts';

interface ServeOptions {
  host: string;
  port: number;
  maxEpisodes: number;
  collaborator?: 'builtin' | 'llm';
}

export function registerEnvCommands(program: Command): void {
  const env = program
    .command('env')
    .description(
      'The ColBench environment (tasks, the simulated collaborator, sandboxed scoring) for RL runs elsewhere',
    );
  env
    .command('serve')
    .description(
      'Serve the environment over HTTP: GET /v1/tasks, POST /v1/episodes, POST /v1/episodes/ID/step, POST /v1/score (docs/env-service.md)',
    )
    .option('--host <address>', 'address to listen on; beyond loopback ENV_SERVE_TOKEN must be set', '127.0.0.1')
    .option('--port <n>', 'TCP port (0: any free port)', intOption('port', 0, 65535), 8100)
    .option(
      '--max-episodes <n>',
      'episodes open at once; more are refused with 429',
      intOption('max-episodes', 1, 100_000),
      64,
    )
    .option(
      '--collaborator <which>',
      'the collaborator of an episode that names none: builtin (rule-based) or llm (SIMULATOR_LLM_URL; default when configured)',
      choice('collaborator', ['builtin', 'llm'] as const),
    )
    .action(async (o: ServeOptions) => {
      const [{ withTrainer }, { loadConfig }, { createLogger }, { collaboratorFactory, scorer }, { startEnvServer }] =
        await Promise.all([
          import('./trainer.ts'),
          import('../config.ts'),
          import('../log.ts'),
          import('../../trainer/settings.ts'),
          import('../../trainer/env-server.ts'),
        ]);
      const config = loadConfig();
      const log = createLogger(config, 'sweetloop-env');
      await withTrainer(async (db, s) => {
        const collaborators = {
          builtin: await collaboratorFactory(s, 'builtin'),
          ...(s.llmSimulator ? { llm: await collaboratorFactory(s, 'llm') } : {}),
        };
        const fallback = o.collaborator ?? (s.llmSimulator ? 'llm' : 'builtin');
        if (!(fallback in collaborators))
          throw new Error(
            '--collaborator llm: the LLM simulator is not configured (SIMULATOR_LLM_URL, SIMULATOR_LLM_MODEL)',
          );
        const sc = await scorer(s);
        let server;
        try {
          server = await startEnvServer({
            prisma: db.prisma,
            host: o.host,
            port: o.port,
            token: config.ENV_SERVE_TOKEN,
            scorer: sc,
            collaborators,
            fallback,
            limits: { maxEpisodes: o.maxEpisodes, scoring: config.SCORING_POOL_SIZE },
            log,
          });
        } catch (err) {
          await sc.close();
          throw err;
        }
        console.error(
          `sweetloop env serve: ${server.url} (collaborators ${Object.keys(collaborators).join(', ')}, default ${fallback}; ${config.ENV_SERVE_TOKEN ? 'token required' : 'loopback only, no token'}); Ctrl-C stops`,
        );
        await new Promise<void>((resolve) => {
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        });
        await server.close();
        await sc.close();
      });
    });
}
