// How a sandbox's total memory is bounded (tasks/sandbox.ts), chosen once per process:
//   'cgroup'  a memory cgroup per run (cgroup v1, which needs root) counts everything the program holds, memfd,
//             tmpfs, shared memory and kernel memory included; a pids cgroup caps its threads. The program is
//             put in it before bubblewrap starts, by a shell that joins the cgroup and then execs bubblewrap.
//   'rlimits' where no cgroup can be made: RLIMIT_AS caps mappings, the seccomp filter refuses the memory
//             RLIMIT_AS misses (tasks/seccomp.ts), tmpfs sizes cap files, a small RLIMIT_NOFILE caps the kernel
//             objects behind descriptors (pipes, sockets) and RLIMIT_NPROC the threads. The kernel ignores
//             RLIMIT_NPROC for uid 0, so when we are root bubblewrap runs as nobody (setpriv) in this mode.
// Neither holds, or the mode asked for cannot be had: SandboxUnavailableError, and nothing runs.
import { threadId } from 'node:worker_threads';
import {
  accessSync,
  constants as fsConstants,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { SandboxUnavailableError } from './sandbox-errors.ts';

export type MemoryMode = 'cgroup' | 'rlimits';
/** 'auto': a cgroup where one can be made, else rlimits. */
export type MemoryModeRequest = 'auto' | MemoryMode;

export interface MemoryPlan {
  mode: MemoryMode;
  /** One line for the log and `doctor`: what bounds the memory, and why this mode. */
  detail: string;
  /** cgroup mode: the directories run cgroups are made in (pids: null where that controller is missing). */
  cgroupParents?: { memory: string; pids: string | null };
  /** rlimits mode as root: bubblewrap runs as this user, so that RLIMIT_NPROC binds. */
  runAs?: { uid: number; gid: number };
}

export const SETPRIV_PATH = '/usr/bin/setpriv';
const NOBODY = 65534;
const RUN_DIR = 'sweetloop-sandbox';

/** Where cgroup v1 hierarchies are mounted, by controller, and this process's place in each (from /proc). */
function v1Hierarchies(): Map<string, string> {
  const own = new Map<string, string>();
  for (const line of readFileSync('/proc/self/cgroup', 'utf8').split('\n')) {
    const [, controllers, path] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (controllers && path !== undefined) for (const c of controllers.split(',')) own.set(c, path);
  }
  const dirs = new Map<string, string>();
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    // id parent major:minor root mountpoint options [optional fields] - fstype source superoptions
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const [fstype, , superOptions = ''] = right.split(' ');
    if (fstype !== 'cgroup') continue;
    const [, , , root = '/', mountPoint = ''] = left.split(' ');
    for (const c of superOptions.split(',')) {
      const path = own.get(c);
      if (path === undefined || dirs.has(c)) continue;
      // The mount shows the hierarchy from `root` down; our own cgroup must lie under it to be reachable.
      if (path !== root && !path.startsWith(root === '/' ? '/' : `${root}/`)) continue;
      dirs.set(c, join(mountPoint, path.slice(root === '/' ? 0 : root.length)));
    }
  }
  return dirs;
}

/** Makes `<parent>/sweetloop-sandbox` and proves a child can be made and limited there; the reason it cannot. */
function cgroupParent(dir: string | undefined, limitFile: string, limit: number, controller: string): string {
  if (!dir) throw new Error(`no cgroup v1 ${controller} hierarchy is mounted for this process`);
  const parent = join(dir, RUN_DIR);
  mkdirSync(parent, { recursive: true });
  sweepStale(parent);
  const probe = join(parent, `${process.pid}-probe`);
  mkdirSync(probe, { recursive: true });
  try {
    writeFileSync(join(probe, limitFile), String(limit));
  } finally {
    rmdirSync(probe);
  }
  return parent;
}

/**
 * Run cgroups left behind by processes that died mid-run: empty ones (rmdir refuses the others) over ten minutes
 * old. A live run's cgroup is empty only between its mkdir and the launcher joining it, milliseconds.
 */
function sweepStale(parent: string): void {
  for (const name of readdirSync(parent)) {
    const dir = join(parent, name);
    try {
      if (/^\d+-\d+(?:-\d+)?$/.test(name) && Date.now() - statSync(dir).mtimeMs > 10 * 60_000) rmdirSync(dir);
    } catch {
      // still has tasks, or already gone
    }
  }
}

function cgroupPlan(): MemoryPlan {
  const dirs = v1Hierarchies();
  const memory = cgroupParent(dirs.get('memory'), 'memory.limit_in_bytes', 64 << 20, 'memory');
  let pids: string | null = null;
  try {
    pids = cgroupParent(dirs.get('pids'), 'pids.max', 64, 'pids');
  } catch {
    // without it the memory cgroup still counts every thread's kernel memory; only their number is unbounded
  }
  return {
    mode: 'cgroup',
    detail: `memory cgroup per sandbox (cgroup v1 under ${memory}${pids ? `; threads capped by the pids cgroup under ${pids}` : '; no pids cgroup'})`,
    cgroupParents: { memory, pids },
  };
}

