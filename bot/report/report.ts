// `sweetloop report --out DIR`: report.json (every figure), report.md (the tables) and three plots as SVG and PNG:
// success-by-policy, rating-histogram, turns-histogram.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PrismaClient } from '../../prisma/generated/client.ts';
import { sourceOf, type ExportFilters } from '../export/query.ts';
import { collectReport, type GroupReport, type ReportData } from './aggregate.ts';
import { openSvgRenderer } from './png.ts';
import type { Interval } from '../../tasks/stats.ts';
import { barChartSvg, type BarChart } from './svg.ts';
import { gateMarkdown } from './gate.ts';
import { experimentsMarkdown } from './experiments.ts';
import { compareSources, trainingDataMarkdown } from './training-data.ts';

export interface ReportOptions {
  outDir: string;
  filters?: ExportFilters;
  /** Policy version the frontend win rates compare against (default: the oldest one in the data). */
  referencePolicy?: string;
  /** Chromium for the PNG versions; null writes SVG only. */
  chromiumPath: string | null;
  now?: Date;
}

export interface ReportResult {
  data: ReportData;
  files: string[];
}

const pct = (v: number) => (Number.isFinite(v) ? `${(100 * v).toFixed(1)}%` : '-');
const fix = (v: number, d = 2) => (Number.isFinite(v) ? v.toFixed(d) : '-');

function ci(i: Interval, f: (v: number) => string): string {
  if (!Number.isFinite(i.estimate)) return '-';
  if (!Number.isFinite(i.lo)) return `${f(i.estimate)} (n=${i.n})`;
  return `${f(i.estimate)} [${f(i.lo)}, ${f(i.hi)}]`;
}

const seriesName = (g: GroupReport) => `${g.kind} · ${g.collaborator}`;

export function policyOrder(data: ReportData): string[] {
  return [...new Set(data.groups.map((g) => g.policy))];
}

export function renderMarkdown(data: ReportData): string {
  const rows = data.groups.map((g) =>
    [
      g.policy,
      g.kind,
      g.collaborator,
      g.sessions,
      g.answered,
      g.evaluated,
      ci(g.successRate, pct),
      g.kind === 'backend' ? ci(g.meanScore, pct) : ci(g.meanScore, (v) => fix(v, 3)),
      g.winRate ? ci(g.winRate, pct) : '-',
      g.ratings.count ? `${ci(g.ratings.mean, (v) => fix(v))} (${g.ratings.histogram.join('/')})` : '-',
      `${ci(g.turns.mean, (v) => fix(v, 1))}; median ${fix(g.turns.median, 1)}`,
    ]
      .map((c) => String(c).replace(/\|/g, '\\|'))
      .join(' | '),
  );
  const f = data.filters;
  return [
    '# Sweetloop report',
    '',
    `Generated ${data.generatedAt}. Sessions with status ${(f.statuses ?? []).join(', ')}; simulated collaborators ${{ human: 'excluded', simulated: 'only', both: 'included' }[sourceOf(f)]};`,
    `flagged sessions ${f.includeFlagged ? 'included' : 'excluded'}; only consented, not-deleted participants' sessions and ratings.`,
    f.since || f.until || f.kind || f.split || f.policy || f.minRating !== undefined
      ? `Filters: ${JSON.stringify({ since: f.since, until: f.until, kind: f.kind, split: f.split, policy: f.policy, minRating: f.minRating })}.`
      : '',
    '',
    'Intervals are 95%: Wilson for proportions (success rate, win rate), Student t for means. "% tests passed" is the',
    'mean fraction of a backend task\'s tests the answer passed; frontend "score" is the mean page similarity, and the',
    `win rate is the share of frontend tasks where the policy's mean similarity beats the reference policy's (${data.referencePolicy ?? 'none'}; ties count half).`,
    "Turns are the agent's turns per session. Ratings: mean [CI] (count of 1/2/3/4/5).",
    '',
    '| policy | kind | collaborator | sessions | answered | evaluated | success | % tests passed / similarity | win rate | human rating | agent turns |',
    '| --- | --- | --- | ---: | ---: | ---: | --- | --- | --- | --- | --- |',
    ...rows.map((r) => `| ${r} |`),
    '',
    '## Plots',
    '',
    '![Success rate by policy version](success-by-policy.svg)',
    '',
    '![Human rating histogram](rating-histogram.svg)',
    '',
    '![Agent turns per session](turns-histogram.svg)',
    '',
    ...(data.lastGate !== undefined ? [gateMarkdown(data.lastGate)] : []),
    ...(data.trainedVersions?.length
      ? [trainingDataMarkdown(data.trainedVersions, compareSources(data.trainedVersions, data.groups))]
      : []),
    ...(data.experiments?.length ? [experimentsMarkdown(data.experiments)] : []),
  ].join('\n');
}

