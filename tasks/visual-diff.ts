// What a person looking at two screenshots would say first: where the agent's draft differs most from the page
// they have in mind, in colour names and rough regions, in at most two sentences. The frontend half of the
// rule-based collaborator (tasks/simulator.ts); it never sees HTML, only the two PNGs, like the human does.
import { PNG } from 'pngjs';

export type Rgb = [number, number, number];

export interface CellStats {
  /** Most common colour (4-bit-per-channel bins, averaged within the winning bin). */
  dominant: Rgb;
  mean: Rgb;
  /** Share of sampled pixels on an edge (text, borders, pictures): how much is in the region. */
  edges: number;
}

/** A colour that stands out (saturated), with how much of the page it covers and where. */
export interface AccentColour {
  name: string;
  share: number;
  /** Cell index (row-major) holding most of it. */
  cell: number;
}

export interface ImageStats {
  width: number;
  height: number;
  background: Rgb;
  /** rows x cols, row-major; rows split the page's own height (top/middle/bottom). */
  cells: CellStats[];
  accents: AccentColour[];
}

export interface Observation {
  kind: 'colour' | 'content' | 'background' | 'height' | 'accent';
  /** How much a person would care, roughly 0..1. */
  salience: number;
  /** Cells it concerns (row-major), for merging neighbours and avoiding repeats. */
  cells: number[];
  sentence: string;
  /** For region observations: what changed ("dark blue|white", "more") and where, to merge two alike. */
  key?: string;
  area?: string;
}

export interface VisualDiff {
  reference: ImageStats;
  draft: ImageStats;
  /** draft height / reference height. */
  heightRatio: number;
  /** Most salient first. */
  observations: Observation[];
}

const ROWS = 3;
const COLS = 3;
const ROW_NAMES = ['top', 'middle', 'bottom'] as const;
const COL_NAMES = ['left', 'centre', 'right'] as const;
/** Below this salience nothing is worth saying. */
const THRESHOLD = 0.04;
const SAMPLES_PER_CELL = 6000;
/** A saturated colour must cover this share of the page to count as part of its look. */
const ACCENT_SHARE = 0.004;

function decode(png: Buffer, which: string): PNG {
  try {
    return PNG.sync.read(png);
  } catch (err) {
    throw new Error(`visual diff: the ${which} screenshot is not a readable PNG (${(err as Error).message})`);
  }
}

const dist = (a: Rgb, b: Rgb) => Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]) / 441.673;

// Transparent pixels are seen against white, as a browser would show them.
function pixel(img: PNG, x: number, y: number): Rgb {
  const i = (img.width * y + x) * 4;
  const a = img.data[i + 3]! / 255;
  return [img.data[i]! * a + 255 * (1 - a), img.data[i + 1]! * a + 255 * (1 - a), img.data[i + 2]! * a + 255 * (1 - a)];
}

function hsl([r, g, b]: Rgb): { h: number; s: number; l: number } {
  const R = r / 255;
  const G = g / 255;
  const B = b / 255;
  const max = Math.max(R, G, B);
  const min = Math.min(R, G, B);
  const l = (max + min) / 2;
  const d = max - min;
  const s = d === 0 ? 0 : d / (1 - Math.abs(2 * l - 1));
  let h = 0;
  if (d > 0) {
    if (max === R) h = ((G - B) / d) % 6;
    else if (max === G) h = (B - R) / d + 2;
    else h = (R - G) / d + 4;
    h = (h * 60 + 360) % 360;
  }
  return { h, s, l };
}

/** A plain colour name a person would use ("dark blue", "light gray", "yellow"). */
export function colourName(rgb: Rgb): string {
  const { h, s, l } = hsl(rgb);
  const d = (Math.max(...rgb) - Math.min(...rgb)) / 255;
  if (l > 0.975) return 'white';
  if (l < 0.08) return 'black';
  if (s < 0.15 || d < 0.08) return l > 0.7 ? 'light gray' : l < 0.3 ? 'dark gray' : 'gray';
  let name: string;
  if (h < 15 || h >= 345) name = 'red';
  else if (h < 40) name = l < 0.35 ? 'brown' : 'orange';
  else if (h < 68) name = l < 0.3 ? 'olive' : 'yellow';
  else if (h < 170) name = 'green';
  else if (h < 195) name = 'teal';
  else if (h < 250) name = 'blue';
  else if (h < 280) name = 'indigo';
  else if (h < 320) name = 'purple';
  else name = 'pink';
  if (name === 'brown' || name === 'olive') return name;
  if (l > 0.75) return `light ${name}`;
  if (l < 0.36) return `dark ${name}`;
  return name;
}

