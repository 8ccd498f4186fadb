// Native Python modules that give raw memory access (ctypes), found under /usr/lib and hidden from sandboxed Python
// by backend-eval.ts; kept apart from sandbox.ts, which knows nothing of Python.
import { readdirSync } from 'node:fs';

/** How long pythonMemoryModules' answer is kept (a Python installed or upgraded meanwhile is seen after this). */
const MEMORY_MODULES_TTL_MS = 60_000;
let memoryModules: { at: number; paths: string[] } | null = null;

/**
 * Native Python modules that give raw memory access; hidden from sandboxed Python (see backend-eval). Read from
 * /usr/lib at most once a minute: the directory reads, once per answer scored, were a visible part of the bot's
 * event-loop stalls at 200 people (bench:bot's CPU profile, issue 34).
 */
export function pythonMemoryModules(now = Date.now()): string[] {
  if (memoryModules && now - memoryModules.at < MEMORY_MODULES_TTL_MS) return memoryModules.paths;
  memoryModules = { at: now, paths: readPythonMemoryModules() };
  return memoryModules.paths;
}

function readPythonMemoryModules(): string[] {
  const found: string[] = [];
  let dirs: string[] = [];
  try {
    dirs = readdirSync('/usr/lib').filter((d) => /^python3\.\d+$/.test(d));
  } catch {
    return found;
  }
  for (const d of dirs) {
    try {
      for (const f of readdirSync(`/usr/lib/${d}/lib-dynload`)) {
        if (/^_ctypes\..*\.so$/.test(f)) found.push(`/usr/lib/${d}/lib-dynload/${f}`);
      }
    } catch {
      // no lib-dynload for this version
    }
  }
  return found;
}
