// `sweetloop study calibrate NAME`: the simulated collaborator measured against the study's people. The study's
// tasks that people answered are played again by the simulated collaborator (rule-based, or the LLM one) against
// the policy versions the people played, k games a task, through trainer/simulate.ts (the one game loop; nothing is
// stored); people's sessions are read from the database; both go through the same metrics (tasks/calibration.ts)
// and are compared paired by task. calibration-report.ts writes the report and its figure.
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { findStudy, recordCalibration, StudyError, type StudyWithArms } from '../../prisma/study-store.ts';
import { taskContent } from '../../prisma/task-store.ts';
import {
  calibrationRows,
  formatCalibrationTable,
  leakRate,
  sessionMetrics,
  type TaskMetrics,
} from '../../tasks/calibration.ts';
import type { TaskContent } from '../../tasks/model.ts';
import type { Scorer } from '../../tasks/scorer.ts';
import { collaboratorFactory, scorer as trainerScorer, type TrainerSettings } from '../../trainer/settings.ts';
import { simulate, type CollaboratorFactory } from '../../trainer/simulate.ts';
import { leakLine, writeCalibrationReport, type CalibrationResult } from './calibration-report.ts';

export type { CalibrationResult } from './calibration-report.ts';
import { dialogueTurnWhere, personWhere } from '../../prisma/cohorts.ts';

export interface PeopleSession {
  id: string;
  taskId: string;
  policyVersionId: string;
  task: TaskContent;
  metrics: TaskMetrics['metrics'];
}

/**
 * People's answered, scored sessions of the study, oldest first: played by a policy version (gold checks replay a
 * known session and have none), by people (not simulated collaborators, not erased).
 */
export async function peopleSessions(prisma: PrismaClient, studyId: string): Promise<PeopleSession[]> {
  const rows = await prisma.session.findMany({
    where: {
      studyId,
      simulated: false,
      status: 'answered',
      goldSourceId: null,
      policyVersionId: { not: null },
      evaluation: { isNot: null },
      participant: personWhere,
    },
    orderBy: [{ startedAt: 'asc' }, { id: 'asc' }],
    include: {
      task: { select: { kind: true, description: true, hiddenReference: true, testCases: true } },
      turns: { where: dialogueTurnWhere, orderBy: { index: 'asc' }, select: { role: true, content: true } },
      evaluation: { select: { score: true, success: true } },
    },
  });
  return rows.map((s) => {
    const task = taskContent(s.task);
    return {
      id: s.id,
      taskId: s.taskId,
      policyVersionId: s.policyVersionId!,
      task,
      metrics: sessionMetrics({
        kind: task.kind,
        reference: task.reference,
        description: task.description,
        turns: s.turns.map((t) => ({ role: t.role as 'agent' | 'human', content: t.content })),
        evaluation: s.evaluation!,
      }),
    };
  });
}

export interface GamePlan {
  policyVersionId: string;
  /** One entry a game (a task repeats once per game it gets). */
  taskIds: string[];
}

/**
 * Who plays the simulator's games: each task with people's sessions gets `gamesPerTask` games, game j played by the
 * version of the task's session j mod n (its sessions oldest first), so each task's games follow its people's arms.
 */
export function planGames(
  sessions: readonly Pick<PeopleSession, 'taskId' | 'policyVersionId'>[],
  gamesPerTask: number,
): GamePlan[] {
  if (!Number.isInteger(gamesPerTask) || gamesPerTask < 1)
    throw new StudyError(`Games per task must be a whole number of at least 1, got ${gamesPerTask}.`);
  const byTask = new Map<string, string[]>();
  for (const s of sessions) byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), s.policyVersionId]);
  const byVersion = new Map<string, string[]>();
  for (const [taskId, versions] of byTask) {
    for (let j = 0; j < gamesPerTask; j++) {
      const v = versions[j % versions.length]!;
      byVersion.set(v, [...(byVersion.get(v) ?? []), taskId]);
    }
  }
  return [...byVersion].map(([policyVersionId, taskIds]) => ({ policyVersionId, taskIds }));
}

