// Renders a frontend answer (an HTML page) to a PNG screenshot in headless Chromium, entirely offline.
//
// Every request the page makes goes through a route handler: the Tailwind 2.x stylesheet from the CDN and
// picsum.photos images are answered by render-offline.ts, the page itself from memory; everything else is aborted
// and listed in `blockedRequests`.
// What routing cannot see (preconnects, WebSockets, prefetches, WebRTC) is sent to a proxy that is a local
// sink: it records the attempt and closes the connection, so nothing ever leaves the machine. Scripts get a
// time budget; then script execution is disabled and any running script is terminated before the screenshot.
import { createServer, type Server, type Socket } from 'node:net';
import type { Browser, BrowserContext, CDPSession, Page, Route } from 'playwright-core';
import { DEFAULT_CHROMIUM_PATH, launchChromium } from './chromium.ts';
import { offlineResponse } from './render-offline.ts';

export { DEFAULT_CHROMIUM_PATH };

export interface RenderOptions {
  /** CSS pixels; the screenshot is this wide. Default 1280. */
  viewportWidth?: number;
  /** Height of the viewport that `100vh` refers to. Default 800. */
  viewportHeight?: number;
  /** The full-page screenshot is cut at this height. Default 5000. */
  maxHeight?: number;
  /** Time scripts may run, counted from the start of the navigation. Default 2000 ms. */
  scriptTimeoutMs?: number;
  /** After the load event, how long timers and late scripts may still change the page (within the budget). Default 200 ms. */
  settleMs?: number;
}

export interface RenderResult {
  png: Buffer;
  /** URLs the page asked for and did not get (requests and WebSockets), in order. */
  blockedRequests: string[];
  width: number;
  height: number;
}

const DEFAULTS: Required<RenderOptions> = { viewportWidth: 1280, viewportHeight: 800, maxHeight: 5000, scriptTimeoutMs: 2000, settleMs: 200 };

// The page is served from a name that cannot exist (RFC 2606 `.invalid`), so relative URLs are routed too.
const PAGE_URL = 'http://page.sweetloop.invalid/';

const RENDER_FLAGS = [
  '--disable-default-apps',
  '--disable-extensions',
  '--mute-audio',
  '--hide-scrollbars',
  '--font-render-hinting=none',
  '--force-color-profile=srgb',
  // WebRTC would otherwise send UDP (STUN) straight out, around both routing and the proxy.
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--dns-prefetch-disable',
];

/** A proxy that never proxies: it notes what tried to connect (the request line, if any) and hangs up. */
async function startSink(onAttempt: (line: string) => void): Promise<Server> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let noted = false;
    const note = (line: string) => {
      if (!noted) onAttempt(line);
      noted = true;
    };
    socket.once('data', (chunk) => {
      note(chunk.toString('latin1').split('\r\n')[0]!.slice(0, 300));
      socket.destroy();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      note('(connection without a request)');
      sockets.delete(socket);
    });
    socket.setTimeout(2000, () => socket.destroy());
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return server;
}

export class Renderer {
  /**
   * Every connection that reached the sink proxy instead of the network, for all renders of this Renderer:
   * Chromium's own background services and page preconnects (which routing does not see), as request lines.
   */
  readonly proxyAttempts: string[] = [];

  private constructor(
    private readonly browser: Browser,
    private readonly sink: Server,
    private readonly defaults: Required<RenderOptions>,
  ) {}

  /** Starts one Chromium; reuse the Renderer for many pages and close() it at the end. */
  static async launch(opts: RenderOptions & { executablePath?: string } = {}): Promise<Renderer> {
    const executablePath = opts.executablePath ?? DEFAULT_CHROMIUM_PATH;
    const holder: { log?: string[] } = {};
    const sink = await startSink((line) => holder.log?.push(line));
    const port = (sink.address() as { port: number }).port;
    let browser: Browser;
    try {
      // Without the bypass rule, loopback addresses would skip the proxy.
      browser = await launchChromium(executablePath, [...RENDER_FLAGS, `--proxy-server=http://127.0.0.1:${port}`, '--proxy-bypass-list=<-loopback>']);
    } catch (err) {
      sink.close();
      throw err;
    }
    const { executablePath: _, ...rest } = opts;
    const renderer = new Renderer(browser, sink, { ...DEFAULTS, ...rest });
    holder.log = renderer.proxyAttempts;
    return renderer;
  }

