// A session's private thread as the engine's SessionView: agent messages (split under 2,000 characters, with
// their screenshots), results and rating buttons are posted there, typing is shown while the agent thinks.
// Also remembers which thread belongs to which session, and closes threads when sessions end.
//
// Every post is idempotent across a crash: each carries a nonce derived from what it shows (the turn and
// part, the session's result, its rating prompt) with enforce_nonce, so Discord returns the first message
// instead of posting a second within its dedupe window; a view made for resuming also looks through the
// thread's recent messages and reuses a post it finds there, however long the bot was down. Nothing posted
// here pings anyone: mentions are parsed only where a caller names the users to ping.
import { createHash } from 'node:crypto';
import type { Client, Message, MessageMentionOptions, ThreadChannel } from 'discord.js';
import type { EvaluatedSession, SessionEngine, SessionView } from '../session/engine.ts';
import { splitText } from '../split.ts';
import { agentStepParts, ratingMessage, resultText, resultWithRating, scoringText, type Part } from './present.ts';

/** How long an answer that waited for the scoring pool is scored before its notice says so (see threadView). */
export const SCORING_EDIT_AFTER_MS = 2_000;

/** Mentions off: user and model text may contain @everyone, role or user mentions, which must never ping. */
export const NO_MENTIONS: MessageMentionOptions = { parse: [] };

/** Discord's nonce (at most 25 characters) for a post identified by `key`. */
export function nonceFor(key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 25);
}

/**
 * Posts a part in a thread with mentions off (unless the part names whom it may ping). With a `key`, the post
 * carries its nonce with enforce_nonce: posting the same key again returns the first message.
 */
export async function postTo(thread: ThreadChannel, part: Part, key?: string): Promise<Message> {
  const allowedMentions = part.allowedMentions ?? NO_MENTIONS;
  const once = (p: Part, k: string | undefined) =>
    thread.send({ ...p, allowedMentions, ...(k ? { nonce: nonceFor(k), enforceNonce: true } : {}) });
  if (typeof part.content === 'string' && part.content.length > 2000) {
    // present.ts splits long text; this guards any caller that did not.
    const chunks = splitText(part.content);
    for (const [n, c] of chunks.slice(0, -1).entries())
      await once({ content: c, ...(part.flags ? { flags: part.flags } : {}) }, key && `${key}:${n}`);
    return once({ ...part, content: chunks.at(-1)! }, key && `${key}:last`);
  }
  return once(part, key);
}

export interface ThreadViewOptions {
  /** Resuming after a restart: before posting, look for the same post in the thread's recent messages. */
  recovering?: boolean;
}