export interface CalibrateOptions {
  scorer: Scorer;
  collaborator: CollaboratorFactory;
  gamesPerTask: number;
  seed: number;
  parallel?: number;
  log?: (line: string) => void;
}

export async function calibrate(
  prisma: PrismaClient,
  study: StudyWithArms,
  o: CalibrateOptions,
): Promise<CalibrationResult> {
  const people = await peopleSessions(prisma, study.id);
  if (people.length === 0)
    throw new StudyError(
      `Study "${study.name}" has no answered sessions of people yet: there is nothing to calibrate against.`,
    );
  const content = new Map(people.map((s) => [s.taskId, s.task]));
  const simulated: TaskMetrics[] = [];
  const policies: CalibrationResult['policies'] = [];
  for (const plan of planGames(people, o.gamesPerTask)) {
    const version = await prisma.policyVersion.findUniqueOrThrow({ where: { id: plan.policyVersionId } });
    const tasks = plan.taskIds.map((id) => ({ id, content: content.get(id)! }));
    o.log?.(`${version.name}: ${tasks.length} game(s) with ${o.collaborator.name}`);
    const games = await simulate(prisma, version, o.scorer, {
      kind: tasks[0]!.content.kind,
      split: study.split,
      tasks,
      episodes: tasks.length,
      seed: o.seed,
      store: false,
      collaborator: o.collaborator,
      ...(o.parallel ? { parallel: o.parallel } : {}),
      ...(o.log ? { log: o.log } : {}),
    });
    for (const g of games) {
      const task = content.get(g.taskId)!;
      simulated.push({
        taskId: g.taskId,
        metrics: sessionMetrics({
          kind: task.kind,
          reference: task.reference,
          description: task.description,
          turns: g.turns,
          evaluation: g.evaluation,
        }),
      });
    }
    policies.push({ name: version.name, games: games.length });
  }
  return {
    study: study.name,
    simulator: o.collaborator.name,
    gamesPerTask: o.gamesPerTask,
    seed: o.seed,
    tasks: content.size,
    peopleSessions: people.length,
    games: simulated.length,
    policies,
    rows: calibrationRows(people, simulated),
    leak: { people: leakRate(people), simulator: leakRate(simulated) },
  };
}

export interface CalibrateCommandOptions {
  simulator: 'builtin' | 'llm';
  perTask?: number;
  seed?: number;
  out?: string;
}

/** The command: prints the table, then the result as one JSON line; with `out`, writes the report and figure. */
export async function calibrateCommand(
  prisma: PrismaClient,
  s: TrainerSettings,
  name: string,
  o: CalibrateCommandOptions,
): Promise<void> {
  const study = await findStudy(prisma, name);
  if (!study) throw new StudyError(`No study named "${name}".`);
  const gamesPerTask = o.perTask ?? study.perTask;
  if (gamesPerTask === null)
    throw new StudyError(`Study "${name}" has no k: say how many games a task with --per-task K.`);
  const collaborator = await collaboratorFactory(s, o.simulator);
  const sc = await trainerScorer(s);
  let result: CalibrationResult;
  try {
    result = await calibrate(prisma, study, {
      scorer: sc,
      collaborator,
      gamesPerTask,
      seed: o.seed ?? study.seed,
      log: (l) => console.error(l),
    });
  } finally {
    await sc.close();
  }
  console.log(
    `study ${result.study}: people (${result.peopleSessions} sessions) against ${result.simulator} (${result.games} games, ${result.gamesPerTask} a task; ${result.policies.map((p) => `${p.name} ${p.games}`).join(', ')}) on ${result.tasks} task(s), paired by task`,
  );
  console.log(formatCalibrationTable(result.rows));
  console.log(leakLine(result));
  console.log(JSON.stringify(result));
  await recordCalibration(prisma, study.id, result.simulator, result);
  if (o.out) {
    const files = await writeCalibrationReport(o.out, result, s.chromiumPath);
    console.error(`wrote ${files.join(', ')}`);
  }
}
