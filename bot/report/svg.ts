// A grouped bar chart as a standalone SVG document: categories along x, one coloured bar per series in each,
// optional 95% interval whiskers, a y axis with round ticks and a legend. Enough for the report's three plots
// (success by policy version, rating histogram, turns histogram) without a plotting dependency.

export interface BarSeries {
  name: string;
  values: number[];
  /** Lower and upper interval bounds per category (NaN = none). */
  lo?: number[];
  hi?: number[];
}

export interface BarChart {
  title: string;
  categories: string[];
  series: BarSeries[];
  yLabel: string;
  xLabel?: string;
  /** Fixed top of the y axis (e.g. 1 for rates); default: rounded up from the data. */
  yMax?: number;
  /** Counts: ticks at whole numbers only. */
  integerTicks?: boolean;
  /** Format of tick and value labels. */
  format?: (v: number) => string;
  width?: number;
  height?: number;
}

// Colour-blind-safe palette (Okabe-Ito).
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Tick step of 1, 2 or 5 times a power of ten giving about `count` ticks up to `max`. */
export function niceStep(max: number, count = 5): number {
  if (!(max > 0)) return 1;
  const raw = max / count;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const m = raw / pow;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * pow;
}

const num = (v: number) => Number(v.toFixed(2));

export function barChartSvg(c: BarChart): string {
  const width = c.width ?? 760;
  const height = c.height ?? 420;
  const fmt = c.format ?? ((v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(2)));
  const margin = { top: 48, right: 20, bottom: 64 + 18 * Math.ceil(c.series.length / 3), left: 64 };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;

  let dataMax = 0;
  for (const s of c.series) {
    s.values.forEach((v, i) => {
      if (Number.isFinite(v)) dataMax = Math.max(dataMax, v);
      const h = s.hi?.[i];
      if (h !== undefined && Number.isFinite(h)) dataMax = Math.max(dataMax, h);
    });
  }
  const step = c.integerTicks ? Math.max(1, niceStep(c.yMax ?? dataMax)) : niceStep(c.yMax ?? dataMax);
  const yMax = c.yMax ?? Math.max(step, Math.ceil(dataMax / step) * step);
  const y = (v: number) => margin.top + plotH - (Math.max(0, Math.min(v, yMax)) / yMax) * plotH;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${width / 2}" y="26" text-anchor="middle" font-size="16" font-weight="bold">${escapeXml(c.title)}</text>`,
  );

  // Grid and y ticks.
  for (let v = 0; v <= yMax + step / 1e6; v += step) {
    const yy = num(y(v));
    out.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${yy}" y2="${yy}" stroke="#e0e0e0"/>`);
    out.push(`<text x="${margin.left - 6}" y="${yy + 4}" text-anchor="end">${escapeXml(fmt(v))}</text>`);
  }
  out.push(
    `<text transform="translate(16 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escapeXml(c.yLabel)}</text>`,
  );

  const nCat = Math.max(1, c.categories.length);
  const band = plotW / nCat;
  const nSeries = Math.max(1, c.series.length);
  const barW = Math.max(2, (band * 0.8) / nSeries);
  c.categories.forEach((cat, i) => {
    const x0 = margin.left + band * i + band * 0.1;
    c.series.forEach((s, j) => {
      const v = s.values[i];
      if (v === undefined || !Number.isFinite(v)) return;
      const x = x0 + j * barW;
      const colour = PALETTE[j % PALETTE.length]!;
      out.push(
        `<rect x="${num(x)}" y="${num(y(v))}" width="${num(barW - 1)}" height="${num(y(0) - y(v))}" fill="${colour}"><title>${escapeXml(`${s.name}, ${cat}: ${fmt(v)}`)}</title></rect>`,
      );
      if (c.categories.length * c.series.length <= 24) {
        out.push(
          `<text x="${num(x + (barW - 1) / 2)}" y="${num(y(v) - 4)}" text-anchor="middle" font-size="10" fill="#444">${escapeXml(fmt(v))}</text>`,
        );
      }
      const lo = s.lo?.[i];
      const hi = s.hi?.[i];
      if (lo !== undefined && hi !== undefined && Number.isFinite(lo) && Number.isFinite(hi)) {
        const cx = num(x + (barW - 1) / 2);
        const w = Math.min(6, barW / 3);
        out.push(
          `<path d="M${cx} ${num(y(lo))}V${num(y(hi))}M${num(cx - w)} ${num(y(lo))}H${num(cx + w)}M${num(cx - w)} ${num(y(hi))}H${num(cx + w)}" stroke="#222" stroke-width="1.2" fill="none"/>`,
        );
      }
    });
    out.push(
      `<text x="${num(margin.left + band * (i + 0.5))}" y="${margin.top + plotH + 16}" text-anchor="middle">${escapeXml(cat)}</text>`,
    );
  });
  out.push(`<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${num(y(0))}" y2="${num(y(0))}" stroke="#333"/>`);
  if (c.xLabel)
    out.push(
      `<text x="${margin.left + plotW / 2}" y="${margin.top + plotH + 36}" text-anchor="middle">${escapeXml(c.xLabel)}</text>`,
    );

  // Legend, three entries a row.
  c.series.forEach((s, j) => {
    const lx = margin.left + (j % 3) * (plotW / 3);
    const ly = height - margin.bottom + 50 + Math.floor(j / 3) * 18;
    out.push(`<rect x="${num(lx)}" y="${ly - 10}" width="12" height="12" fill="${PALETTE[j % PALETTE.length]}"/>`);
    out.push(`<text x="${num(lx + 18)}" y="${ly}">${escapeXml(s.name)}</text>`);
  });
  if (c.categories.length === 0) {
    out.push(`<text x="${width / 2}" y="${margin.top + plotH / 2}" text-anchor="middle" fill="#777">no data</text>`);
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}
