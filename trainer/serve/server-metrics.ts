// The Prometheus metrics of the OpenAI-compatible server (server.ts): the engine's queue and batch as gauges read
// at scrape time, its cumulative counts as counters, and request latencies.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ServingEngine } from './engine-contract.ts';
import type { EngineSlot } from './slot.ts';

/** The server's metrics registry over the engine the slot holds now. */
export function createMetrics(slot: EngineSlot) {
  const registry = new Registry();
  const stat = <K extends 'running' | 'queued' | 'maxBatch' | 'maxQueue'>(k: K) =>
    function (this: Gauge) {
      this.set(slot.engine?.stats()[k] ?? 0);
    };
  new Gauge({
    name: 'sweetloop_serve_queue_depth',
    help: 'Requests waiting for a decoding slot',
    registers: [registry],
    collect: stat('queued'),
  });
  new Gauge({
    name: 'sweetloop_serve_running_sequences',
    help: 'Sequences decoding now (the running batch)',
    registers: [registry],
    collect: stat('running'),
  });
  new Gauge({
    name: 'sweetloop_serve_max_batch',
    help: 'Most sequences the engine decodes at once',
    registers: [registry],
    collect: stat('maxBatch'),
  });
  new Gauge({
    name: 'sweetloop_serve_max_queue',
    help: 'Most requests waiting before 429',
    registers: [registry],
    collect: stat('maxQueue'),
  });
  // The engine's own cumulative counts, turned into counters by adding what grew since the last scrape.
  const seen = new WeakMap<ServingEngine, { steps: number; seqs: number }>();
  const steps = new Counter({
    name: 'sweetloop_serve_decode_steps_total',
    help: 'Decoding steps run by the engine (one forward pass over the running batch)',
    registers: [registry],
  });
  const stepSeqs = new Counter({
    name: 'sweetloop_serve_step_sequences_total',
    help: 'Sum over decoding steps of the sequences in each; divided by decode_steps it is the mean batch size',
    registers: [registry],
  });
  const syncEngineCounters = () => {
    const engine = slot.engine;
    if (!engine) return;
    const s = engine.stats();
    if (s.decodeSteps === undefined || s.stepSequences === undefined) return;
    const last = seen.get(engine) ?? { steps: 0, seqs: 0 };
    if (s.decodeSteps > last.steps) steps.inc(s.decodeSteps - last.steps);
    if (s.stepSequences > last.seqs) stepSeqs.inc(s.stepSequences - last.seqs);
    seen.set(engine, { steps: s.decodeSteps, seqs: s.stepSequences });
  };
  return {
    registry,
    syncEngineCounters,
    requests: new Counter({
      name: 'sweetloop_serve_requests_total',
      help: 'Chat completion requests by HTTP status',
      labelNames: ['status'],
      registers: [registry],
    }),
    overloaded: new Counter({
      name: 'sweetloop_serve_rejected_overloaded_total',
      help: 'Requests refused with 429 because the queue was full',
      registers: [registry],
    }),
    aborted: new Counter({
      name: 'sweetloop_serve_aborted_total',
      help: 'Requests whose client went away before the end',
      registers: [registry],
    }),
    promptTokens: new Counter({
      name: 'sweetloop_serve_prompt_tokens_total',
      help: 'Prompt tokens of completed requests',
      registers: [registry],
    }),
    tokens: new Counter({
      name: 'sweetloop_serve_generated_tokens_total',
      help: 'Tokens generated (rate() of it is tokens/s)',
      registers: [registry],
    }),
    ttft: new Histogram({
      name: 'sweetloop_serve_time_to_first_token_seconds',
      help: 'From the request arriving to its first token leaving the engine',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'sweetloop_serve_request_duration_seconds',
      help: 'From the request arriving to its last byte (completed requests)',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    }),
  };
}

// ---------------------------------------------------------------------------------------------------------
// The server
