import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { PNG } from 'pngjs';
import type { FrontendTask } from '../../tasks/model.ts';
import { Renderer } from '../../tasks/render.ts';
import { offlineResponse, placeholderColor, tailwindDistDir } from '../../tasks/render-offline.ts';
import { pixelSimilarity, winRate } from '../../tasks/similarity.ts';
import { evaluateFrontend, FRONTEND_EVALUATOR_VERSION } from '../../tasks/frontend-eval.ts';
import { FRONTEND_SAMPLE, haveSample, loadFrontendSample } from '../helpers/colbench-sample.ts';

const TAILWIND = 'https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css';

// Our own page in ColBench's style: Tailwind classes from the CDN, a picsum picture.
const ownPage: FrontendTask = {
  kind: 'frontend',
  description: 'A bakery landing page with a hero picture, three product cards and a dark footer.',
  reference: `<html><head><link href="${TAILWIND}" rel="stylesheet"></head>
<body class="bg-yellow-50">
  <header class="bg-red-600 text-white p-6 flex justify-between"><h1 class="text-3xl font-bold">Crumb &amp; Co</h1><nav class="space-x-4"><a>Bread</a><a>Cakes</a><a>Visit</a></nav></header>
  <section class="flex p-8 items-center"><img src="https://picsum.photos/id/48/500/300" class="rounded-lg"><div class="ml-8"><h2 class="text-4xl font-bold text-gray-800">Baked every morning</h2><p class="mt-4 text-lg text-gray-600">Sourdough, rye and seasonal cakes from our wood-fired oven.</p><button class="mt-6 bg-green-600 text-white px-6 py-3 rounded">Order now</button></div></section>
  <section class="grid grid-cols-3 gap-6 px-8 pb-8">
    <div class="bg-white shadow rounded p-6"><h3 class="text-xl font-semibold">Sourdough</h3><p class="text-gray-600">48-hour ferment.</p></div>
    <div class="bg-white shadow rounded p-6"><h3 class="text-xl font-semibold">Rye</h3><p class="text-gray-600">Dense and dark.</p></div>
    <div class="bg-white shadow rounded p-6"><h3 class="text-xl font-semibold">Cakes</h3><p class="text-gray-600">Fruit of the season.</p></div>
  </section>
  <footer class="bg-gray-900 text-gray-300 p-8">12 Mill Lane. Open 7am to 3pm.</footer>
</body></html>`,
};
const blankPage = '<html><body></body></html>';

function pixel(png: Buffer, x: number, y: number): [number, number, number] {
  const img = PNG.sync.read(png);
  const i = (img.width * y + x) * 4;
  return [img.data[i]!, img.data[i + 1]!, img.data[i + 2]!];
}

let renderer: Renderer;
beforeAll(async () => {
  renderer = await Renderer.launch();
});
afterAll(async () => {
  await renderer?.close();
});

