// The reference SWEET-RL implementation's trajectory format (facebookresearch/sweet_rl, read at the commit in
// REFERENCE_COMMITS), one JSON object a line, so that its scripts train on our data as they are:
//   {"task": {"problem_description", "ground_truth", "test_cases"?},
//    "dialogue_history": [{"role": "user", "content": <problem description>},
//                         {"role": "assistant", "content", "input", "output"}, {"role": "user", "content"}, ...,
//                         {"role": "assistant", "content", "input", "output"}],
//    "answer", "reward", "consent_version", "session_id"}
// What its scripts rely on, and so what this writer guarantees:
// - every assistant entry carries `input`, the full prompt string the agent was given (rendered with a chat
//   template, generation prompt included), and `output`, its raw generation: sample_best_of_n.py builds its
//   actor states from them, and evaluate_code.py / evaluate_html.py build critic pairs from the LAST entry's
//   input + output, so the dialogue ends on an assistant entry. The training-time information (the reference)
//   is never in `input`: those scripts prefix it themselves for the critic;
// - user entries are {role, content}, cut to ColBench's 400 (backend) / 1,000 (frontend) characters;
// - `reward` is the evaluation's score (backend: fraction of tests passed), never blended with a human rating;
// - frontend `answer` is the path (relative to the file's folder) of a screenshot of the final page, which
//   evaluate_html.py re-scores with CLIP; the page itself is in the last entry's `output`;
// - files are k blocks over the same tasks in the same order (see query.ts `perTask`), one task kind per file.
// - `consent_version` is ours (the version of the study's consent text the person had accepted; null without
//   one), and so is `session_id` (the session's id, as in the other formats: a person's deletion finds their
//   rows by it, bot/export/scrub.ts): the official scripts read only the keys above and keep the others when
//   they rewrite a file.
// System turns (notices shown in a session, never seen by the model) are dropped.
import type { Writable } from 'node:stream';
import { COLLABORATOR_REPLY_CAP } from '../../tasks/protocol.ts';
import type { ChatFormatter } from '../../trainer/model/chat.ts';
import { NotATrajectoryError, playedDialogue } from './dialogue.ts';
import type { ExportRecord } from './record.ts';
import { writeChunk, type RecordSink } from './sink.ts';

/** Bumped whenever a field's meaning changes; written in the dataset card. */
export const SWEET_RL_FORMAT_VERSION = 'sweetloop-sweet-rl/3';

/** The public code this format was checked against (read with the scripts named above). */
export const REFERENCE_COMMITS = {
  'facebookresearch/sweet_rl': '38daf2a58497e898a65ef530a7b1c13ff4b0f128',
  'YifeiZhou02/collab_openrlhf': '87259d4b6e7363dbd138db348ff2440da2ff82e8',
} as const;

export type SweetRlEntry =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; input: string; output: string };

export interface SweetRlTrajectory {
  task: { problem_description: string; ground_truth: string; test_cases?: Record<string, string> };
  dialogue_history: SweetRlEntry[];
  answer: string;
  reward: number;
  consent_version: number | null;
  session_id: string;
}

export { NotATrajectoryError };

export interface TrajectoryOptions {
  template: ChatFormatter;
  /** Frontend: the screenshot path written for the final page (the sink renders it). */
  answerPath?: string;
}

export interface TrajectoryResult {
  trajectory: SweetRlTrajectory;
  /** Assistant entries whose input came from the recorded prompt, and those rebuilt by the protocol. */
  exactInputs: number;
  reconstructedInputs: number;
}

export function toTrajectory(r: ExportRecord, opts: TrajectoryOptions): TrajectoryResult {
  const score = r.evaluation?.score;
  if (score === undefined || score === null)
    throw new NotATrajectoryError(
      `session ${r.session.id} has no evaluation: the sweet-rl format needs its score as the reward`,
    );
  const kind = r.task.kind;
  const turns = playedDialogue(r);
  const task: SweetRlTrajectory['task'] = {
    problem_description: r.task.problemDescription,
    ground_truth: r.task.groundTruth,
  };
  // ColBench's layout of test cases ({"test1": call, ...}), which evaluate_code.py iterates.
  if (r.task.testCases) task.test_cases = Object.fromEntries(r.task.testCases.map((c, i) => [`test${i + 1}`, c]));

  const dialogue: SweetRlEntry[] = [{ role: 'user', content: r.task.problemDescription }];
  let exactInputs = 0;
  let reconstructedInputs = 0;
  for (const { turn: t, prompt, exactPrompt } of turns) {
    if (t.role === 'human') {
      dialogue.push({ role: 'user', content: t.content.slice(0, COLLABORATOR_REPLY_CAP[kind]) });
      continue;
    }
    if (exactPrompt) exactInputs++;
    else reconstructedInputs++;
    dialogue.push({
      role: 'assistant',
      content: t.content,
      input: opts.template.format(prompt!, { addGenerationPrompt: true }),
      output: t.rawOutput ?? t.content,
    });
  }
  let answer: string;
  if (kind === 'frontend') {
    if (opts.answerPath === undefined) throw new Error('a frontend trajectory needs the path of its answer screenshot');
    answer = opts.answerPath;
  } else {
    answer = r.session.answer ?? '';
  }
  return {
    trajectory: {
      task,
      dialogue_history: dialogue,
      answer,
      reward: score,
      consent_version: r.session.consentVersion,
      session_id: r.session.id,
    },
    exactInputs,
    reconstructedInputs,
  };
}

/** What a sweet-rl export did with its sessions (for the dataset card). */
export class SweetRlStats {
  written = 0;
  exactInputs = 0;
  reconstructedInputs = 0;
  screenshots = 0;
  /** Reason -> sessions left out for it. */
  leftOut = new Map<string, number>();
}

export interface SweetRlSinkOptions {
  template: ChatFormatter;
  stats: SweetRlStats;
  /** Frontend only: writes the PNG of a final page and returns the path to put in `answer` (NotATrajectoryError: leave it out). */
  screenshot?: (r: ExportRecord) => Promise<string>;
}

export function sweetRlSink(
  out: Writable,
  opts: SweetRlSinkOptions,
): RecordSink<ExportRecord> & { accepted(r: ExportRecord): boolean } {
  const accepted = new Set<string>();
  return {
    accepted: (r) => accepted.has(r.session.id),
    async write(batch) {
      let text = '';
      for (const r of batch) {
        let result: TrajectoryResult;
        try {
          // Checked before the (slow) screenshot; the path is only a placeholder in this dry run.
          result = toTrajectory(r, { template: opts.template, answerPath: '' });
          if (r.task.kind === 'frontend') {
            if (!opts.screenshot)
              throw new Error('a frontend sweet-rl export needs a folder for its screenshots: export to a file path');
            result.trajectory.answer = await opts.screenshot(r);
            opts.stats.screenshots++;
          }
        } catch (err) {
          if (!(err instanceof NotATrajectoryError)) throw err;
          const reason = err.message.replace(/^session \S+:? ?/, '');
          opts.stats.leftOut.set(reason, (opts.stats.leftOut.get(reason) ?? 0) + 1);
          continue;
        }
        opts.stats.written++;
        opts.stats.exactInputs += result.exactInputs;
        opts.stats.reconstructedInputs += result.reconstructedInputs;
        accepted.add(r.session.id);
        text += JSON.stringify(result.trajectory) + '\n';
      }
      if (text) await writeChunk(out, text);
    },
    async finish() {},
  };
}
