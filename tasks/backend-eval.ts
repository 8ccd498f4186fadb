// Scores a backend answer the way ColBench does: run the reference and the candidate on every test call; a
// test passes iff the reference's value is not None and equals the candidate's. Score = passed / total,
// success = every test passed.
//
// Both run in one sandbox start per task (tasks/backend-harness.py inside tasks/sandbox.ts). The reference
// runs first and its results are sealed before candidate code is loaded; equality is decided here, on the
// encoded values (see pyEqual), so a candidate cannot fake a pass by overriding __eq__ or by printing.
import { readFileSync } from 'node:fs';
import type { BackendTask } from './model.ts';
import { stripCodeFences } from './answer.ts';
import { assertSandboxAvailable, channelFds, DEFAULT_BWRAP_PATH } from './sandbox.ts';
import { pythonMemoryModules } from './python-memory-modules.ts';
import { runSandboxedOffThread } from './sandbox-thread.ts';

/** Stored with every Evaluation row; bump when scoring could change for the same answer. */
export const BACKEND_EVALUATOR_VERSION = 'backend-bwrap-v1';

export interface BackendTestResult {
  /** The call expression, e.g. `f(1, 2)`. */
  call: string;
  /** Short repr of the reference's value; null when the reference raised or timed out. */
  expected: string | null;
  /** Short repr of the candidate's value; null when it raised, timed out or never got there. */
  actual: string | null;
  passed: boolean;
  error?: string;
}

export interface BackendEvaluation {
  passed: number;
  total: number;
  score: number;
  success: boolean;
  tests: BackendTestResult[];
  /** Why the candidate as a whole failed (does not compile, killed, ...) or why the task could not be scored. */
  error?: string;
}

export interface BackendEvalOptions {
  /** Wall-clock limit for the whole task. Default: 4 s + 2 x (tests + 1) x perTestTimeoutMs, at most 120 s. */
  timeoutMs?: number;
  /** CPU-time limit for each test call (and for defining each solution); 5x as much wall time. Default 2,000 ms. */
  perTestTimeoutMs?: number;
  /** Address-space limit of the sandboxed Python. Default 1 GiB. */
  memoryBytes?: number;
  bwrapPath?: string;
  /** Python inside the sandbox; must live under /usr (the only tree mounted there). */
  pythonPath?: string;
  /** Shown in the sandboxed process's command line (ps), e.g. a session id; letters, digits, `.:_-`, 64 at most. */
  label?: string;
}

const HARNESS = readFileSync(new URL('./backend-harness.py', import.meta.url), 'utf8');
const MAX_NODES = 200_000;
const MAX_CHARS = 2_000_000;

/** An encoded Python value (see backend-harness.py `_Encoder`). */
export type Encoded = null | boolean | number | string | Encoded[];

interface PhaseResult {
  values: Map<number, { v: Encoded; r: string } | { err: string }>;
  execError?: string;
  done: boolean;
}

