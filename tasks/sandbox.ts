// Runs untrusted programs (candidate answers, imported reference solutions) under bubblewrap.
//
// What the sandboxed program gets: /usr read-only (with the /bin, /lib, /lib64 links of a merged-/usr
// system), from /etc only the loader cache, /etc/alternatives and localtime, a minimal read-only /dev,
// size-capped private tmpfs at /tmp and /sandbox (the working directory), and nothing else: no /home, /root,
// /proc, /run, /sys, no /etc/passwd or /etc/shadow, so host files, host Unix sockets and other processes are
// simply absent. All namespaces are new (no network at all, own PID space with the program as PID 1, so
// it cannot signal anything outside). A seccomp filter refuses to create processes (threads stay allowed),
// and rlimits set inside cap CPU time, address space, thread count, file size and core dumps. The host side
// caps what it reads back and kills the whole thing at a wall-clock deadline.
//
// There is deliberately no fallback: when bubblewrap is missing or cannot create its namespaces the caller
// gets SandboxUnavailableError and nothing runs.
import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import type { Readable, Writable } from 'node:stream';

export class SandboxUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}

export interface SandboxLimits {
  /** Wall-clock deadline for the whole run; the process group is killed when it passes. */
  wallMs: number;
  /** RLIMIT_CPU (seconds of CPU time, all threads together). */
  cpuSeconds: number;
  /** RLIMIT_AS (bytes of address space). */
  memoryBytes: number;
  /** RLIMIT_NPROC. Process creation is refused by seccomp anyway; this caps threads (for non-root users). */
  processes: number;
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
// seccomp: a classic-BPF program, assembled here so no libseccomp is needed.

const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
const RET_ALLOW = 0x7fff0000;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const CLONE_THREAD = 0x00010000;

interface ArchSyscalls {
  audit: number;
  /** Syscalls refused with EPERM. */
  denied: number[];
  clone: number;
  clone3: number;
}

const SYSCALLS: Record<string, ArchSyscalls> = {
  // fork, vfork, ptrace, io_uring_setup, unshare, setns, mount, pivot_root, userfaultfd, bpf, perf_event_open
  x64: { audit: AUDIT_ARCH_X86_64, denied: [57, 58, 101, 425, 272, 308, 165, 155, 323, 321, 298], clone: 56, clone3: 435 },
  // aarch64 has no fork/vfork syscalls: ptrace, io_uring_setup, unshare, setns, mount, pivot_root, userfaultfd, bpf, perf_event_open
  arm64: { audit: AUDIT_ARCH_AARCH64, denied: [117, 425, 97, 268, 40, 41, 282, 280, 241], clone: 220, clone3: 435 },
};

type Insn = { code: number; jt: number | string; jf: number | string; k: number; label?: string };

function assemble(insns: Insn[]): Buffer {
  const labels = new Map<string, number>();
  insns.forEach((ins, i) => {
    if (ins.label) labels.set(ins.label, i);
  });
  const buf = Buffer.alloc(insns.length * 8);
  insns.forEach((ins, i) => {
    const rel = (t: number | string): number => {
      if (typeof t === 'number') return t;
      const at = labels.get(t);
      if (at === undefined || at <= i || at - i - 1 > 255) throw new Error(`seccomp: bad jump to ${t}`);
      return at - i - 1;
    };
    buf.writeUInt16LE(ins.code, i * 8);
    buf.writeUInt8(rel(ins.jt), i * 8 + 2);
    buf.writeUInt8(rel(ins.jf), i * 8 + 3);
    buf.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return buf;
}

/** The seccomp filter for this machine's architecture: no new processes, threads allowed. */
export function seccompProgram(arch: string = process.arch): Buffer {
  const sc = SYSCALLS[arch];
  if (!sc) throw new SandboxUnavailableError(`The sandbox's seccomp filter knows x64 and arm64, not ${arch}.`);
  const LD_W_ABS = 0x20, JEQ = 0x15, JGE = 0x35, JSET = 0x45, RET = 0x06;
  const p: Insn[] = [
    { code: LD_W_ABS, jt: 0, jf: 0, k: 4 }, // seccomp_data.arch
    { code: JEQ, jt: 0, jf: 'kill', k: sc.audit }, // a foreign ABI (e.g. i386 int 0x80) gets killed
    { code: LD_W_ABS, jt: 0, jf: 0, k: 0 }, // seccomp_data.nr
  ];
  if (arch === 'x64') p.push({ code: JGE, jt: 'eperm', jf: 0, k: 0x40000000 }); // x32 ABI
  for (const nr of sc.denied) p.push({ code: JEQ, jt: 'eperm', jf: 0, k: nr });
  // glibc falls back from clone3 (whose flags sit behind a pointer, out of BPF's reach) to clone on ENOSYS.
  p.push({ code: JEQ, jt: 'enosys', jf: 0, k: sc.clone3 });
  p.push({ code: JEQ, jt: 0, jf: 'allow', k: sc.clone });
  p.push({ code: LD_W_ABS, jt: 0, jf: 0, k: 16 }); // low word of args[0] = clone flags
  p.push({ code: JSET, jt: 'allow', jf: 'eperm', k: CLONE_THREAD });
  p.push({ code: RET, jt: 0, jf: 0, k: RET_ALLOW, label: 'allow' });
  p.push({ code: RET, jt: 0, jf: 0, k: RET_ERRNO | EPERM, label: 'eperm' });
  p.push({ code: RET, jt: 0, jf: 0, k: RET_ERRNO | ENOSYS, label: 'enosys' });
  p.push({ code: RET, jt: 0, jf: 0, k: RET_KILL_PROCESS, label: 'kill' });
  return assemble(p);
}

// ---------------------------------------------------------------------------------------------------------

function bwrapArgs(limits: SandboxLimits, opts: SandboxRunOptions): string[] {
  const env: Record<string, string> = { PATH: '/usr/bin:/bin', HOME: '/sandbox', LANG: 'C.UTF-8', ...opts.env };
  const args = [
    '--unshare-all',
    '--die-with-parent',
    '--new-session',
    '--as-pid-1',
    '--ro-bind', '/usr', '/usr',
    '--symlink', 'usr/bin', '/bin',
    '--symlink', 'usr/lib', '/lib',
    '--symlink', 'usr/lib64', '/lib64',
    // Only what the dynamic loader and timezone code read; numpy finds its BLAS through /etc/alternatives.
    '--ro-bind-try', '/etc/ld.so.cache', '/etc/ld.so.cache',
    '--ro-bind-try', '/etc/alternatives', '/etc/alternatives',
    '--ro-bind-try', '/etc/localtime', '/etc/localtime',
    '--dev', '/dev',
    '--size', String(1024 * 1024), '--tmpfs', '/dev/shm',
    '--remount-ro', '/dev',
    '--size', String(limits.tmpfsBytes), '--tmpfs', '/tmp',
    '--size', String(limits.tmpfsBytes), '--tmpfs', '/sandbox',
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
    `--fsize=${limits.fileSizeBytes}`,
    '--core=0',
    '--',
    ...opts.argv,
  );
  return args;
}

/** Checks that the bubblewrap binary exists and is executable; throws SandboxUnavailableError otherwise. */
function requireExecutable(path: string, what: string): void {
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
  const seccomp = seccompProgram();
  const nChannels = opts.channels ?? 0;
  const started = Date.now();

  const child = spawn(bwrap, bwrapArgs(limits, opts), {
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

  const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new SandboxUnavailableError(`Could not start bubblewrap (${bwrap}): ${e.message}`));
    });
    child.on('close', (c, s) => {
      clearTimeout(timer);
      resolve({ code: c, signal: s });
    });
  });

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
    wallMs: Date.now() - started,
  };
}

