// TRL's conversational datasets, one JSON object a line (datasets.load_dataset("json", ...)):
// - `trl-sft`: {messages, ...ours}: one session a line, the whole conversation (trainer SFTTrainer);
// - `trl-dpo`: {prompt, chosen, rejected, ...ours} as message lists (trainer DPOTrainer). Trajectory pairs under
//   the rule of the official pipeline and Sweetloop's trainer (trainer/pairs.ts rewardPairs: within a task, its
//   best session against every one rewarded strictly lower, the reward being the evaluation's score): the prompt
//   is the opening (system prompt, description) and each side the rest of its conversation, so TRL trains on the
//   collaborator's turns inside the completion too (the card says so). With a SWEET-RL run's candidates
//   (`candidates`), also per-turn pairs: the dialogue up to an agent turn, and two of the policy's candidates for
//   it that the run's critic ranked (trainer/actor.ts pairsForState), as the run's actor trained on them.
// The trajectory pairs need every session of a task: the sink keeps the selected sessions' conversations until
// the end, then writes the pairs (memory grows with the selection, unlike the other formats).
import type { Writable } from 'node:stream';
import type { ChatMessage } from '../../tasks/agent.ts';
import type { TaskContent } from '../../tasks/model.ts';
import type { ActionPair } from '../../trainer/actor.ts';
import { rewardPairs, scoredTrajectories } from '../../trainer/pairs.ts';
import { conversation, NotATrajectoryError, playedDialogue } from './dialogue.ts';
import type { ExportRecord } from './record.ts';
import { conversationRows, TrainingStats } from './training-rows.ts';
import { writeChunk, type RecordSink } from './sink.ts';

export interface TrlDpoRow {
  prompt: ChatMessage[];
  chosen: ChatMessage[];
  rejected: ChatMessage[];
  /** 'trajectory': two whole sessions of the task; 'turn': two candidates for one agent turn, ranked by a critic. */
  pair: 'trajectory' | 'turn';
  task_id: string;
  chosen_session_id: string;
  /** The rejected session (trajectory pairs); for turn pairs the same session as chosen_session_id. */
  rejected_session_id: string;
  /** Trajectory pairs: the two sessions' scores. Turn pairs: the critic's advantages of the two candidates. */
  chosen_score: number;
  rejected_score: number;
  /** Turn pairs: which agent turn (0-based) the candidates answer; null for trajectory pairs. */
  agent_turn: number | null;
}

type TrlSink = RecordSink<ExportRecord> & { accepted(r: ExportRecord): boolean };

const line = (row: object) => JSON.stringify(row) + '\n';

export function trlSftSink(out: Writable, stats: TrainingStats): TrlSink {
  const accepted = new Set<string>();
  return {
    accepted: (r) => accepted.has(r.session.id),
    async write(batch) {
      const text = conversationRows(batch, stats, accepted).map(line).join('');
      if (text) await writeChunk(out, text);
    },
    async finish() {},
  };
}

/** The task as trainer/pairs.ts keys it (by content, so equal tasks group in any database). */
function taskOf(r: ExportRecord): TaskContent {
  const t = r.task;
  return t.kind === 'backend'
    ? { kind: 'backend', description: t.problemDescription, reference: t.groundTruth, testCases: t.testCases ?? [] }
    : { kind: 'frontend', description: t.problemDescription, reference: t.groundTruth };
}

interface Held {
  sessionId: string;
  taskId: string;
  task: TaskContent;
  turns: { role: 'agent' | 'human'; content: string }[];
  answer: string;
  reward: number;
  messages: ChatMessage[];
  opening: number;
}

export interface TrlDpoOptions {
  stats: TrainingStats;
  /** A SWEET-RL run's candidate pairs (its actor-pairs.jsonl read with trainer/actor.ts readActorPairs). */
  candidates?: readonly ActionPair[];
}

