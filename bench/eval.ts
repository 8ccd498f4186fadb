// npm run bench:eval — throughput of the sandboxed backend evaluator on the ColBench backend sample (every
// reference scored as its own answer), against the reference implementation's way: the same calls run
// unsandboxed in one Python process (exec each solution in its own namespace, eval each call, ==), timed in
// the same run. The evaluator runs the reference and the candidate in sandboxes of their own and keeps each
// task's reference outputs (tasks/backend-expected.ts): "cold" passes forget them first (two sandboxes a task),
// "warm" ones find them kept from the pass before (one sandbox a task). Prints a table and one JSON line.
//   npm run bench:eval [-- --tasks FILE] [-- --repeat N]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { clearExpectedOutputs, evaluateBackendBatch } from '../tasks/backend-eval.ts';
import type { BackendTask } from '../tasks/model.ts';
import { parseBackendRecord } from '../tasks/importer.ts';

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : def;
};
const tasksPath = resolve(opt('tasks', resolve(import.meta.dirname, '../../shared/colbench/backend_sample.jsonl')));
const repeat = Math.max(1, Number(opt('repeat', '1')));
if (!existsSync(tasksPath)) {
  console.error(`bench:eval: ${tasksPath} not found (the ColBench backend sample; pass --tasks FILE)`);
  process.exit(2);
}
const tasks: BackendTask[] = readFileSync(tasksPath, 'utf8')
  .trim()
  .split('\n')
  .map((line, i) => {
    const t = parseBackendRecord(JSON.parse(line), i + 1);
    if (typeof t === 'string') throw new Error(`${tasksPath}:${i + 1}: ${t}`);
    return t;
  });
const totalTests = tasks.reduce((s, t) => s + t.testCases.length, 0);

// One process, no isolation: what a plain evaluation loop does. SIGALRM per call, as the sandboxed harness.
const UNSANDBOXED = String.raw`
import json, signal, sys, time
class T(BaseException): pass
def on_alarm(*a): raise T()
signal.signal(signal.SIGALRM, on_alarm)
tasks = [json.loads(l) for l in sys.stdin]
t0 = time.perf_counter(); passed = []
for t in tasks:
    ref, cand = {}, {}
    exec(t['reference'], ref); exec(t['answer'], cand)
    n = 0
    for call in t['calls']:
        try:
            signal.setitimer(signal.ITIMER_REAL, 2.0)
            r = eval(call, ref); c = eval(call, cand)
            if r is not None and r == c: n += 1
        except BaseException:
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    passed.append(n)
print(json.dumps({'seconds': time.perf_counter() - t0, 'passed': passed}))
`;

function unsandboxed(): { seconds: number; processSeconds: number; passed: number[] } {
  const input = tasks
    .map((t) => JSON.stringify({ reference: t.reference, answer: t.reference, calls: t.testCases }))
    .join('\n');
  // The sample's own tests create files (sqlite databases) in the working directory: give them a scratch one.
  const cwd = mkdtempSync(join(tmpdir(), 'sweetloop-bench-eval-'));
  const started = performance.now();
  const r = spawnSync('/usr/bin/python3', ['-c', UNSANDBOXED], {
    cwd,
    input,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'ignore'],
    maxBuffer: 1 << 26,
    env: { OPENBLAS_NUM_THREADS: '1', PATH: '/usr/bin:/bin' },
  });
  const processSeconds = (performance.now() - started) / 1000;
  rmSync(cwd, { recursive: true, force: true });
  if (r.status !== 0) throw new Error(`unsandboxed run failed (${r.status})`);
  // Only the last line: the reference solutions may print.
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { seconds: number; passed: number[] };
  return { ...out, processSeconds };
}

async function sandboxed(concurrency: number, cold: boolean): Promise<{ seconds: number; passed: number[] }> {
  if (cold) clearExpectedOutputs();
  const started = performance.now();
  const res = await evaluateBackendBatch(
    tasks.map((t) => ({ task: t, answer: t.reference })),
    { concurrency },
  );
  return { seconds: (performance.now() - started) / 1000, passed: res.map((r) => r.passed) };
}

const rows: { mode: string; seconds: number; tasksPerSec: number; testsPerSec: number; passed: number }[] = [];
const add = (mode: string, seconds: number, passed: number[]) =>
  rows.push({
    mode,
    seconds,
    tasksPerSec: (tasks.length * 1) / seconds,
    testsPerSec: totalTests / seconds,
    passed: passed.reduce((a, b) => a + b, 0),
  });

await sandboxed(2, true); // warm-up: the availability probe, file caches
for (let i = 0; i < repeat; i++) {
  const u = unsandboxed();
  add('unsandboxed, 1 Python process (loop only)', u.seconds, u.passed);
  add('unsandboxed, 1 Python process (incl. start)', u.processSeconds, u.passed);
  for (const cold of [true, false]) {
    for (const n of [1, 2]) {
      const s = await sandboxed(n, cold);
      add(
        `sandboxed, ${cold ? 'cold: reference run too' : 'warm: reference kept'}, ${n} at a time`,
        s.seconds,
        s.passed,
      );
    }
  }
}

const load = os.loadavg()[0]!.toFixed(1);
console.log(
  `backend evaluator: ${tasks.length} tasks, ${totalTests} tests (${tasksPath}); ${os.cpus().length} CPUs, load average ${load}`,
);
const header = ['mode', 'seconds', 'tasks/s', 'tests/s', 'tests passed'];
const body = rows.map((r) => [
  r.mode,
  r.seconds.toFixed(3),
  r.tasksPerSec.toFixed(1),
  r.testsPerSec.toFixed(0),
  `${r.passed}/${totalTests}`,
]);
const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
const fmt = (cells: string[]) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log([fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(fmt)].join('\n'));
const agree = new Set(rows.map((r) => r.passed)).size === 1;
if (!agree) console.log('WARNING: the modes disagree on the number of passed tests');
console.log(
  JSON.stringify({
    bench: 'eval',
    tasks: tasks.length,
    tests: totalTests,
    cpus: os.cpus().length,
    loadavg: Number(load),
    agree,
    rows,
  }),
);
