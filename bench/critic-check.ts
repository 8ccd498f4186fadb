// Does SWEET-RL's critic rank candidates the way the tests do? Where both candidates of an actor pair are
// answers, the tests can judge them too: score both with the task's own evaluator and count the pairs the
// critic ordered as the tests do, the other way, or where the tests see no difference. A critic at about
// half right on the pairs the tests can tell apart gives the actor noise to learn from, whatever the actor's
// step does. Pairs where a side asks a question cannot be judged this way; they are counted apart.
//
// Used by bench:learning on its SWEET-RL run, and standalone on a run kept with --keep:
//   npx tsx bench/critic-check.ts --dir data/bench/learning [--run <training run id>]
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase, type Database } from '../prisma/db.ts';
import type { PrismaClient } from '../prisma/generated/client.ts';
import { taskContent } from '../prisma/task-store.ts';
import { parseAgentMessage } from '../tasks/protocol.ts';
import { createScorer, type Scorer } from '../tasks/scorer.ts';
import { mcnemarExact } from '../tasks/paired-tests.ts';
import { criticGap, readActorPairs } from '../trainer/actor.ts';
import { widestGaps } from '../trainer/pairs.ts';
import { TextTokenizer } from '../trainer/model/tokenizer.ts';
import { runWhenMain } from './standalone.ts';

export interface CriticCheck {
  pairs: number;
  /** Both sides answer, and the tests score them differently. */
  judged: number;
  /** Of those, the critic preferred the one passing more tests. */
  agree: number;
  /** Both answer, same test score. */
  testsTie: number;
  /** One side answers, the other asks. */
  answerVsQuestion: number;
  /** Both ask. */
  bothQuestions: number;
  /** Two-sided exact binomial test of agree against disagree (pairs of one state are not independent: a guide). */
  p: number;
  /** Mean test-score gain of chosen over rejected on the pairs where both answer (0 when none). */
  meanScoreGain: number;
  /**
   * The same counts on the half of all pairs with the widest critic gap (at or above the median gap): does the
   * critic know when it is sure? (what the actor's pairGapQuantile relies on)
   */
  wideGap: { judged: number; agree: number; meanScoreGain: number };
}

/** Of test-score differences chosen minus rejected: how many the tests tell apart, how many favour the chosen side, the mean. */
function tally(diffs: readonly number[]): { judged: number; agree: number; meanScoreGain: number } {
  return {
    judged: diffs.filter((d) => d !== 0).length,
    agree: diffs.filter((d) => d > 0).length,
    meanScoreGain: diffs.length ? diffs.reduce((a, b) => a + b, 0) / diffs.length : 0,
  };
}

