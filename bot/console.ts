// The console channel: the same engine as the Discord bot, in a terminal. One person (the local user), the
// embedded database, the deployed (starter) policy. Screenshots cannot be shown in a terminal, so they are
// written as PNG files and their paths printed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface, type Interface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import type { TaskKind } from '../tasks/model.ts';
import { acceptConsent, hasConsent } from './consent.ts';
import { RefusedError, TurnRejectedError, type AgentStep, type Hooks, type Person, type SessionEngine } from './engine.ts';

export interface ConsoleOptions {
  engine: SessionEngine;
  person: Person;
  consentText: string;
  /** Where screenshots are written. */
  outDir: string;
  input?: Readable;
  output?: Writable;
}

const HELP = 'Type your answer and press Enter. Commands: /hidden shows your hidden information again, /stop ends the session, /quit leaves (the session is kept and resumes next time).';

export class ConsoleChannel {
  private rl: Interface;
  private out: Writable;
  private closed = false;

  constructor(private readonly o: ConsoleOptions) {
    this.out = o.output ?? process.stdout;
    this.rl = createInterface({ input: o.input ?? process.stdin, terminal: false });
    // Lines are queued, not read with question(): typed-ahead or piped input is never dropped.
    this.rl.on('line', (line) => {
      const w = this.waiting.shift();
      if (w) w(line);
      else this.lines.push(line);
    });
    this.rl.on('close', () => {
      this.closed = true;
      for (const w of this.waiting.splice(0)) w(null);
    });
    mkdirSync(o.outDir, { recursive: true });
  }

  private lines: string[] = [];
  private waiting: ((line: string | null) => void)[] = [];

  private print(text = ''): void {
    this.out.write(text + '\n');
  }

  private async ask(prompt: string): Promise<string | null> {
    this.out.write(prompt);
    const queued = this.lines.shift();
    if (queued !== undefined) return queued.trim();
    if (this.closed) return null;
    const line = await new Promise<string | null>((resolve) => this.waiting.push(resolve));
    return line === null ? null : line.trim();
  }

  private hooks: Hooks = {
    onDbWaiting: () => this.print('[The database is unavailable; waiting for it. Nothing is lost.]'),
    onDbRecovered: () => this.print('[The database is back.]'),
  };

  /** Runs sessions until the person quits or input ends. */
  async run(): Promise<void> {
    const { engine, person } = this.o;
    this.print('Sweetloop console — collaborate with the agent on a task.');
    // Answers a previous run could not score are scored now.
    for (const w of await engine.pendingWork()) {
      if (w.kind === 'evaluate') await engine.evaluate(w.session.id).catch(() => {});
    }
    let p = await engine.participant(person.externalId, this.hooks);
    if (p?.banned) {
      this.print('You are not allowed to take part in sessions.');
      return this.close();
    }
    if (!hasConsent(p)) {
      this.print(`\n${this.o.consentText}\n`);
      const a = await this.ask('Do you accept? [y/N] ');
      if (!a || !/^y(es)?$/i.test(a)) {
        this.print('Nothing was recorded. Goodbye.');
        return this.close();
      }
      p = await acceptConsent(engine.prisma, person.externalId, person.displayName);
      this.print('Thank you.');
    }
    for (;;) {
      const st = await engine.status(person.externalId, this.hooks);
      let sessionId: string;
      if (st.active) {
        sessionId = st.active.id;
        this.print(`\nResuming your ${st.active.task.kind} session ${sessionId.slice(0, 8)}.`);
        await this.showHidden(sessionId);
        await this.replay(sessionId);
      } else {
        const k = await this.ask('\nWhich kind of task? [b]ackend, [f]rontend, or Enter for whichever is needed most (q to quit): ');
        if (k === null || /^q(uit)?$/i.test(k)) return this.close();
        const kind: TaskKind | null = /^b/i.test(k) ? 'backend' : /^f/i.test(k) ? 'frontend' : null;
        try {
          const started = await engine.start(person, kind, {}, this.hooks);
          sessionId = started.sessionId;
          this.print(`\nSession ${sessionId.slice(0, 8)} (${started.kind}, policy ${started.policyName}).`);
          this.print(`Your request, as the agent sees it:\n  ${started.description}`);
          await this.showHidden(sessionId, started.targetPng);
        } catch (err) {
          if (err instanceof RefusedError) {
            this.print(err.message);
            if (err.reason === 'paused' || err.reason === 'no-policy' || err.reason === 'banned') return this.close();
            continue;
          }
          throw err;
        }
      }
      this.print(HELP);
      const outcome = await this.play(sessionId);
      if (outcome === 'quit') return this.close();
      const again = await this.ask('\nStart another session? [y/N] ');
      if (!again || !/^y(es)?$/i.test(again)) return this.close();
    }
  }

