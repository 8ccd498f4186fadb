// Runs untrusted programs (candidate answers, imported reference solutions) under bubblewrap.
//
// What the sandboxed program gets: /usr read-only (with the /bin, /lib, /lib64 links of a merged-/usr
// system), from /etc only the loader cache, /etc/alternatives and localtime, a minimal read-only /dev,
// size-capped private tmpfs at /tmp and /sandbox (the working directory), and nothing else: no /home, /root,
// /proc, /run, /sys, no /etc/passwd or /etc/shadow, so host files, host Unix sockets and other processes are
// simply absent. All namespaces are new (no network at all, own PID space with the program as PID 1, so
// it cannot signal anything outside), and it holds no capabilities (--cap-drop ALL), not even inside them.
// The seccomp filter (tasks/seccomp.ts) refuses new processes (threads stay allowed), every way to mount and
// the kernel's administration calls. Its total memory is bounded by a memory cgroup, or where none can be made
// by rlimits, seccomp and tmpfs sizes together (tasks/sandbox-memory.ts); rlimits set inside cap CPU time,
// address space, threads, open files, file size and core dumps. The host side caps what it reads back and kills
// the whole thing at a wall-clock deadline.
//
// There is deliberately no fallback below what is promised: when bubblewrap is missing, cannot create its
// namespaces, or a limit cannot be set, the caller gets SandboxUnavailableError and nothing runs.
import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { SandboxUnavailableError } from './sandbox-errors.ts';
import {
  createRunCgroup,
  launcher,
  memoryPlan,
  type MemoryMode,
  type MemoryModeRequest,
  type RunCgroup,
} from './sandbox-memory.ts';
import { seccompProgram } from './seccomp.ts';

export { SandboxUnavailableError };
export type { MemoryMode, MemoryModeRequest };

export interface SandboxLimits {
  /** Wall-clock deadline for the whole run; the process group is killed when it passes. */
  wallMs: number;
  /** RLIMIT_CPU (seconds of CPU time, all threads together). */
  cpuSeconds: number;
  /**
   * RLIMIT_AS (bytes of address space) and, in cgroup mode, the limit of all the sandbox's memory together (memfd,
   * tmpfs, shared memory and kernel memory included); past it the program is killed.
   */
  memoryBytes: number;
  /** Threads (process creation is refused by seccomp anyway): the pids cgroup, or RLIMIT_NPROC in rlimits mode. */
  processes: number;
  /** RLIMIT_NOFILE: kept small, it also bounds the kernel memory behind descriptors (pipes, sockets). */
  openFiles: number;
  /** RLIMIT_FSIZE (largest file the program may write, bytes). */
  fileSizeBytes: number;
  /** Size of each private tmpfs (/tmp and /sandbox). */
  tmpfsBytes: number;
  /** stdout + stderr bytes kept; past this the program is killed. */
  outputBytes: number;
  /** Bytes kept per result channel; past this the program is killed. */
  channelBytes: number;
}

export const DEFAULT_SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({
  wallMs: 30_000,
  cpuSeconds: 20,
  memoryBytes: 1024 * 1024 * 1024,
  processes: 64,
  openFiles: 64,
  fileSizeBytes: 8 * 1024 * 1024,
  tmpfsBytes: 16 * 1024 * 1024,
  outputBytes: 1024 * 1024,
  channelBytes: 16 * 1024 * 1024,
});

export interface SandboxRunOptions {
  /** Program and arguments as seen inside the sandbox (absolute path; /usr is the only thing mounted). */
  argv: string[];
  /** Written to the program's stdin, which is then closed. */
  stdin?: string | Buffer;
  /**
   * Extra output pipes handed to the program, returned in order as `channels`. Their descriptor numbers
   * inside the sandbox are `channelFds` of the result (they follow bubblewrap's own descriptors).
   */
  channels?: number;
  limits?: Partial<SandboxLimits>;
  bwrapPath?: string;
  /** Environment inside (the host environment is never passed through). */
  env?: Record<string, string>;
  /** Host paths made unusable inside, e.g. a native module the program must not load. */
  hide?: string[];
  /** How total memory is bounded (tasks/sandbox-memory.ts); default 'auto': a cgroup where one can be made. */
  memoryMode?: MemoryModeRequest;
}

