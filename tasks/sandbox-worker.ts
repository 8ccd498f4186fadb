// The sandbox thread (see sandbox-thread.ts): runs each requested sandbox with runSandboxed, all at once as they
// come (the caller's scoring pool bounds how many), and answers with its result or error.
//   parent -> thread: { id, opts }                      (SandboxRunOptions)
//   thread -> parent: { id, ok: true, result } or { id, ok: false, error: { name, message } }
import { parentPort } from 'node:worker_threads';
import { runSandboxed, type SandboxRunOptions, type SandboxRunResult } from './sandbox.ts';

export type SandboxReply =
  | { id: number; ok: true; result: SandboxRunResult }
  | { id: number; ok: false; error: { name: string; message: string } };

const port = parentPort;
if (port) {
  port.on('message', (m: { id: number; opts: SandboxRunOptions }) => {
    runSandboxed(m.opts).then(
      (result) => port.postMessage({ id: m.id, ok: true, result } satisfies SandboxReply),
      (err: Error) =>
        port.postMessage({
          id: m.id,
          ok: false,
          error: { name: err.name, message: err.message },
        } satisfies SandboxReply),
    );
  });
}
