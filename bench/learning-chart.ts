// bench:learning's closed-loop curve drawn as a chart (SVG, PNG with Chromium); bench/learning.ts measures it.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_CHROMIUM_PATH } from '../tasks/render.ts';
import type { Interval } from '../tasks/stats.ts';
import { barChartSvg } from '../bot/report/svg.ts';
import { openSvgRenderer } from '../bot/report/png.ts';

export interface CurvePoint {
  round: number;
  version: string;
  testsPassed: Interval;
  success: Interval;
  /** Simulated training sessions the round's policy was trained on (all rounds so far). */
  sessions: number;
  vsZeroShot?: { difference: Interval; p: number };
}

/** The curve as a bar chart with intervals: SVG always, PNG when Chromium is there. */
export async function drawCurve(curve: readonly CurvePoint[], out: string): Promise<void> {
  const svg = barChartSvg({
    title: 'Closed loop: held-out % tests passed after each round (95% t intervals)',
    categories: curve.map((p) => `round ${p.round}`),
    series: [
      {
        name: 'SWEET-RL loop',
        values: curve.map((p) => p.testsPassed.estimate),
        lo: curve.map((p) => p.testsPassed.lo),
        hi: curve.map((p) => p.testsPassed.hi),
      },
    ],
    yLabel: '% tests passed',
    xLabel: 'round (0 = the starter)',
    format: (v) => `${(v * 100).toFixed(0)}%`,
  });
  writeFileSync(join(out, 'learning-curve.svg'), svg);
  // The same variables `sweetloop` reads (bin/config.ts); a benchmark does not import the composition root.
  const chromium = process.env.CHROMIUM_PATH || DEFAULT_CHROMIUM_PATH;
  if (!existsSync(chromium)) return;
  const renderer = await openSvgRenderer(chromium);
  try {
    writeFileSync(join(out, 'learning-curve.png'), await renderer.toPng(svg));
  } finally {
    await renderer.close();
  }
}
