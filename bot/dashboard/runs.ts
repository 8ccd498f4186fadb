// The dashboard's training runs: each run's phases with their progress (trainer/run-state.ts keeps the
// phases and their totals in TrainingRun.progress), its loss curves from TrainingStep, the critic against the
// tests (trainer/critic-tests.ts, in the run's metrics) and the promotion gate's games one by one (the evidence on
// the version the run published, trainer/promote.ts), each task linked to its sessions and each game to its
// session where the gate stored its games as sessions.
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { CRITIC_TESTS_METRIC, type CriticTestsCheck } from '../../trainer/critic-tests.ts';
import type { GateEvidence, PlayedGame } from '../../trainer/promote.ts';

/** The newest runs the page shows. */
export const RUNS_SHOWN = 20;
/** A loss curve is drawn with at most this many points (every k-th update beyond). */
const CURVE_POINTS = 400;

export interface PhaseView {
  name: string;
  state: 'done' | 'running' | 'stopped' | 'waiting';
  /** Updates (or states sampled, for collect) so far; null when unknown. */
  done: number | null;
  total: number | null;
  /** done / total in [0, 1]; null without a total. */
  fraction: number | null;
  unit: 'updates' | 'states';
}

export interface CurveView {
  phase: string;
  updates: number;
  points: { step: number; loss: number }[];
  first: number;
  last: number;
  min: number;
  max: number;
}

export interface GameView {
  n: number;
  taskId: string;
  task: string | null;
  candidate: PlayedGame['candidate'];
  deployed: PlayedGame['deployed'];
  winner: 'candidate' | 'deployed' | 'tie';
}

export interface GateView {
  evidence: GateEvidence;
  /** The games one by one; null when the evidence predates keeping them. */
  games: GameView[] | null;
  wins: { candidate: number; deployed: number; tie: number } | null;
}

interface StoredProgress {
  done?: string[];
  current?: { phase: string; step: number };
  collected?: number;
  phases?: string[];
  totals?: Record<string, number>;
}

/** Each phase's state and progress, from the run's progress, status and recorded updates. */
export function phaseViews(
  status: string,
  progress: StoredProgress | null,
  recorded: ReadonlyMap<string, number>,
): PhaseView[] {
  const p = progress ?? {};
  const done = p.done ?? [];
  // Runs from before the progress named its phases: the ones it mentions, in the order it met them.
  const names = p.phases ?? [...new Set([...done, ...(p.current ? [p.current.phase] : []), ...recorded.keys()])];
  return names.map((name): PhaseView => {
    const unit = name === 'collect' ? 'states' : 'updates';
    const total = p.totals?.[name] ?? null;
    const so =
      unit === 'states'
        ? (p.collected ?? recorded.get(name) ?? null)
        : (recorded.get(name) ?? (p.current?.phase === name ? p.current.step : null));
    const finished = done.includes(name) || status === 'succeeded';
    const active = !finished && (p.current?.phase === name || (so !== null && so > 0));
    const state = finished ? 'done' : active ? (status === 'running' ? 'running' : 'stopped') : 'waiting';
    const count = finished ? (total ?? so) : so;
    return {
      name,
      state,
      done: count,
      total,
      fraction: finished ? 1 : total && count !== null ? Math.min(1, count / total) : null,
      unit,
    };
  });
}

/** A phase's losses as a curve: every update up to CURVE_POINTS, every k-th beyond (the last always kept). */
export function curveOf(phase: string, points: readonly { step: number; loss: number }[]): CurveView {
  const k = Math.ceil(points.length / CURVE_POINTS);
  const kept = k <= 1 ? [...points] : points.filter((_, i) => i % k === 0 || i === points.length - 1);
  const losses = points.map((p) => p.loss);
  return {
    phase,
    updates: points.length,
    points: kept,
    first: losses[0]!,
    last: losses.at(-1)!,
    min: Math.min(...losses),
    max: Math.max(...losses),
  };
}

/** A loss curve as an SVG polyline's points in a w x h box (numbers only: nothing typed by people). */
export function curvePoints(points: readonly { step: number; loss: number }[], w: number, h: number): string {
  if (points.length === 0) return '';
  const xs = points.map((p) => p.step),
    ys = points.map((p) => p.loss);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const sx = (x: number) => (x1 === x0 ? w / 2 : ((x - x0) / (x1 - x0)) * w);
  const sy = (y: number) => (y1 === y0 ? h / 2 : h - ((y - y0) / (y1 - y0)) * h);
  return points.map((p) => `${sx(p.step).toFixed(1)},${sy(p.loss).toFixed(1)}`).join(' ');
}

