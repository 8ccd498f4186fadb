// A second process opening the embedded database is refused with the process that holds it (its pid and the
// command it runs) and exactly what to do: stop it, or keep the data in Postgres. The holder is a real child
// process that took the lock through the same function.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { heldByMessage, lockDirectory, processCommand } from '../../prisma/pglite-lock.ts';

const root = mkdtempSync(join(tmpdir(), 'sweetloop-pglite-lock-'));
let holder: ChildProcess | undefined;
afterAll(() => {
  holder?.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

describe('the embedded database lock', () => {
  it('names the holding process and its command, and says what to do', async () => {
    const dir = join(root, 'pglite');
    const lockModule = resolve('prisma/pglite-lock.ts');
    // A process that takes the lock, says so, and waits.
    holder = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import(${JSON.stringify(lockModule)}).then((m) => { m.lockDirectory(${JSON.stringify(dir)}); console.log('held'); setInterval(() => {}, 1000); })`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((ok, fail) => {
      holder!.stdout!.on('data', (d: Buffer) => d.toString().includes('held') && ok());
      holder!.once('exit', (code) => fail(new Error(`the holder exited (${code})`)));
    });
    const pid = holder.pid!;
    expect(processCommand(pid)).toContain(process.execPath);
    let refused: Error | undefined;
    try {
      lockDirectory(dir);
    } catch (err) {
      refused = err as Error;
    }
    expect(refused?.message).toBe(heldByMessage(dir, pid, processCommand(pid), false));
    expect(refused?.message).toContain(`already open in process ${pid} (\``);
    expect(refused?.message).toContain(`\`kill ${pid}\``);
    expect(refused?.message).toContain('set DATABASE_URL for every process');

    // Once the holder is gone, its stale lock is taken over.
    holder.kill('SIGKILL');
    await new Promise((r) => holder!.once('exit', r));
    const unlock = lockDirectory(dir);
    expect(existsSync(`${dir}.lock`)).toBe(true);
    unlock();
    expect(existsSync(`${dir}.lock`)).toBe(false);
  });

  it('reads a sweetloop command as a person typed it', async () => {
    // A process started as the command is (node .../sweetloop.cjs start): named `sweetloop start`.
    const entry = join(root, 'sweetloop.cjs');
    writeFileSync(entry, 'console.log("up"); setInterval(() => {}, 1000);');
    const bot = spawn(process.execPath, [entry, 'start'], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((r) => bot.stdout!.once('data', r));
    try {
      expect(processCommand(bot.pid!)).toBe('sweetloop start');
    } finally {
      bot.kill('SIGKILL');
    }
    expect(heldByMessage('/d', 42, 'sweetloop start', false)).toMatch(
      /^the embedded database at \/d is already open in process 42 \(`sweetloop start`\)\. PGlite allows one process at a time/,
    );
    expect(heldByMessage('/d', 42, null, true)).toBe(
      'the embedded database at /d is already open in process 42 (this one): close it before opening it again.',
    );
    expect(processCommand(2 ** 22 + 12345)).toBeNull();
  });
});
