// A real kill: `sweetloop train --resume RUN` runs as a child process against a throwaway database, gets
// SIGKILL once the database shows a checkpoint and at least one update after it, and a second
// `sweetloop train --resume RUN` finishes the run. The run must end with the weights (and per-update metrics)
// of an uninterrupted run of the same config, its TrainingStep rows must be exactly one per update, and the
// second process must have started from the checkpoint instead of from update 0.
//
// The run is created here (createRun) rather than by `train --algo rft`, because the command only exposes
// presets and the tiny data needs a smaller batch and checkpoint interval; executing it goes through the
// command exactly as an operator's resume does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestDatabase } from '../../testing/database.ts';
import { readSafetensors } from '../../trainer/model/safetensors.ts';
import { trainConfig } from '../../trainer/presets.ts';
import { RFT_PHASE } from '../../trainer/rft.ts';
import { createRun, executeRun, runCheckpoints, type RunConfig } from '../../trainer/runs.ts';
import { runWorld } from './fixture.ts';
import { SWEETLOOP_ENTRY } from '../../testing/sweetloop-cli.ts';

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const CHECKPOINT_EVERY = 3;

let t: TestDatabase;
let root: string;
let policyDir: string;
let fromId: string;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  ({ t, root, policyDir, fromId } = await runWorld('kill'));
}, 240_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await t?.drop();
  if (root) rmSync(root, { recursive: true, force: true });
});

// RFT is the cheapest algorithm that checkpoints (one phase, plain token NLL). One dialogue per update and
// several epochs give enough updates for a checkpoint followed by more work before the end.
function config(): RunConfig {
  return {
    algorithm: 'rft',
    preset: 'cpu-small',
    train: trainConfig('cpu-small', {
      batchSize: 1,
      microBatch: 1,
      sftEpochs: 6,
      checkpointEvery: CHECKPOINT_EVERY,
      rftThreshold: 0.5,
      seed: 7,
    }),
    fromVersionId: fromId,
    fromVersionName: 'tiny',
    fromCheckpoint: policyDir,
    kind: 'backend',
    ratingWeight: 0,
    data: { source: 'both', simulatedWeight: 1, seed: 7 },
  };
}