describe('offline rendering', () => {
  it('serves the Tailwind 2.2.19 stylesheet from the npm package and sized picsum placeholders', async () => {
    expect(existsSync(`${tailwindDistDir()}/tailwind.min.css`)).toBe(true);
    expect(offlineResponse(TAILWIND)?.contentType).toMatch(/text\/css/);
    expect(offlineResponse('https://cdn.tailwindcss.com')).toBeNull();
    const page = `<html><head><link href="${TAILWIND}" rel="stylesheet"></head><body class="m-0 p-0">
      <div class="bg-red-500 w-32 h-32"></div><img src="https://picsum.photos/id/48/300/200" style="display:block"></body></html>`;
    const r = await renderer.render(page);
    expect(r.width).toBe(1280);
    expect(r.blockedRequests).toEqual([]);
    // Tailwind's red-500 is #ef4444: only there if the stylesheet was served.
    expect(pixel(r.png, 10, 10)).toEqual([0xef, 0x44, 0x44]);
    // The 300x200 placeholder below the 128px box: each row of it one colour, and nothing at x=300.
    for (const y of [0, 5, 110, 199]) {
      expect(pixel(r.png, 5, 128 + y), `row ${y}`).toEqual(placeholderColor(y, 200));
      expect(pixel(r.png, 295, 128 + y), `row ${y}`).toEqual(placeholderColor(y, 200));
    }
    expect(pixel(r.png, 305, 128 + 5)).toEqual([255, 255, 255]);
  });

  it('lets no request leave the browser', async () => {
    let tcpConnections = 0;
    let udpPackets = 0;
    const server: Server = createServer((s) => {
      tcpConnections++;
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const udp: UdpSocket = createSocket('udp4');
    udp.on('message', () => udpPackets++);
    await new Promise<void>((r) => udp.bind(port, '127.0.0.1', r));
    const local = `http://127.0.0.1:${port}`;
    const hostile = `<html><head>
      <link rel="preconnect" href="${local}"><link rel="dns-prefetch" href="${local}"><link rel="prefetch" href="${local}/prefetch">
      <link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto"></head><body>
      <img src="${local}/img.png"><iframe src="${local}/frame"></iframe>
      <script>
        fetch('${local}/fetch').catch(() => {});
        fetch('/relative').catch(() => {});
        try { new WebSocket('ws://127.0.0.1:${port}/ws'); } catch (e) {}
        navigator.sendBeacon('${local}/beacon', 'x');
        new EventSource('${local}/events');
        const pc = new RTCPeerConnection({ iceServers: [{ urls: 'stun:127.0.0.1:${port}' }] });
        pc.createDataChannel('x'); pc.createOffer().then((o) => pc.setLocalDescription(o));
        setTimeout(() => { location.href = '${local}/navigate'; }, 50);
      </script></body></html>`;
    try {
      const r = await renderer.render(hostile, { scriptTimeoutMs: 1500 });
      await new Promise((res) => setTimeout(res, 300));
      expect(tcpConnections).toBe(0);
      expect(udpPackets).toBe(0);
      for (const path of ['/fetch', '/img.png', '/frame', '/beacon', '/events'])
        expect(r.blockedRequests).toContain(`${local}${path}`);
      expect(r.blockedRequests).toContain(`ws://127.0.0.1:${port}/ws`);
      expect(r.blockedRequests).toContain('https://fonts.googleapis.com/css?family=Roboto');
      expect(r.blockedRequests.some((u) => u.endsWith('/relative'))).toBe(true);
    } finally {
      server.close();
      udp.close();
    }
  });

  it('cuts off scripts that never end and still takes the screenshot', async () => {
    const r = await renderer.render(
      '<html><body style="margin:0;background:#00ff00"><div style="height:1200px">x</div><script>while (true) {}</script></body></html>',
      { scriptTimeoutMs: 500 },
    );
    expect(pixel(r.png, 5, 5)).toEqual([0, 255, 0]);
    expect(r.height).toBeGreaterThanOrEqual(1200);
    const next = await renderer.render(
      '<html><body style="background:#0000ff"><script>setInterval(() => { const t = Date.now(); while (Date.now() - t < 1000) {} }, 0)</script></body></html>',
      { scriptTimeoutMs: 500 },
    );
    expect(pixel(next.png, 5, 5)).toEqual([0, 0, 255]);
  });

  it('caps the height of the full-page screenshot', async () => {
    const r = await renderer.render('<html><body><div style="height:20000px;background:#123456"></div></body></html>', {
      maxHeight: 3000,
    });
    expect(r.height).toBe(3000);
    expect(PNG.sync.read(r.png).height).toBe(3000);
  });
});

describe('frontend similarity', () => {
  it('scores the reference against itself ~1 and a blank page clearly lower', async () => {
    const a = await renderer.render(ownPage.reference);
    const b = await renderer.render(ownPage.reference);
    const blank = await renderer.render(blankPage);
    const self = pixelSimilarity(a.png, b.png);
    expect(self).toBeGreaterThan(0.99);
    expect(pixelSimilarity(a.png, blank.png)).toBeLessThan(self - 0.3);
    // A recoloured header and button: close, but not the same page.
    const recoloured = await renderer.render(
      ownPage.reference.replace('bg-red-600', 'bg-blue-600').replace('bg-green-600', 'bg-purple-600'),
    );
    const near = pixelSimilarity(a.png, recoloured.png);
    expect(near).toBeLessThan(self);
    expect(near).toBeGreaterThan(pixelSimilarity(a.png, blank.png));
    expect(() => pixelSimilarity(a.png, Buffer.from('not a png'))).toThrow(
      /candidate screenshot is not a readable PNG/,
    );
  });

  it('evaluateFrontend records the metric, the threshold and what was blocked', async () => {
    const good = await evaluateFrontend(ownPage, '```html\n' + ownPage.reference + '\n```', { renderer });
    expect(good).toMatchObject({ metric: 'pixel-ssim-v1', success: true });
    expect(good.score).toBeGreaterThan(0.99);
    expect(good.detail).toMatchObject({ metric: 'pixel-ssim-v1', threshold: 0.9, candidate: { width: 1280 } });
    const ref = await renderer.render(ownPage.reference);
    const bad = await evaluateFrontend(ownPage, '<html><body><img src="https://example.com/x.png"></body></html>', {
      renderer,
      referencePng: ref.png,
    });
    expect(bad.success).toBe(false);
    expect(bad.score).toBeLessThan(good.score - 0.3);
    expect(bad.detail.candidate.blockedRequests).toEqual(['https://example.com/x.png']);
    expect(bad.detail.reference).toMatchObject({ width: 1280, height: ref.height });
    expect(FRONTEND_EVALUATOR_VERSION).toMatch(/^frontend-/);
  });

  it('scores 0, with the reason, an answer the renderer refuses (over the request cap), instead of failing', async () => {
    const ref = await renderer.render(ownPage.reference);
    const flood = `<html><body>${Array.from({ length: 250 }, (_, i) => `<img src="/x${i}.png">`).join('')}</body></html>`;
    const r = await evaluateFrontend(ownPage, flood, { renderer, referencePng: ref.png });
    expect(r).toMatchObject({
      score: 0,
      success: false,
      metric: 'pixel-ssim-v1',
      error: expect.stringMatching(/^the page cannot be rendered: the page made more than 200 requests/),
    });
    expect(r.detail.candidate).toEqual({ width: 0, height: 0, blockedRequests: [] });
  });

  it('win rate counts ties as half and gives a Wilson interval', () => {
    const w = winRate([0.9, 0.5, 0.7, 0.7], [0.8, 0.6, 0.7, 0.1]);
    expect(w).toMatchObject({ wins: 2, losses: 1, ties: 1, n: 4, winRate: 0.625 });
    expect(w.ci95[0]).toBeLessThan(0.625);
    expect(w.ci95[1]).toBeGreaterThan(0.625);
    expect(w.ci95[0]).toBeGreaterThanOrEqual(0);
    expect(w.ci95[1]).toBeLessThanOrEqual(1);
    const many = winRate(Array(400).fill(1), Array(400).fill(0));
    expect(many.winRate).toBe(1);
    expect(many.ci95[0]).toBeGreaterThan(0.99);
    expect(() => winRate([1], [1, 2])).toThrow(/same tasks/);
  });
});

describe.skipIf(!haveSample(FRONTEND_SAMPLE))('frontend similarity on the ColBench sample', () => {
  it('reference vs itself ~1, vs a blank page clearly lower (first 3 tasks)', async () => {
    const tasks = loadFrontendSample().slice(0, 3);
    const blank = (await renderer.render(blankPage)).png;
    for (const [i, t] of tasks.entries()) {
      const a = await renderer.render(t.reference);
      const b = await renderer.render(t.reference);
      expect(a.blockedRequests, `task ${i}`).toEqual([]);
      const self = pixelSimilarity(a.png, b.png);
      expect(self, `task ${i}`).toBeGreaterThan(0.99);
      expect(pixelSimilarity(a.png, blank), `task ${i}`).toBeLessThan(self - 0.3);
    }
  });
});