  /**
   * Renders one page. Throws if Chromium has gone away or the render as a whole overruns its script budget by
   * more than 20 s (a wedged browser), with the browsing context closed either way.
   */
  async render(html: string, opts: RenderOptions = {}): Promise<RenderResult> {
    if (!this.browser.isConnected()) throw new Error('render: Chromium is no longer running; launch a new Renderer');
    const o = { ...this.defaults, ...opts };
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`render: no screenshot after ${o.scriptTimeoutMs + 20_000} ms`)), o.scriptTimeoutMs + 20_000);
    });
    const contextBox: { context?: BrowserContext } = {};
    try {
      return await Promise.race([this.renderIn(html, o, contextBox), deadline]);
    } finally {
      clearTimeout(timer);
      await contextBox.context?.close().catch(() => {});
    }
  }

  private async renderIn(html: string, o: Required<RenderOptions>, box: { context?: BrowserContext }): Promise<RenderResult> {
    const context: BrowserContext = await this.browser.newContext({
      viewport: { width: o.viewportWidth, height: o.viewportHeight },
      deviceScaleFactor: 1,
      serviceWorkers: 'block',
      acceptDownloads: false,
      reducedMotion: 'reduce',
      colorScheme: 'light',
      locale: 'en-US',
      timezoneId: 'UTC',
    });
    box.context = context;
    const blocked: string[] = [];
    const handle = async (route: Route): Promise<void> => {
      const url = route.request().url();
      if (url === PAGE_URL && route.request().isNavigationRequest()) {
        await route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: html });
        return;
      }
      const answer = offlineResponse(url);
      if (answer) {
        await route.fulfill({ status: 200, contentType: answer.contentType, body: answer.body });
        return;
      }
      blocked.push(url);
      await route.abort('blockedbyclient');
    };
    await context.route('**/*', (route) => handle(route).catch(() => {}));
    await context.routeWebSocket(/.*/, (ws) => {
      blocked.push(ws.url());
      ws.close().catch(() => {});
    });
    context.on('page', (p) => {
      p.on('dialog', (d) => d.dismiss().catch(() => {}));
    });
    const page: Page = await context.newPage();
    const cdp: CDPSession = await context.newCDPSession(page);
    // Stop CSS animations and transitions where they start, so two renders of a page match.
    await cdp.send('Animation.enable');
    await cdp.send('Animation.setPlaybackRate', { playbackRate: 0 });

    const started = Date.now();
    const loaded = page
      .goto(PAGE_URL, { waitUntil: 'load', timeout: o.scriptTimeoutMs + 5000 })
      .then(() => true)
      .catch(() => false);
    const budget = (ms: number) => new Promise<false>((r) => setTimeout(() => r(false), Math.max(0, ms)));
    if (await Promise.race([loaded, budget(o.scriptTimeoutMs)])) {
      await budget(Math.min(o.settleMs, o.scriptTimeoutMs - (Date.now() - started)));
    }
    // Budget spent: no more scripts, and whatever is running (an endless loop) is cut off.
    const disabled = cdp.send('Emulation.setScriptExecutionDisabled', { value: true });
    await cdp.send('Runtime.terminateExecution').catch(() => {});
    await disabled;
    // A page whose parser was stuck in a script finishes loading once the script is gone.
    await Promise.race([loaded, budget(2000)]);

    const metrics = (await cdp.send('Page.getLayoutMetrics')) as { cssContentSize: { height: number } };
    const height = Math.max(1, Math.min(o.maxHeight, Math.ceil(metrics.cssContentSize.height)));
    const shot = (await cdp.send('Page.captureScreenshot', {
      format: 'png',
      clip: { x: 0, y: 0, width: o.viewportWidth, height, scale: 1 },
      captureBeyondViewport: true,
    })) as { data: string };
    const png = Buffer.from(shot.data, 'base64');
    return { png, blockedRequests: [...blocked], width: o.viewportWidth, height };
  }

  async close(): Promise<void> {
    await this.browser.close().catch(() => {});
    await new Promise<void>((r) => this.sink.close(() => r()));
  }
}
