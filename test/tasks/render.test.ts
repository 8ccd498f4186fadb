// The real renderer in Chromium: the built-in pages (they load with nothing blocked, Tailwind styles them, they
// differ from one another), and what no page can do to the renderer or to this process: stall it, make it hang
// past a deadline or a request cap, or leave it without a browser.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNG } from 'pngjs';
import { builtinTasks } from '../../tasks/library.ts';
import { Renderer } from '../../tasks/render.ts';
import { placeholderColor } from '../../tasks/render-offline.ts';
import { pixelSimilarity } from '../../tasks/similarity.ts';
import { chromiumChildren } from '../helpers/chromium-processes.ts';
import { watchEventLoop } from '../helpers/event-loop.ts';

const TW = '<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">';
// Tailwind's red-500 box, then a 300 x 200 picture: both only right if the stylesheet and the stand-in were served.
const ORDINARY = `<html><head>${TW}</head><body class="m-0 p-0"><div class="bg-red-500 w-32 h-32"></div><img src="https://picsum.photos/id/48/300/200" style="display:block"></body></html>`;

function pixel(png: Buffer, x: number, y: number): [number, number, number] {
  const img = PNG.sync.read(png);
  const i = (img.width * y + x) * 4;
  return [img.data[i]!, img.data[i + 1]!, img.data[i + 2]!];
}

function expectOrdinary(png: Buffer): void {
  expect(pixel(png, 10, 10)).toEqual([0xef, 0x44, 0x44]);
  expect(pixel(png, 150, 128 + 100)).toEqual(placeholderColor(100, 200));
}

let renderer: Renderer;
beforeAll(async () => {
  renderer = await Renderer.launch();
});
afterAll(async () => {
  await renderer?.close();
});

describe('built-in frontend pages in Chromium', () => {
  it('render offline with Tailwind applied and look unlike each other', async () => {
    const pages = builtinTasks({ kind: 'frontend' });
    const shots: Buffer[] = [];
    for (const page of pages) {
      const styled = await renderer.render(page.reference);
      // `proxy:` lines are Chromium's own background traffic (updates, accounts), not requests of the page.
      expect(
        styled.blockedRequests.filter((r) => !r.startsWith('proxy:')),
        page.externalId,
      ).toEqual([]);
      if (shots.length === 0) {
        // Once is enough to see the stylesheet is served and applied.
        const unstyled = await renderer.render(page.reference.replace(/<link [^>]*tailwind[^>]*>/, ''));
        expect(pixelSimilarity(styled.png, unstyled.png), page.externalId).toBeLessThan(0.9);
      }
      shots.push(styled.png);
    }
    for (let i = 1; i < shots.length; i++)
      expect(pixelSimilarity(shots[i - 1]!, shots[i]!), pages[i]!.externalId).toBeLessThan(0.95);
  });
});

describe('what a hostile page cannot do', () => {
  it('stall this process: beside 40 pictures of 2000 px, an ordinary page renders and the event loop is held up under 50 ms (p99)', async () => {
    await renderer.render(ORDINARY); // warm: the first render of a process loads code
    // Forty distinct sizes, so no cache helps: drawn on this thread pixel by pixel, each took about half a second.
    const pictures = Array.from({ length: 40 }, (_, i) => `<img src="https://picsum.photos/2000/${1960 + i}">`).join(
      '',
    );
    const watch = watchEventLoop();
    const hostile = renderer.render(`<html><body>${pictures}</body></html>`).catch((err: unknown) => err);
    await new Promise((r) => setTimeout(r, 300));
    const ordinary = await renderer.render(ORDINARY);
    await hostile;
    const loop = watch.stop();
    expectOrdinary(ordinary.png);
    // On a machine with more runnable threads than cores, timers are also late while this thread waits for a CPU
    // (monitorEventLoopDelay counts that too): the bound is on what this thread itself was busy with.
    const seen = `event loop: ${JSON.stringify(loop, (_, v: unknown) => (typeof v === 'number' ? Math.round(v) : v))}`;
    expect(loop.ticks, seen).toBeGreaterThan(50);
    expect(loop.busyP99Ms, seen).toBeLessThan(50);
  });

  it('make more requests than the cap: the render fails with a clear error, at once, and the next one works', async () => {
    const images = Array.from({ length: 300 }, (_, i) => `<img src="/img${i}.png">`).join('');
    const started = Date.now();
    const rendering = renderer.render(`<html><body>${images}</body></html>`, {
      maxRequests: 100,
      scriptTimeoutMs: 10_000,
      deadlineMs: 60_000,
    });
    await expect(rendering).rejects.toThrow(/the page made more than 100 requests/);
    expect(await rendering.catch((e: unknown) => e)).toMatchObject({
      name: 'RenderError',
      reason: 'requests',
      pageFault: true,
    });
    // Well before the script budget or the deadline: the cap ends it.
    expect(Date.now() - started).toBeLessThan(10_000);
    expectOrdinary((await renderer.render(ORDINARY)).png);
  });

  it('make this process send more than the byte budget (the 3 MB stylesheet under many names): a clear error', async () => {
    const links = Array.from(
      { length: 15 },
      (_, i) =>
        `<link rel="stylesheet" href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css?v=${i}">`,
    ).join('');
    const rendering = renderer.render(`<html><head>${links}</head><body></body></html>`);
    await expect(rendering).rejects.toThrow(/the page needed more than 16777216 bytes served/);
    expect(await rendering.catch((e: unknown) => e)).toMatchObject({
      name: 'RenderError',
      reason: 'bytes',
      pageFault: true,
    });
    expectOrdinary((await renderer.render(ORDINARY)).png);
  });

  it('run past the deadline: the render fails with a clear error near it, and the next one works', async () => {
    const started = Date.now();
    const rendering = renderer.render('<html><body><script>while (true) {}</script></body></html>', {
      scriptTimeoutMs: 30_000,
      deadlineMs: 1500,
    });
    await expect(rendering).rejects.toThrow(/not done within its 1500 ms deadline/);
    expect(await rendering.catch((e: unknown) => e)).toMatchObject({
      name: 'RenderError',
      reason: 'deadline',
      pageFault: true,
    });
    expect(Date.now() - started).toBeLessThan(1500 + 8000);
    expectOrdinary((await renderer.render(ORDINARY)).png);
  });

  it('leave the renderer without a browser: a killed Chromium is started again and the next render succeeds', async () => {
    const before = new Set(chromiumChildren());
    const own = await Renderer.launch();
    try {
      const [pid] = chromiumChildren().filter((p) => !before.has(p));
      expect(pid, 'the new Renderer started a Chromium child of this process').toBeDefined();
      expectOrdinary((await own.render(ORDINARY)).png);
      process.kill(pid!, 'SIGKILL');
      await new Promise((r) => setTimeout(r, 200));
      expect(chromiumChildren()).not.toContain(pid);
      expectOrdinary((await own.render(ORDINARY)).png);
      expect(own.relaunches).toBe(1);
      const now = chromiumChildren().filter((p) => !before.has(p));
      expect(now).toHaveLength(1);
      expect(now[0]).not.toBe(pid);
    } finally {
      await own.close();
    }
  });
});
