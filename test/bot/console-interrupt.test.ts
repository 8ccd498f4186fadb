// The one line Ctrl-C prints in the console (bot/main.ts runConsole): what was kept and how to go on.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConsoleChannel } from '../../bot/console.ts';

describe('console Ctrl-C line', () => {
  it('names the session kept and the command that resumes it; without one, says the finished ones are kept', () => {
    const channel = new ConsoleChannel({
      engine: {} as never,
      person: { externalId: 'console:x', displayName: 'x' },
      consentText: 'c',
      outDir: mkdtempSync(join(tmpdir(), 'sweetloop-console-int-')),
      input: new PassThrough(),
      output: new PassThrough(),
    });
    expect(channel.interruptedLine()).toBe('Stopped. Your finished sessions are kept: `npm start` starts another.');
    (channel as unknown as { current: string }).current = '0123456789abcdef';
    expect(channel.interruptedLine()).toBe(
      'Stopped. Session 01234567 is kept with every message so far: run `npm start` again to resume it where you left off.',
    );
    channel.close();
  });
});
