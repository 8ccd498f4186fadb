// The bot of the crash soak in a process of its own (bench/crash-bot.ts), as in production: started, read line by
// line (its JSON log), and killed with SIGKILL. Each life of the process is an epoch; the checks measure silence
// within epochs, and the report names the epoch whose log to read.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** bench/crash-bot.ts once bot.start() has resolved: resumed what was left, caught up, expiry running. */
export const READY_LINE = 'crash-bot: ready';
/** bot/discord/bot.ts once the gateway is connected and the commands registered (before resuming). */
export const GATEWAY_LINE = 'discord bot ready';
export const SCORING_LINE = 'crash-bot: scoring';
/** bot/discord/bot.ts, when a restarted bot reads what people sent while it was down. */
export const CATCH_UP_LINE = 'catching up on messages sent while the bot was down';
/** trainer/serve/server.ts and trainer/serve/local.ts: the local server is up, then its version is loaded. */
export const LOCAL_LISTENING_LINE = 'serve: listening';
export const LOCAL_LOADED_LINE = 'local serve: version loaded';

export interface LogLine {
  /** performance.now() in the driver when the line was read. */
  at: number;
  level: number;
  msg: string;
  raw: Record<string, unknown>;
}

export interface Epoch {
  n: number;
  spawnAt: number;
  /** The gateway connected (GATEWAY_LINE), and start() finished (READY_LINE). */
  gatewayAt: number | null;
  readyAt: number | null;
  /** When the driver killed it (null: still running, or it exited by itself). */
  killAt: number | null;
  exitAt: number | null;
  exitCode: number | null;
  /** The kill point that ended it, and whether its cue was seen (false: killed at the time limit instead). */
  point: string | null;
  cued: boolean;
  logFile: string;
  lines: LogLine[];
}

const CHILD = join(import.meta.dirname, 'crash-bot.ts');
const ROOT = join(import.meta.dirname, '..');

export class BotProcess {
  readonly epoch: Epoch;
  private readonly child: ChildProcess;
  private readonly file: WriteStream;
  private readonly waiters = new Set<() => void>();
  readonly exited: Promise<void>;

  constructor(n: number, env: Record<string, string>, logDir: string) {
    const logFile = join(logDir, `epoch-${String(n).padStart(3, '0')}.log`);
    this.epoch = {
      n,
      spawnAt: performance.now(),
      gatewayAt: null,
      readyAt: null,
      killAt: null,
      exitAt: null,
      exitCode: null,
      point: null,
      cued: false,
      logFile,
      lines: [],
    };
    this.file = createWriteStream(logFile);
    this.child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface({ input: this.child.stdout! }).on('line', (text) => this.onLine(text));
    createInterface({ input: this.child.stderr! }).on('line', (text) =>
      this.onLine(JSON.stringify({ level: 50, msg: `stderr: ${text}` })),
    );
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code) => {
        this.epoch.exitAt = performance.now();
        this.epoch.exitCode = code;
        this.wake();
        resolve();
      }),
    );
  }

  get alive(): boolean {
    return this.epoch.exitAt === null;
  }

  private onLine(text: string): void {
    this.file.write(text + '\n');
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(text) as Record<string, unknown>;
    } catch {
      raw = { level: 30, msg: text };
    }
    const line: LogLine = { at: performance.now(), level: Number(raw.level ?? 30), msg: String(raw.msg ?? ''), raw };
    this.epoch.lines.push(line);
    if (line.msg === GATEWAY_LINE) this.epoch.gatewayAt = line.at;
    if (line.msg === READY_LINE) this.epoch.readyAt = line.at;
    this.wake();
  }

  private wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** The first line (already read, or to come) matching `pred`; null if the process exits or `signal` fires first. */
  waitLine(pred: (l: LogLine) => boolean, signal: AbortSignal): Promise<LogLine | null> {
    return new Promise((resolve) => {
      const check = () => {
        const found = this.epoch.lines.find(pred);
        if (found || !this.alive || signal.aborted) {
          this.waiters.delete(check);
          signal.removeEventListener('abort', check);
          resolve(found ?? null);
        }
      };
      this.waiters.add(check);
      signal.addEventListener('abort', check);
      check();
    });
  }

  /** SIGKILL, as a crash or the OOM killer would; resolves once the process is gone. */
  async kill(point: string, cued: boolean): Promise<void> {
    if (this.alive) {
      this.epoch.killAt = performance.now();
      this.epoch.point = point;
      this.epoch.cued = cued;
      this.child.kill('SIGKILL');
    }
    await this.exited;
    await new Promise<void>((resolve) => this.file.end(resolve));
  }
}
