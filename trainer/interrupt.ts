// Ctrl-C (or SIGTERM) during `sweetloop train`: one line that says what the run kept and the command that
// resumes it, then a prompt exit. Nothing needs saving at that moment: a run's progress points only at complete
// checkpoints (run-state.ts checkpointPhase), so a resume goes on from the last one whenever the process stops.
import type { PrismaClient } from '../prisma/generated/client.ts';
import type { Progress } from './run-state.ts';

/**
 * What a stopped run kept, from the progress a resume reads (TrainingRun.progress: null before the first
 * checkpoint, undefined when it could not be read), and how to resume it.
 */
export function stoppedRunLine(runId: string | null, progress: Progress | null | undefined): string {
  if (!runId) return 'Stopped before a training run was created: nothing to resume; the same command starts again.';
  const resume = `sweetloop train --resume ${runId}`;
  if (progress === undefined)
    return `Stopped. Run ${runId} is kept up to its last checkpoint: resume it with \`${resume}\`.`;
  const done = progress?.done ?? [];
  const total = (phase: string) => progress?.totals?.[phase];
  const kept: string[] = [];
  if (done.length) kept.push(`${done.join(', ')} done`);
  if (progress?.current) {
    const { phase, step } = progress.current;
    kept.push(`${phase} at update ${step}${total(phase) ? ` of ${total(phase)}` : ''}`);
  } else if (progress?.collected) {
    kept.push(`${progress.collected}${total('collect') ? ` of ${total('collect')}` : ''} turn states sampled`);
  }
  return kept.length
    ? `Stopped. Run ${runId} is kept up to its last checkpoint (${kept.join('; ')}): resume it with \`${resume}\`.`
    : `Stopped before run ${runId}'s first checkpoint: \`${resume}\` starts it again from the beginning, on the same data.`;
}

/** Resolves with `value`, or with `fallback` when it takes longer than `ms` (a database busy with the run). */
function within<T>(value: Promise<T>, ms: number, fallback: T): Promise<T> {
  return Promise.race([value.catch(() => fallback), new Promise<T>((r) => setTimeout(() => r(fallback), ms).unref())]);
}

export interface InterruptOptions {
  prisma: PrismaClient;
  /** The run being trained, once it exists. */
  runId: () => string | null;
  /** Told first, so that the run's own error path does not mark an interrupted run failed. */
  abort: AbortController;
  /** Closes the database (an embedded one is flushed and unlocked). */
  close: () => Promise<void>;
  write?: (text: string) => void;
  exit?: (code: number) => void;
}

/**
 * On the first SIGINT or SIGTERM: say what was kept and how to resume, close the database, exit 130 (SIGINT) or
 * 143 (SIGTERM), as a shell reports a command stopped by that signal. A second signal kills at once (the
 * handlers are `once`). Returns a function that removes the handlers (the run ended on its own).
 */
export function exitOnInterrupt(o: InterruptOptions): () => void {
  const write = o.write ?? ((t: string) => process.stderr.write(t));
  const exit = o.exit ?? ((code: number) => process.exit(code));
  const on = async (signal: NodeJS.Signals) => {
    o.abort.abort();
    // A progress bar hides the cursor and stands mid-line: show it again and start a new line.
    write(`${process.stderr.isTTY ? '\x1B[?25h' : ''}\n`);
    const runId = o.runId();
    const progress = runId
      ? await within<Progress | null | undefined>(
          o.prisma.trainingRun
            .findUnique({ where: { id: runId }, select: { progress: true } })
            .then((r) => (r?.progress as unknown as Progress | null) ?? null),
          3_000,
          undefined,
        )
      : null;
    write(`${stoppedRunLine(runId, progress)}\n`);
    await within(o.close(), 3_000, undefined);
    exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', on);
  process.once('SIGTERM', on);
  return () => {
    process.off('SIGINT', on);
    process.off('SIGTERM', on);
  };
}
