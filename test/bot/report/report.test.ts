// `sweetloop report` against a real database and real Chromium; expected figures worked out by hand from the
// fixture (see fixtures.ts) and the formulas in stats.ts.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNG } from 'pngjs';
import { createTestDatabase } from '../../../testing/database.ts';
import { writeReport } from '../../../bot/report/report.ts';
import { ReportAccumulator, winRateAgainst, type ReportData } from '../../../bot/report/aggregate.ts';
import { barChartSvg, niceStep } from '../../../bot/report/svg.ts';
import type { SessionSummary } from '../../../bot/export/query.ts';
import { seedExportWorld } from '../export/fixtures.ts';

let t: Awaited<ReturnType<typeof createTestDatabase>>;
let dir: string;
let data: ReportData;
let files: string[];

beforeAll(async () => {
  t = await createTestDatabase();
  await seedExportWorld(t.prisma);
  dir = await mkdtemp(join(tmpdir(), 'sweetloop-report-'));
  ({ data, files } = await writeReport(t.prisma, {
    outDir: dir,
    chromiumPath: '/usr/bin/chromium',
    now: new Date('2026-02-01T00:00:00Z'),
  }));
});

afterAll(async () => {
  await t?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('report over the fixture', () => {
  it('groups by policy version, kind and collaborator, oldest policy first', () => {
    expect(data.groups.map((g) => `${g.policy}/${g.kind}/${g.collaborator}/${g.sessions}`)).toEqual([
      'starter/backend/human/2', // S1 answered + S4 abandoned
      'starter/backend/simulated/1', // S8
      'sweet-0001/backend/human/2', // S10 (not evaluated) + S2
      'sweet-0001/frontend/human/1', // S3
    ]);
    expect(data.referencePolicy).toBe('starter');
  });

  it('success rates carry Wilson intervals; 1 of 1 gives [0.2066, 1], 0 of 1 gives [0, 0.7935]', () => {
    const [starterHuman, starterSim, sweetBackend] = data.groups;
    expect(starterHuman!.answered).toBe(1);
    expect(starterHuman!.evaluated).toBe(1);
    expect(starterHuman!.successRate.estimate).toBe(1);
    // centre (1 + 1.9208)/4.8416 = 0.60329, half 1.96 * 0.98 / 4.8416 = 0.39673
    expect(starterHuman!.successRate.lo).toBeCloseTo(0.20656, 4);
    expect(starterHuman!.successRate.hi).toBe(1);
    expect(starterSim!.successRate.estimate).toBe(0);
    expect(starterSim!.successRate.hi).toBeCloseTo(0.79346, 4);
    expect(starterSim!.meanScore.estimate).toBeCloseTo(0.2, 12);
    expect(sweetBackend!.evaluated).toBe(1);
    expect(sweetBackend!.meanScore.estimate).toBe(0.5);
  });

  it('counts only visible ratings and agent turns', () => {
    const [starterHuman, , sweetBackend, frontend] = data.groups;
    // S1: alice 5 and bob 4; dave (withdrawn) rated 1 and is not counted.
    expect(starterHuman!.ratings.histogram).toEqual([0, 0, 0, 1, 1]);
    expect(starterHuman!.ratings.mean.estimate).toBe(4.5);
    expect(starterHuman!.ratings.mean.lo).toBe(1); // t interval with n = 2 is clipped to the 1-5 scale
    expect(sweetBackend!.ratings.histogram).toEqual([0, 1, 0, 0, 0]);
    // S4 stopped after one agent turn, S1 had two.
    expect(starterHuman!.turns.histogram).toEqual([0, 1, 1]);
    expect(starterHuman!.turns.mean.estimate).toBe(1.5);
    expect(starterHuman!.turns.median).toBe(1.5);
    // No frontend sessions of the reference policy: no win rate.
    expect(frontend!.winRate).toBeNull();
    expect(frontend!.meanScore.estimate).toBe(0.8);
  });

  it('writes json, markdown, and three plots as SVG and PNG', () => {
    expect(files.map((f) => f.slice(dir.length + 1)).sort()).toEqual([
      'rating-histogram.png',
      'rating-histogram.svg',
      'report.json',
      'report.md',
      'success-by-policy.png',
      'success-by-policy.svg',
      'turns-histogram.png',
      'turns-histogram.svg',
    ]);
    expect(JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'))).toEqual(JSON.parse(JSON.stringify(data)));
    const md = readFileSync(join(dir, 'report.md'), 'utf8');
    expect(md).toContain(
      '| starter | backend | human | 2 | 1 | 1 | 100.0% [20.7%, 100.0%] | 100.0% (n=1) | - | 4.50 [1.00, 5.00] (0/0/0/1/1) |',
    );
    expect(md).toContain('| sweet-0001 | frontend | human | 1 | 1 | 1 | 0.0% [0.0%, 79.3%] | 0.800 (n=1) | - |');
    const svg = readFileSync(join(dir, 'success-by-policy.svg'), 'utf8');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('>starter</text>');
    expect(svg).toContain('>sweet-0001</text>');
    expect(svg.match(/<rect [^>]*fill="#(?!ffffff)[0-9A-F]{6}"><title>/g)).toHaveLength(4);
    for (const name of ['success-by-policy', 'rating-histogram', 'turns-histogram']) {
      const png = PNG.sync.read(readFileSync(join(dir, `${name}.png`)));
      expect([png.width, png.height]).toEqual([1520, 840]);
      // The first series' colour (#0072B2) is drawn somewhere: the plot is not blank.
      let blue = 0;
      for (let i = 0; i < png.data.length; i += 4)
        if (png.data[i] === 0x00 && png.data[i + 1] === 0x72 && png.data[i + 2] === 0xb2) blue++;
      expect(blue, name).toBeGreaterThan(100);
    }
  });
});

describe('report pieces', () => {
  it('win rate: a task is won on higher mean similarity, ties count half, unshared tasks are skipped', () => {
    const m = (o: Record<string, number[]>) =>
      new Map(Object.entries(o).map(([k, v]) => [k, { sum: v.reduce((a, b) => a + b, 0), n: v.length }]));
    const w = winRateAgainst(
      m({ a: [0.9], b: [0.5], c: [0.5, 0.75], e: [1] }),
      m({ a: [0.8], b: [0.6], c: [0.625], d: [1] }),
    );
    expect(w.n).toBe(3);
    expect(w.estimate).toBe(0.5); // a won, b lost, c tied (0.625 each)
  });

  it('the accumulator computes frontend win rates against the reference policy', () => {
    const acc = new ReportAccumulator();
    const s = (policy: string, createdAt: number, task: string, score: number): SessionSummary => ({
      id: `${policy}-${task}`,
      taskId: task,
      simulated: true,
      status: 'answered',
      reward: score,
      task: { kind: 'frontend' },
      participant: { role: 'simulated' },
      policyVersion: { name: policy, createdAt: new Date(createdAt) },
      evaluation: { score, success: score > 0.9, testsPassed: null, testsTotal: null, metric: 'pixel-ssim' },
      ratings: [],
      turns: [{ role: 'agent' }, { role: 'human' }, { role: 'agent' }],
    });
    for (const [task, a, b] of [
      ['t1', 0.5, 0.7],
      ['t2', 0.6, 0.4],
      ['t3', 0.5, 0.9],
      ['t4', 0.5, 0.8],
    ] as const) {
      acc.add(s('old', 1, task, a));
      acc.add(s('new', 2, task, b));
    }
    const r = acc.finish({});
    expect(r.referencePolicy).toBe('old');
    const newer = r.groups.find((g) => g.policy === 'new')!;
    expect(newer.winRate!.estimate).toBe(0.75);
    expect(newer.winRate!.n).toBe(4);
    expect(r.groups.find((g) => g.policy === 'old')!.winRate).toBeNull();
    expect(newer.turns.histogram).toEqual([0, 0, 4]);
  });

  it('SVG charts escape labels and pick round ticks', () => {
    expect(niceStep(1)).toBe(0.2);
    expect(niceStep(37)).toBe(10);
    expect(niceStep(0)).toBe(1);
    const svg = barChartSvg({
      title: 'a < b & c',
      categories: ['x"y'],
      series: [{ name: '<s>', values: [3] }],
      yLabel: 'n',
    });
    expect(svg).toContain('a &lt; b &amp; c');
    expect(svg).toContain('x&quot;y');
    expect(svg).not.toContain('<s>');
  });
});

describe('count charts', () => {
  it('tick at whole numbers only', () => {
    const svg = barChartSvg({
      title: 't',
      categories: ['1'],
      series: [{ name: 's', values: [1] }],
      yLabel: 'n',
      integerTicks: true,
    });
    expect(svg).not.toContain('>0.20<');
    expect(svg).toContain('>1</text>');
  });
});
