// Scores a backend answer the way ColBench does: run the reference and the candidate on every test call; a
// test passes iff the reference's value is not None and equals the candidate's. Score = passed / total,
// success = every test passed.
//
// The reference and the candidate never share a process: each runs tasks/backend-harness.py in a sandbox of its
// own (tasks/sandbox.ts), the reference's outputs kept per task (tasks/backend-expected.ts). Each run only
// reports its own outputs, read by a total, bounded parser (tasks/backend-results.ts); equality is decided here
// (tasks/python-value.ts), and the stored detail is the compared values' repr, drawn here from those same values,
// so a candidate can neither fake a pass (overriding __eq__, printing, patching the harness) nor a detail.
import { readFileSync } from 'node:fs';
import type { BackendTask } from './model.ts';
import { stripCodeFences } from './answer.ts';
import { channelFds, DEFAULT_BWRAP_PATH, type SandboxRunResult } from './sandbox.ts';
import { assertSandboxAvailable, type SandboxReport } from './sandbox-probe.ts';
import { pythonMemoryModules } from './python-memory-modules.ts';
import { runSandboxedOffThread } from './sandbox-thread.ts';
import { ExpectedCache } from './backend-expected.ts';
import { parseRunOutcome, type RunOutcome } from './backend-results.ts';
import { pyEqual, pyRepr } from './python-value.ts';

/** Stored with every Evaluation row; bump when scoring could change for the same answer. */
export const BACKEND_EVALUATOR_VERSION = 'backend-bwrap-v2';

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
  /** Wall-clock limit of each run (reference, candidate). Default: 4 s + 2 x (tests + 1) x perTestTimeoutMs, at most 120 s. */
  timeoutMs?: number;
  /** CPU-time limit for each test call (and for defining each solution); 5x as much wall time. Default 2,000 ms. */
  perTestTimeoutMs?: number;
  /** Memory limit of each sandboxed Python (tasks/sandbox.ts memoryBytes). Default 1 GiB. */
  memoryBytes?: number;
  bwrapPath?: string;
  /** Python inside the sandbox; must live under /usr (the only tree mounted there). */
  pythonPath?: string;
  /** Shown in the sandboxed process's command line (ps), e.g. a session id; letters, digits, `.:_-`, 64 at most. */
  label?: string;
  /** Hears how the sandbox bounds memory (tasks/sandbox-probe.ts SandboxReport), before each evaluation. */
  onSandbox?: (report: SandboxReport) => void;
}

const HARNESS = readFileSync(new URL('./backend-harness.py', import.meta.url), 'utf8');
const LIMITS = { maxNodes: 200_000, maxChars: 2_000_000, maxDepth: 201 };

interface SolutionRun {
  outcome: RunOutcome;
  run: SandboxRunResult;
}

const expectedOutputs = new ExpectedCache<SolutionRun>();

/** Forgets every kept reference run (benchmarks measure the cold case with it). */
export function clearExpectedOutputs(): void {
  expectedOutputs.clear();
}

function defaultTimeoutMs(tests: number, perTestMs: number): number {
  return Math.min(120_000, 4_000 + 2 * (tests + 1) * perTestMs);
}

interface RunSettings {
  bwrapPath: string;
  pythonPath: string;
  calls: string[];
  perTestMs: number;
  timeoutMs: number;
  memoryBytes: number | undefined;
  label: string;
}

/** Runs one solution alone in a sandbox: its own outputs, and how the run ended. */
async function runSolution(role: 'reference' | 'candidate', source: string, s: RunSettings): Promise<SolutionRun> {
  const [fd] = channelFds(1) as [number];
  const run = await runSandboxedOffThread({
    bwrapPath: s.bwrapPath,
    argv: [s.pythonPath, '-S', '-s', '-B', '-c', HARNESS, String(fd), role, s.label],
    stdin: JSON.stringify({
      source,
      calls: s.calls,
      perTestSeconds: s.perTestMs / 1000,
      maxNodes: LIMITS.maxNodes,
      maxChars: LIMITS.maxChars,
    }),
    channels: 1,
    env: { PYTHONHASHSEED: '0', OPENBLAS_NUM_THREADS: '1', OMP_NUM_THREADS: '1', MKL_NUM_THREADS: '1' },
    // Modules that read and write raw memory (ctypes, cffi): no ColBench function needs them.
    hide: pythonMemoryModules(),
    limits: {
      wallMs: s.timeoutMs,
      cpuSeconds: Math.ceil(s.timeoutMs / 1000) + 1,
      ...(s.memoryBytes ? { memoryBytes: s.memoryBytes } : {}),
    },
  });
  return { outcome: parseRunOutcome(run.channels[0]!, s.calls.length, LIMITS), run };
}

