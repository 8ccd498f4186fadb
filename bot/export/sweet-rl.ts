// The reference SWEET-RL implementation's trajectory shape, one JSON object a line, so that its PyTorch pipeline
// can train on our data:
//   {"task": {"problem_description", "ground_truth", "test_cases"}, "dialogue_history": [{"role", "content"}...],
//    "answer", "reward"}
// The first "user" message is the problem description; our agent turns become "assistant", human turns "user",
// and system turns (notices shown in the session, never seen by the model) are dropped.
import type { Writable } from 'node:stream';
import type { ExportRecord } from './record.ts';
import { writeChunk, type RecordSink } from './sink.ts';

export interface SweetRlTrajectory {
  task: { problem_description: string; ground_truth: string; test_cases?: Record<string, string> };
  dialogue_history: { role: 'user' | 'assistant'; content: string }[];
  answer: string;
  reward: number;
}

export function toTrajectory(r: ExportRecord): SweetRlTrajectory {
  const reward = r.session.reward ?? r.evaluation?.score;
  if (reward === undefined || reward === null) throw new Error(`session ${r.session.id} has no reward: the sweet-rl format needs one`);
  const task: SweetRlTrajectory['task'] = { problem_description: r.task.problemDescription, ground_truth: r.task.groundTruth };
  // ColBench stores test cases as {"test1": call, ...}; the reference pipeline reads them in that layout.
  if (r.task.testCases) task.test_cases = Object.fromEntries(r.task.testCases.map((c, i) => [`test${i + 1}`, c]));
  const dialogue: SweetRlTrajectory['dialogue_history'] = [];
  for (const t of r.turns) {
    if (t.role === 'system') continue;
    dialogue.push({ role: t.role === 'agent' ? 'assistant' : 'user', content: t.content });
  }
  // The session engine may or may not have stored the description as its opening human turn.
  const first = dialogue[0];
  if (!(first && first.role === 'user' && first.content === r.task.problemDescription)) {
    dialogue.unshift({ role: 'user', content: r.task.problemDescription });
  }
  return { task, dialogue_history: dialogue, answer: r.session.answer ?? '', reward };
}

export function sweetRlSink(out: Writable): RecordSink<ExportRecord> {
  return {
    async write(batch) {
      if (batch.length === 0) return;
      let text = '';
      for (const r of batch) text += JSON.stringify(toTrajectory(r)) + '\n';
      await writeChunk(out, text);
    },
    async finish() {},
  };
}
