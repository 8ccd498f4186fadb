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

const TAILWIND_CDN = /^https?:\/\/(?:cdn\.jsdelivr\.net\/npm|unpkg\.com)\/tailwindcss@(\d[^/]*)\/dist\/([\w.-]+\.css)(?:[?#].*)?$/;
const PICSUM = /^https?:\/\/(?:i\.)?picsum\.photos\/(?:(?:id|seed)\/[^/]+\/)?(\d+)(?:\/(\d+))?(?:\.\w+)?\/?(?:[?#].*)?$/;
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
// The compressed zeros after a row's first pixel, once per width: a few dozen bytes that every row of every
// picture that wide shares (deflated on its own with a sync flush, so it ends byte-aligned and can be spliced).
const zeroRuns = new Map<number, Buffer>();

function zeroRun(width: number): Buffer {
  let run = zeroRuns.get(width);
  if (!run) {
    run = deflateRawSync(Buffer.alloc(4 * (width - 1)), { finishFlush: constants.Z_SYNC_FLUSH });
    zeroRuns.set(width, run);
  }
  return run;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/**
 * The stand-in photo for a picsum.photos URL of `width` x `height` (each side clamped to 1..2000), an RGBA PNG.
 * Every row is one colour, so with PNG's "Sub" filter a row is its first pixel and then zeros: the image data is
 * spliced from a 10-byte stored block a row and the shared compressed zeros, with no compression per request.
 * The work grows with the height alone (about 100 KB for 2000 x 2000), never with the area.
 */
export function placeholderPng(width: number, height: number): Buffer {
  const w = side(width);
  const h = side(height);
  const zeros = w > 1 ? zeroRun(w) : Buffer.alloc(0);
  const zeroBytes = 4 * (w - 1);
  // zlib header, then per row a stored block (5-byte header, 5 bytes) and the zeros, then the end and Adler-32.
  const idat = Buffer.alloc(2 + h * (10 + zeros.length) + 5 + 4);
  idat.set([0x78, 0x01], 0);
  let at = 2;
  let a = 1;
  let b = 0;
  for (let y = 0; y < h; y++) {
    const [r, g, bl] = placeholderColor(y, h);
    // A stored (uncompressed) block of 5 bytes: the filter type ("Sub"), then the row's first pixel.
    idat[at] = 0;
    idat[at + 1] = 5;
    idat[at + 2] = 0;
    idat[at + 3] = 0xfa;
    idat[at + 4] = 0xff;
    idat[at + 5] = 1;
    idat[at + 6] = r;
    idat[at + 7] = g;
    idat[at + 8] = bl;
    idat[at + 9] = 255;
    for (let i = at + 5; i < at + 10; i++) {
      a = (a + idat[i]!) % MOD_ADLER;
      b = (b + a) % MOD_ADLER;
    }
    at += 10;
    zeros.copy(idat, at);
    at += zeros.length;
    b = (b + zeroBytes * a) % MOD_ADLER;
  }
  // The last block: stored, empty, final.
  idat.set([1, 0, 0, 0xff, 0xff], at);
  idat.writeUInt32BE(((b << 16) | a) >>> 0, at + 5);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 6, 0, 0, 0], 8); // 8 bits, RGBA, deflate, standard filters, no interlace
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
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
