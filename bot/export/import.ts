// Reading sweet-rl trajectory files back into the database as simulated sessions: the official rollouts the
// SWEET-RL authors published (colbench_code_offline_15k_llama8b.jsonl and the like) or a Sweetloop export, so
// the trainer can learn from them and the reports can set them beside human sessions.
//
// - Every line is checked on its own first; a bad one is reported with its line number and reason and costs
//   nothing else. Nothing is written before the whole file is checked.
// - Tasks are matched by content (the task store's content hash); tasks not yet stored are imported through
//   prisma/task-store.ts importTasks. Sessions are stored only through storeFinishedSession, one transaction
//   each (channel 'imported', collaborator `import:<file name>` unless named).
// - The evaluation is the file's reward (evaluatorVersion 'imported'), or the answer re-scored by our own
//   evaluator when asked. A frontend file's `answer` is a screenshot path; the page is taken from the last
//   assistant entry instead.
// - Repeats: a trajectory is identified by its task, its turns (role, content, raw output) and its answer. A
//   trajectory already stored that many times (by an earlier import, or as the session it was exported from) is
//   not stored again, so importing the same file twice stores nothing new; identical trajectories within one
//   file are each kept.
// - What is not kept: each assistant entry's rendered `input` (a re-export renders the prompt again from the
//   protocol) and timings (sessions get consecutive start times in file order, so a re-export keeps the order).
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { z } from 'zod';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { storeFinishedSession, type FinishedSession } from '../../prisma/finished-session-store.ts';
import { importTasks, taskContent } from '../../prisma/task-store.ts';
import { isDialogueTurn } from '../../prisma/cohorts.ts';
import { DEFAULT_FRONTEND_THRESHOLD } from '../../tasks/frontend-eval.ts';
import { canonicalJson, parseTaskRecord, readLines, type ImportedTask, type LineError } from '../../tasks/importer.ts';
import type { TaskKind, TaskSplit } from '../../tasks/model.ts';
import { endReasonOf, MAX_AGENT_TURNS, parseAgentMessage, sanitizeText } from '../../tasks/protocol.ts';
import type { EvaluationOutcome, Scorer } from '../../tasks/scorer.ts';

/** Written as the evaluatorVersion of an evaluation taken from the file's reward. */
export const IMPORTED_EVALUATOR_VERSION = 'imported';

const entrySchema = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  input: z.string().nullish(),
  output: z.string().nullish(),
});

const trajectorySchema = z.object({
  task: z.object({ problem_description: z.string() }).passthrough(),
  dialogue_history: z.array(entrySchema).min(2, 'needs the problem description and at least one assistant entry'),
  answer: z.string().nullish(),
  reward: z.number().finite().min(0, 'must be in [0, 1]').max(1, 'must be in [0, 1]').optional(),
});

export interface ImportSessionsOptions {
  kind: TaskKind;
  /** Who played the collaborator; default `import:<file name>`. */
  collaborator?: string;
  /** Split of tasks not yet stored (default train). */
  split?: TaskSplit;
  /** Re-score every answer with this scorer instead of taking the file's reward. */
  scorer?: Scorer;
  /** Start time of the first session (default now); later lines start a millisecond apart each. */
  now?: Date;
}

export interface ImportSessionsReport {
  lines: number;
  stored: number;
  /** Trajectories already in the database, not stored again. */
  repeats: number;
  tasksCreated: number;
  invalid: LineError[];
  sessionIds: string[];
}

