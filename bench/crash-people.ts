// The people of the crash soak (bench/crash.ts): each runs backend sessions one after another over the fake
// Discord, as a person would, not knowing when the bot is down. A person starts a session (accepting the consent
// the first time), answers each agent question after a moment's thought, and rates the result. A command with no
// answer is tried again; a start the bot lost ("you already have a session running") is found with /task status,
// or stopped and started again when it has no thread. A reply left unanswered for the agent deadline is sent
// again or waited on (a seeded coin); a person left without progress for `giveUpMs` of the bot's uptime stops the
// session. A reply the bot asks to have sent again is sent again while it still applies. Everything a person
// sends and how each session ended is recorded for the checks (bench/crash-checks.ts).
import type { FakeDiscord, FakeUser, InteractionRecord, Shown } from '../testing/fake-discord.ts';
import { Rng } from '../tasks/random.ts';

export interface Sent {
  id: string;
  person: number;
  threadId: string;
  content: string;
  /** performance.now() when Discord accepted it. */
  at: number;
  /** A reply to a question, the same reply again after the deadline, or again because the bot asked. */
  why: 'reply' | 'resend' | 'again';
  /** The agent message it answers (1-based). */
  question: number;
  /** A bot was connected to the gateway when it was sent (else only a catch-up can read it). */
  live: boolean;
}

export type Outcome = 'rated' | 'ended' | 'gave-up' | 'unfinished';

export interface PersonSession {
  person: number;
  threadId: string;
  openedAt: number;
  outcome: Outcome;
  closedAt: number | null;
}

/** Wakes people who are thinking, so that they send now (the driver wants messages sent while the bot is down). */
export class Nudge {
  private readonly sleepers = new Set<() => void>();

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }

  /** How many people are thinking now (about to write). */
  get thinking(): number {
    return this.sleepers.size;
  }

  /** Wakes everyone thinking now; returns how many. */
  now(): number {
    const n = this.sleepers.size;
    for (const s of [...this.sleepers]) s();
    return n;
  }
}

export interface World {
  fake: FakeDiscord;
  seed: number;
  deadlineMs: number;
  giveUpMs: number;
  /** Milliseconds of bot uptime since `t` (people give up on silence while the bot runs, not on kills). */
  upSince(t: number): number;
  /** A bot process is running and connected to the gateway (what a person sends now reaches it live). */
  connected(): boolean;
  /** No new sessions once set: the kills are done and people finish what they started. */
  stopping(): boolean;
  nudge: Nudge;
  sent: Sent[];
  sessions: PersonSession[];
  /** Starts lost to a kill before their thread existed: the person stopped them and started again. */
  lostStarts: { person: number; at: number }[];
}

const COMMAND_WAIT_MS = 8_000;
const ENDED = /session (has ended|had to end|expired)|You ended this session/;
const HIDDEN = 'Only you can see this';

export class Person {
  readonly user: FakeUser;
  private readonly rng: Rng;

  constructor(
    readonly n: number,
    private readonly w: World,
  ) {
    this.user = w.fake.user(`person${n}`);
    this.rng = Rng.derive(w.seed, 'person', n);
  }

  private between(lo: number, hi: number): number {
    return lo + (hi - lo) * this.rng.next();
  }

  async run(): Promise<void> {
    while (!this.w.stopping()) {
      const threadId = await this.open();
      if (!threadId) return;
      await this.converse(threadId);
      await new Promise((r) => setTimeout(r, this.between(300, 1500)));
    }
  }

  /** The first reply to `i` that satisfies `pred` within `ms`, or null (the bot was down, or is slow). */
  private async reply(i: InteractionRecord, pred: (s: Shown) => boolean, ms = COMMAND_WAIT_MS): Promise<Shown | null> {
    const fake = this.w.fake;
    return fake
      .waitFor(() => fake.replies(i).find((s) => s.kind !== 'callback' && pred(s)), ms, 'a reply')
      .catch(() => null);
  }

  /** /task start until a thread is open (null after many tries without one). */
  private async open(): Promise<string | null> {
    const fake = this.w.fake;
    // Once begun, a start is seen through even when the kills are over: a lost start must not stay open.
    for (let attempt = 0; attempt < 60; attempt++) {
      const start = fake.command(this.user, 'task', 'start', { kind: 'backend' });
      let r = await this.reply(start, () => true);
      if (r?.content.includes('CONSENT')) {
        const accept = fake.click(this.user, r, 'consent:accept:backend');
        r = await this.reply(accept, (s) => s.content.includes(HIDDEN) || !s.content.startsWith('Thank you! Starting'));
      } else if (r && !r.content.includes(HIDDEN) && !r.content.includes('already have a session')) {
        // Deferred, then edited: the hidden information may follow the first edit.
        r = await this.reply(start, (s) => s.content.includes(HIDDEN) || s.content.includes('already have a session'));
      }
      const thread = r?.content.includes(HIDDEN) ? /<#(\d+)>/.exec(r.content)?.[1] : undefined;
      if (thread) return thread;
      if (r?.content.includes('already have a session running')) {
        const found = await this.recoverStart();
        if (found) return found;
      }
      await new Promise((res) => setTimeout(res, this.between(1000, 3000)));
    }
    return null;
  }

