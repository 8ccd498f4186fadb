// What the training formats (trl.ts, verl.ts) share: their counts for the dataset card, and the one-session-a-row
// conversation both SFT formats write (trl-sft as JSON lines, verl-sft as Parquet).
import type { ChatMessage } from '../../tasks/agent.ts';
import { conversation, NotATrajectoryError } from './dialogue.ts';
import type { ExportRecord } from './record.ts';

/** What a training-format export did with its sessions (for the dataset card). */
export class TrainingStats {
  rows = 0;
  /** trl-dpo: pairs of whole sessions, and per-turn pairs from a run's candidates. */
  trajectoryPairs = 0;
  turnPairs = 0;
  /** trl-dpo with candidates: pairs whose session (or agent turn) is not in the selection. */
  candidatesUnmatched = 0;
  /** trl-dpo with candidates: pairs of a run that stored token ids only (collected before their texts were kept). */
  candidatesWithoutText = 0;
  /** verl-rl: tasks written (one row each). */
  tasks = 0;
  /** Reason -> sessions left out for it. */
  leftOut = new Map<string, number>();

  leave(err: NotATrajectoryError): void {
    const reason = err.message.replace(/^session \S+:? ?/, '');
    this.leftOut.set(reason, (this.leftOut.get(reason) ?? 0) + 1);
  }
}

/** One session's conversation (dialogue.ts conversation) and what it is filtered on. */
export interface ConversationRow {
  messages: ChatMessage[];
  session_id: string;
  task_id: string;
  kind: 'backend' | 'frontend';
  split: 'train' | 'test';
  /** The evaluation's score (null: not evaluated) and whether every test passed: rejection fine-tuning keeps success. */
  reward: number | null;
  success: boolean | null;
  policy: string | null;
}

/** The batch's sessions as conversation rows; those that are not a trajectory are counted in `stats` and left out. */
export function conversationRows(
  batch: readonly ExportRecord[],
  stats: TrainingStats,
  accepted: Set<string>,
): ConversationRow[] {
  const rows: ConversationRow[] = [];
  for (const r of batch) {
    let messages: ChatMessage[];
    try {
      messages = conversation(r).messages;
    } catch (err) {
      if (!(err instanceof NotATrajectoryError)) throw err;
      stats.leave(err);
      continue;
    }
    rows.push({
      messages,
      session_id: r.session.id,
      task_id: r.task.id,
      kind: r.task.kind,
      split: r.task.split,
      reward: r.evaluation?.score ?? null,
      success: r.evaluation?.success ?? null,
      policy: r.policyVersion?.name ?? null,
    });
    accepted.add(r.session.id);
  }
  stats.rows += rows.length;
  return rows;
}
