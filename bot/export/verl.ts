// verl's datasets as Parquet (datasets.load_dataset("parquet", ...); verl reads them with pandas/pyarrow):
// - `verl-rl`: one row per task of the selected sessions, the fields verl's RLHFDataset reads
//   (verl/utils/dataset/rl_dataset.py): data_source, prompt (the chat messages the agent starts from: system prompt
//   and description, nothing hidden), ability, reward_model {style, ground_truth}, extra_info {index, split, ...,
//   interaction_kwargs} (what a multi-turn rollout's Interaction gets: the collaborator's hidden information). The
//   reference and the test calls are only in reward_model and extra_info, never in the prompt;
// - `verl-sft`: one session a row, `messages` (the whole conversation, dialogue.ts), for verl's multi-turn SFT
//   trainer (data.multiturn.messages_key=messages), which trains on the assistant turns only.
import type { Writable } from 'node:stream';
import type { ChatMessage } from '../../tasks/agent.ts';
import { buildDialogue, MAX_AGENT_TURNS } from '../../tasks/protocol.ts';
import {
  bool,
  f64,
  i32,
  i64,
  list,
  opt,
  parquetRowSink,
  req,
  str,
  struct,
  type ParquetColumn,
} from './parquet-writer.ts';
import type { ExportRecord } from './record.ts';
import type { RecordSink } from './sink.ts';
import { conversationRows, type ConversationRow, type TrainingStats } from './training-rows.ts';

/** The name verl's interaction config gives the collaborator (interaction_kwargs.name picks it). */
export const VERL_INTERACTION = 'sweetloop_collaborator';

const messagesColumn = (name: string): ParquetColumn => ({
  name,
  schema: list(name, req, { name: 'element' }, [str('role'), str('content')]),
});

export const VERL_RL_COLUMNS: ParquetColumn[] = [
  { name: 'data_source', schema: [str('data_source')] },
  messagesColumn('prompt'),
  { name: 'ability', schema: [str('ability')] },
  { name: 'reward_model', schema: struct('reward_model', req, [[str('style')], [str('ground_truth')]]) },
  {
    name: 'extra_info',
    schema: struct('extra_info', req, [
      [i64('index')],
      [str('split')],
      [str('task_id')],
      [str('kind')],
      [str('source')],
      [str('external_id', opt)],
      list('test_cases', opt, str('element')),
      [i32('sessions')],
      [f64('mean_score', opt)],
      [f64('success_rate', opt)],
      struct('interaction_kwargs', req, [
        [str('name')],
        [str('task_id')],
        [str('kind')],
        [str('hidden_information')],
        list('test_cases', opt, str('element')),
        [i32('max_turns')],
      ]),
    ]),
  },
];

export const VERL_SFT_COLUMNS: ParquetColumn[] = [
  messagesColumn('messages'),
  { name: 'session_id', schema: [str('session_id')] },
  { name: 'task_id', schema: [str('task_id')] },
  { name: 'kind', schema: [str('kind')] },
  { name: 'split', schema: [str('split')] },
  { name: 'reward', schema: [f64('reward', opt)] },
  { name: 'success', schema: [bool('success', opt)] },
  { name: 'policy', schema: [str('policy', opt)] },
];

export interface VerlRlRow {
  data_source: string;
  prompt: ChatMessage[];
  ability: string;
  reward_model: { style: 'rule'; ground_truth: string };
  extra_info: {
    index: bigint;
    split: string;
    task_id: string;
    kind: string;
    source: string;
    external_id: string | null;
    test_cases: string[] | null;
    sessions: number;
    mean_score: number | null;
    success_rate: number | null;
    interaction_kwargs: {
      name: string;
      task_id: string;
      kind: string;
      hidden_information: string;
      test_cases: string[] | null;
      max_turns: number;
    };
  };
}

const columns =
  <T extends object>(cols: readonly ParquetColumn[]) =>
  (rows: T[]) =>
    cols.map(({ name }) => ({ name, data: rows.map((r) => (r as Record<string, unknown>)[name]) }));

interface TaskTally {
  row: VerlRlRow;
  scores: number[];
  successes: number;
}

/** One row per task: held until the end (a task's sessions may come in any page), then written in row groups of 500. */
export function verlRlSink(
  out: Writable,
  stats: TrainingStats,
  kvMetadata: Record<string, string>,
): RecordSink<ExportRecord> {
  const sink = parquetRowSink<VerlRlRow>(out, VERL_RL_COLUMNS, columns(VERL_RL_COLUMNS), kvMetadata);
  const tasks = new Map<string, TaskTally>();
  return {
    async write(batch) {
      for (const r of batch) {
        let t = tasks.get(r.task.id);
        if (!t) {
          const hidden = r.task.groundTruth;
          t = {
            row: {
              data_source: `sweetloop/colbench-${r.task.kind}`,
              prompt: buildDialogue({ kind: r.task.kind, description: r.task.problemDescription }, []),
              ability: r.task.kind === 'backend' ? 'code' : 'web-design',
              reward_model: { style: 'rule', ground_truth: hidden },
              extra_info: {
                index: BigInt(tasks.size),
                split: r.task.split,
                task_id: r.task.id,
                kind: r.task.kind,
                source: r.task.source,
                external_id: r.task.externalId,
                test_cases: r.task.testCases,
                sessions: 0,
                mean_score: null,
                success_rate: null,
                interaction_kwargs: {
                  name: VERL_INTERACTION,
                  task_id: r.task.id,
                  kind: r.task.kind,
                  hidden_information: hidden,
                  test_cases: r.task.testCases,
                  max_turns: MAX_AGENT_TURNS,
                },
              },
            },
            scores: [],
            successes: 0,
          };
          tasks.set(r.task.id, t);
        }
        t.row.extra_info.sessions++;
        if (r.evaluation) {
          t.scores.push(r.evaluation.score);
          if (r.evaluation.success) t.successes++;
        }
      }
    },
    async finish() {
      const rows = [...tasks.values()].map((t) => {
        const n = t.scores.length;
        t.row.extra_info.mean_score = n ? t.scores.reduce((a, b) => a + b, 0) / n : null;
        t.row.extra_info.success_rate = n ? t.successes / n : null;
        return t.row;
      });
      stats.tasks = stats.rows = rows.length;
      for (let i = 0; i < rows.length; i += 500) await sink.write(rows.slice(i, i + 500));
      await sink.finish();
    },
  };
}

export function verlSftSink(
  out: Writable,
  stats: TrainingStats,
  kvMetadata: Record<string, string>,
): RecordSink<ExportRecord> & { accepted(r: ExportRecord): boolean } {
  const sink = parquetRowSink<ConversationRow>(out, VERL_SFT_COLUMNS, columns(VERL_SFT_COLUMNS), kvMetadata);
  const accepted = new Set<string>();
  return {
    accepted: (r) => accepted.has(r.session.id),
    write: (batch) => sink.write(conversationRows(batch, stats, accepted)),
    finish: () => sink.finish(),
  };
}
