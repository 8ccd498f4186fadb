// Defaults of `sweetloop serve` (the CLI's options) and of bench:serve, which measures the server as shipped.
// No imports: the CLI reads this at start-up, before any serving code is loaded.
export const SERVE_DEFAULTS = { port: 8000, host: '127.0.0.1', engine: 'llama', maxBatch: 32, maxQueue: 256 } as const;