function rlimitsPlan(why: string): MemoryPlan {
  const root = process.getuid?.() === 0;
  if (root) {
    try {
      accessSync(SETPRIV_PATH, fsConstants.X_OK);
    } catch {
      throw new SandboxUnavailableError(
        `No memory cgroup (${why}) and no ${SETPRIV_PATH} to run the sandbox as an unprivileged user (RLIMIT_NPROC does not bind root): ` +
          'refusing to run untrusted code without a bound on its threads. Install util-linux, or make cgroup v1 writable.',
      );
    }
  }
  return {
    mode: 'rlimits',
    detail:
      `rlimits (no memory cgroup: ${why}): RLIMIT_AS, tmpfs sizes, a small RLIMIT_NOFILE and RLIMIT_NPROC, memfd/SysV shm/mqueue/timers/inotify refused by seccomp` +
      (root ? `; bubblewrap runs as uid ${NOBODY}` : ''),
    ...(root ? { runAs: { uid: NOBODY, gid: NOBODY } } : {}),
  };
}

const plans = new Map<MemoryModeRequest, MemoryPlan>();

/** The memory plan for `request`, decided once per process. Throws SandboxUnavailableError when it cannot be had. */
export function memoryPlan(request: MemoryModeRequest = 'auto'): MemoryPlan {
  const cached = plans.get(request);
  if (cached) return cached;
  let plan: MemoryPlan;
  if (request === 'rlimits') plan = rlimitsPlan('rlimits mode asked for');
  else {
    try {
      plan = cgroupPlan();
    } catch (e) {
      const why = (e as Error).message;
      if (request === 'cgroup')
        throw new SandboxUnavailableError(
          `A memory cgroup was asked for and cannot be made: ${why}. Refusing to run without it.`,
        );
      plan = rlimitsPlan(why);
    }
  }
  plans.set(request, plan);
  return plan;
}

let runSeq = 0;

/** One run's cgroups: the files the launcher writes its pid into, what happened, and their removal. */
export interface RunCgroup {
  procs: string[];
  /** The memory cgroup killed a process for passing the limit. */
  oomKilled(): boolean;
  remove(): Promise<void>;
}

/** Makes one run's memory (and pids) cgroup with its limits. SandboxUnavailableError where any step fails. */
export function createRunCgroup(plan: MemoryPlan, limits: { memoryBytes: number; processes: number }): RunCgroup {
  const parents = plan.cgroupParents;
  if (!parents) throw new Error('createRunCgroup: not a cgroup plan');
  // The thread too: the sandbox thread (sandbox-thread.ts) loads this module again, with its own runSeq.
  const name = `${process.pid}-${threadId}-${++runSeq}`;
  const made: string[] = [];
  const remove = async (): Promise<void> => {
    for (const dir of made.splice(0)) {
      // The run's processes are gone when bubblewrap's pipes close; their exit can trail by a moment.
      for (let i = 0; i < 50; i++) {
        try {
          rmdirSync(dir);
          break;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== 'EBUSY') break;
          await new Promise((r) => setTimeout(r, 10));
        }
      }
    }
  };
  try {
    const memory = join(parents.memory, name);
    mkdirSync(memory);
    made.push(memory);
    writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // Swap counted too where the kernel keeps swap accounts (memsw must not be below the limit above).
    if (existsSync(join(memory, 'memory.memsw.limit_in_bytes')))
      writeFileSync(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
    const procs = [join(memory, 'cgroup.procs')];
    if (parents.pids) {
      const pids = join(parents.pids, name);
      mkdirSync(pids);
      made.push(pids);
      writeFileSync(join(pids, 'pids.max'), String(limits.processes));
      procs.push(join(pids, 'cgroup.procs'));
    }
    return {
      procs,
      oomKilled: () => {
        try {
          return /^oom_kill [1-9]/m.test(readFileSync(join(memory, 'memory.oom_control'), 'utf8'));
        } catch {
          return false;
        }
      },
      remove,
    };
  } catch (e) {
    void remove();
    throw new SandboxUnavailableError(
      `Could not make the sandbox's memory cgroup (${(e as Error).message}): refusing to run without its memory limit.`,
    );
  }
}

// Joins the cgroups named in its arguments, then becomes bubblewrap: everything the sandbox starts is counted.
const JOIN_SCRIPT =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"';

/** The command that starts bubblewrap (`bwrap` + its arguments) under `plan`. */
export function launcher(plan: MemoryPlan, run: RunCgroup | null, bwrap: string[]): string[] {
  if (run) return ['/bin/sh', '-c', JOIN_SCRIPT, 'sweetloop-sandbox', String(run.procs.length), ...run.procs, ...bwrap];
  if (plan.runAs)
    return [SETPRIV_PATH, `--reuid=${plan.runAs.uid}`, `--regid=${plan.runAs.gid}`, '--clear-groups', '--', ...bwrap];
  return bwrap;
}
