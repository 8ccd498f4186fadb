// What the bot's commands may do besides running sessions: moderation, statistics, deploys, exports and the
// bookkeeping of processed events, each over the database and each retried through an outage. Channels get
// this object and the engine; neither hands them the database, so no command can write a row by itself.
import { PassThrough } from 'node:stream';
import type { Database } from '../prisma/db.ts';
import type { PolicyVersion } from '../prisma/generated/client.ts';
import { UniqueViolationError, toDatabaseError } from '../prisma/errors.ts';
import { deployPolicyByName, rollbackPolicy } from '../prisma/policy-store.ts';
import { withdrawAndDelete, type DeletionResult } from './consent.ts';
import { audit, ban, flagSession, setPaused, stats, unban, type Stats } from './moderation.ts';
import { withDbRetry } from './retry.ts';

export interface ExportedFile {
  format: 'sweet-rl' | 'jsonl';
  sessions: number;
  turns: number;
  /** The file, or null when it was larger than the limit given. */
  data: Buffer | null;
  bytes: number;
  card: string;
}

export class BotServices {
  constructor(private readonly db: Database) {}

  /** Runs `fn`, retrying while the database is unreachable; `onWaiting` tells the person once. */
  private retry<T>(fn: () => Promise<T>, onWaiting?: () => unknown): Promise<T> {
    return withDbRetry(fn, onWaiting ? { onWaiting: async () => void (await onWaiting()) } : {});
  }

  /** Records an interaction as handled; false when it was handled before (a redelivery). */
  async markProcessed(id: string, kind: string, onWaiting?: () => unknown): Promise<boolean> {
    try {
      await this.retry(() => this.db.prisma.processedEvent.create({ data: { id, kind } }), onWaiting);
      return true;
    } catch (err) {
      if (toDatabaseError(err) instanceof UniqueViolationError) return false;
      throw err;
    }
  }

  /** Forgets processed events older than `days` (redelivery happens within minutes). */
  async pruneProcessed(days: number): Promise<void> {
    const cutoff = new Date(Date.now() - days * 24 * 3600_000);
    await this.db.prisma.processedEvent.deleteMany({ where: { createdAt: { lt: cutoff } } });
  }

  stats(onWaiting?: () => unknown): Promise<Stats> {
    return this.retry(() => stats(this.db.prisma), onWaiting);
  }

  setPaused(actor: string, paused: boolean, onWaiting?: () => unknown): Promise<void> {
    return this.retry(() => setPaused(this.db.prisma, actor, paused), onWaiting);
  }

  /** Bans a person; returns the threads of the sessions that were ended. */
  async ban(actor: string, externalId: string, reason: string | null, onWaiting?: () => unknown): Promise<string[]> {
    const ended = await this.retry(() => ban(this.db.prisma, actor, externalId, reason), onWaiting);
    const rows = await this.retry(() => this.db.prisma.session.findMany({ where: { id: { in: ended } }, select: { threadId: true } }), onWaiting);
    return rows.flatMap((r) => (r.threadId ? [r.threadId] : []));
  }

  unban(actor: string, externalId: string, onWaiting?: () => unknown): Promise<boolean> {
    return this.retry(() => unban(this.db.prisma, actor, externalId), onWaiting);
  }

  flag(actor: string, sessionId: string, reason: string, onWaiting?: () => unknown): Promise<string> {
    return this.retry(() => flagSession(this.db.prisma, actor, sessionId, reason), onWaiting);
  }

  /** Deploys a version for new sessions (the announcement is best effort: the switch has committed). */
  deploy(actor: string, name: string, onWaiting?: () => unknown): Promise<PolicyVersion> {
    return this.retry(() => deployPolicyByName(this.db, actor, name, { notify: 'best-effort' }), onWaiting);
  }

  rollback(actor: string, onWaiting?: () => unknown): Promise<PolicyVersion> {
    return this.retry(() => rollbackPolicy(this.db, actor, { notify: 'best-effort' }), onWaiting);
  }

  /** Withdraws the person's consent and deletes their data (audited). */
  deleteParticipant(externalId: string, onWaiting?: () => unknown): Promise<DeletionResult> {
    return this.retry(() => withdrawAndDelete(this.db.prisma, externalId), onWaiting);
  }

  /** Exports every exportable session; the file is kept in memory up to `maxBytes` (audited). */
  async exportSessions(actor: string, format: 'sweet-rl' | 'jsonl', salt: string, maxBytes: number, onWaiting?: () => unknown): Promise<ExportedFile> {
    const { exportSessions } = await import('./export/export.ts');
    const out = new PassThrough();
    const chunks: Buffer[] = [];
    let bytes = 0;
    out.on('data', (c: Buffer) => {
      bytes += c.length;
      if (bytes <= maxBytes) chunks.push(c);
    });
    const result = await this.retry(() => exportSessions(this.db.prisma, { format, salt }, out), onWaiting);
    await this.retry(() => audit(this.db.prisma, actor, 'data.export', null, { format, sessions: result.sessions, bytes }), onWaiting);
    return { format, sessions: result.sessions, turns: result.turns, data: bytes <= maxBytes ? Buffer.concat(chunks) : null, bytes, card: result.cardMarkdown };
  }
}
