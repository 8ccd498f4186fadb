// A command run in a pseudo-terminal (util-linux `script`), as a person at a terminal runs it: for the tests
// that drive `npm start`. `hasScript` is false where `script` is missing (those tests skip).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const hasScript = spawnSync('script', ['--version']).status === 0;

/**
 * The environment of a console run in `dir` (no Discord token; the embedded database and checkpoints there), with
 * nothing else of the caller's inherited but PATH and HOME, plus `extra`.
 */
export function consoleEnv(dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TERM: 'dumb',
    PGLITE_DIR: join(dir, 'pglite'),
    CHECKPOINT_DIR: join(dir, 'checkpoints'),
    DISCORD_TOKEN: '',
    ...extra,
  };
}

export class Terminal {
  out = '';
  private child: ChildProcess;
  readonly exited: Promise<number | null>;

  constructor(command: string, env: NodeJS.ProcessEnv, cwd: string) {
    // -q quiet, -f flush at once, -e the child's exit code; the transcript file is not needed.
    this.child = spawn('script', ['-qfec', command, '/dev/null'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d: Buffer) => (this.out += d.toString('utf8')));
    this.child.stderr!.on('data', (d: Buffer) => (this.out += d.toString('utf8')));
    this.exited = new Promise((r) => this.child.on('exit', (code) => r(code)));
  }

  /** Waits until `text` appears after position `from` of the output; returns the position after it. */
  async expect(text: string, from = 0, timeoutMs = 180_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const at = this.out.indexOf(text, from);
      if (at >= 0) return at + text.length;
      if (Date.now() > deadline)
        throw new Error(`terminal: no "${text}" after ${from}; output so far:\n${this.out.slice(-3000)}`);
      if (this.child.exitCode !== null)
        throw new Error(`terminal: exited (${this.child.exitCode}) before "${text}":\n${this.out.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  type(line: string): void {
    this.child.stdin!.write(line + '\r');
  }

  /** Ctrl-C, as typed: the terminal sends SIGINT to the command's processes. */
  interrupt(): void {
    this.child.stdin!.write('\x03');
  }

  kill(): void {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
  }
}
