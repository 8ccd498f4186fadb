// A person at the console channel (bot/console.ts) in-process: lines go in, the transcript comes out. For the
// tests that play console sessions against a real runtime; test/helpers/terminal.ts drives a whole command instead.
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ConsoleChannel, type ConsoleOptions } from '../../bot/console.ts';
import { createRuntime, type Runtime } from '../../bot/runtime.ts';
import { loadAgent } from '../../trainer/policies/agent-for.ts';
import type { TestDatabase } from '../../testing/database.ts';

/** The console's runtime over a test database, playing whatever policy is deployed there (two agent turns a game). */
export function consoleRuntime(t: TestDatabase): Promise<Runtime> {
  return createRuntime({
    channel: 'console',
    db: t.db,
    maxTurns: 2,
    idleMinutes: 30,
    render: null,
    policyPollMs: 200,
    loadAgent: (policy) => loadAgent(policy, { prisma: t.prisma }),
  });
}

export class ConsolePerson {
  readonly input = new PassThrough();
  readonly output = new PassThrough();
  out = '';
  readonly done: Promise<void>;

  /** `name` is the person (console:NAME) and the folder under `root` their screenshots go to. */
  constructor(o: { engine: ConsoleOptions['engine']; name: string; root: string; consentText: string }) {
    this.output.on('data', (d: Buffer) => (this.out += d.toString('utf8')));
    this.done = new ConsoleChannel({
      engine: o.engine,
      person: { externalId: `console:${o.name}`, displayName: o.name },
      consentText: o.consentText,
      outDir: join(o.root, o.name),
      input: this.input,
      output: this.output,
    }).run();
  }

  /** Waits until `text` appears after position `from` of the transcript; returns the position after it. */
  async expect(text: string, from = 0, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const at = this.out.indexOf(text, from);
      if (at >= 0) return at + text.length;
      if (Date.now() > deadline)
        throw new Error(`console: no "${text}" after ${from}; output:\n${this.out.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  type(line: string): void {
    this.input.write(line + '\n');
  }
}
