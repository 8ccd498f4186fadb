// The calibration report (`sweetloop study calibrate NAME --out DIR`): calibration.json (every figure),
// calibration.md (the table and what each metric means) and one figure, calibration.svg and .png: a panel a metric,
// people against the simulator with 95% intervals over tasks, drawn by svg.ts and rendered by png.ts (Chromium).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  formatDifference,
  formatLeakRate,
  formatValue,
  type CalibrationRow,
  type LeakRate,
} from '../../tasks/calibration.ts';
import { openSvgRenderer } from './png.ts';
import { barChartSvg, escapeXml } from './svg.ts';

/** A study's calibration (bot/report/calibration.ts calibrate): what the report writes out. */
export interface CalibrationResult {
  study: string;
  simulator: string;
  gamesPerTask: number;
  seed: number;
  /** Tasks people answered (each gets the games), sessions of people read, games played. */
  tasks: number;
  peopleSessions: number;
  games: number;
  /** Policy versions that played, by name, with their games. */
  policies: { name: string; games: number }[];
  rows: CalibrationRow[];
  /** Each side's share of sessions whose collaborator replies contain the reference's code, over all its sessions. */
  leak: { people: LeakRate; simulator: LeakRate };
}

const PANEL = { width: 280, height: 300, columns: 4 };

/** One SVG with a panel a metric (the metrics have different scales, so each gets its own axis). */
export function calibrationSvg(r: CalibrationResult): string {
  const rows = Math.ceil(r.rows.length / PANEL.columns);
  const top = 40;
  const width = PANEL.width * PANEL.columns;
  const height = top + PANEL.height * rows;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${width / 2}" y="26" text-anchor="middle" font-size="16" font-weight="bold">${escapeXml(`Study ${r.study}: people against ${r.simulator}, paired by task (95% intervals over tasks)`)}</text>`,
  ];
  r.rows.forEach((row, i) => {
    const panel = barChartSvg({
      title: row.label,
      categories: [`${row.tasks} task(s)`],
      series: [
        { name: 'people', values: [row.people.estimate], lo: [row.people.lo], hi: [row.people.hi] },
        { name: 'simulator', values: [row.simulator.estimate], lo: [row.simulator.lo], hi: [row.simulator.hi] },
      ],
      yLabel: row.share ? 'share' : 'mean',
      xLabel: `diff ${formatDifference(row)}`,
      ...(row.share ? { yMax: 1 } : {}),
      format: (v) => formatValue(v, row.share),
      width: PANEL.width,
      height: PANEL.height,
    });
    const x = (i % PANEL.columns) * PANEL.width;
    const y = top + Math.floor(i / PANEL.columns) * PANEL.height;
    out.push(panel.trim().replace(/^<svg /, `<svg x="${x}" y="${y}" `));
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** The leak rates as the command and the report say them. */
export function leakLine(r: Pick<CalibrationResult, 'leak'>): string {
  return `leak rate (sessions whose collaborator replies contain the reference's code), 95% Wilson interval: people ${formatLeakRate(r.leak.people)}; simulator ${formatLeakRate(r.leak.simulator)}`;
}

export function calibrationMarkdown(r: CalibrationResult): string {
  const lines = [
    `# Calibration of ${r.simulator} against people, study ${r.study}`,
    '',
    `${r.peopleSessions} answered session(s) of people on ${r.tasks} task(s); ${r.games} simulated game(s), ${r.gamesPerTask} a task, seed ${r.seed}, played by ${r.policies.map((p) => `${p.name} (${p.games})`).join(', ')} (each task's games by its people's versions, in turn).`,
    'Each metric is averaged per task on each side; "people - simulator" is the mean over tasks of the per-task difference, with a Student-t 95% interval over tasks.',
    '',
    '| metric | people | simulator | people - simulator [95% CI] | tasks |',
    '|---|---:|---:|---:|---:|',
    ...r.rows.map(
      (x) =>
        `| ${x.label} | ${formatValue(x.people.estimate, x.share)} | ${formatValue(x.simulator.estimate, x.share)} | ${formatDifference(x)} | ${x.tasks} |`,
    ),
    '',
    'Metrics (tasks/calibration.ts): success and % tests passed (frontend: similarity) of the answer; agent messages; mean characters a reply;',
    "share of replies saying the collaborator does not know; distinct facts of the hidden information (backend: the reference's numbers",
    'other than 0 and 1 and its quoted strings; frontend: the words and colours of the target page; less what the description says)',
    'stated in the replies, per reply; sessions whose replies paste the hidden reference (tasks/quality.ts).',
    '',
    `${leakLine(r)[0]!.toUpperCase()}${leakLine(r).slice(1)}: every session of each side, not paired by task.`,
    '',
    '![people against the simulator](calibration.png)',
    '',
  ];
  return lines.join('\n');
}

/** Writes the report into `outDir`; the PNG only with a Chromium. Returns the files written. */
export async function writeCalibrationReport(
  outDir: string,
  r: CalibrationResult,
  chromiumPath: string | null,
): Promise<string[]> {
  await mkdir(outDir, { recursive: true });
  const files: string[] = [];
  const put = async (name: string, content: string | Buffer) => {
    const path = join(outDir, name);
    await writeFile(path, content);
    files.push(path);
  };
  const svg = calibrationSvg(r);
  await put('calibration.json', JSON.stringify(r, null, 2) + '\n');
  await put('calibration.md', calibrationMarkdown(r));
  await put('calibration.svg', svg);
  if (chromiumPath) {
    const renderer = await openSvgRenderer(chromiumPath);
    try {
      await put('calibration.png', await renderer.toPng(svg));
    } finally {
      await renderer.close();
    }
  }
  return files;
}