/** The hue family without light/dark, for accents ("pink", "blue"). */
function family(rgb: Rgb): string {
  return colourName(rgb).replace(/^(light|dark) /, '');
}

export function imageStats(png: Buffer, which = 'given'): ImageStats {
  const img = decode(png, which);
  const cells: CellStats[] = [];
  const pageBins = new Map<number, { n: number; sum: Rgb }>();
  const accentCells = new Map<string, number[]>();
  for (let r = 0; r < ROWS; r++) {
    for (let c = 0; c < COLS; c++) {
      const x0 = Math.floor((c * img.width) / COLS);
      const x1 = Math.max(x0 + 1, Math.floor(((c + 1) * img.width) / COLS));
      const y0 = Math.floor((r * img.height) / ROWS);
      const y1 = Math.max(y0 + 1, Math.floor(((r + 1) * img.height) / ROWS));
      const step = Math.max(1, Math.floor(Math.sqrt(((x1 - x0) * (y1 - y0)) / SAMPLES_PER_CELL)));
      const bins = new Map<number, { n: number; sum: Rgb }>();
      const mean: Rgb = [0, 0, 0];
      let n = 0;
      let edges = 0;
      for (let y = y0; y < y1 && y < img.height; y += step) {
        for (let x = x0; x < x1 && x < img.width; x += step) {
          const p = pixel(img, x, y);
          n++;
          mean[0] += p[0];
          mean[1] += p[1];
          mean[2] += p[2];
          // Compared with the real neighbours (not the next sample), so thin text strokes count.
          if (
            (x + 1 < img.width && dist(p, pixel(img, x + 1, y)) > 0.12) ||
            (y + 1 < img.height && dist(p, pixel(img, x, y + 1)) > 0.12)
          )
            edges++;
          const key = ((p[0] >> 4) << 8) | ((p[1] >> 4) << 4) | (p[2] >> 4);
          for (const m of [bins, pageBins]) {
            const bin = m.get(key) ?? { n: 0, sum: [0, 0, 0] as Rgb };
            bin.n++;
            bin.sum[0] += p[0];
            bin.sum[1] += p[1];
            bin.sum[2] += p[2];
            m.set(key, bin);
          }
          const { s, l } = hsl(p);
          if (s > 0.4 && l > 0.15 && l < 0.85) {
            const fam = family(p);
            const counts = accentCells.get(fam) ?? new Array<number>(ROWS * COLS).fill(0);
            // Weighted by the area a sample stands for, since cells may be sampled at different steps.
            counts[r * COLS + c]! += (step * step) / (img.width * img.height);
            accentCells.set(fam, counts);
          }
        }
      }
      let best = { n: 0, sum: [255, 255, 255] as Rgb };
      for (const bin of bins.values()) if (bin.n > best.n) best = bin;
      const dominant: Rgb =
        best.n > 0 ? [best.sum[0] / best.n, best.sum[1] / best.n, best.sum[2] / best.n] : [255, 255, 255];
      cells.push({
        dominant,
        mean: [mean[0] / Math.max(1, n), mean[1] / Math.max(1, n), mean[2] / Math.max(1, n)],
        edges: edges / Math.max(1, n),
      });
    }
  }
  let bg = { n: 0, sum: [255, 255, 255] as Rgb };
  for (const bin of pageBins.values()) if (bin.n > bg.n) bg = bin;
  const accents: AccentColour[] = [];
  const background: Rgb = bg.n > 0 ? [bg.sum[0] / bg.n, bg.sum[1] / bg.n, bg.sum[2] / bg.n] : [255, 255, 255];
  for (const [name, counts] of accentCells) {
    // The page's own background colour is not something that stands out on it.
    if (name === family(background)) continue;
    const share = counts.reduce((a, b) => a + b, 0);
    if (share >= ACCENT_SHARE) accents.push({ name, share, cell: counts.indexOf(Math.max(...counts)) });
  }
  accents.sort((a, b) => b.share - a.share);
  return {
    width: img.width,
    height: img.height,
    background,
    cells,
    accents,
  };
}

function cellName(cell: number): string {
  const row = Math.floor(cell / COLS);
  const col = cell % COLS;
  if (row === 1 && col === 1) return 'middle';
  return `${ROW_NAMES[row]} ${COL_NAMES[col]}`;
}

/** A full band or side with the same change is named as one ("the top", "the left side"). */
function areaName(cells: number[]): string {
  if (cells.length === 1) return cellName(cells[0]!);
  const rows = new Set(cells.map((c) => Math.floor(c / COLS)));
  const cols = new Set(cells.map((c) => c % COLS));
  if (rows.size === 1 && cells.length === COLS) return ROW_NAMES[[...rows][0]!]!;
  if (rows.size === 1) {
    const row = ROW_NAMES[[...rows][0]!]!;
    return `${row} ${cells.map((c) => COL_NAMES[c % COLS]).join(' and ')}`;
  }
  if (cols.size === 1 && cells.length === ROWS) return `${COL_NAMES[[...cols][0]!]} side`;
  if (cells.length === ROWS * COLS) return 'whole page';
  return cellName(cells[0]!);
}

