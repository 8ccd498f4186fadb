// What the offline renderer (render.ts) answers in place of the network: the Tailwind 2.x stylesheet from the
// tailwindcss npm package, and for picsum.photos a stand-in photo of the size the URL asks for.
//
// The stand-in is built so that the Node process never draws or compresses a picture: each row is one colour, and
// the PNG is spliced from pieces (placeholderPng), so a page asking for many huge pictures costs this process a
// fraction of a millisecond each, never anything that grows with their area. Chromium decodes and draws them.
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { constants, crc32, deflateRawSync } from 'node:zlib';

const require = createRequire(import.meta.url);

/** The dist directory of the tailwindcss npm package (2.2.19), found from this module, not from cwd. */
export function tailwindDistDir(): string {
  return join(dirname(require.resolve('tailwindcss/package.json')), 'dist');
}

const TAILWIND_CDN =
  /^https?:\/\/(?:cdn\.jsdelivr\.net\/npm|unpkg\.com)\/tailwindcss@(\d[^/]*)\/dist\/([\w.-]+\.css)(?:[?#].*)?$/;
const PICSUM =
  /^https?:\/\/(?:i\.)?picsum\.photos\/(?:(?:id|seed)\/[^/]+\/)?(\d+)(?:\/(\d+))?(?:\.\w+)?\/?(?:[?#].*)?$/;
export const MAX_PLACEHOLDER_SIDE = 2000;

const cssCache = new Map<string, Buffer | null>();

function tailwindFile(name: string): Buffer | null {
  if (!cssCache.has(name)) {
    const path = join(tailwindDistDir(), name);
    cssCache.set(name, /^[\w.-]+\.css$/.test(name) && existsSync(path) ? readFileSync(path) : null);
  }
  return cssCache.get(name)!;
}

const PNG_SIGNATURE = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);

const side = (n: number) => Math.max(1, Math.min(MAX_PLACEHOLDER_SIDE, Math.round(n)));

/**
 * Row `y` of a stand-in photo `h` rows high: a soft sky-to-ground gradient with a lighter band, so image areas look
 * like pictures (mid tones, some structure) rather than blank boxes. Every pixel of a row has this colour.
 */
export function placeholderColor(y: number, h: number): [number, number, number] {
  const t = h === 1 ? 0 : y / (h - 1);
  const band = Math.exp(-(((t - 0.55) / 0.08) ** 2)) * 40;
  return [Math.round(135 - 60 * t + band), Math.round(165 - 45 * t + band), Math.round(200 - 110 * t + band * 0.5)];
}

const MOD_ADLER = 65521;
// One row of image data as it stands in the zlib stream, once per width (at most MAX_PLACEHOLDER_SIDE of them, a
// few dozen bytes each): a stored block of 5 bytes (the "Sub" filter type and the row's first pixel, its colour
// written per row), then the row's other pixels, all zeros once filtered, deflated on their own with a sync flush
// so that they end byte-aligned and can follow one another.
const rowTemplates = new Map<number, Buffer>();

function rowTemplate(width: number): Buffer {
  let row = rowTemplates.get(width);
  if (!row) {
    const zeros =
      width > 1
        ? deflateRawSync(Buffer.alloc(4 * (width - 1)), { finishFlush: constants.Z_SYNC_FLUSH })
        : Buffer.alloc(0);
    row = Buffer.concat([Buffer.from([0, 5, 0, 0xfa, 0xff, 1, 0, 0, 0, 255]), zeros]);
    rowTemplates.set(width, row);
  }
  return row;
}

/** Writes a PNG chunk's length, type and CRC around `length` bytes of data already at `at + 8`; returns its end. */
function sealChunk(png: Buffer, at: number, type: string, length: number): number {
  png.writeUInt32BE(length, at);
  png.write(type, at + 4, 'latin1');
  png.writeUInt32BE(crc32(png.subarray(at + 4, at + 8 + length)), at + 8 + length);
  return at + 12 + length;
}

/**
 * The stand-in photo for a picsum.photos URL of `width` x `height` (each side clamped to 1..2000), an RGBA PNG.
 * Every row is one colour, so with PNG's "Sub" filter a row is its first pixel and then zeros: the image data is
 * the width's row template repeated, with each row's colour written in, and no compression per request. The
 * work grows with the height alone (about 76 KB and a fraction of a millisecond for 2000 x 2000).
 */
export function placeholderPng(width: number, height: number): Buffer {
  const w = side(width);
  const h = side(height);
  const row = rowTemplate(w);
  const zeroBytes = 4 * (w - 1);
  // zlib header, the rows, an empty final stored block, Adler-32.
  const idatLength = 2 + h * row.length + 5 + 4;
  const png = Buffer.allocUnsafe(PNG_SIGNATURE.length + (12 + 13) + (12 + idatLength) + 12);
  PNG_SIGNATURE.copy(png, 0);
  const ihdr = PNG_SIGNATURE.length;
  png.writeUInt32BE(w, ihdr + 8);
  png.writeUInt32BE(h, ihdr + 12);
  png.set([8, 6, 0, 0, 0], ihdr + 16); // 8 bits, RGBA, deflate, standard filters, no interlace
  const idat = sealChunk(png, ihdr, 'IHDR', 13);
  const rows = idat + 8 + 2;
  png.set([0x78, 0x01], idat + 8);
  png.fill(row, rows, rows + h * row.length);
  // Adler-32 sums, reduced once at the end: they stay far below 2^53 for 2,000 rows of 2,000 pixels.
  let a = 1;
  let b = 0;
  for (let y = 0, at = rows; y < h; y++, at += row.length) {
    const [r, g, bl] = placeholderColor(y, h);
    png[at + 6] = r;
    png[at + 7] = g;
    png[at + 8] = bl;
    for (const v of [1, r, g, bl, 255]) {
      a += v;
      b += a;
    }
    b += zeroBytes * a;
  }
  a %= MOD_ADLER;
  b %= MOD_ADLER;
  const end = rows + h * row.length;
  png.set([1, 0, 0, 0xff, 0xff], end);
  png.writeUInt32BE(((b << 16) | a) >>> 0, end + 5);
  sealChunk(png, sealChunk(png, idat, 'IDAT', idatLength), 'IEND', 0);
  return png;
}

/** What the offline renderer answers for a URL: a body and content type, or null (blocked). */
export function offlineResponse(url: string): { body: Buffer; contentType: string } | null {
  const tw = TAILWIND_CDN.exec(url);
  // Any 2.x release is served by the packaged 2.2.19: the 2.x stylesheets differ only in fixes.
  if (tw && tw[1]!.startsWith('2')) {
    const body = tailwindFile(tw[2]!);
    return body ? { body, contentType: 'text/css; charset=utf-8' } : null;
  }
  const pic = PICSUM.exec(url);
  if (pic) {
    const w = Number(pic[1]);
    const h = pic[2] ? Number(pic[2]) : w;
    return { body: placeholderPng(w, h), contentType: 'image/png' };
  }
  return null;
}
