import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The tests that need more from the machine than Node and the npm packages, by what they need. `npm test` checks
 * all of it first (test/preflight.ts); `npm run test:unit` (`vitest run --mode unit`) leaves these files out, and
 * SLOW_TESTS, so it runs wherever `npm ci` ran. A new test that reaches one of these programs goes here
 * (test/machine-tests.test.ts fails on a test that opens a database and is not listed).
 */
export const MACHINE_TESTS: Record<'postgres' | 'chromium' | 'bubblewrap' | 'python3', string[]> = {
  // testing/database.ts (directly, or through test/bot/discord/harness.ts and test/trainer/fixture.ts), or a
  // Postgres URL of their own.
  postgres: [
    'test/bin/cli.test.ts',
    'test/bot/export/training-formats.test.ts',
    'test/prisma/turn-tokens.test.ts',
    'test/bin/doctor-endpoints.test.ts',
    'test/bin/commands/{bot,export,import,policy,policy-adapter,policy-deploy-load,policy-erased,policy-gguf,privacy,study,study-arms,trainer-backoff,trainer-health,trainer-interrupt}.test.ts',
    'test/bot/discord/**/*.test.ts',
    'test/bot/dashboard/*.test.ts',
    'test/bin/commands/dashboard.test.ts',
    'test/testing/database.test.ts',
    'test/bot/{assign,bootstrap,console-prolific,console-study,endpoint,limits,runtime}.test.ts',
    'test/bot/session/*.test.ts',
    'test/bot/export/{consent-version,export,import,official-format,official-pairs,pay-data,study-export}.test.ts',
    'test/bot/report/{calibration,report,training-data}.test.ts',
    'test/prisma/{active-time-store,cohorts,session-store-turns,db-notify,db-pool,errors,event-store,migrate-postgres,policy-store,study-stats,study-store,task-store}.test.ts',
    'test/prisma/migrations/*.test.ts',
    'test/trainer/{adapter-training,critic,critic-preferences,data,data-filter,evaluate,promote,promote-human-ab,reproducible,runs-kill,runs-resume,service-lora,simulate,simulate-endpoint,study-data}.test.ts',
    'test/trainer/policies/{agent-for,registry}.test.ts',
    'test/trainer/serve/{local,local-gguf,server}.test.ts',
    // Also bubblewrap (the sandboxed scorer) and python3 (the client it drives).
    'test/trainer/env-server.test.ts',
    'test/bin/commands/env.test.ts',
  ],
  // Rendering pages (tasks/render.ts), besides the Postgres tests above that render too.
  chromium: ['test/tasks/{chromium,frontend-eval,frontend-game,render}.test.ts'],
  // The sandbox (tasks/sandbox.ts) runs python3 inside bubblewrap; `npm start` in console.test.ts scores its
  // session's answer there; doctor.test.ts checks every tool as .ci/run installs them.
  bubblewrap: [
    'test/tasks/{backend-eval,builtin,expert,mini,mini-templates,sandbox,sandbox-thread,score-answers,scorer}.test.ts',
    'test/bot/{console,console-gguf}.test.ts',
    // The README in order: `npm start` scores its session's answer, and commands run beside it.
    'test/readme-walkthrough.test.ts',
    // docs/training.md's quick path: the starter's games scored, then a training run, on a fresh PGlite.
    'test/training-quick-path.test.ts',
    'test/bin/doctor.test.ts',
  ],
  // The PyTorch twin of the decoder (testing/model_torch.py); it skips without torch. python-value checks
  // its float repr against Python's own.
  python3: ['test/trainer/model/torch-reference.test.ts', 'test/tasks/python-value.test.ts'],
};

/**
 * Tests that need nothing from the machine but train or start models for tens of CPU-seconds each; `npm test`
 * runs them, `npm run test:unit` leaves them out to stay under two minutes on two cores.
 */
export const SLOW_TESTS: string[] = [
  'test/bin/commands/model.test.ts',
  'test/trainer/model/policy.test.ts',
  'test/trainer/recipes/shipped-starter.test.ts',
  'test/trainer/{rehearsal,rollout}.test.ts',
];

export default defineConfig(({ mode }) => ({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: [
      ...configDefaults.exclude,
      ...(mode === 'unit' ? [...Object.values(MACHINE_TESTS).flat(), ...SLOW_TESTS] : []),
    ],
    pool: 'forks',
    // Two cores: more workers only make the heavy suites (model, sandbox, browser) fight for them.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 120_000,
    hookTimeout: 180_000,
    reporters: ['default'],
  },
}));
