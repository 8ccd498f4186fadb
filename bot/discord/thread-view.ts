// A session's private thread as the engine's SessionView: agent messages (split under 2,000 characters, with
// their screenshots), results and rating buttons are posted there, typing is shown while the agent thinks.
// Also remembers which thread belongs to which session, and closes threads when sessions end.
import type { Client, Message, ThreadChannel } from 'discord.js';
import type { EvaluatedSession, SessionEngine, SessionView } from '../engine.ts';
import { splitText } from '../split.ts';
import { agentStepParts, ratingMessage, resultText, type Part } from './present.ts';

export async function postTo(thread: ThreadChannel, part: Part): Promise<Message> {
  if (typeof part.content === 'string' && part.content.length > 2000) {
    // present.ts splits long text; this guards any caller that did not.
    const chunks = splitText(part.content);
    for (const c of chunks.slice(0, -1)) await thread.send({ content: c });
    return thread.send({ ...part, content: chunks.at(-1)! });
  }
  return thread.send(part);
}

export function threadView(thread: ThreadChannel): SessionView {
  return {
    async showAgentMessage(step) {
      let lastId = '';
      for (const part of agentStepParts(step)) lastId = (await postTo(thread, part)).id;
      return lastId;
    },
    async showResult(r: EvaluatedSession | { sessionId: string; error: string }) {
      await postTo(thread, { content: 'error' in r ? `The answer is saved but could not be scored right now (${r.error}). It will be scored later.` : resultText(r) });
    },
    async askRating(sessionId) {
      await postTo(thread, ratingMessage(sessionId));
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
  private readonly sessions = new Map<string, string>();

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

  remember(threadId: string, sessionId: string): void {
    this.sessions.set(threadId, sessionId);
  }

  /** The session shown in a thread (from memory, else the database), or null. */
  async sessionOf(threadId: string, hooks?: Parameters<SessionEngine['sessionByThread']>[1]): Promise<string | null> {
    const cached = this.sessions.get(threadId);
    if (cached) return cached;
    const s = await this.engine.sessionByThread(threadId, hooks);
    if (s) this.sessions.set(threadId, s.id);
    return s?.id ?? null;
  }

  /** Posts a last notice in a session's thread and archives it. */
  async close(threadId: string | null, notice: string): Promise<void> {
    if (!threadId) return;
    const thread = await this.thread(threadId);
    if (!thread) return;
    await thread.send(notice).catch(() => {});
    await thread.setArchived(true).catch(() => {});
    this.sessions.delete(threadId);
  }
}
