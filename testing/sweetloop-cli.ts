// The real `sweetloop` command in a child process, as a person runs it, for the tests of the CLI. One place names
// the entry (renaming it was one edit here instead of one in every test file), and the child is spawned rather
// than run with execFile: a long command never blocks the test worker (a blocked worker misses vitest's own
// heartbeats) and no output cap cuts a long report.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** bin/sweetloop.cjs, by absolute path: callers need not run from the repository root. */
export const SWEETLOOP_ENTRY = fileURLToPath(new URL('../bin/sweetloop.cjs', import.meta.url));

export interface SweetloopRun {
  /** Exit code; null when a signal (the timeout's included) ended it. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `sweetloop ARGS` with `env` (the whole environment: default this process's) to its end. */
export function runSweetloop(
  args: readonly string[],
  o: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {},
): Promise<SweetloopRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SWEETLOOP_ENTRY, ...args], {
      env: o.env ?? process.env,
      cwd: o.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = o.timeoutMs === undefined ? undefined : setTimeout(() => child.kill('SIGTERM'), o.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface RunningSweetloop {
  /** Everything it wrote to stderr so far (its log lines). */
  stderr(): string;
  /** Called with each chunk of stderr as it arrives. */
  onStderr(listener: (text: string) => void): void;
  /** SIGTERM (or the signal given: SIGINT is Ctrl-C), then its exit code once it has exited. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts a long-running `sweetloop ARGS` (trainer, bot) with this environment plus `env`, without DISCORD_TOKEN. */
export function startSweetloop(args: readonly string[], env: NodeJS.ProcessEnv): RunningSweetloop {
  const base = { ...process.env };
  delete base.DISCORD_TOKEN;
  const child = spawn(process.execPath, [SWEETLOOP_ENTRY, ...args], {
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stdout.resume();
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  // 'close', not 'exit': its last lines on stderr have arrived by then.
  const exited = new Promise<number | null>((r) => child.once('close', (c) => r(c)));
  return {
    stderr: () => stderr,
    onStderr: (listener) => void child.stderr.on('data', (d: string) => listener(d)),
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal);
      return exited;
    },
  };
}
