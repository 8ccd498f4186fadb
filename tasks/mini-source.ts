// The tools a ColBench-mini template is written with: seeded draws for its test calls, and its reference's Python
// source (literals, the block of commented constants that holds the withheld facts). Pure functions.
import type { FactSpec, FactValue, Rng } from './mini-model.ts';

// ---------------------------------------------------------------------------------------------------------
// Seeded randomness

export function pick<T>(rng: Rng, items: readonly T[]): T {
  if (items.length === 0) throw new Error('pick from an empty list');
  return items[Math.floor(rng() * items.length)] as T;
}

export function randInt(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng() * (hi - lo + 1));
}

export function shuffled<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Python source helpers

/** A JavaScript value as a Python literal. */
export function py(value: FactValue | readonly FactValue[]): string {
  if (Array.isArray(value)) return `[${value.map((v) => py(v)).join(', ')}]`;
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`no Python literal for ${value}`);
    return String(value);
  }
  return `'${String(value).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

export function constants(facts: readonly FactSpec[], values: Record<string, FactValue>): string {
  return facts.map((f) => `${f.key} = ${py(valueOf(values, f.key))}  # ${f.comment}`).join('\n');
}

export function valueOf(values: Record<string, FactValue>, key: string): FactValue {
  const v = values[key];
  if (v === undefined) throw new Error(`missing value for ${key}`);
  return v;
}

export const num = (values: Record<string, FactValue>, key: string): number => {
  const v = valueOf(values, key);
  if (typeof v !== 'number') throw new Error(`${key} must be a number`);
  return v;
};

/** Round to 2 decimals for test data, avoiding float noise in the call text. */
export const r2 = (x: number): number => Math.round(x * 100) / 100;
