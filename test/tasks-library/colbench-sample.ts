// The ColBench samples live outside the repository (../shared, never committed): tests that read them skip
// with a notice on a fresh clone.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

export const BACKEND_SAMPLE = resolve(import.meta.dirname, '../../../shared/colbench/backend_sample.jsonl');

export function haveBackendSample(): boolean {
  if (existsSync(BACKEND_SAMPLE)) return true;
  console.warn(`[skip] ${BACKEND_SAMPLE} is absent (ColBench samples are not part of the repository): sample tests skipped.`);
  return false;
}

/** Reference sources of the sample's backend tasks. */
export function sampleReferences(): string[] {
  return readFileSync(BACKEND_SAMPLE, 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { ground_truth: string }).ground_truth);
}