interface Checked {
  line: number;
  task: ImportedTask;
  turns: FinishedSession['turns'];
  answer: string;
  endReason: FinishedSession['endReason'];
  reward: number | undefined;
}

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || 'line'}: ${i.message}`)
    .join('; ');
}

/** One line checked: the session it will become, or why it cannot. */
export function checkTrajectoryLine(
  text: string,
  line: number,
  o: { kind: TaskKind; split: TaskSplit; name: string; needReward: boolean },
): Checked | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return `not valid JSON: ${(err as Error).message}`;
  }
  const parsed = trajectorySchema.safeParse(value);
  if (!parsed.success) return describe(parsed.error);
  const t = parsed.data;
  const task = parseTaskRecord(t.task, { kind: o.kind, split: o.split, name: o.name, line });
  if (!task.ok) return `task: ${task.reason}`;
  const [first, ...rest] = t.dialogue_history;
  if (first!.role !== 'user' || first!.content !== t.task.problem_description) {
    return 'dialogue_history[0]: must be the user entry with the problem description';
  }
  const turns: FinishedSession['turns'][number][] = [];
  for (const [i, e] of rest.entries()) {
    const expected = i % 2 === 0 ? 'assistant' : 'user';
    if (e.role !== expected)
      return `dialogue_history[${i + 1}]: expected a ${expected} entry (entries alternate after the description)`;
    if (e.role === 'assistant') {
      const content = sanitizeText(e.content);
      turns.push({ role: 'agent', content, rawOutput: sanitizeText(e.output ?? e.content) });
    } else {
      turns.push({ role: 'human', content: sanitizeText(e.content) });
    }
  }
  if (turns.at(-1)!.role !== 'agent') return 'dialogue_history: must end on an assistant entry';
  const agentTurns = turns.filter((x) => x.role === 'agent');
  if (agentTurns.length > MAX_AGENT_TURNS)
    return `dialogue_history: ${agentTurns.length} assistant entries, more than ColBench's ${MAX_AGENT_TURNS}`;
  const last = parseAgentMessage(agentTurns.at(-1)!.content, { kind: o.kind, turnIndex: MAX_AGENT_TURNS - 1 });
  // The official frontend `answer` is a screenshot path; the page is what the last assistant entry holds.
  const answer = o.kind === 'frontend' ? (last.answer ?? '') : sanitizeText(t.answer ?? '');
  if (o.needReward && t.reward === undefined) return 'reward: missing (add --rescore to score the answer instead)';
  return { line, task: task.task, turns, answer, endReason: endReasonOf(last), reward: t.reward };
}

/** What identifies a stored trajectory: the task, the turns as stored, the answer. */
export function trajectoryKey(
  taskId: string,
  turns: readonly { role: string; content: string; rawOutput?: string | null }[],
  answer: string,
): string {
  const canonical = canonicalJson({
    taskId,
    turns: turns
      .filter(isDialogueTurn)
      .map((t) => [t.role, t.content, t.role === 'agent' ? (t.rawOutput ?? t.content) : null]),
    answer,
  });
  return createHash('sha256').update(canonical).digest('hex');
}

function importedOutcome(
  kind: TaskKind,
  reward: number,
  testsTotal: number | null,
  file: string,
  line: number,
): EvaluationOutcome {
  const outcome: EvaluationOutcome = {
    score: reward,
    success: kind === 'backend' ? reward >= 1 : reward >= DEFAULT_FRONTEND_THRESHOLD,
    detail: { imported: { file, line, reward } },
    evaluatorVersion: IMPORTED_EVALUATOR_VERSION,
  };
  if (kind === 'backend' && testsTotal) {
    const passed = Math.round(reward * testsTotal);
    // Only when the reward is a whole number of tests (the official rewards are).
    if (Math.abs(passed / testsTotal - reward) < 1e-9) Object.assign(outcome, { testsPassed: passed, testsTotal });
  }
  return outcome;
}