export interface SandboxRunResult {
  exitCode: number | null;
  /** Signal that ended the sandboxed program (from bubblewrap's report), or that ended bubblewrap. */
  signal: string | null;
  stdout: string;
  stderr: string;
  channels: Buffer[];
  timedOut: boolean;
  /** stdout/stderr passed `outputBytes`: the program was killed. */
  outputExceeded: boolean;
  /** A channel passed `channelBytes`: the program was killed. */
  channelExceeded: boolean;
  /** The memory cgroup killed the program for passing `memoryBytes` (cgroup mode only). */
  memoryExceeded: boolean;
  /** How this run's memory was bounded, and a line saying by what. */
  memoryMode: MemoryMode;
  memoryDetail: string;
  wallMs: number;
}

export const DEFAULT_BWRAP_PATH = '/usr/bin/bwrap';
export const DEFAULT_PRLIMIT_PATH = '/usr/bin/prlimit';

// Descriptor layout handed to bubblewrap: 0-2 stdio, 3 seccomp program (we write), 4 bubblewrap's JSON status
// (it writes), 5.. result channels for the sandboxed program.
const SECCOMP_FD = 3;
const STATUS_FD = 4;
const FIRST_CHANNEL_FD = 5;

/** The descriptor numbers the sandboxed program sees its result channels on. */
export function channelFds(count: number): number[] {
  return Array.from({ length: count }, (_, i) => FIRST_CHANNEL_FD + i);
}

// ---------------------------------------------------------------------------------------------------------

function bwrapArgs(limits: SandboxLimits, opts: SandboxRunOptions): string[] {
  const env: Record<string, string> = { PATH: '/usr/bin:/bin', HOME: '/sandbox', LANG: 'C.UTF-8', ...opts.env };
  const args = [
    '--unshare-all',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    '--new-session',
    '--as-pid-1',
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    // Only what the dynamic loader and timezone code read; numpy finds its BLAS through /etc/alternatives.
    '--ro-bind-try',
    '/etc/ld.so.cache',
    '/etc/ld.so.cache',
    '--ro-bind-try',
    '/etc/alternatives',
    '/etc/alternatives',
    '--ro-bind-try',
    '/etc/localtime',
    '/etc/localtime',
    '--dev',
    '/dev',
    '--size',
    String(1024 * 1024),
    '--tmpfs',
    '/dev/shm',
    '--remount-ro',
    '/dev',
    '--size',
    String(limits.tmpfsBytes),
    '--tmpfs',
    '/tmp',
    '--size',
    String(limits.tmpfsBytes),
    '--tmpfs',
    '/sandbox',
  ];
  for (const path of opts.hide ?? []) args.push('--ro-bind', '/dev/null', path);
  args.push('--remount-ro', '/', '--chdir', '/sandbox', '--clearenv');
  for (const [k, v] of Object.entries(env)) args.push('--setenv', k, v);
  args.push('--seccomp', String(SECCOMP_FD), '--json-status-fd', String(STATUS_FD), '--');
  args.push(
    DEFAULT_PRLIMIT_PATH,
    `--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`,
    `--as=${limits.memoryBytes}`,
    `--nproc=${limits.processes}`,
    `--nofile=${limits.openFiles}`,
    `--fsize=${limits.fileSizeBytes}`,
    '--core=0',
    '--',
    ...opts.argv,
  );
  return args;
}

/** Checks that the bubblewrap binary exists and is executable; throws SandboxUnavailableError otherwise. */
export function requireExecutable(path: string, what: string): void {
  try {
    accessSync(path, fsConstants.X_OK);
  } catch {
    throw new SandboxUnavailableError(
      `${what} is not available at ${path}: refusing to run untrusted code without a sandbox. ` +
        `Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or set BWRAP_BIN.`,
    );
  }
}

/** Runs a program in the sandbox. Throws SandboxUnavailableError when the sandbox itself cannot be set up. */
export async function runSandboxed(opts: SandboxRunOptions): Promise<SandboxRunResult> {
  const limits: SandboxLimits = { ...DEFAULT_SANDBOX_LIMITS, ...opts.limits };
  const bwrap = opts.bwrapPath ?? DEFAULT_BWRAP_PATH;
  requireExecutable(bwrap, 'bubblewrap');
  const plan = memoryPlan(opts.memoryMode);
  const seccomp = seccompProgram({ countedMemory: plan.mode === 'cgroup' });
  const cgroup = plan.mode === 'cgroup' ? createRunCgroup(plan, limits) : null;
  try {
    return await runIn(
      launcher(plan, cgroup, [bwrap, ...bwrapArgs(limits, opts)]),
      limits,
      opts,
      seccomp,
      cgroup,
      plan.detail,
    );
  } finally {
    await cgroup?.remove();
  }
}

