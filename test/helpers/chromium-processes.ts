// The Chromium browser processes this test process started, read from /proc: a test kills one to see the
// renderer recover, or reads its command line.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Every process now running, with its parent's id. */
function parents(): Map<number, number> {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name (which may hold spaces): state, then the parent's id.
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  return parentOf;
}

/** Process ids of the Chromium browsers whose parent is `parent` (default: this process). */
export function chromiumChildren(parent = process.pid): number[] {
  return [...parents()]
    .filter(([pid, ppid]) => {
      try {
        return ppid === parent && /chromium|chrome/.test(readlinkSync(`/proc/${pid}/exe`));
      } catch {
        return false; // gone meanwhile, or not ours to read
      }
    })
    .map(([pid]) => pid);
}

/**
 * A process's command line, arguments joined by spaces, or null once it is gone. (Chromium's page processes rewrite
 * theirs as one space-separated string, so arguments cannot be told apart exactly.)
 */
export function commandLine(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
  } catch {
    return null;
  }
}

/** Whether a command line holds `flag` as an argument of its own. */
export const hasFlag = (line: string | null, flag: string): boolean => (line ?? '').split(' ').includes(flag);

/** Every process below `pid` (children, their children, ...). */
export function descendants(pid: number): number[] {
  const parentOf = parents();
  const below = (p: number): number[] =>
    [...parentOf].filter(([, parent]) => parent === p).flatMap(([child]) => [child, ...below(child)]);
  return below(pid);
}

/** The user namespace a process is in (as /proc names it), or null if it cannot be read. */
export function userNamespace(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/user`);
  } catch {
    return null;
  }
}

/** A process's seccomp mode (0 none, 1 strict, 2 filter), or null if it cannot be read. */
export function seccompMode(pid: number): number | null {
  try {
    const m = /^Seccomp:\s*(\d)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