/** Checks the pairs of one SWEET-RL run (its actor-pairs.jsonl), decoding with the policy's tokenizer. */
export async function checkCritic(
  prisma: PrismaClient,
  runDir: string,
  tokenizerDir: string,
  scorer: Scorer,
): Promise<CriticCheck> {
  const tokenizer = await TextTokenizer.load(tokenizerDir);
  const pairs = await readActorPairs(join(runDir, 'actor-pairs.jsonl'));
  // A session's task, and each (task, answer)'s score: candidates repeat, and each scoring runs the sandbox.
  const tasks = new Map<string, { id: string; content: ReturnType<typeof taskContent> }>();
  const scores = new Map<string, number>();
  const score = async (sessionId: string, answer: string): Promise<number> => {
    let task = tasks.get(sessionId);
    if (!task) {
      const s = await prisma.session.findUniqueOrThrow({ where: { id: sessionId }, include: { task: true } });
      task = { id: s.task.id, content: taskContent(s.task) };
      tasks.set(sessionId, task);
    }
    const key = `${task.id}\u0000${answer}`;
    let v = scores.get(key);
    if (v === undefined) {
      v = (await scorer.evaluate(task.content, answer)).score;
      scores.set(key, v);
    }
    return v;
  };
  // Test-score differences (chosen minus rejected) of the pairs where both sides answer.
  const all: number[] = [];
  const wideDiffs: number[] = [];
  const wide = new Set(widestGaps(pairs, criticGap, 0.5));
  let answerVsQuestion = 0;
  let bothQuestions = 0;
  for (const p of pairs) {
    const parse = (ids: number[]) =>
      parseAgentMessage(tokenizer.decode(ids, { skipSpecialTokens: true }), {
        kind: 'backend',
        turnIndex: p.agentTurn,
      });
    const chosen = parse(p.chosen);
    const rejected = parse(p.rejected);
    const chosenAnswers = chosen.type === 'answer';
    const rejectedAnswers = rejected.type === 'answer';
    if (!chosenAnswers && !rejectedAnswers) bothQuestions++;
    else if (chosenAnswers !== rejectedAnswers) answerVsQuestion++;
    else {
      const d = (await score(p.sessionId, chosen.answer ?? '')) - (await score(p.sessionId, rejected.answer ?? ''));
      all.push(d);
      if (wide.has(p)) wideDiffs.push(d);
    }
  }
  const t = tally(all);
  return {
    pairs: pairs.length,
    ...t,
    testsTie: all.length - t.judged,
    answerVsQuestion,
    bothQuestions,
    p: mcnemarExact(t.agree, t.judged - t.agree).pValue,
    wideGap: tally(wideDiffs),
  };
}

export function formatCriticCheck(c: CriticCheck): string {
  const share = c.judged ? `${((c.agree / c.judged) * 100).toFixed(1)}%` : 'n/a';
  return (
    `critic vs tests: of ${c.pairs} actor pairs, ${c.judged + c.testsTie} have two answers; the tests tell ${c.judged} apart and the critic chose ` +
    `the better one in ${c.agree} (${share}, exact binomial p=${c.p < 0.001 ? c.p.toExponential(1) : c.p.toFixed(3)} against a coin); ` +
    `${c.testsTie} test ties; mean test-score gain of chosen over rejected ${(c.meanScoreGain * 100).toFixed(1)} points. ` +
    `Not judged: ${c.answerVsQuestion} answer-vs-question, ${c.bothQuestions} question-vs-question pairs. ` +
    `The half with the widest critic gaps: ${c.wideGap.agree} of ${c.wideGap.judged} right, gain ${(c.wideGap.meanScoreGain * 100).toFixed(1)} points.`
  );
}

/** The PGlite database that `bench:learning --keep` left in `dir` (the latest, when there are several). */
export async function openKeptDatabase(dir: string): Promise<Database> {
  const root = resolve(dir);
  const pglite = readdirSync(root)
    .filter((f) => f.startsWith('pglite-'))
    .sort()
    .at(-1);
  if (!pglite) throw new Error(`no PGlite database in ${root}: was the benchmark run with --keep?`);
  return openDatabase({ pgliteDir: join(root, pglite) });
}

/** Standalone: the SWEET-RL runs of a benchmark directory kept with --keep (its PGlite database and checkpoints). */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { dir: { type: 'string', default: 'data/bench/learning' }, run: { type: 'string' } },
  });
  const db = await openKeptDatabase(values.dir!);
  const scorer = createScorer();
  try {
    const runs = await db.prisma.trainingRun.findMany({
      where: { algorithm: 'sweet', status: 'succeeded', ...(values.run ? { id: values.run } : {}) },
      orderBy: { createdAt: 'asc' },
    });
    if (!runs.length)
      throw new Error(`no finished SWEET-RL run in ${values.dir}${values.run ? ` with id ${values.run}` : ''}`);
    for (const run of runs) {
      const from = (run.config as { fromCheckpoint: string }).fromCheckpoint;
      console.log(
        `run ${run.id} (from ${from}):\n  ${formatCriticCheck(await checkCritic(db.prisma, run.checkpointDir!, from, scorer))}`,
      );
    }
  } finally {
    await scorer.close();
    await db.close();
  }
}

runWhenMain(import.meta.url, main);
