// The training formats' writers as export.ts dispatches to them: the sink for a format (trl.ts, verl.ts) and, for
// trl-dpo with `candidates`, the SWEET-RL run's candidate pairs it reads (trainer/actor.ts readActorPairs).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Writable } from 'node:stream';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { readActorPairs, type ActionPair } from '../../trainer/actor.ts';
import { ExportError, type Prepared } from './prepare.ts';
import type { ExportRecord } from './record.ts';
import type { RecordSink } from './sink.ts';
import type { TrainingFormat } from './training-card.ts';
import { TrainingStats } from './training-rows.ts';
import { trlDpoSink, trlSftSink } from './trl.ts';
import { verlRlSink, verlSftSink } from './verl.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A run's candidate pairs: by run id (the actor-pairs.jsonl in its directory) or by the file's path. */
export async function candidatePairs(prisma: PrismaClient, ref: string): Promise<ActionPair[]> {
  let file = ref;
  if (UUID.test(ref)) {
    const run = await prisma.trainingRun.findUnique({
      where: { id: ref },
      select: { algorithm: true, checkpointDir: true },
    });
    if (!run) throw new ExportError(`--candidates: no training run ${ref}`);
    if (!run.checkpointDir) throw new ExportError(`--candidates: run ${ref} (${run.algorithm}) has no directory yet`);
    file = join(run.checkpointDir, 'actor-pairs.jsonl');
  }
  if (!existsSync(file))
    throw new ExportError(
      `--candidates: ${file} does not exist (only a SWEET-RL run that sampled its actor's candidates has one)`,
    );
  try {
    return await readActorPairs(file);
  } catch (err) {
    throw new ExportError(`--candidates: ${file} is not a run's actor-pairs.jsonl (${(err as Error).message})`);
  }
}

export interface TrainingSink {
  sink: RecordSink<ExportRecord> & { accepted?: (r: ExportRecord) => boolean };
  stats: TrainingStats;
}

export async function trainingSink(
  prisma: PrismaClient,
  format: TrainingFormat,
  out: Writable,
  p: Prepared,
  candidates: string | undefined,
): Promise<TrainingSink> {
  if (candidates !== undefined && format !== 'trl-dpo')
    throw new ExportError('--candidates adds per-turn pairs: use it with --format trl-dpo');
  const stats = new TrainingStats();
  const meta = {
    'sweetloop.filters': JSON.stringify(p.filters),
    'sweetloop.exported_at': p.now.toISOString(),
    'sweetloop.format': format,
  };
  switch (format) {
    case 'trl-sft':
      return { sink: trlSftSink(out, stats), stats };
    case 'trl-dpo':
      return {
        sink: trlDpoSink(out, {
          stats,
          ...(candidates !== undefined ? { candidates: await candidatePairs(prisma, candidates) } : {}),
        }),
        stats,
      };
    case 'verl-rl':
      return { sink: verlRlSink(out, stats, meta), stats };
    case 'verl-sft':
      return { sink: verlSftSink(out, stats, meta), stats };
  }
}