function gateView(evidence: GateEvidence, tasks: ReadonlyMap<string, string>): GateView {
  if (!evidence.played) return { evidence, games: null, wins: null };
  const games = evidence.played.map((g, i): GameView => {
    const d = g.candidate.score - g.deployed.score;
    return {
      n: i + 1,
      taskId: g.taskId,
      task: tasks.get(g.taskId) ?? null,
      candidate: g.candidate,
      deployed: g.deployed,
      winner: d > 0 ? 'candidate' : d < 0 ? 'deployed' : 'tie',
    };
  });
  const wins = { candidate: 0, deployed: 0, tie: 0 };
  for (const g of games) wins[g.winner]++;
  return { evidence, games, wins };
}

export async function runsOverview(prisma: PrismaClient) {
  const runs = await prisma.trainingRun.findMany({
    orderBy: { createdAt: 'desc' },
    take: RUNS_SHOWN,
    // Not the data snapshot (every session id of the run): its length comes from the database below.
    select: {
      id: true,
      algorithm: true,
      status: true,
      progress: true,
      metrics: true,
      error: true,
      createdAt: true,
      startedAt: true,
      finishedAt: true,
      heartbeatAt: true,
      policyVersions: { select: { id: true, name: true, metrics: true } },
    },
  });
  const ids = runs.map((r) => r.id);
  const [steps, sizes] = ids.length
    ? await Promise.all([
        prisma.trainingStep.findMany({
          where: { runId: { in: ids } },
          orderBy: [{ runId: 'asc' }, { phase: 'asc' }, { step: 'asc' }],
          select: { runId: true, phase: true, step: true, metrics: true },
        }),
        prisma.$queryRaw<
          { id: string; n: number | null }[]
        >`SELECT id::text, jsonb_array_length("dataSnapshot"->'sessions')::int AS n FROM "TrainingRun" WHERE id = ANY(${ids}::uuid[]) AND jsonb_typeof("dataSnapshot"->'sessions') = 'array'`,
      ])
    : [[], []];
  const sessionsOf = new Map(sizes.map((s) => [s.id, s.n]));
  const lossesOf = new Map<string, Map<string, { step: number; loss: number }[]>>();
  const recordedOf = new Map<string, Map<string, number>>();
  for (const s of steps) {
    const recorded = recordedOf.get(s.runId) ?? new Map<string, number>();
    recorded.set(s.phase, Math.max(recorded.get(s.phase) ?? 0, s.step + 1));
    recordedOf.set(s.runId, recorded);
    const loss = (s.metrics as Record<string, number>).loss;
    if (typeof loss !== 'number' || !Number.isFinite(loss)) continue;
    const phases = lossesOf.get(s.runId) ?? new Map<string, { step: number; loss: number }[]>();
    phases.set(s.phase, [...(phases.get(s.phase) ?? []), { step: s.step, loss }]);
    lossesOf.set(s.runId, phases);
  }
  const gates = new Map(
    runs.map((r) => [
      r.id,
      r.policyVersions.map((v) => (v.metrics as { gate?: GateEvidence } | null)?.gate).find((g) => g !== undefined) ??
        null,
    ]),
  );
  const taskIds = [...new Set([...gates.values()].flatMap((g) => g?.played?.map((p) => p.taskId) ?? []))];
  const tasks = new Map(
    taskIds.length
      ? (await prisma.task.findMany({ where: { id: { in: taskIds } }, select: { id: true, description: true } })).map(
          (t) => [t.id, t.description.length > 80 ? `${t.description.slice(0, 80)}…` : t.description],
        )
      : [],
  );
  return runs.map((r) => {
    const phases = phaseViews(r.status, r.progress as StoredProgress | null, recordedOf.get(r.id) ?? new Map());
    const order = (phase: string) =>
      (phases.findIndex((p) => p.name === phase) + phases.length + 1) % (phases.length + 1);
    const metrics = (r.metrics ?? {}) as Record<string, unknown>;
    const gate = gates.get(r.id) ?? null;
    return {
      id: r.id,
      algorithm: r.algorithm,
      status: r.status,
      createdAt: r.createdAt,
      startedAt: r.startedAt,
      finishedAt: r.finishedAt,
      heartbeatAt: r.heartbeatAt,
      error: r.error,
      sessions: sessionsOf.get(r.id) ?? null,
      versions: r.policyVersions.map((v) => ({ id: v.id, name: v.name })),
      phases,
      curves: [...(lossesOf.get(r.id) ?? new Map<string, { step: number; loss: number }[]>()).entries()]
        .map(([phase, points]) => curveOf(phase, points))
        .sort((a, b) => order(a.phase) - order(b.phase)),
      criticCheck: (metrics[CRITIC_TESTS_METRIC] as CriticTestsCheck | undefined) ?? null,
      gate: gate ? gateView(gate, tasks) : null,
    };
  });
}