export async function importSessions(
  prisma: PrismaClient,
  path: string,
  o: ImportSessionsOptions,
): Promise<ImportSessionsReport> {
  const name = basename(path);
  const split = o.split ?? 'train';
  const report: ImportSessionsReport = {
    lines: 0,
    stored: 0,
    repeats: 0,
    tasksCreated: 0,
    invalid: [],
    sessionIds: [],
  };
  const good: Checked[] = [];
  for await (const { line, text } of readLines(path)) {
    report.lines++;
    if (text.trim() === '') {
      report.invalid.push({ line, reason: 'empty line (JSONL needs one JSON object on every line)' });
      continue;
    }
    const c = checkTrajectoryLine(text, line, { kind: o.kind, split, name, needReward: !o.scorer });
    if (typeof c === 'string') report.invalid.push({ line, reason: c });
    else good.push(c);
  }
  if (good.length === 0) return report;

  // Tasks: matched by content, the missing ones stored in one batch.
  const hashes = [...new Set(good.map((g) => g.task.contentHash))];
  const known = new Map(
    (
      await prisma.task.findMany({ where: { contentHash: { in: hashes } }, select: { id: true, contentHash: true } })
    ).map((t) => [t.contentHash, t.id]),
  );
  const missing = good.filter(
    (g, i, all) =>
      !known.has(g.task.contentHash) && all.findIndex((x) => x.task.contentHash === g.task.contentHash) === i,
  );
  if (missing.length > 0) {
    const r = await importTasks(
      prisma,
      missing.map((g) => g.task),
    );
    if (r.invalid > 0)
      throw new Error(
        `tasks of lines ${r.errors.map((e) => e.line).join(', ')} were refused by the task store: ${r.errors.map((e) => e.reason).join('; ')}`,
      );
    report.tasksCreated = r.inserted;
    for (const t of await prisma.task.findMany({
      where: { contentHash: { in: missing.map((g) => g.task.contentHash) } },
      select: { id: true, contentHash: true },
    })) {
      known.set(t.contentHash, t.id);
    }
  }

  // Repeats: count how often each trajectory is already stored, then skip that many of its occurrences.
  const taskIds = [...new Set(good.map((g) => known.get(g.task.contentHash)!))];
  const stored = new Map<string, number>();
  const answers = new Set(good.map((g) => g.answer));
  for (let i = 0; i < taskIds.length; i += 500) {
    // In chunks: a published file names thousands of tasks, more than one statement's bind parameters allow.
    const existing = await prisma.session.findMany({
      where: { taskId: { in: taskIds.slice(i, i + 500) } },
      select: {
        taskId: true,
        answer: true,
        turns: { orderBy: { index: 'asc' }, select: { role: true, content: true, rawOutput: true } },
      },
    });
    for (const s of existing) {
      if (!answers.has(s.answer ?? '')) continue;
      const key = trajectoryKey(s.taskId, s.turns, s.answer ?? '');
      stored.set(key, (stored.get(key) ?? 0) + 1);
    }
  }

  const start = (o.now ?? new Date()).getTime();
  const collaborator = o.collaborator ?? `import:${name}`;
  for (const [i, g] of good.entries()) {
    const taskId = known.get(g.task.contentHash)!;
    const key = trajectoryKey(taskId, g.turns, g.answer);
    const already = stored.get(key) ?? 0;
    if (already > 0) {
      stored.set(key, already - 1);
      report.repeats++;
      continue;
    }
    const content = taskContent({
      kind: g.task.kind,
      description: g.task.description,
      hiddenReference: g.task.reference,
      testCases: g.task.kind === 'backend' ? g.task.testCases : null,
    });
    const evaluation = o.scorer
      ? await o.scorer.evaluate(content, g.answer)
      : importedOutcome(o.kind, g.reward!, content.kind === 'backend' ? content.testCases.length : null, name, g.line);
    const at = new Date(start + i);
    const id = await storeFinishedSession(prisma, {
      taskId,
      policyVersionId: null,
      collaborator,
      channel: 'imported',
      turns: g.turns,
      answer: g.answer,
      endReason: g.endReason,
      evaluation,
      startedAt: at,
      endedAt: at,
    });
    report.stored++;
    report.sessionIds.push(id);
  }
  return report;
}
