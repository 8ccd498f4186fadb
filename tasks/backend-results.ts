// Reads what one run of tasks/backend-harness.py wrote on its result channel: one JSON record a line,
//   {"i": n, "v": value} or {"i": n, "err": text}   test n's value (tasks/python-value.ts) or why it has none
//   {"exec_error": text}                             the solution did not load
//   {"done": true}                                   every test was run
// The program that wrote it is untrusted (a candidate can write its own lines on its own channel), so reading
// is total: a line that is not such a record is skipped and counted, a test whose first record is malformed
// fails with that reason, and nothing here throws or grows past the limits it is given.
import { decodePyValue, type DecodeLimits, type PyValue } from './python-value.ts';

export type TestOutcome = { value: PyValue } | { error: string };

export interface RunOutcome {
  /** By test index; the first record for an index counts. */
  tests: Map<number, TestOutcome>;
  execError?: string;
  done: boolean;
  /** Lines that were not a record this format knows. */
  junk: number;
}

const MAX_TEXT = 300;

function short(s: string): string {
  return s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT)}...` : s;
}

export function parseRunOutcome(buf: Buffer, calls: number, limits: DecodeLimits): RunOutcome {
  const out: RunOutcome = { tests: new Map(), done: false, junk: 0 };
  for (const line of buf.toString('utf8').split('\n')) {
    if (!line) continue;
    let rec: unknown;
    try {
      rec = JSON.parse(line);
    } catch {
      out.junk++; // a torn line (killed mid-write) or the program's own noise
      continue;
    }
    if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) {
      out.junk++;
      continue;
    }
    const r = rec as Record<string, unknown>;
    if (r.done === true) out.done = true;
    else if (typeof r.exec_error === 'string') out.execError ??= short(r.exec_error);
    else if (typeof r.i === 'number' && Number.isInteger(r.i) && r.i >= 0 && r.i < calls) {
      if (out.tests.has(r.i)) continue;
      if (typeof r.err === 'string') out.tests.set(r.i, { error: short(r.err) });
      else if ('v' in r) {
        const d = decodePyValue(r.v, limits);
        out.tests.set(r.i, 'value' in d ? d : { error: `malformed result: ${d.error}` });
      } else out.tests.set(r.i, { error: 'malformed result: no value' });
    } else out.junk++;
  }
  return out;
}