/** The reference's outputs: kept from an earlier run of the same task and settings, or run now. */
function referenceRun(reference: string, s: RunSettings): Promise<SolutionRun> {
  const key = ExpectedCache.key([
    BACKEND_EVALUATOR_VERSION,
    s.pythonPath,
    reference,
    s.calls,
    s.perTestMs,
    s.timeoutMs,
    s.memoryBytes ?? null,
  ]);
  return expectedOutputs.get(key, async () => {
    const r = await runSolution('reference', reference, s);
    const timedOut = [...r.outcome.tests.values()].some((t) => 'error' in t && t.error.startsWith('Timeout'));
    return { value: r, keep: r.outcome.done && !r.run.timedOut && !timedOut, bytes: r.run.channels[0]!.length };
  });
}

function runError(who: string, r: SolutionRun, timeoutMs: number): string {
  if (r.run.timedOut) return `${who} did not finish within ${timeoutMs} ms`;
  if (r.run.memoryExceeded) return `${who} was killed: memory limit exceeded`;
  if (r.run.outputExceeded || r.run.channelExceeded) return `${who} was killed: output limit exceeded`;
  return `${who} ended early (${r.run.signal ?? `exit ${r.run.exitCode}`})`;
}

/** Scores one answer. Throws SandboxUnavailableError (and runs nothing) when the sandbox cannot be used. */
export async function evaluateBackend(
  task: BackendTask,
  answer: string,
  opts: BackendEvalOptions = {},
): Promise<BackendEvaluation> {
  const bwrapPath = opts.bwrapPath ?? DEFAULT_BWRAP_PATH;
  const pythonPath = opts.pythonPath ?? '/usr/bin/python3';
  // Started in the sandbox thread: a spawn on the caller's thread blocks its event loop (sandbox-thread.ts).
  opts.onSandbox?.(await assertSandboxAvailable(bwrapPath, pythonPath, runSandboxedOffThread));

  const calls = task.testCases;
  const perTestMs = opts.perTestTimeoutMs ?? 2_000;
  const settings: RunSettings = {
    bwrapPath,
    pythonPath,
    calls,
    perTestMs,
    timeoutMs: opts.timeoutMs ?? defaultTimeoutMs(calls.length, perTestMs),
    memoryBytes: opts.memoryBytes,
    label: `sweetloop-eval:${(opts.label ?? 'backend').replace(/[^\w.:-]/g, '_').slice(0, 64)}`,
  };
  const candidate = stripCodeFences(answer);
  const [refRun, candRun] = await Promise.all([
    referenceRun(task.reference, settings),
    runSolution('candidate', candidate, settings),
  ]);
  const ref = refRun.outcome;
  const cand = candRun.outcome;

  const tests: BackendTestResult[] = calls.map((call, i) => {
    const r = ref.tests.get(i);
    const c = cand.tests.get(i);
    const expected = r && 'value' in r ? pyRepr(r.value) : null;
    const actual = c && 'value' in c ? pyRepr(c.value) : null;
    let passed = false;
    let error: string | undefined;
    if (!r) error = ref.execError ? `reference: ${ref.execError}` : 'reference did not finish';
    else if ('error' in r) error = `reference: ${r.error}`;
    else if (r.value.t === 'none') error = 'reference returned None (ColBench counts this test as failed)';
    else if (!c) error = cand.execError ? 'candidate failed to load' : 'candidate did not reach this test';
    else if ('error' in c) error = c.error;
    else passed = pyEqual(r.value, c.value);
    const t: BackendTestResult = { call, expected, actual, passed };
    if (error !== undefined) t.error = error;
    return t;
  });
  const passed = tests.filter((t) => t.passed).length;
  const total = calls.length;

  let error: string | undefined;
  if (!ref.done) error = runError('the reference', refRun, settings.timeoutMs);
  else if (ref.execError) error = `the task's reference does not load: ${ref.execError}`;
  else if (cand.execError) error = `candidate: ${cand.execError}`;
  else if (!cand.done) error = runError('the candidate', candRun, settings.timeoutMs);
  else if (candidate.trim() === '') error = 'empty answer';

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
  opts: BackendEvalOptions & {
    concurrency?: number;
    onResult?: (index: number, result: BackendEvaluation) => void;
  } = {},
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