function parseChannel(buf: Buffer): PhaseResult {
  const out: PhaseResult = { values: new Map(), done: false };
  for (const line of buf.toString('utf8').split('\n')) {
    if (!line) continue;
    let rec: Record<string, unknown>;
    try {
      rec = JSON.parse(line) as Record<string, unknown>;
    } catch {
      continue; // a torn line (killed mid-write) or candidate noise
    }
    if (rec === null || typeof rec !== 'object') continue;
    if (rec.done === true) out.done = true;
    if (typeof rec.exec_error === 'string' && out.execError === undefined) out.execError = rec.exec_error;
    if (typeof rec.i === 'number' && !out.values.has(rec.i)) {
      if (typeof rec.err === 'string') out.values.set(rec.i, { err: rec.err });
      else if ('v' in rec) out.values.set(rec.i, { v: rec.v as Encoded, r: typeof rec.r === 'string' ? rec.r : '' });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Python's == on the encoded values. Numbers (bool, int, float, complex) compare by value across types as in
// Python (True == 1 == 1.0); nan equals nothing; list != tuple; dict and set ignore order; set == frozenset;
// values of other types are equal iff same type and same repr (the harness cannot ship arbitrary objects).

type Num = { re: number | bigint; im: number | bigint };

function asNumber(e: Encoded): Num | null {
  if (typeof e === 'boolean') return { re: e ? 1 : 0, im: 0 };
  if (typeof e === 'number') return { re: e, im: 0 };
  if (Array.isArray(e)) {
    if (e[0] === 'int' && typeof e[1] === 'string') return { re: BigInt(e[1]), im: 0 };
    if (e[0] === 'float') return { re: e[1] === 'nan' ? NaN : e[1] === 'inf' ? Infinity : -Infinity, im: 0 };
    if (e[0] === 'complex') {
      const re = asNumber(e[1] as Encoded);
      const im = asNumber(e[2] as Encoded);
      if (re && im) return { re: re.re, im: im.re };
    }
  }
  return null;
}

function realEqual(a: number | bigint, b: number | bigint): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a === b;
  if (typeof a === 'bigint' && typeof b === 'bigint') return a === b;
  const f = (typeof a === 'number' ? a : b) as number;
  const i = (typeof a === 'bigint' ? a : b) as bigint;
  return Number.isInteger(f) && BigInt(f) === i;
}

/** A string equal for Python-equal hashable values, for dict keys and set members. */
function hashKey(e: Encoded): string {
  const n = asNumber(e);
  if (n) {
    const part = (x: number | bigint) =>
      typeof x === 'bigint' ? x.toString() : Number.isNaN(x) ? `nan${Math.random()}` : Number.isInteger(x) ? BigInt(x).toString() : String(x);
    return n.im === 0 || n.im === 0n ? `n:${part(n.re)}` : `c:${part(n.re)},${part(n.im)}`;
  }
  if (e === null) return 'None';
  if (typeof e === 'string') return `s:${JSON.stringify(e)}`;
  const [tag, ...rest] = e as Encoded[];
  if (tag === 'tuple') return `t(${rest.map(hashKey).join(',')})`;
  if (tag === 'set') return `f{${rest.map(hashKey).sort().join(',')}}`;
  if (tag === 'bytes') return `b:${String(rest[0])}`;
  return `o:${JSON.stringify(e)}`;
}

export function pyEqual(a: Encoded, b: Encoded): boolean {
  const na = asNumber(a);
  const nb = asNumber(b);
  if (na || nb) return !!na && !!nb && realEqual(na.re, nb.re) && realEqual(na.im, nb.im);
  if (a === null || b === null) return a === b;
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  if (!Array.isArray(a) || !Array.isArray(b)) return false;
  const [ta, ...ra] = a;
  const [tb, ...rb] = b;
  if (ta !== tb) return false;
  switch (ta) {
    case 'list':
    case 'tuple':
      return ra.length === rb.length && ra.every((x, i) => pyEqual(x, rb[i]!));
    case 'bytes':
      return ra[0] === rb[0];
    case 'set': {
      if (ra.length !== rb.length) return false;
      const keys = new Set(ra.map(hashKey));
      return keys.size === new Set(rb.map(hashKey)).size && rb.every((x) => keys.has(hashKey(x)));
    }
    case 'dict': {
      if (ra.length !== rb.length) return false;
      const index = new Map<string, Encoded>();
      for (const kv of ra) index.set(hashKey((kv as Encoded[])[0]!), (kv as Encoded[])[1]!);
      return rb.every((kv) => {
        const k = hashKey((kv as Encoded[])[0]!);
        return index.has(k) && pyEqual(index.get(k)!, (kv as Encoded[])[1]!);
      });
    }
    case 'obj':
      return ra[0] === rb[0] && ra[1] === rb[1];
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------------------

function defaultTimeoutMs(tests: number, perTestMs: number): number {
  return Math.min(120_000, 4_000 + 2 * (tests + 1) * perTestMs);
}

/** Scores one answer. Throws SandboxUnavailableError (and runs nothing) when the sandbox cannot be used. */
export async function evaluateBackend(task: BackendTask, answer: string, opts: BackendEvalOptions = {}): Promise<BackendEvaluation> {
  const bwrapPath = opts.bwrapPath ?? DEFAULT_BWRAP_PATH;
  const pythonPath = opts.pythonPath ?? '/usr/bin/python3';
  // Started in the sandbox thread: a spawn on the caller's thread blocks its event loop (sandbox-thread.ts).
  await assertSandboxAvailable(bwrapPath, pythonPath, runSandboxedOffThread);

  const calls = task.testCases;
  const perTestMs = opts.perTestTimeoutMs ?? 2_000;
  const timeoutMs = opts.timeoutMs ?? defaultTimeoutMs(calls.length, perTestMs);
  const candidate = stripCodeFences(answer);
  const label = `sweetloop-eval:${(opts.label ?? 'backend').replace(/[^\w.:-]/g, '_').slice(0, 64)}`;
  const [refFd, candFd] = channelFds(2) as [number, number];
  const run = await runSandboxedOffThread({
    bwrapPath,
    argv: [pythonPath, '-S', '-s', '-B', '-c', HARNESS, String(refFd), String(candFd), label],
    stdin: JSON.stringify({
      reference: task.reference,
      candidate,
      calls,
      perTestSeconds: perTestMs / 1000,
      maxNodes: MAX_NODES,
      maxChars: MAX_CHARS,
    }),
    channels: 2,
    env: { PYTHONHASHSEED: '0', OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' },
    // ctypes could read freed memory of the reference phase; no ColBench function needs it.
    hide: pythonMemoryModules(),
    limits: {
      wallMs: timeoutMs,
      cpuSeconds: Math.ceil(timeoutMs / 1000) + 1,
      ...(opts.memoryBytes ? { memoryBytes: opts.memoryBytes } : {}),
    },
  });
  const ref = parseChannel(run.channels[0]!);
  const cand = parseChannel(run.channels[1]!);

  const tests: BackendTestResult[] = calls.map((call, i) => {
    const r = ref.values.get(i);
    const c = cand.values.get(i);
    const expected = r && 'r' in r ? r.r : null;
    const actual = c && 'r' in c ? c.r : null;
    let passed = false;
    let error: string | undefined;
    if (!r) error = ref.execError ? `reference: ${ref.execError}` : 'reference did not finish';
    else if ('err' in r) error = `reference: ${r.err}`;
    else if (r.v === null) error = 'reference returned None (ColBench counts this test as failed)';
    else if (!c) error = cand.execError ? 'candidate failed to load' : 'candidate did not reach this test';
    else if ('err' in c) error = c.err;
    else passed = pyEqual(r.v, c.v);
    const t: BackendTestResult = { call, expected, actual, passed };
    if (error !== undefined) t.error = error;
    return t;
  });
  const passed = tests.filter((t) => t.passed).length;
  const total = calls.length;

  let error: string | undefined;
  if (!ref.done) {
    error = run.timedOut
      ? `the reference did not finish within ${timeoutMs} ms`
      : `the reference run ended abnormally (exit ${run.exitCode ?? run.signal})`;
  } else if (ref.execError) {
    error = `the task's reference does not load: ${ref.execError}`;
  } else if (cand.execError) {
    error = `candidate: ${cand.execError}`;
  } else if (!cand.done) {
    if (run.timedOut) error = `timed out after ${timeoutMs} ms`;
    else if (run.outputExceeded || run.channelExceeded) error = 'killed: output limit exceeded';
    else error = `the candidate process ended early (${run.signal ?? `exit ${run.exitCode}`})`;
  } else if (candidate.trim() === '') {
    error = 'empty answer';
  }

  const result: BackendEvaluation = {
    passed,
    total,
    score: total === 0 ? 0 : passed / total,
    success: total > 0 && passed === total,
    tests,
  };
  if (error !== undefined) result.error = error;
  return result;
}

export interface BackendBatchItem {
  task: BackendTask;
  answer: string;
}

/**
 * Scores many answers, `concurrency` sandboxes at a time (default: 2). Results come back in input order.
 * A SandboxUnavailableError stops the batch (it would hit every item alike).
 */
export async function evaluateBackendBatch(
  items: BackendBatchItem[],
  opts: BackendEvalOptions & { concurrency?: number; onResult?: (index: number, result: BackendEvaluation) => void } = {},
): Promise<BackendEvaluation[]> {
  const results: BackendEvaluation[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      const item = items[i]!;
      results[i] = await evaluateBackend(item.task, item.answer, opts);
      opts.onResult?.(i, results[i]!);
    }
  };
  const n = Math.max(1, Math.min(opts.concurrency ?? 2, items.length));
  await Promise.all(Array.from({ length: n }, worker));
  return results;
}