export function trlDpoSink(out: Writable, o: TrlDpoOptions): TrlSink {
  const held: Held[] = [];
  // The sessions that entered the pairing (evaluated trajectories): what the card counts.
  const pool = new Set<string>();
  const byTurn = new Map<string, ActionPair[]>();
  for (const p of o.candidates ?? []) {
    const list = byTurn.get(p.sessionId);
    if (list) list.push(p);
    else byTurn.set(p.sessionId, [p]);
  }
  return {
    accepted: (r) => pool.has(r.session.id),
    async write(batch) {
      let text = '';
      for (const r of batch) {
        let c: ReturnType<typeof conversation>;
        let dialogue: ReturnType<typeof playedDialogue>;
        try {
          if (r.evaluation === null)
            throw new NotATrajectoryError(`session ${r.session.id} has no evaluation: a pair needs its score`);
          dialogue = playedDialogue(r);
          c = conversation(r, dialogue);
        } catch (err) {
          if (!(err instanceof NotATrajectoryError)) throw err;
          o.stats.leave(err);
          continue;
        }
        // Keyed as the trainer keys its trajectories (trainer/data.ts: the turns as stored, the score as reward).
        const turns = dialogue.map(({ turn }) => ({
          role: turn.role === 'agent' ? ('agent' as const) : ('human' as const),
          content: turn.content,
        }));
        held.push({
          sessionId: r.session.id,
          taskId: r.task.id,
          task: taskOf(r),
          turns,
          answer: r.session.answer ?? '',
          reward: r.evaluation!.score,
          messages: c.messages,
          opening: c.opening,
        });
        pool.add(r.session.id);
        // Per-turn pairs are written as their session passes: the state is this session's dialogue so far.
        for (const p of byTurn.get(r.session.id) ?? []) {
          const text0 = turnPairText(p);
          const end = c.opening + 2 * p.agentTurn;
          if (!text0) {
            o.stats.candidatesWithoutText++;
            continue;
          }
          if (end > c.messages.length - 1) continue;
          const row: TrlDpoRow = {
            prompt: c.messages.slice(0, end),
            chosen: [{ role: 'assistant', content: text0.chosen }],
            rejected: [{ role: 'assistant', content: text0.rejected }],
            pair: 'turn',
            task_id: r.task.id,
            chosen_session_id: r.session.id,
            rejected_session_id: r.session.id,
            chosen_score: p.chosenScore,
            rejected_score: p.rejectedScore,
            agent_turn: p.agentTurn,
          };
          text += line(row);
          o.stats.turnPairs++;
          o.stats.rows++;
        }
      }
      if (text) await writeChunk(out, text);
    },
    async finish() {
      o.stats.candidatesUnmatched = (o.candidates?.length ?? 0) - o.stats.turnPairs - o.stats.candidatesWithoutText;
      const byId = new Map(held.map((h) => [h.sessionId, h]));
      let text = '';
      for (const p of rewardPairs(scoredTrajectories(held))) {
        const chosen = byId.get(p.chosen.id)!;
        const rejected = byId.get(p.rejected.id)!;
        const row: TrlDpoRow = {
          prompt: chosen.messages.slice(0, chosen.opening),
          chosen: chosen.messages.slice(chosen.opening),
          rejected: rejected.messages.slice(rejected.opening),
          pair: 'trajectory',
          task_id: chosen.taskId,
          chosen_session_id: chosen.sessionId,
          rejected_session_id: rejected.sessionId,
          chosen_score: chosen.reward,
          rejected_score: rejected.reward,
          agent_turn: null,
        };
        text += line(row);
        o.stats.trajectoryPairs++;
        o.stats.rows++;
        if (text.length > 1 << 20) {
          await writeChunk(out, text);
          text = '';
        }
      }
      if (text) await writeChunk(out, text);
    },
  };
}

/** The candidates' texts a run stored with its pairs (older runs stored token ids only: null). */
function turnPairText(p: ActionPair): { chosen: string; rejected: string } | null {
  return p.chosenText !== undefined && p.rejectedText !== undefined
    ? { chosen: p.chosenText, rejected: p.rejectedText }
    : null;
}
