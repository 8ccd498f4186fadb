import { describe, expect, it } from 'vitest';
import { PNG } from 'pngjs';
import { colourName, compareScreenshots, describeVisualDifferences, type Rgb } from '../../tasks/visual-diff.ts';

type Rect = { x: number; y: number; w: number; h: number; colour: Rgb };

/** A synthetic "screenshot": a background and filled rectangles (fractions of width / height). */
function png(width: number, height: number, background: Rgb, rects: Rect[] = []): Buffer {
  const img = new PNG({ width, height });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let c = background;
      for (const r of rects) {
        if (x >= r.x * width && x < (r.x + r.w) * width && y >= r.y * height && y < (r.y + r.h) * height) c = r.colour;
      }
      const i = (y * width + x) * 4;
      img.data[i] = c[0];
      img.data[i + 1] = c[1];
      img.data[i + 2] = c[2];
      img.data[i + 3] = 255;
    }
  }
  return PNG.sync.write(img);
}

const WHITE: Rgb = [255, 255, 255];
const NAVY: Rgb = [30, 58, 138]; // Tailwind blue-900
const YELLOW: Rgb = [245, 158, 11]; // Tailwind yellow-500 (amber)
const RED: Rgb = [220, 38, 38];

const sentences = (s: string) => s.split(/(?<=\.)\s+/).filter(Boolean);

describe('colourName', () => {
  it('names the colours a person would', () => {
    expect(colourName(WHITE)).toBe('white');
    expect(colourName([0, 0, 0])).toBe('black');
    expect(colourName([128, 128, 128])).toBe('gray');
    expect(colourName(NAVY)).toBe('dark blue');
    expect(colourName(RED)).toBe('red');
    expect(colourName([252, 211, 77])).toBe('yellow');
    expect(colourName([16, 185, 129])).toBe('green');
    expect(colourName([219, 234, 254])).toBe('light blue');
  });
});

describe('describeVisualDifferences', () => {
  const header: Rect = { x: 0, y: 0, w: 1, h: 0.3, colour: NAVY };

  it('says so when the pages match', () => {
    const a = png(120, 200, WHITE, [header]);
    expect(describeVisualDifferences(a, a)).toBe('That looks very close to what I have in mind.');
  });

  it('names the region and colours that differ most', () => {
    const reference = png(120, 200, WHITE, [header]);
    const draft = png(120, 200, WHITE);
    const text = describeVisualDifferences(reference, draft);
    expect(text).toMatch(/^The top of my page is mostly dark blue, but in yours it is white\.$/);
    expect(sentences(text).length).toBeLessThanOrEqual(2);
  });

  it('finds a difference at the bottom right', () => {
    const reference = png(150, 150, WHITE, [{ x: 0.67, y: 0.67, w: 0.33, h: 0.33, colour: RED }]);
    const draft = png(150, 150, WHITE);
    const diff = compareScreenshots(reference, draft);
    expect(diff.observations[0]).toMatchObject({ kind: 'colour', cells: [8], area: 'bottom right' });
    expect(describeVisualDifferences(reference, draft)).toMatch(/bottom right of my page is mostly red/);
  });

  it('mentions the background and the page height, in at most two sentences', () => {
    const reference = png(100, 600, YELLOW, [header]);
    const draft = png(100, 200, WHITE, [header]);
    const text = describeVisualDifferences(reference, draft);
    expect(text).toMatch(/background is (orange|yellow), not white/);
    expect(text).toMatch(/much taller than yours \(about 600 px against 200 px\)/);
    expect(sentences(text).length).toBeLessThanOrEqual(2);
  });

  it('notices content where the draft is plain', () => {
    // Stripes stand in for lines of text: same dominant colour, much more detail.
    const stripes: Rect[] = Array.from({ length: 8 }, (_, k) => ({
      x: 0.05,
      y: 0.36 + k * 0.035,
      w: 0.9,
      h: 0.015,
      colour: [20, 20, 20] as Rgb,
    }));
    const reference = png(200, 300, WHITE, stripes);
    const draft = png(200, 300, WHITE);
    expect(describeVisualDifferences(reference, draft)).toMatch(/^The middle[a-z ]* of my page has more in it/);
  });

  it('refuses a buffer that is not a PNG with a clear error', () => {
    expect(() => describeVisualDifferences(Buffer.from('not a png'), png(10, 10, WHITE))).toThrow(
      /reference screenshot is not a readable PNG/,
    );
  });
});