async function runIn(
  argv: string[],
  limits: SandboxLimits,
  opts: SandboxRunOptions,
  seccomp: Buffer,
  cgroup: RunCgroup | null,
  memoryDetail: string,
): Promise<SandboxRunResult> {
  const bwrap = opts.bwrapPath ?? DEFAULT_BWRAP_PATH;
  const nChannels = opts.channels ?? 0;
  const started = Date.now();

  const child = spawn(argv[0]!, argv.slice(1), {
    stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe', ...Array<'pipe'>(nChannels).fill('pipe')],
    // Own process group, so the deadline can kill bubblewrap and everything it started at once.
    detached: true,
  });
  const stdio = child.stdio as unknown as (Readable & Writable)[];

  let timedOut = false;
  let outputExceeded = false;
  let channelExceeded = false;
  let killed = false;
  const kill = (): void => {
    if (killed || child.pid === undefined) return;
    killed = true;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };

  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let outputSeen = 0;
  const collectOutput = (stream: Readable, into: Buffer[]): void => {
    stream.on('data', (chunk: Buffer) => {
      if (outputExceeded) return;
      const room = limits.outputBytes - outputSeen;
      outputSeen += chunk.length;
      if (chunk.length > room) {
        if (room > 0) into.push(chunk.subarray(0, room));
        outputExceeded = true;
        kill();
        return;
      }
      into.push(chunk);
    });
  };
  collectOutput(child.stdout!, out);
  collectOutput(child.stderr!, err);

  const channelData: Buffer[][] = [];
  for (let i = 0; i < nChannels; i++) {
    const parts: Buffer[] = [];
    let seen = 0;
    channelData.push(parts);
    stdio[FIRST_CHANNEL_FD + i]!.on('data', (chunk: Buffer) => {
      if (channelExceeded) return;
      seen += chunk.length;
      if (seen > limits.channelBytes) {
        channelExceeded = true;
        kill();
        return;
      }
      parts.push(chunk);
    });
  }

  const status: Buffer[] = [];
  stdio[STATUS_FD]!.on('data', (chunk: Buffer) => {
    if (status.reduce((n, b) => n + b.length, 0) < 64 * 1024) status.push(chunk);
  });

  // A program that exits without reading its input, or a killed one, makes these writes fail: not our error.
  for (const s of [child.stdin!, stdio[SECCOMP_FD]!]) s.on('error', () => {});
  for (const s of stdio) s?.on?.('error', () => {});
  stdio[SECCOMP_FD]!.end(seccomp);
  child.stdin!.end(opts.stdin ?? '');

  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, limits.wallMs);

  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve, reject) => {
      child.on('error', (e) => {
        clearTimeout(timer);
        reject(new SandboxUnavailableError(`Could not start bubblewrap (${bwrap}): ${e.message}`));
      });
      child.on('close', (c, s) => {
        clearTimeout(timer);
        resolve({ code: c, signal: s });
      });
    },
  );

  // bubblewrap reports the child's start and exit as JSON lines; no child-pid line means the sandbox never
  // came up (no user namespaces, a bad mount, a seccomp program it refused).
  let childStarted = false;
  let childExit: number | null = null;
  let childSignal: string | null = null;
  for (const line of Buffer.concat(status).toString('utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const j = JSON.parse(line) as { 'child-pid'?: number; 'exit-code'?: number };
      if (typeof j['child-pid'] === 'number') childStarted = true;
      if (typeof j['exit-code'] === 'number') childExit = j['exit-code'];
    } catch {
      // bubblewrap wrote something else; the exit code still tells
    }
  }
  const stderr = Buffer.concat(err).toString('utf8');
  if (!childStarted && !killed) {
    const why = stderr.trim().split('\n').slice(-3).join(' ') || `exit code ${code ?? signal}`;
    throw new SandboxUnavailableError(`bubblewrap could not set up the sandbox: ${why}`);
  }
  // bwrap passes the program's status through; a program killed by signal N exits 128+N.
  if (childExit !== null && childExit > 128) childSignal = `signal ${childExit - 128}`;

  return {
    exitCode: childExit ?? code,
    signal: signal ?? childSignal,
    stdout: Buffer.concat(out).toString('utf8'),
    stderr,
    channels: channelData.map((parts) => Buffer.concat(parts)),
    timedOut,
    outputExceeded,
    channelExceeded,
    memoryExceeded: cgroup?.oomKilled() ?? false,
    memoryMode: cgroup ? 'cgroup' : 'rlimits',
    memoryDetail,
    wallMs: Date.now() - started,
  };
}