export function threadView(thread: ThreadChannel, options: ThreadViewOptions = {}): SessionView {
  let recent: Message[] | null = null;
  /** The bot's earlier post of exactly this text in the thread, when resuming. */
  const earlier = async (part: Part): Promise<Message | null> => {
    if (!options.recovering || typeof part.content !== 'string') return null;
    if (!recent) {
      const me = thread.client.user?.id;
      const fetched = await thread.messages.fetch({ limit: 100 }).catch(() => null);
      recent = fetched ? [...fetched.values()].filter((m) => m.author.id === me) : [];
    }
    return recent.find((m) => m.content === part.content) ?? null;
  };
  const post = async (part: Part, key: string): Promise<Message> => (await earlier(part)) ?? postTo(thread, part, key);
  // The scoring notice: posted when the answer waits or starts being scored, edited once if it waited and its
  // scoring then takes over SCORING_EDIT_AFTER_MS (a quicker result follows the waiting notice at once and says
  // more than the edit would: one request less against the bot's 50 a second). The result is posted after it, so
  // that it never reads above the notice.
  let scoringNotice: Promise<unknown> | null = null;
  let cancelEdit: (() => void) | null = null;
  let resultDue = false;
  const resultComes = async () => {
    resultDue = true;
    cancelEdit?.();
    await scoringNotice?.catch(() => {});
  };
  return {
    async showAgentMessage(step) {
      let lastId = '';
      for (const [n, part] of agentStepParts(step).entries())
        lastId = (await post(part, `turn:${step.turnId}:${n}`)).id;
      return lastId;
    },
    async showScoring(sessionId, state) {
      const text = scoringText(state);
      const before = scoringNotice;
      scoringNotice = (async () => {
        const notice = (await before?.catch(() => null)) as Message | null | undefined;
        if (notice && state.state === 'scoring') {
          const due =
            !resultDue &&
            (await new Promise<boolean>((resolve) => {
              const timer = setTimeout(() => resolve(true), SCORING_EDIT_AFTER_MS);
              cancelEdit = () => (clearTimeout(timer), resolve(false));
            }));
          cancelEdit = null;
          if (due && !resultDue) await notice.edit({ content: text, allowedMentions: NO_MENTIONS });
          return notice;
        }
        return postTo(thread, { content: text }, `scoring:${sessionId}:${state.state}`);
      })();
      await scoringNotice;
    },
    async showResult(r: EvaluatedSession | { sessionId: string; error: string }) {
      await resultComes();
      if ('error' in r) {
        // Why scoring failed is in the log; the person is told only that it will be done.
        await postTo(thread, {
          content: 'The answer is saved but could not be scored right now. It will be scored later.',
        });
        return;
      }
      await post({ content: resultText(r) }, `result:${r.sessionId}`);
    },
    async showResultWithRating(r: EvaluatedSession) {
      await resultComes();
      // Its own key: a result posted alone by an earlier run (key result:) is not this message.
      await post(resultWithRating(r), `result-rating:${r.sessionId}`);
    },
    async askRating(sessionId) {
      await post(ratingMessage(sessionId), `rating:${sessionId}`);
    },
    async notice(text) {
      await postTo(thread, { content: text });
    },
    async typing() {
      await thread.sendTyping();
    },
  };
}

export class ThreadViews {
  /** Each thread's session and its person (neither ever changes): a person's message is placed without a query. */
  private readonly sessions = new Map<string, { sessionId: string; owner: string }>();

  constructor(
    private readonly client: Client,
    private readonly engine: SessionEngine,
  ) {}

  async thread(id: string): Promise<ThreadChannel | null> {
    try {
      const c = await this.client.channels.fetch(id);
      return c?.isThread() ? c : null;
    } catch {
      return null;
    }
  }

  /** `owner`: the external id (Discord user id) of the person whose session it is. */
  remember(threadId: string, sessionId: string, owner: string): void {
    this.sessions.set(threadId, { sessionId, owner });
  }

  /** The session shown in a thread and its person (from memory, else the database), or null. */
  async sessionOf(
    threadId: string,
    hooks?: Parameters<SessionEngine['sessionInThread']>[1],
  ): Promise<{ sessionId: string; owner: string } | null> {
    const cached = this.sessions.get(threadId);
    if (cached) return cached;
    const s = await this.engine.sessionInThread(threadId, hooks);
    if (s) this.sessions.set(threadId, s);
    return s;
  }

  /** Deletes a session's thread with every message in it (a deletion request); false when it could not. */
  async remove(threadId: string): Promise<boolean> {
    this.sessions.delete(threadId);
    const thread = await this.thread(threadId);
    if (!thread) return false;
    return thread.delete("deleted at the participant's request").then(
      () => true,
      () => false,
    );
  }

  /** Posts a last notice in a session's thread and archives it. */
  async close(threadId: string | null, notice: string): Promise<void> {
    if (!threadId) return;
    const thread = await this.thread(threadId);
    if (!thread) return;
    await thread.send({ content: notice, allowedMentions: NO_MENTIONS }).catch(() => {});
    await thread.setArchived(true).catch(() => {});
    this.sessions.delete(threadId);
  }
}