interface Child {
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function trainResume(runId: string, checkpointRoot: string): Child {
  const proc = spawn(process.execPath, [SWEETLOOP_ENTRY, 'train', '--resume', runId], {
    cwd: REPO,
    env: {
      ...process.env,
      DATABASE_URL: t.url,
      CHECKPOINT_DIR: checkpointRoot,
      TFJS_BACKEND: 'wasm',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    proc.once('exit', (code, signal) => res({ code, signal })),
  );
  return { proc, stdout: () => out, stderr: () => err, exited };
}

interface StepRow {
  id: string;
  step: number;
  metrics: Record<string, number>;
  createdAt: Date;
}

async function stepRows(runId: string): Promise<StepRow[]> {
  const rows = await t.prisma.trainingStep.findMany({ where: { runId }, orderBy: [{ phase: 'asc' }, { step: 'asc' }] });
  for (const r of rows) expect(r.phase).toBe(RFT_PHASE);
  return rows.map((r) => ({
    id: r.id,
    step: r.step,
    metrics: r.metrics as Record<string, number>,
    createdAt: r.createdAt,
  }));
}

async function weights(dir: string) {
  return readSafetensors(join(dir, 'model.safetensors'));
}

describe('rft run killed with SIGKILL and resumed by a new process', () => {
  it('finishes without redoing checkpointed updates and ends with the uninterrupted weights', async () => {
    // Reference: the same config, uninterrupted, in this process (same single-threaded wasm backend).
    const straightCtx = { prisma: t.prisma, checkpointRoot: join(root, 'straight'), progress: 'none' as const };
    const straightRun = await createRun(straightCtx, config());
    const straight = await executeRun(straightCtx, straightRun.id);
    const straightSteps = await stepRows(straightRun.id);
    const total = straightSteps.length;
    // Enough updates that a checkpoint can be followed by more work and then the kill.
    expect(total).toBeGreaterThanOrEqual(3 * CHECKPOINT_EVERY);

    const killedRoot = join(root, 'killed');
    const run = await createRun({ prisma: t.prisma, checkpointRoot: killedRoot }, config());

    // First process: wait (bounded) until a checkpoint is recorded and at least one later update is stored.
    const first = trainResume(run.id, killedRoot);
    let firstExit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    void first.exited.then((e) => (firstExit = e));
    const deadline = Date.now() + 90_000;
    let seenCheckpoint = 0;
    let killedAt = 0;
    for (;;) {
      if (firstExit)
        throw new Error(
          `the training process exited (${JSON.stringify(firstExit)}) before it could be killed:\n${first.stderr()}`,
        );
      if (Date.now() > deadline) throw new Error(`no checkpoint followed by an update within 90 s:\n${first.stderr()}`);
      const r = await t.prisma.trainingRun.findUniqueOrThrow({ where: { id: run.id }, select: { progress: true } });
      seenCheckpoint = (r.progress as { current?: { step: number } } | null)?.current?.step ?? 0;
      // Update indices are 0-based: a row with step == checkpoint step is the first update after it.
      if (
        seenCheckpoint > 0 &&
        (await t.prisma.trainingStep.count({ where: { runId: run.id, step: { gte: seenCheckpoint } } })) > 0
      ) {
        first.proc.kill('SIGKILL');
        killedAt = Date.now();
        break;
      }
      await new Promise((res) => setTimeout(res, 15));
    }
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(first.stderr()).toMatch(/starting run [0-9a-f-]+: rft from tiny/);

    // State a kill leaves: still "running", a consistent progress (what a resume reads) naming a complete
    // checkpoint, and its copy in progress.json at most the checkpoint being recorded behind.
    const mid = await t.prisma.trainingRun.findUniqueOrThrow({ where: { id: run.id } });
    expect(mid.status).toBe('running');
    const recorded = mid.progress as { current: { phase: string; step: number; dir: string } };
    expect(recorded.current.phase).toBe(RFT_PHASE);
    // The kill may land after the next checkpoint was recorded, never before.
    expect(recorded.current.step).toBeGreaterThanOrEqual(seenCheckpoint);
    expect(recorded.current.step % CHECKPOINT_EVERY).toBe(0);
    expect(recorded.current.step).toBeLessThan(total);
    expect(existsSync(join(recorded.current.dir, 'model.safetensors'))).toBe(true);
    const onDisk = JSON.parse(readFileSync(join(mid.checkpointDir!, 'progress.json'), 'utf8')) as {
      current: { phase: string; step: number };
    };
    expect(onDisk.current.phase).toBe(RFT_PHASE);
    expect([recorded.current.step, recorded.current.step - CHECKPOINT_EVERY]).toContain(onDisk.current.step);
    const resumeFrom = recorded.current.step;
    const beforeKill = await stepRows(run.id);
    expect(beforeKill.length).toBeLessThan(total);
    expect(beforeKill.map((r) => r.step)).toEqual(beforeKill.map((_, i) => i));

    // Second process: resumes from the checkpoint and finishes.
    const second = trainResume(run.id, killedRoot);
    const timer = setTimeout(() => second.proc.kill('SIGKILL'), 120_000);
    const secondExit = await second.exited;
    clearTimeout(timer);
    expect(secondExit, second.stderr()).toEqual({ code: 0, signal: null });
    expect(second.stdout()).toMatch(/candidate policy version rft-/);
    const log = second.stderr();
    const resumedAt = /resuming run [0-9a-f-]+ \((.*)\)/.exec(log);
    expect(resumedAt, log).not.toBeNull();
    expect((JSON.parse(resumedAt![1]!) as { current: { step: number } }).current.step).toBe(resumeFrom);
    // Progress lines ("rft: update k/total", every round(total/10) updates) of the second process start after
    // the checkpoint: the updates before it were not run again.
    const updates = [...log.matchAll(new RegExp(`${RFT_PHASE}: update (\\d+)/(\\d+)`, 'g'))].map((m) => Number(m[1]));
    const every = Math.max(1, Math.round(total / 10));
    const expected: number[] = [];
    for (let k = resumeFrom + 1; k <= total; k++) if (k % every === 0 || k === total) expected.push(k);
    expect(updates).toEqual(expected);

    // One row per update; the rows stored before the kill kept (same id, time, metrics: the update after the
    // checkpoint, which the kill threw away, was redone to the same result); every update's metrics those of
    // the uninterrupted run.
    const done = await t.prisma.trainingRun.findUniqueOrThrow({
      where: { id: run.id },
      include: { policyVersions: true },
    });
    expect(done.status).toBe('succeeded');
    expect(done.policyVersions).toHaveLength(1);
    const after = await stepRows(run.id);
    expect(after.map((r) => r.step)).toEqual(straightSteps.map((r) => r.step));
    expect(new Set(after.map((r) => r.id)).size).toBe(after.length);
    for (const b of beforeKill) {
      const a = after[b.step]!;
      expect(a.id).toBe(b.id);
      expect(a.createdAt).toEqual(b.createdAt);
      expect(a.metrics).toEqual(b.metrics);
    }
    for (let i = 0; i < total; i++) {
      expect(after[i]!.metrics.loss).toBeCloseTo(straightSteps[i]!.metrics.loss!, 5);
      expect(after[i]!.metrics.lr).toBeCloseTo(straightSteps[i]!.metrics.lr!, 12);
    }
    // Rows of updates the first process never reached were written by the second one.
    for (const r of beforeKill) expect(r.createdAt.getTime()).toBeLessThanOrEqual(killedAt);
    for (const r of after.slice(beforeKill.length)) expect(r.createdAt.getTime()).toBeGreaterThan(killedAt);
    expect(await runCheckpoints(done.checkpointDir!)).toEqual([]);

    // Same final weights as the uninterrupted run, and training moved them.
    const a = await weights(straight.checkpointPath!);
    const b = await weights(done.policyVersions[0]!.checkpointPath!);
    expect([...b.keys()].sort()).toEqual([...a.keys()].sort());
    let maxDiff = 0;
    for (const [k, x] of a) {
      const y = b.get(k)!.data;
      expect(y.length).toBe(x.data.length);
      for (let i = 0; i < x.data.length; i++) maxDiff = Math.max(maxDiff, Math.abs(x.data[i]! - y[i]!));
    }
    expect(maxDiff).toBeLessThanOrEqual(1e-6);
    const base = await weights(policyDir);
    let moved = 0;
    for (const [k, x] of base)
      for (let i = 0; i < x.data.length; i++) moved = Math.max(moved, Math.abs(x.data[i]! - a.get(k)!.data[i]!));
    expect(moved).toBeGreaterThan(0);
  }, 400_000);
});
