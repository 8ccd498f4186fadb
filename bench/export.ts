// npm run bench:export [-- --sessions N] [--batch-size N] [--heap-cap-mib N]
//
// Fills a throwaway Postgres database with N synthetic sessions (default 100,000; 10 turns each, so 1M turns,
// plus an evaluation each and a rating on every other one), exports them in every format and prints, per format,
// sessions/s, turns/s, output size and peak memory (RSS and V8 heap). Each format runs in its own child process,
// so each peak is that export's alone. Yardstick, same run and same rows: Postgres itself assembling one JSON
// line per session (with its turns and ratings) in a `COPY (SELECT ...) TO STDOUT` read by psql, i.e. the
// speed of the database with no client-side work at all. The database is dropped afterwards.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { countArg } from './args.ts';
import { seedSessionRows } from './seed-sessions.ts';

const FORMATS = ['jsonl', 'sweet-rl', 'parquet'] as const;
type Format = (typeof FORMATS)[number];

interface Measurement {
  format: string;
  sessions: number;
  turns: number;
  seconds: number;
  /** User + system CPU seconds of the exporting process (less sensitive than wall time to a busy machine). */
  cpuSeconds: number | null;
  sessionsPerSec: number;
  turnsPerSec: number;
  bytes: number;
  peakRssMiB: number;
  peakHeapMiB: number;
  /** Peak heap over the first and over the second half of the sessions: equal when memory is flat. */
  peakHeapHalvesMiB?: [number, number];
}

const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;

/** One export in this (child) process, memory sampled every 10 ms. */
async function child(format: Format, url: string, out: string, batchSize: number): Promise<void> {
  const { openDatabase } = await import('../prisma/db.ts');
  const { exportSessions } = await import('../bot/export/export.ts');
  let peakHeap = 0;
  let peakRss = 0;
  const halves = [0, 0];
  let half = 0;
  const sample = () => {
    const m = process.memoryUsage();
    peakHeap = Math.max(peakHeap, m.heapUsed);
    peakRss = Math.max(peakRss, m.rss);
    halves[half] = Math.max(halves[half]!, m.heapUsed);
  };
  const timer = setInterval(sample, 10);
  const db = await openDatabase({ databaseUrl: url, pgliteDir: join(tmpdir(), 'unused-pglite') });
  try {
    sample();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const r = await exportSessions(
      db.prisma,
      {
        format,
        salt: 'bench-salt-0123',
        batchSize,
        // A sweet-rl file holds one task kind (the backend three quarters of the sessions here).
        ...(format === 'sweet-rl' ? { filters: { kind: 'backend' as const } } : {}),
        onProgress: (done, total) => void (half = done * 2 > total ? 1 : 0),
      },
      out,
    );
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    sample();
    clearInterval(timer);
    const bytes = (await stat(out)).size;
    // maxRSS (KiB) is the kernel's own high-water mark, which also catches peaks between samples.
    peakRss = Math.max(peakRss, process.resourceUsage().maxRSS * 1024);
    const m: Measurement = {
      format,
      sessions: r.sessions,
      turns: r.turns,
      seconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      sessionsPerSec: r.sessions / seconds,
      turnsPerSec: r.turns / seconds,
      bytes,
      peakRssMiB: mib(peakRss),
      peakHeapMiB: mib(peakHeap),
      peakHeapHalvesMiB: [mib(halves[0]!), mib(halves[1]!)],
    };
    process.stdout.write(JSON.stringify(m) + '\n');
  } finally {
    clearInterval(timer);
    await db.close();
  }
}

async function seed(url: string, n: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const t0 = performance.now();
  try {
    const q = (sql: string, params: unknown[] = []) => pool.query(sql, params);
    await seedSessionRows(pool, {
      sessions: n,
      people: 1000,
      tasks: 200,
      versions: 3,
      turns: 10,
      personStride: 1,
      spacing: '1 second',
      textRepeat: { description: 8, reference: 10, turn: 5 },
      testSplitEvery: 5,
      deployFirst: false,
      checkpointSha: true,
      guilds: 0,
      abandonEvery: null,
      agentLatencyMs: 200,
      provenance: false,
      testDetail: false,
    });
    await q('ANALYZE');
  } finally {
    await pool.end();
  }
  return (performance.now() - t0) / 1000;
}

/** The yardstick: Postgres alone builds one JSON line per session (turns and ratings nested), psql reads it. */
function yardstick(url: string, out: string): Measurement {
  const sql = `COPY (
    SELECT json_build_object('session', to_jsonb(s), 'task', to_jsonb(t),
      'turns', (SELECT json_agg(to_jsonb(tu) ORDER BY tu.index) FROM "Turn" tu WHERE tu."sessionId" = s.id),
      'evaluation', (SELECT to_jsonb(e) FROM "Evaluation" e WHERE e."sessionId" = s.id),
      'ratings', (SELECT json_agg(json_build_object('value', r.value, 'comment', r.comment)) FROM "Rating" r WHERE r."sessionId" = s.id))
    FROM "Session" s JOIN "Participant" p ON p.id = s."participantId" JOIN "Task" t ON t.id = s."taskId"
    WHERE p."deletedAt" IS NULL AND p."consentGivenAt" IS NOT NULL AND p."consentWithdrawnAt" IS NULL AND s.status = 'answered' AND NOT s.simulated
    ORDER BY s."startedAt", s.id) TO STDOUT`;
  const fd = openSync(out, 'w');
  const t0 = performance.now();
  const r = spawnSync('psql', [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', sql], {
    stdio: ['ignore', fd, 'pipe'],
    encoding: 'utf8',
  });
  const seconds = (performance.now() - t0) / 1000;
  closeSync(fd);
  if (r.status !== 0) throw new Error(`psql yardstick failed: ${r.stderr}`);
  const wc = spawnSync('wc', ['-l', out], { encoding: 'utf8' });
  const sessions = Number(wc.stdout.trim().split(/\s+/)[0]);
  const size = spawnSync('stat', ['-c', '%s', out], { encoding: 'utf8' });
  return {
    format: 'yardstick: psql COPY of server-built JSON',
    sessions,
    turns: sessions * 10,
    seconds,
    cpuSeconds: null,
    sessionsPerSec: sessions / seconds,
    turnsPerSec: (sessions * 10) / seconds,
    bytes: Number(size.stdout.trim()),
    peakRssMiB: NaN,
    peakHeapMiB: NaN,
  };
}

