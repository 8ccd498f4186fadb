import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    // Two cores: more workers only make the heavy suites (model, sandbox, browser) fight for them.
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 120_000,
    hookTimeout: 180_000,
    reporters: ['default'],
  },
});
