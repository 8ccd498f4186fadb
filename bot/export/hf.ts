// The `hf` format: a Hugging Face dataset folder that `datasets.load_dataset(PATH, "<kind>")` reads as it is,
// data/<kind>/<split>.parquet (rows as the parquet format) and README.md, the card whose YAML front matter
// declares the configs and features. Built in `<dir>.partial` and renamed when complete.
import { createWriteStream, existsSync, readdirSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { renderCard } from './card.ts';
import { ExportStats } from './stats.ts';
import { parquetSink } from './parquet.ts';
import { ExportError, recordPages, type ExportOptions, type ExportResult, type Prepared } from './prepare.ts';
import { countSessions } from './query.ts';
import type { ExportRecord } from './record.ts';
import type { RecordSink } from './sink.ts';

/** The Hugging Face dataset folder: one Parquet file per task kind and split, and the card with its features. */
export async function exportHfFolder(
  prisma: PrismaClient,
  opts: ExportOptions,
  p: Prepared,
  dir: string,
): Promise<ExportResult> {
  if (existsSync(dir) && readdirSync(dir).length > 0)
    throw new ExportError(`${dir} exists and is not empty: the hf format writes a new dataset folder`);
  const partial = `${dir}.partial`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true });
  const total = opts.onProgress ? await countSessions(prisma, p.filters) : 0;
  const meta = { 'sweetloop.filters': JSON.stringify(p.filters), 'sweetloop.exported_at': p.now.toISOString() };
  const files = new Map<
    string,
    { kind: string; split: string; path: string; rows: number; stream: Writable; sink: RecordSink<ExportRecord> }
  >();
  const stats = new ExportStats();
  try {
    opts.onProgress?.(0, total);
    for await (const records of recordPages(prisma, opts, p)) {
      const groups = new Map<string, ExportRecord[]>();
      for (const r of records) {
        const key = `${r.task.kind}/${r.task.split}`;
        const group = groups.get(key);
        if (group) group.push(r);
        else groups.set(key, [r]);
      }
      for (const [key, group] of groups) {
        let f = files.get(key);
        if (!f) {
          const [kind, split] = key.split('/') as [string, string];
          const rel = `data/${kind}/${split}.parquet`;
          await mkdir(join(partial, 'data', kind), { recursive: true });
          const stream = createWriteStream(join(partial, rel));
          stream.on('error', () => {});
          f = { kind, split, path: rel, rows: 0, stream, sink: parquetSink(stream, meta) };
          files.set(key, f);
        }
        await f.sink.write(group);
        f.rows += group.length;
      }
      for (const r of records) stats.add(r);
      opts.onProgress?.(stats.sessions, Math.max(total, stats.sessions));
    }
    for (const f of files.values()) {
      await f.sink.finish();
      f.stream.end();
      await finished(f.stream);
    }
    const kinds = [...new Set([...files.values()].map((f) => f.kind))].sort();
    const hf = kinds.map((kind) => ({
      kind,
      splits: [...files.values()]
        .filter((f) => f.kind === kind)
        .sort((a, b) => b.split.localeCompare(a.split))
        .map(({ split, path, rows }) => ({ split, path, rows })),
    }));
    const cardMarkdown = renderCard({
      format: 'hf',
      fileName: basename(dir),
      filters: p.filters,
      excludeComments: p.excludeComments,
      stats,
      createdAt: p.now,
      defaultSalt: opts.defaultSalt ?? false,
      hf,
      ...(p.study ? { study: p.study } : {}),
      ...(p.empty !== null ? { empty: p.empty } : {}),
    });
    const cardPath = join(dir, 'README.md');
    await writeFile(join(partial, 'README.md'), cardMarkdown);
    if (existsSync(dir)) await rm(dir, { recursive: true });
    await rename(partial, dir);
    return {
      sessions: stats.sessions,
      turns: stats.totalTurns,
      cardMarkdown,
      stats,
      path: dir,
      cardPath,
      ...(p.study ? { study: p.study } : {}),
    };
  } catch (err) {
    for (const f of files.values()) f.stream.destroy();
    await rm(partial, { recursive: true, force: true });
    throw err;
  }
}