  private async showHidden(sessionId: string, png?: Buffer): Promise<void> {
    const { view, targetPng } = png ? { view: (await this.o.engine.hiddenInfo(sessionId)).view, targetPng: png } : await this.o.engine.hiddenInfo(sessionId);
    this.print(`\n--- Only you can see this ---\n${view.instructions}`);
    if (view.kind === 'backend') {
      this.print(view.referenceCode.trimEnd());
    } else if (targetPng) {
      const path = this.save(`target-${sessionId.slice(0, 8)}.png`, targetPng);
      this.print(`The page you have in mind: ${path}`);
    }
    this.print('-----------------------------');
  }

  /** Prints the conversation so far (resuming). */
  private async replay(sessionId: string): Promise<void> {
    const turns = await this.o.engine.prisma.turn.findMany({ where: { sessionId, role: { not: 'system' } }, orderBy: { index: 'asc' } });
    for (const t of turns) this.print(`${t.role === 'agent' ? 'Agent' : 'You'}: ${t.content}`);
  }

  private save(name: string, png: Buffer): string {
    const path = resolve(join(this.o.outDir, name));
    writeFileSync(path, png);
    return path;
  }

  private showStep(step: AgentStep): void {
    this.print(`\nAgent (message ${step.agentTurn} of ${step.maxTurns})${step.answered ? ' — final answer' : ''}:`);
    if (step.view.type === 'screenshot') {
      if (step.view.text) this.print(step.view.text);
      if (step.png) this.print(`[page screenshot: ${this.save(`${step.answered ? 'answer' : 'draft'}-${step.sessionId.slice(0, 8)}-${step.agentTurn}.png`, step.png)}]`);
      else this.print('[the page could not be rendered]');
    } else {
      this.print(step.view.text);
    }
  }

  private async play(sessionId: string): Promise<'done' | 'quit'> {
    const { engine, person } = this.o;
    for (;;) {
      const s = await engine.prisma.session.findUniqueOrThrow({ where: { id: sessionId }, include: { turns: { orderBy: { index: 'asc' } }, evaluation: true } });
      const last = s.turns.filter((t) => t.role !== 'system').at(-1);
      if (s.status === 'answered') break;
      if (s.status !== 'active') {
        this.print(`The session has ended (${s.endReason ?? s.status}).`);
        return 'done';
      }
      if (!last || last.role === 'human') {
        this.print('(the agent is thinking…)');
        let step: AgentStep | null;
        try {
          step = await engine.agentStep(sessionId, this.hooks);
        } catch (err) {
          if (err instanceof TurnRejectedError) {
            this.print(err.message);
            return 'done';
          }
          throw err;
        }
        if (step) {
          this.showStep(step);
          await engine.markShown(step.turnId, `console:${step.turnId}`);
        }
        continue;
      }
      const text = await this.ask('\nYou: ');
      if (text === null || text === '/quit') return 'quit';
      if (text === '/stop') {
        await engine.stop(person.externalId, this.hooks);
        this.print('Session ended.');
        return 'done';
      }
      if (text === '/hidden') {
        await this.showHidden(sessionId);
        continue;
      }
      try {
        await engine.humanTurn(sessionId, text, null, this.hooks);
      } catch (err) {
        if (err instanceof TurnRejectedError) this.print(err.message);
        else throw err;
      }
    }
    this.print('\n(evaluating the answer…)');
    try {
      const e = await engine.evaluate(sessionId, this.hooks);
      const o = e.outcome;
      this.print(
        e.kind === 'backend'
          ? `Result: ${o.testsPassed ?? 0} of ${o.testsTotal ?? 0} tests passed (score ${o.score.toFixed(2)})${o.success ? ' — success!' : ''}`
          : `Result: similarity to your page ${o.score.toFixed(3)}${o.metric ? ` (${o.metric})` : ''}${o.success ? ' — success!' : ''}`,
      );
    } catch (err) {
      this.print(`The answer is saved but could not be scored now (${(err as Error).message}); \`sweetloop start\` scores it later.`);
    }
    for (;;) {
      const r = await this.ask('How helpful was the agent? 1 (useless) to 5 (excellent): ');
      if (r === null) return 'quit';
      if (!/^[1-5]$/.test(r)) {
        this.print('Please type a number from 1 to 5.');
        continue;
      }
      await engine.rate(sessionId, person, Number(r), this.hooks);
      break;
    }
    const c = await this.ask('A comment (optional, Enter to skip): ');
    if (c) {
      try {
        await engine.comment(sessionId, person, c, this.hooks);
      } catch (err) {
        if (err instanceof TurnRejectedError) this.print(err.message);
        else throw err;
      }
    }
    this.print('Thank you! Your session is saved.');
    return 'done';
  }

  close(): void {
    if (!this.closed) this.rl.close();
    this.closed = true;
  }
}
