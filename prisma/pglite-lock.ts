// PGlite is a single-process database: two processes opening one directory would corrupt it. A lock file with the
// owner's pid turns that into a clear refusal that names the process holding it and what to do; a lock left by a
// dead process is taken over. It sits beside the directory, not in it: PGlite's initdb wants an empty directory.
import { closeSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { DatabaseError } from './errors.ts';

/** The command line of a running process as a person typed it (`sweetloop start`), where /proc tells; else null. */
export function processCommand(pid: number): string | null {
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return null;
  }
  const entry = argv.findIndex((a) => /(^|\/)sweetloop(\.cjs)?$/.test(a));
  if (entry >= 0) return ['sweetloop', ...argv.slice(entry + 1)].join(' ');
  return argv.length ? argv.join(' ') : null;
}

/** The embedded database is open in another process (or this one): who holds it, to say so or to reach it. */
export class DatabaseHeldError extends DatabaseError {
  override name = 'DatabaseHeldError';
  constructor(
    readonly dir: string,
    readonly pid: number,
    readonly command: string | null,
  ) {
    super(heldByMessage(dir, pid, command, pid === process.pid));
  }
}

/** Only these share the embedded database with other commands while they run (prisma/pglite-server.ts). */
const SHARING = '`npm start` (`sweetloop start`) and `sweetloop console`';
const POSTGRES =
  'or keep the data in Postgres: set DATABASE_URL for every process (docs/configuration.md) and run ' +
  '`sweetloop db migrate` once.';

/**
 * Why a second process may not open the embedded database, and exactly what to do instead. `sharing`: the holder
 * serves it to other commands, but this one is a bot or console itself (two of those cannot share one PGlite).
 */
export function heldByMessage(
  dir: string,
  pid: number,
  command: string | null,
  self: boolean,
  o: { sharing?: boolean } = {},
): string {
  if (self)
    return `the embedded database at ${dir} is already open in process ${pid} (this one): close it before opening it again.`;
  const held = `the embedded database at ${dir} is already open in process ${pid}${command ? ` (\`${command}\`)` : ''}. `;
  const stop = `(Ctrl-C in its terminal, or \`kill ${pid}\`: its sessions and runs are kept, and \`npm start\` resumes them)`;
  if (o.sharing)
    return (
      held +
      'It shares the database with other sweetloop commands (export, train, policy, dashboard, ...: run them in ' +
      `another terminal now), but a second bot or console cannot run beside it: stop it first ${stop}, ${POSTGRES}`
    );
  return (
    held +
    `PGlite allows one process at a time, and only ${SHARING} share it with other commands while they run: ` +
    `let that one finish or stop it ${stop} and run this command again; ${POSTGRES}`
  );
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock of `dir` for this process (or throws DatabaseHeldError, naming its holder); returns the function that frees it. */
export function lockDirectory(dir: string): () => void {
  const lockPath = `${dir}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(lockPath, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(lockPath, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number(readFileSync(lockPath, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) throw new DatabaseHeldError(dir, pid, processCommand(pid));
      rmSync(lockPath, { force: true });
    }
  }
  writeFileSync(lockPath, String(process.pid));
  return () => rmSync(lockPath, { force: true });
}