  /** A start the bot lost: its thread from /task status, or the session stopped (it has none) for a new start. */
  private async recoverStart(): Promise<string | null> {
    const fake = this.w.fake;
    const status = await this.reply(fake.command(this.user, 'task', 'status', {}), (s) => s.content.length > 0);
    if (!status) return null;
    const thread = /in <#(\d+)>/.exec(status.content)?.[1];
    if (thread) return thread;
    if (!status.content.startsWith('Session')) return null;
    const stop = await this.reply(fake.command(this.user, 'task', 'stop', {}), (s) => s.content.length > 0);
    if (stop?.content.includes('has ended')) this.w.lostStarts.push({ person: this.n, at: performance.now() });
    return null;
  }

  /** One session in its thread, from the first agent message to the rating (or its end). */
  private async converse(threadId: string): Promise<void> {
    const { fake, deadlineMs, giveUpMs } = this.w;
    const session: PersonSession = {
      person: this.n,
      threadId,
      openedAt: performance.now(),
      outcome: 'unfinished',
      closedAt: null,
    };
    this.w.sessions.push(session);
    const close = (outcome: Outcome) => {
      session.outcome = outcome;
      session.closedAt = performance.now();
    };
    let seen = 0;
    let question = 0;
    let replied = 0;
    let answered = false;
    let rating: Shown | null = null;
    let again: Sent | null = null;
    let progressAt = performance.now();
    let windowAt = progressAt;
    const mine = (id: string | undefined) => this.w.sent.find((m) => m.id === id && m.person === this.n);
    for (;;) {
      const posts = fake.inChannel(threadId);
      for (const p of posts.slice(seen)) {
        const ref = mine(p.raw?.message_reference?.message_id);
        if (ref) {
          if (/send it again/.test(p.content) && ref.question === question && !answered) again = ref;
          if (ENDED.test(p.content)) return close('ended');
          continue;
        }
        progressAt = windowAt = p.at;
        const agent = /^\*\*Agent\*\* \(message (\d+) of \d+\)( — final answer)?/.exec(p.content);
        if (agent) {
          if (agent[2]) answered = true;
          else question = Math.max(question, Number(agent[1]));
        } else if (p.content.includes('How helpful')) rating = p;
        else if (ENDED.test(p.content)) return close('ended');
      }
      seen = posts.length;
      if (rating) return close((await this.rate(rating)) ? 'rated' : 'ended');
      if (question > replied && !answered) {
        await this.w.nudge.sleep(this.between(300, 3000));
        if (fake.inChannel(threadId).length > seen) continue; // something new to read first
        this.say(threadId, question, 'reply');
        replied = question;
        again = null;
        progressAt = windowAt = performance.now();
        continue;
      }
      if (again) {
        this.say(threadId, again.question, 'again', again.content);
        again = null;
        continue;
      }
      const left = windowAt + deadlineMs - performance.now();
      const more = await fake
        .waitFor(() => fake.inChannel(threadId).length > seen, Math.max(0, left), 'progress')
        .catch(() => false);
      if (more) continue;
      // A deadline without progress: give up after long enough, else send the reply again or keep waiting.
      if (this.w.upSince(progressAt) > giveUpMs) {
        const stop = await this.reply(fake.command(this.user, 'task', 'stop', {}), (s) => s.content.length > 0, 30_000);
        return close(stop ? 'gave-up' : 'unfinished');
      }
      const last = this.w.sent.findLast((m) => m.person === this.n && m.threadId === threadId);
      if (last && replied === question && !answered && this.rng.next() < 0.5)
        this.say(threadId, question, 'resend', last.content);
      windowAt = performance.now();
    }
  }

  private say(
    threadId: string,
    question: number,
    why: Sent['why'],
    content = `Answer ${question} from person ${this.n}: treat it as zero.`,
  ): void {
    const id = this.w.fake.say(this.user, threadId, content);
    this.w.sent.push({
      id,
      person: this.n,
      threadId,
      content,
      at: performance.now(),
      why,
      question,
      live: this.w.connected(),
    });
  }

  /** Clicks a rating until the bot takes it; false when it refused (the person was told why). */
  private async rate(prompt: Shown): Promise<boolean> {
    const sessionId = /rate:([0-9a-f-]+):/.exec(JSON.stringify(prompt.components))?.[1];
    if (!sessionId) return false;
    const value = 1 + Math.floor(this.rng.next() * 5);
    for (let attempt = 0; attempt < 30; attempt++) {
      const click = this.w.fake.click(this.user, prompt, `rate:${sessionId}:${value}`);
      const r = await this.reply(click, (s) => s.content.includes('you rated') || s.kind === 'followup');
      if (r) return r.content.includes('you rated');
      await new Promise((res) => setTimeout(res, this.between(1000, 3000)));
    }
    return false;
  }
}