/** Groups cells with the same key into a full row or column when they make one, else keeps them apart. */
function groupCells(
  keyed: { cell: number; key: string; salience: number }[],
): { cells: number[]; key: string; salience: number }[] {
  const out: { cells: number[]; key: string; salience: number }[] = [];
  const used = new Set<number>();
  const sorted = [...keyed].sort((a, b) => b.salience - a.salience);
  for (const k of sorted) {
    if (used.has(k.cell)) continue;
    const same = keyed.filter((o) => o.key === k.key && !used.has(o.cell));
    const row = same.filter((o) => Math.floor(o.cell / COLS) === Math.floor(k.cell / COLS));
    const col = same.filter((o) => o.cell % COLS === k.cell % COLS);
    const group =
      same.length === ROWS * COLS
        ? same
        : row.length >= 2
          ? row
          : col.length === ROWS && k.cell % COLS !== 1
            ? col
            : [k];
    group.forEach((g) => used.add(g.cell));
    // A band that changed as a whole matters more than any one of its cells.
    out.push({
      cells: group.map((g) => g.cell).sort((a, b) => a - b),
      key: k.key,
      salience: k.salience * (group.length > 1 ? 1.2 : 1),
    });
  }
  return out;
}

const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function regionSentence(kind: 'colour' | 'content', key: string, where: string, plural: boolean): string {
  if (kind === 'colour') {
    const [mine, yours] = key.split('|');
    return capital(
      `${where} of my page ${plural ? 'are' : 'is'} mostly ${mine}, but in yours ${plural ? 'they are' : 'it is'} ${yours}.`,
    );
  }
  return key === 'more'
    ? capital(
        `${where} of my page ${plural ? 'have' : 'has'} more in ${plural ? 'them' : 'it'} (text, pictures or boxes) than yours.`,
      )
    : capital(`${where} of my page ${plural ? 'are' : 'is'} emptier than yours; you have more there than I want.`);
}

/** The measurements and observations behind the description. */
export function compareScreenshots(reference: Buffer, draft: Buffer): VisualDiff {
  const ref = imageStats(reference, 'reference');
  const dr = imageStats(draft, 'draft');
  const observations: Observation[] = [];
  const refBg = colourName(ref.background);
  const drBg = colourName(dr.background);

  if (refBg !== drBg) {
    observations.push({
      kind: 'background',
      salience: 0.1 + dist(ref.background, dr.background),
      cells: [],
      sentence: `My page's background is ${refBg}, not ${drBg}.`,
    });
  }

  // Regions whose main colour differs by name.
  const colourKeyed = ref.cells
    .map((rc, cell) => {
      const dc = dr.cells[cell]!;
      const mine = colourName(rc.dominant);
      const yours = colourName(dc.dominant);
      return {
        cell,
        key: `${mine}|${yours}`,
        salience: mine === yours ? 0 : 0.6 * dist(rc.dominant, dc.dominant) + 0.3 * dist(rc.mean, dc.mean),
      };
    })
    .filter((o) => o.salience >= THRESHOLD);
  for (const g of groupCells(colourKeyed)) {
    const [mine, yours] = g.key.split('|');
    // The background observation already says it when the change is from one page colour to the other.
    if (refBg !== drBg && mine === refBg && yours === drBg) continue;
    const area = areaName(g.cells);
    observations.push({
      kind: 'colour',
      salience: g.salience,
      cells: g.cells,
      key: g.key,
      area,
      sentence: regionSentence('colour', g.key, `the ${area}`, false),
    });
  }

  // Regions with much more or much less in them (text, pictures, boxes).
  const contentKeyed = ref.cells
    .map((rc, cell) => {
      const a = rc.edges;
      const b = dr.cells[cell]!.edges;
      // Text is sparse: a few lines cover 1-3% of a region, so the relative change counts as well as the absolute.
      return {
        cell,
        key: a > b ? 'more' : 'less',
        salience: 1.5 * Math.abs(a - b) + (0.1 * Math.abs(a - b)) / (a + b + 0.02),
      };
    })
    .filter((o) => o.salience >= THRESHOLD);
  // A block that changed colour also changes the edges around it: that is the colour observation's news.
  const colourCells = new Set(observations.filter((o) => o.kind === 'colour').flatMap((o) => o.cells));
  for (const g of groupCells(contentKeyed.filter((o) => !colourCells.has(o.cell)))) {
    const area = areaName(g.cells);
    observations.push({
      kind: 'content',
      salience: g.salience,
      cells: g.cells,
      key: g.key,
      area,
      sentence: regionSentence('content', g.key, `the ${area}`, false),
    });
  }

  // Saturated colours one page uses and the other does not (a pink button, a blue banner).
  // A colour already named by a region observation is not news as an accent.
  const named = observations
    .filter((o) => o.kind === 'colour')
    .flatMap((o) => (o.key ?? '').split('|').map((n) => n.replace(/^(light|dark) /, '')));
  const drNames = new Set([...dr.accents.map((a) => a.name), ...named]);
  const refNames = new Set([...ref.accents.map((a) => a.name), ...named]);
  for (const a of ref.accents) {
    if (drNames.has(a.name)) continue;
    observations.push({
      kind: 'accent',
      salience: 0.06 + 2 * a.share,
      cells: [a.cell],
      sentence: `My page has something ${a.name} in the ${cellName(a.cell)} that yours lacks.`,
    });
  }
  for (const a of dr.accents) {
    if (refNames.has(a.name)) continue;
    observations.push({
      kind: 'accent',
      salience: 0.05 + 2 * a.share,
      cells: [a.cell],
      sentence: `Your page has ${a.name} in the ${cellName(a.cell)}, but mine has no ${a.name} at all.`,
    });
  }

  const heightRatio = dr.height / Math.max(1, ref.height);
  if (heightRatio < 0.8 || heightRatio > 1.25) {
    const taller = heightRatio < 1;
    const much = taller ? heightRatio < 0.5 : heightRatio > 2;
    observations.push({
      kind: 'height',
      salience: 0.25 * Math.abs(Math.log(heightRatio)),
      cells: [],
      sentence: `My page is ${much ? 'much ' : ''}${taller ? 'taller' : 'shorter'} than yours (about ${ref.height} px against ${dr.height} px).`,
    });
  }

  observations.sort((a, b) => b.salience - a.salience);
  return { reference: ref, draft: dr, heightRatio, observations };
}

