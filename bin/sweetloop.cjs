#!/usr/bin/env node
// The `sweetloop` command. Sources are TypeScript run through tsx, so the command works straight after
// `npm ci` with no build step. CommonJS so that its first line runs before Node starts libuv's thread pool,
// whose size the serving engine needs set (thread-pool.cjs); everything else is ES modules.
'use strict';
require('./thread-pool.cjs');

import('tsx/esm/api')
  .then(async ({ register }) => {
    register();
    const { main } = await import('./cli.ts');
    await main(process.argv);
  })
  .catch((err) => {
    // What an ES module entry's top-level await would do with it: print and fail.
    console.error(err);
    process.exitCode = 1;
  });