function runChild(
  format: Format,
  url: string,
  out: string,
  batchSize: number,
  heapCapMiB: number | null,
): Promise<Measurement> {
  return new Promise((resolve, reject) => {
    const cap = heapCapMiB ? [`--max-old-space-size=${heapCapMiB}`] : [];
    const p = spawn(
      process.execPath,
      [...cap, '--import', 'tsx', fileURLToPath(import.meta.url), '--child', format, url, out, String(batchSize)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let text = '';
    p.stdout.on('data', (c: Buffer) => (text += c.toString()));
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0)
        return reject(
          new Error(
            `export child for ${format} exited with ${code}${heapCapMiB ? ` (V8 old space capped at ${heapCapMiB} MiB)` : ''}`,
          ),
        );
      resolve(JSON.parse(text.trim().split('\n').pop()!) as Measurement);
    });
  });
}

let loadStart = '';

async function main(): Promise<void> {
  if (process.argv[2] === '--child') {
    await child(process.argv[3] as Format, process.argv[4]!, process.argv[5]!, Number(process.argv[6]));
    return;
  }
  const n = countArg('sessions', 100_000);
  const batchSize = countArg('batch-size', 500);
  // With a cap, an export whose memory grew with the number of sessions would die: a pass proves it flat.
  const heapCapMiB = process.argv.includes('--heap-cap-mib') ? countArg('heap-cap-mib', 96) : null;
  const { createTestDatabase } = await import('../testing/database.ts');
  const db = await createTestDatabase();
  const dir = await mkdtemp(join(tmpdir(), 'sweetloop-bench-export-'));
  try {
    loadStart = loadavg()
      .map((x) => x.toFixed(1))
      .join(' ');
    process.stderr.write(`seeding ${n} sessions (${n * 10} turns)...\n`);
    const seedSeconds = await seed(db.url, n);
    process.stderr.write(`seeded in ${seedSeconds.toFixed(1)} s\n`);
    const results: Measurement[] = [];
    results.push(yardstick(db.url, join(dir, 'yardstick.jsonl')));
    for (const format of FORMATS) {
      process.stderr.write(`exporting ${format}...\n`);
      results.push(await runChild(format, db.url, join(dir, `out.${format}`), batchSize, heapCapMiB));
      await rm(join(dir, `out.${format}`), { force: true });
    }
    const rows = results.map((r) => [
      r.format,
      String(r.sessions),
      String(r.turns),
      r.seconds.toFixed(1),
      r.cpuSeconds === null ? '-' : r.cpuSeconds.toFixed(1),
      Math.round(r.sessionsPerSec).toLocaleString('en'),
      Math.round(r.turnsPerSec).toLocaleString('en'),
      `${mib(r.bytes)} MiB`,
      Number.isNaN(r.peakRssMiB) ? '-' : `${r.peakRssMiB} MiB`,
      Number.isNaN(r.peakHeapMiB) ? '-' : `${r.peakHeapMiB} MiB`,
      r.peakHeapHalvesMiB ? r.peakHeapHalvesMiB.join(' / ') : '-',
    ]);
    const head = [
      'format',
      'sessions',
      'turns',
      'seconds',
      'CPU s',
      'sessions/s',
      'turns/s',
      'output',
      'peak RSS',
      'peak heap',
      'heap 1st/2nd half (MiB)',
    ];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ');
    const load = loadavg()
      .map((x) => x.toFixed(1))
      .join(' ');
    console.log(
      `export benchmark: ${n} sessions x 10 turns, batch ${batchSize}, seeded in ${seedSeconds.toFixed(1)} s (SQL generate_series); V8 old space ${heapCapMiB ? `capped at ${heapCapMiB} MiB` : 'uncapped'}; ${cpus().length} CPUs, load average at start ${loadStart}, at end ${load}`,
    );
    console.log(line(head));
    for (const r of rows) console.log(line(r));
    console.log(
      JSON.stringify({
        bench: 'export',
        sessions: n,
        batchSize,
        heapCapMiB,
        seedSeconds: Number(seedSeconds.toFixed(2)),
        cpus: cpus().length,
        loadStart,
        loadEnd: load,
        results: results.map((r) => ({
          ...r,
          seconds: Number(r.seconds.toFixed(2)),
          cpuSeconds: r.cpuSeconds === null ? null : Number(r.cpuSeconds.toFixed(2)),
          sessionsPerSec: Math.round(r.sessionsPerSec),
          turnsPerSec: Math.round(r.turnsPerSec),
          peakRssMiB: Number.isNaN(r.peakRssMiB) ? null : r.peakRssMiB,
          peakHeapMiB: Number.isNaN(r.peakHeapMiB) ? null : r.peakHeapMiB,
        })),
      }),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
    await db.drop();
  }
}

await main();