export function charts(data: ReportData): { name: string; chart: BarChart }[] {
  const policies = policyOrder(data);
  const seriesKeys = [...new Set(data.groups.map(seriesName))].sort();
  const success: BarChart = {
    title: 'Success rate by policy version (95% Wilson intervals)',
    categories: policies,
    series: seriesKeys.map((name) => {
      const at = policies.map((p) => data.groups.find((g) => g.policy === p && seriesName(g) === name));
      return {
        name,
        values: at.map((g) => g?.successRate.estimate ?? NaN),
        lo: at.map((g) => g?.successRate.lo ?? NaN),
        hi: at.map((g) => g?.successRate.hi ?? NaN),
      };
    }),
    yLabel: 'success rate',
    xLabel: 'policy version',
    yMax: 1,
    format: (v) => `${Math.round(v * 100)}%`,
  };
  const sumBy = (pick: (g: GroupReport) => number[], policy: string, length: number) => {
    const out = new Array<number>(length).fill(0);
    for (const g of data.groups) if (g.policy === policy) pick(g).forEach((v, i) => (out[i]! += v));
    return out;
  };
  const ratings: BarChart = {
    title: 'Human ratings',
    categories: ['1', '2', '3', '4', '5'],
    series: policies.map((p) => ({ name: p, values: sumBy((g) => g.ratings.histogram, p, 5) })),
    yLabel: 'ratings',
    xLabel: 'rating (1 = useless, 5 = excellent)',
    integerTicks: true,
  };
  const maxTurns = Math.max(0, ...data.groups.map((g) => g.turns.histogram.length - 1));
  const turns: BarChart = {
    title: 'Agent turns per session',
    categories: Array.from({ length: maxTurns + 1 }, (_, i) => String(i)),
    series: policies.map((p) => ({ name: p, values: sumBy((g) => g.turns.histogram, p, maxTurns + 1) })),
    yLabel: 'sessions',
    xLabel: 'agent turns',
    integerTicks: true,
  };
  if (data.groups.length === 0) {
    ratings.series = [];
    turns.categories = [];
  }
  return [
    { name: 'success-by-policy', chart: success },
    { name: 'rating-histogram', chart: ratings },
    { name: 'turns-histogram', chart: turns },
  ];
}

export async function writeReport(prisma: PrismaClient, opts: ReportOptions): Promise<ReportResult> {
  const data = await collectReport(prisma, opts.filters ?? {}, opts.referencePolicy, opts.now);
  await mkdir(opts.outDir, { recursive: true });
  const files: string[] = [];
  const put = async (name: string, content: string | Buffer) => {
    const path = join(opts.outDir, name);
    await writeFile(path, content);
    files.push(path);
  };
  await put('report.json', JSON.stringify(data, null, 2) + '\n');
  await put('report.md', renderMarkdown(data));
  const svgs = charts(data).map(({ name, chart }) => ({ name, svg: barChartSvg(chart) }));
  for (const { name, svg } of svgs) await put(`${name}.svg`, svg);
  if (opts.chromiumPath) {
    const renderer = await openSvgRenderer(opts.chromiumPath);
    try {
      for (const { name, svg } of svgs) await put(`${name}.png`, await renderer.toPng(svg));
    } finally {
      await renderer.close();
    }
  }
  return { data, files };
}