const probes = new Map<string, Promise<void>>();

/**
 * Starts one trivial sandbox to prove bubblewrap, its namespaces, the seccomp filter, prlimit and the Python
 * interpreter all work here. Cached per (bubblewrap, python) pair. Throws SandboxUnavailableError otherwise.
 */
export function assertSandboxAvailable(
  bwrapPath: string = DEFAULT_BWRAP_PATH,
  pythonPath = '/usr/bin/python3',
  run: (opts: SandboxRunOptions) => Promise<SandboxRunResult> = runSandboxed,
): Promise<void> {
  const key = `${bwrapPath}\0${pythonPath}`;
  let p = probes.get(key);
  if (!p) {
    p = (async () => {
      requireExecutable(bwrapPath, 'bubblewrap');
      if (!pythonPath.startsWith('/usr/')) {
        throw new SandboxUnavailableError(`Python must live under /usr (the only tree mounted in the sandbox), got ${pythonPath}.`);
      }
      const r = await run({
        bwrapPath,
        argv: [pythonPath, '-c', 'import os,sys; sys.stdout.write("leak" if any(map(os.path.exists, ["/etc/shadow", "/root", "/proc/1"])) else "ok")'],
        limits: { wallMs: 15_000 },
      });
      if (r.stdout !== 'ok') {
        throw new SandboxUnavailableError(
          `The sandbox probe failed (exit ${r.exitCode}${r.timedOut ? ', timed out' : ''}): ${r.stdout} ${r.stderr}`.trim(),
        );
      }
    })();
    probes.set(key, p);
    p.catch(() => probes.delete(key));
  }
  return p;
}
