// Sandboxes started off the event loop. child_process.spawn forks the calling process synchronously: in the bot
// (a few hundred MB of heap) each start blocked its event loop for p50 36 ms, p90 73 ms, up to 145 ms in bench:bot's
// CPU profile at 200 people (the largest self time there; the bot's goal: event-loop delay p99 under 50 ms, bench/RESULTS.md). Here the
// spawn, the pipes and the deadline run in one worker thread (sandbox-worker.ts, started through
// sandbox-thread-entry.mjs, which registers tsx), and only the result comes back. The thread is started on first
// use and kept (bubblewrap's --die-with-parent follows the thread that started it, so it must outlive its
// sandboxes); it holds the process open only while a run is under way. A thread that dies fails the runs in it
// (the caller's evaluation fails, and is tried again as any failed evaluation is) and is started afresh next time.
import { Worker } from 'node:worker_threads';
import { SandboxUnavailableError, type SandboxRunOptions, type SandboxRunResult } from './sandbox.ts';
import type { SandboxReply } from './sandbox-worker.ts';

interface Thread {
  worker: Worker;
  pending: Map<number, { resolve: (r: SandboxRunResult) => void; reject: (e: Error) => void }>;
}

let thread: Thread | null = null;
let nextId = 1;

function start(): Thread {
  const worker = new Worker(new URL('./sandbox-thread-entry.mjs', import.meta.url));
  const t: Thread = { worker, pending: new Map() };
  const fail = (why: string) => {
    if (thread === t) thread = null;
    for (const p of t.pending.values()) p.reject(new Error(`sandbox thread: ${why}`));
    t.pending.clear();
  };
  worker.on('message', (m: SandboxReply) => {
    const p = t.pending.get(m.id);
    if (!p) return;
    t.pending.delete(m.id);
    if (t.pending.size === 0) worker.unref();
    if (m.ok) {
      // Buffers arrive as plain Uint8Arrays (structured clone): the result keeps its Buffers.
      const r = m.result;
      p.resolve({ ...r, channels: r.channels.map((c) => Buffer.from(c.buffer, c.byteOffset, c.byteLength)) });
    } else {
      const e =
        m.error.name === 'SandboxUnavailableError'
          ? new SandboxUnavailableError(m.error.message)
          : new Error(m.error.message);
      p.reject(e);
    }
  });
  worker.on('error', (err) => fail(`crashed: ${err.message}`));
  worker.on('exit', (code) => fail(`exited with code ${code}`));
  worker.unref();
  return t;
}

/** runSandboxed (sandbox.ts), run in the sandbox thread: the same options, result and errors. */
export function runSandboxedOffThread(opts: SandboxRunOptions): Promise<SandboxRunResult> {
  const t = (thread ??= start());
  const id = nextId++;
  return new Promise<SandboxRunResult>((resolve, reject) => {
    t.pending.set(id, { resolve, reject });
    t.worker.ref();
    t.worker.postMessage({ id, opts });
  });
}
