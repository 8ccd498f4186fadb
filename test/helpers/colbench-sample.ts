// The ColBench samples, for every test that reads them. They live outside the repository (SHARED_DIR, never
// committed): COLBENCH_DIR names their folder, else the shared/colbench beside the checkout that the development
// machines and CI have; tests that need them skip with a notice on a fresh clone.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { BackendTask, FrontendTask } from '../../tasks/model.ts';
import { parseBackendRecord } from '../../tasks/importer.ts';

export const SHARED_DIR = resolve(process.env.COLBENCH_DIR || resolve(import.meta.dirname, '../../../shared/colbench'));
export const BACKEND_SAMPLE = join(SHARED_DIR, 'backend_sample.jsonl');
export const FRONTEND_SAMPLE = join(SHARED_DIR, 'frontend_sample.jsonl');

export function haveSample(path: string): boolean {
  if (existsSync(path)) return true;
  console.warn(`[skip] ${path} is absent (ColBench samples are not part of the repository): sample tests skipped.`);
  return false;
}

export function haveBackendSample(): boolean {
  return haveSample(BACKEND_SAMPLE);
}

export function loadBackendSample(): BackendTask[] {
  return readFileSync(BACKEND_SAMPLE, 'utf8')
    .trim()
    .split('\n')
    .map((line, i) => {
      const t = parseBackendRecord(JSON.parse(line), i + 1);
      if (typeof t === 'string') throw new Error(`${BACKEND_SAMPLE}:${i + 1}: ${t}`);
      return t;
    });
}

export function loadFrontendSample(): FrontendTask[] {
  return readFileSync(FRONTEND_SAMPLE, 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const rec = JSON.parse(line) as { problem_description: string; ground_truth: string };
      return { kind: 'frontend', description: rec.problem_description, reference: rec.ground_truth };
    });
}

/** Reference sources of the sample's backend tasks, as stored (not parsed). */
export function sampleReferences(): string[] {
  return readFileSync(BACKEND_SAMPLE, 'utf8')
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { ground_truth: string }).ground_truth);
}

/** The function the task asks for, from "The signature of the function is: def name(...)". */
export function functionName(task: BackendTask): string {
  const m =
    /def\s+([A-Za-z_]\w*)\s*\(/.exec(task.description.split('signature of the function is').pop() ?? '') ??
    /def\s+([A-Za-z_]\w*)\s*\(/.exec(task.reference);
  if (!m) throw new Error('no function name in task');
  return m[1]!;
}
