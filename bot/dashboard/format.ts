// Formatting helpers the dashboard's templates (bot/dashboard/views/) call. They return plain text; the template
// engine escapes it on output, so nothing here builds HTML.
import type { Interval } from '../../tasks/stats.ts';
import { formatProjection } from '../study-progress.ts';

export const when = (d: Date | null | undefined) => (d ? d.toISOString().slice(0, 16).replace('T', ' ') : '—');
export const num = (x: number | null | undefined, digits = 2) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(digits);
/** Milliseconds as whole ones ("72 ms"): a server's timings come with fractions no reader needs. */
export const ms = (x: number | null | undefined) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : `${Math.round(x).toLocaleString('en')} ms`;
export const pct = (x: number | null | undefined, digits = 1) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : `${(100 * x).toFixed(digits)}%`;
/** "0.52 [0.41, 0.63]"; the bounds are left out when there are none. */
export const interval = (i: Interval | null | undefined, digits = 2) =>
  !i || !Number.isFinite(i.estimate)
    ? '—'
    : Number.isFinite(i.lo)
      ? `${i.estimate.toFixed(digits)} [${i.lo.toFixed(digits)}, ${i.hi.toFixed(digits)}]`
      : i.estimate.toFixed(digits);
/** A pseudonym as lists show it: the first 12 characters (the full one is in the title). */
export const shortPerson = (p: string) => p.slice(0, 12);
export const shortId = (id: string) => id.slice(0, 8);
/** A query string from the filter with one field changed; empty fields are left out. */
export function query(
  base: Record<string, string | number | undefined>,
  change: Record<string, string | number | undefined> = {},
): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...base, ...change })) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
export const json = (v: unknown) => JSON.stringify(v, null, 1) ?? '';
/** A token's shade in the logprob strip: its probability as the opacity of the background (0.1 to 1). */
export const shade = (logprob: number) => (0.1 + 0.9 * Math.min(1, Math.max(0, Math.exp(logprob)))).toFixed(2);
/** An advantage's colour: green when the critic thought the turn helped, red when it hurt. */
export const advantageClass = (a: number) => (a > 0 ? 'adv-pos' : a < 0 ? 'adv-neg' : 'adv-zero');
export const money = (cents: number, currency: string | null) =>
  `${(cents / 100).toFixed(2)}${currency ? ` ${currency}` : ''}`;
/** A study's projected completion in words ("not enough data yet (...)", not the state's slug). */
export const projection = formatProjection;
