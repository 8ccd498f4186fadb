// SVG to PNG through headless Chromium (playwright-core): the browser draws the very SVG the report ships, so the
// two versions of a plot cannot drift apart.
import type { Browser } from 'playwright-core';
import { launchChromium } from '../../tasks/chromium.ts';

export interface SvgRenderer {
  toPng(svg: string): Promise<Buffer>;
  close(): Promise<void>;
}

export async function openSvgRenderer(chromiumPath: string): Promise<SvgRenderer> {
  let browser: Browser;
  try {
    browser = await launchChromium(chromiumPath);
  } catch (err) {
    throw new Error(`${(err as Error).message} The PNG plots need it: set CHROMIUM_PATH, or use --no-png.`);
  }
  const page = await browser.newPage({ deviceScaleFactor: 2 });
  return {
    async toPng(svg) {
      const w = Number(/width="(\d+)"/.exec(svg)?.[1] ?? 800);
      const h = Number(/height="(\d+)"/.exec(svg)?.[1] ?? 600);
      await page.setViewportSize({ width: w, height: h });
      await page.setContent(`<!doctype html><html><body style="margin:0;background:#fff">${svg}</body></html>`);
      return page.screenshot({ clip: { x: 0, y: 0, width: w, height: h }, type: 'png' });
    },
    async close() {
      await browser.close();
    },
  };
}