/**
 * At most two sentences, from the point of view of the person who has the reference in mind: the two most
 * salient differences (region colours, amount of content, standout colours, background, page height), the
 * second only if it concerns other regions than the first.
 */
export function describeVisualDifferences(reference: Buffer, draft: Buffer): string {
  const { observations } = compareScreenshots(reference, draft);
  const picked: Observation[] = [];
  for (const o of observations) {
    if (o.salience < THRESHOLD || picked.length === 2) break;
    const overlaps = picked.some((p) => p.kind === o.kind && p.cells.some((c) => o.cells.includes(c)));
    if (!overlaps) picked.push(o);
  }
  if (picked.length === 0) return 'That looks very close to what I have in mind.';
  const [a, b] = picked;
  // Two regions with the same change read better as one sentence.
  if (
    a &&
    b &&
    a.kind === b.kind &&
    (a.kind === 'colour' || a.kind === 'content') &&
    a.key !== undefined &&
    a.key === b.key &&
    a.area &&
    b.area
  ) {
    return regionSentence(a.kind, a.key, `the ${a.area} and the ${b.area}`, true);
  }
  return picked.map((p) => capital(p.sentence)).join(' ');
}

/**
 * The rule-based simulator's frontend plug-in (`describeVisualDifference` in tasks/simulator.ts): renders both
 * pages with `screenshot` (e.g. tasks/render.ts) and describes how they differ. The reference, the same page
 * for a whole game, is rendered once and kept (the last few pages).
 */
export function screenshotDescriber(
  screenshot: (html: string) => Promise<Buffer>,
  options: { cacheSize?: number } = {},
): (input: { referenceHtml: string; draftHtml: string; signal?: AbortSignal }) => Promise<string> {
  const cacheSize = options.cacheSize ?? 8;
  const cache = new Map<string, Promise<Buffer>>();
  const referenceShot = (html: string): Promise<Buffer> => {
    let shot = cache.get(html);
    if (shot) {
      cache.delete(html);
    } else {
      shot = screenshot(html);
      // A failed render is not remembered: the next draft tries again.
      shot.catch(() => cache.delete(html));
    }
    cache.set(html, shot);
    while (cache.size > cacheSize) cache.delete(cache.keys().next().value as string);
    return shot;
  };
  return async ({ referenceHtml, draftHtml, signal }) => {
    signal?.throwIfAborted();
    const [reference, draft] = await Promise.all([referenceShot(referenceHtml), screenshot(draftHtml)]);
    signal?.throwIfAborted();
    return describeVisualDifferences(reference, draft);
  };
}
