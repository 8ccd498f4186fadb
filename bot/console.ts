// The console channel: the same engine and turn script as the Discord bot, in a terminal. One person (the
// local user), the embedded database, the deployed (starter) policy. This file only shows things and reads
// lines; the engine decides what happens and stores everything. Screenshots cannot be shown in a terminal, so
// they are written as PNG files and their paths printed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface, type Interface } from 'node:readline/promises';
import type { Readable, Writable } from 'node:stream';
import type { TaskKind } from '../tasks/model.ts';
import { DEFAULT_STUDY, StudyError } from '../prisma/study-store.ts';
import {
  RefusedError,
  TurnRejectedError,
  type AgentStep,
  type EvaluatedSession,
  type Hooks,
  type Person,
  type SessionEngine,
  type SessionView,
} from './session/engine.ts';

export interface ConsoleOptions {
  engine: SessionEngine;
  person: Person;
  consentText: string;
  /** Where screenshots are written. */
  outDir: string;
  input?: Readable;
  output?: Writable;
}

const HELP =
  'Type your answer and press Enter. Commands: /hidden shows your hidden information again, /stop ends the session, /quit leaves (the session is kept and resumes next time).';

export class ConsoleChannel {
  private rl: Interface;
  private out: Writable;
  private closed = false;
  /** The session being played, for the line Ctrl-C prints (interruptedLine). */
  private current: string | null = null;

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
    onAgentWaiting: () =>
      this.print('[The agent is unavailable right now; your session is kept and continues as soon as it is back.]'),
    onAgentRecovered: () => this.print('[The agent is back.]'),
  };

  private view: SessionView = {
    showAgentMessage: async (step) => {
      this.showStep(step);
      return `console:${step.turnId}`;
    },
    showResult: async (r) => this.print(resultLine(r)),
    askRating: async () => {},
    notice: async (text) => this.print(text),
  };

  /** Runs sessions until the person quits or input ends. */
  async run(): Promise<void> {
    const { engine, person } = this.o;
    this.print('Sweetloop console — collaborate with the agent on a task.');
    // Answers a previous run could not score are scored now (their sessions were rated or left unrated then).
    for (const w of await engine.pendingWork()) {
      if (w.kind === 'evaluate') await engine.evaluate(w.session.id).catch(() => {});
    }
    // A pause only stops new sessions (start() refuses them below): an active one may still be finished.
    const admitted = await engine.admission(person, {}, this.hooks);
    if ('refused' in admitted && admitted.reason === 'banned') {
      this.print(admitted.message);
      return this.close();
    }
    if ('needsConsent' in admitted) {
      this.print(`\n${admitted.consent?.text ?? this.o.consentText}\n`);
      const a = await this.ask('Do you accept? [y/N] ');
      if (!a || !/^y(es)?$/i.test(a)) {
        this.print('Nothing was recorded. Goodbye.');
        return this.close();
      }
      await engine.acceptConsent(person, admitted.consent, this.hooks);
      this.print('Thank you.');
    }
    const asked = 'needsPlatformId' in admitted ? admitted : await engine.admission(person, {}, this.hooks);
    if ('needsPlatformId' in asked) {
      for (;;) {
        const id = await this.ask(`Study ${asked.study} pays through ${asked.platform}: your ${asked.label}? `);
        if (id === null) return this.close();
        try {
          await engine.setPlatformId(person, asked.platform, id, this.hooks);
          break;
        } catch (err) {
          if (!(err instanceof StudyError)) throw err;
          this.print(err.message);
        }
      }
    }
    // The console joins any open study bound to no Discord server (bot/assign.ts chooseStudy): say so, since the
    // person may have made it only to try `study create`.
    const study = 'ok' in asked ? asked.study.name : 'needsPlatformId' in asked ? asked.study : null;
    const joined = study ? joinedStudyLine(study) : null;
    if (joined) this.print(joined);
    for (;;) {
      const st = await engine.status(person.externalId, this.hooks);
      let sessionId: string;
      if (st.active) {
        sessionId = st.active.id;
        this.print(`\nResuming your ${st.active.task.kind} session ${sessionId.slice(0, 8)}.`);
        await this.showHidden(sessionId);
        await this.replay(sessionId);
      } else {
        const k = await this.ask(
          '\nWhich kind of task? [b]ackend, [f]rontend, or Enter for whichever is needed most (q to quit): ',
        );
        if (k === null || /^q(uit)?$/i.test(k)) return this.close();
        const kind: TaskKind | null = /^b/i.test(k) ? 'backend' : /^f/i.test(k) ? 'frontend' : null;
        try {
          const started = await engine.start(person, kind, {}, this.hooks);
          sessionId = started.sessionId;
          this.print(
            `\nSession ${sessionId.slice(0, 8)} (${started.kind}, ${started.blind ? 'agent version not shown during an experiment' : `policy ${started.policyName}`}).`,
          );
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
      this.current = sessionId;
      const outcome = await this.play(sessionId);
      this.current = null;
      if (outcome === 'quit') return this.close();
      const again = await this.ask('\nStart another session? [y/N] ');
      if (!again || !/^y(es)?$/i.test(again)) return this.close();
    }
  }

  private async showHidden(sessionId: string, png?: Buffer): Promise<void> {
    const { view, targetPng } = png
      ? { view: (await this.o.engine.hiddenInfo(sessionId)).view, targetPng: png }
      : await this.o.engine.hiddenInfo(sessionId);
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
    for (const t of await this.o.engine.transcript(sessionId, this.hooks))
      this.print(`${t.role === 'agent' ? 'Agent' : 'You'}: ${t.content}`);
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
      if (step.png)
        this.print(
          `[page screenshot: ${this.save(`${step.answered ? 'answer' : 'draft'}-${step.sessionId.slice(0, 8)}-${step.agentTurn}.png`, step.png)}]`,
        );
      else this.print('[the page could not be rendered]');
    } else {
      this.print(step.view.text);
    }
  }

  private async play(sessionId: string): Promise<'done' | 'quit'> {
    const { engine, person } = this.o;
    for (;;) {
      this.print('(the agent is thinking…)');
      const state = await engine.advance(sessionId, this.view, this.hooks);
      if (state === 'awaiting-rating') break;
      if (state === 'ended') {
        this.print('The session has ended.');
        return 'done';
      }
      for (;;) {
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
          break;
        } catch (err) {
          if (err instanceof TurnRejectedError) this.print(err.message);
          else throw err;
        }
      }
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

  /** What Ctrl-C kept and how to go on, in one line. */
  interruptedLine(): string {
    return this.current
      ? `Stopped. Session ${this.current.slice(0, 8)} is kept with every message so far: run \`npm start\` again to resume it where you left off.`
      : 'Stopped. Your finished sessions are kept: `npm start` starts another.';
  }

  close(): void {
    if (!this.closed) this.rl.close();
    this.closed = true;
  }
}

/** What a console session counts in, when it is a study of its own rather than the default pool. */
export function joinedStudyLine(study: string): string | null {
  if (study === DEFAULT_STUDY) return null;
  return (
    `Your sessions here count in the study "${study}" (made with \`sweetloop study create\`): its tasks and its policies, ` +
    `not the default pool. \`sweetloop study show ${study}\` describes it; closing it for good (\`sweetloop study close ${study}\`) sends the console back to the default pool.`
  );
}

function resultLine(r: EvaluatedSession | { sessionId: string; error: string }): string {
  if ('error' in r)
    return `The answer is saved but could not be scored now (${r.error}); \`sweetloop start\` scores it later.`;
  const o = r.outcome;
  const code = r.completionCode ? `\nYour completion code for this study: ${r.completionCode}` : '';
  return r.kind === 'backend'
    ? `Result: ${o.testsPassed ?? 0} of ${o.testsTotal ?? 0} tests passed (score ${o.score.toFixed(2)})${o.success ? ' — success!' : ''}${code}`
    : `Result: similarity to your page ${o.score.toFixed(3)}${o.metric ? ` (${o.metric})` : ''}${o.success ? ' — success!' : ''}${code}`;
}
