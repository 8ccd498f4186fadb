// Native Python modules that read and write raw memory (ctypes, cffi's backend, CPython's C-API test modules),
// found under /usr/lib and /usr/local/lib and hidden from sandboxed Python by backend-eval.ts; kept apart from
// sandbox.ts, which knows nothing of Python. numpy stays importable (ColBench references use it): its raw
// buffers reach only the process they run in, which holds one solution and nothing of the other's.
import { readdirSync } from 'node:fs';

/** How long pythonMemoryModules' answer is kept (a Python installed or upgraded meanwhile is seen after this). */
const MEMORY_MODULES_TTL_MS = 60_000;
let memoryModules: { at: number; paths: string[] } | null = null;

/**
 * Native Python modules that give raw memory access; hidden from sandboxed Python (see backend-eval). Read from
 * /usr/lib at most once a minute: the directory reads, once per answer scored, were a visible part of the bot's
 * event-loop stalls at 200 people (bench:bot's CPU profile, bench/RESULTS.md).
 */
export function pythonMemoryModules(now = Date.now()): string[] {
  if (memoryModules && now - memoryModules.at < MEMORY_MODULES_TTL_MS) return memoryModules.paths;
  memoryModules = { at: now, paths: readPythonMemoryModules() };
  return memoryModules.paths;
}

// In lib-dynload: ctypes and the C-API test modules; in dist-packages: cffi's backend (Debian's python3-cffi-backend).
const DYNLOAD = /^_(ctypes|ctypes_test|testcapi|testinternalcapi)\..*\.so$/;
const PACKAGES = /^_cffi_backend\..*\.so$/;

function readPythonMemoryModules(): string[] {
  const found: string[] = [];
  const list = (dir: string, pattern: RegExp): void => {
    try {
      for (const f of readdirSync(dir)) if (pattern.test(f)) found.push(`${dir}/${f}`);
    } catch {
      // no such directory here
    }
  };
  let versions: string[] = [];
  try {
    versions = readdirSync('/usr/lib').filter((d) => /^python3\.\d+$/.test(d));
  } catch {
    return found;
  }
  for (const v of versions) {
    list(`/usr/lib/${v}/lib-dynload`, DYNLOAD);
    for (const dir of [`/usr/lib/${v}/dist-packages`, `/usr/local/lib/${v}/dist-packages`]) list(dir, PACKAGES);
  }
  list('/usr/lib/python3/dist-packages', PACKAGES);
  return found;
}
