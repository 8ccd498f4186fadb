// The probe that proves once per machine that the sandbox's promises hold; tasks/sandbox.ts runs the programs.
import { SandboxUnavailableError } from './sandbox-errors.ts';
import type { MemoryMode, MemoryModeRequest } from './sandbox-memory.ts';
import {
  DEFAULT_BWRAP_PATH,
  DEFAULT_SANDBOX_LIMITS,
  requireExecutable,
  runSandboxed,
  type SandboxRunOptions,
  type SandboxRunResult,
} from './sandbox.ts';

/** What a working sandbox promises about memory: its mode and a line saying what bounds it. */
export interface SandboxReport {
  memoryMode: MemoryMode;
  memoryDetail: string;
}

// Run inside by the probe: each promise that does not hold from the inside, one word each (host files seen,
// capabilities held, too many descriptors allowed, memfd allowed); "ok" when none.
const PROBE = `
import os, resource, sys
bad = [p for p in ["/etc/shadow", "/root", "/proc/1"] if os.path.exists(p)]
open("/tmp/p", "w").close(); os.chmod("/tmp/p", 0)
try:
    open("/tmp/p").close(); bad.append("capabilities")
except PermissionError:
    pass
if resource.getrlimit(resource.RLIMIT_NOFILE)[1] > int(sys.argv[1]): bad.append("nofile")
try:
    os.memfd_create("m"); bad.append("memfd")
except OSError:
    pass
sys.stdout.write(" ".join(bad) or "ok")
`;

const probes = new Map<string, Promise<SandboxReport>>();

/**
 * Starts one trivial sandbox to prove bubblewrap, its namespaces, the seccomp filter, the memory bound, prlimit and
 * the Python interpreter all work here, and that the program inside sees what it should. Cached per (bubblewrap,
 * python, memory mode). Throws SandboxUnavailableError otherwise.
 */
export function assertSandboxAvailable(
  bwrapPath: string = DEFAULT_BWRAP_PATH,
  pythonPath = '/usr/bin/python3',
  run: (opts: SandboxRunOptions) => Promise<SandboxRunResult> = runSandboxed,
  memoryMode: MemoryModeRequest = 'auto',
): Promise<SandboxReport> {
  const key = `${bwrapPath}\0${pythonPath}\0${memoryMode}`;
  let p = probes.get(key);
  if (!p) {
    p = (async () => {
      requireExecutable(bwrapPath, 'bubblewrap');
      if (!pythonPath.startsWith('/usr/')) {
        throw new SandboxUnavailableError(
          `Python must live under /usr (the only tree mounted in the sandbox), got ${pythonPath}.`,
        );
      }
      const r = await run({
        bwrapPath,
        argv: [pythonPath, '-S', '-c', PROBE, String(DEFAULT_SANDBOX_LIMITS.openFiles)],
        limits: { wallMs: 15_000 },
        memoryMode,
      });
      // A memory cgroup counts memfd pages: only the rlimits mode must refuse them.
      const broken = r.stdout.split(' ').filter((w) => w !== 'ok' && !(w === 'memfd' && r.memoryMode === 'cgroup'));
      if (r.exitCode !== 0 || broken.length > 0) {
        throw new SandboxUnavailableError(
          `The sandbox probe failed (exit ${r.exitCode}${r.timedOut ? ', timed out' : ''}): ${r.stdout} ${r.stderr}`.trim(),
        );
      }
      return { memoryMode: r.memoryMode, memoryDetail: r.memoryDetail };
    })();
    probes.set(key, p);
    p.catch(() => probes.delete(key));
  }
  return p;
}
