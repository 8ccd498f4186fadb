// The size of libuv's thread pool, which must be set before Node starts the pool; hence CommonJS, required first
// by bin/sweetloop.cjs (and by `node --require` for bench:serve): an ES module entry is already read through
// the pool.
//
// node-llama-cpp runs llama.cpp's decodes and token samplings as jobs on that pool. libuv's default of 4 threads
// lets 4 native jobs contend for a 2-core machine's 2 cores; with one thread a core, bench:serve measured about
// 7% more tokens/s at 32 sessions (bench/HISTORY.md, "Serving"). So the pool gets one thread a core (at least
// 2), unless UV_THREADPOOL_SIZE is set already.
'use strict';
const { availableParallelism } = require('node:os');

if (!process.env.UV_THREADPOOL_SIZE) process.env.UV_THREADPOOL_SIZE = String(Math.max(2, availableParallelism()));
