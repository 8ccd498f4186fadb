// Renders a frontend answer (an HTML page) to a PNG screenshot in headless Chromium, entirely offline.
//
// Every request the page makes goes through a route handler: the Tailwind 2.x stylesheet from the CDN and
// picsum.photos images are answered by render-offline.ts, the page itself from memory; everything else is aborted
// and listed in `blockedRequests`. What routing cannot see (preconnects, WebSockets, prefetches, WebRTC) is sent to
// a proxy that is a local sink: it records the attempt and closes the connection, so nothing ever leaves the
// machine. Scripts get a time budget; then script execution is disabled and any running script is terminated
// before the screenshot.
//
// One page cannot hold up the others or this process: each render runs in its own browser context with a cap on
// its requests and a deadline, nothing the Node process does for a request grows with what the page asks for, and
// a browser that dies is replaced on the next render.
import type { Server } from 'node:net';
import type { Browser, BrowserContext, CDPSession, Page, Route } from 'playwright-core';
import { DEFAULT_CHROMIUM_PATH, launchChromium } from './chromium.ts';
import type { Logger } from './logger.ts';
import { offlineResponse } from './render-offline.ts';
import { startSink } from './render-sink.ts';

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
  /** Requests (the page itself, subresources, frames, WebSockets) one render may make; one more fails it. Default 200. */
  maxRequests?: number;
  /** Bytes this process may answer one render with (the page, stylesheets, pictures); past them it fails. Default 16 MiB. */
  maxServedBytes?: number;
  /** The whole render, a browser start included, fails past this. Default 20,000 ms. */
  deadlineMs?: number;
}

export interface RenderResult {
  png: Buffer;
  /** URLs the page asked for and did not get (requests and WebSockets), in order. */
  blockedRequests: string[];
  width: number;
  height: number;
}

/**
 * Why a render failed. `requests`, `bytes`, `deadline` and `crashed` are the page's doing (rendering it again fails
 * again); `browser` (Chromium exited twice under it) and `closed` are not.
 */
export class RenderError extends Error {
  constructor(
    readonly reason: 'requests' | 'bytes' | 'deadline' | 'crashed' | 'browser' | 'closed',
    message: string,
  ) {
    super(message);
    this.name = 'RenderError';
  }

  get pageFault(): boolean {
    return this.reason !== 'browser' && this.reason !== 'closed';
  }
}

const DEFAULTS: Required<RenderOptions> = {
  viewportWidth: 1280,
  viewportHeight: 800,
  maxHeight: 5000,
  scriptTimeoutMs: 2000,
  settleMs: 200,
  maxRequests: 200,
  maxServedBytes: 16 * 1024 * 1024,
  deadlineMs: 20_000,
};

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

/** How long closing a render's context, then the whole browser, may take before it counts as wedged. */
const CLOSE_GRACE_MS = 5000;

/** What a render's clean-up needs: its browser and context, and whether the render is already over. */
interface RenderBox {
  browser?: Browser;
  context?: BrowserContext;
  over?: boolean;
}

/**
 * Lets a render's requests through one a turn of the event loop: forty pictures asked for at once are answered
 * over forty turns, with timers and I/O in between, instead of holding the loop for all of them.
 */
function oneATurn(): () => Promise<void> {
  const waiting: (() => void)[] = [];
  let draining = false;
  const drain = () => {
    const next = waiting.shift();
    draining = next !== undefined;
    if (!next) return;
    next();
    setImmediate(drain);
  };
  return () =>
    new Promise<void>((resolve) => {
      waiting.push(resolve);
      if (!draining) {
        draining = true;
        setImmediate(drain);
      }
    });
}

const within = <T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), ms)))]).finally(() =>
    clearTimeout(timer),
  );
};

export class Renderer {
  /**
   * Every connection that reached the sink proxy instead of the network, for all renders of this Renderer:
   * Chromium's own background services and page preconnects (which routing does not see), as request lines.
   */
  readonly proxyAttempts: string[] = [];
  /** Browsers started to replace one that exited (killed, crashed, or closed as wedged). */
  relaunches = 0;
  private browser: Browser | null = null;
  private starting: Promise<Browser> | null = null;
  private closed = false;

  private constructor(
    private readonly executablePath: string,
    private readonly sink: Server,
    private readonly defaults: Required<RenderOptions>,
    private readonly log: Logger | undefined,
  ) {}

  /** Starts one Chromium; reuse the Renderer for many pages and close() it at the end. */
  static async launch(opts: RenderOptions & { executablePath?: string; log?: Logger } = {}): Promise<Renderer> {
    const { executablePath = DEFAULT_CHROMIUM_PATH, log, ...rest } = opts;
    const holder: { log?: string[] } = {};
    const sink = await startSink((line) => holder.log?.push(line));
    const renderer = new Renderer(executablePath, sink, { ...DEFAULTS, ...rest }, log);
    holder.log = renderer.proxyAttempts;
    try {
      await renderer.currentBrowser();
    } catch (err) {
      sink.close();
      throw err;
    }
    return renderer;
  }

  /** The running browser, or a new one when the last has exited; concurrent renders share one start. */
  private currentBrowser(): Promise<Browser> {
    if (this.closed) return Promise.reject(new RenderError('closed', 'render: this Renderer is closed'));
    if (this.browser?.isConnected()) return Promise.resolve(this.browser);
    if (!this.starting) {
      const replacing = this.browser !== null;
      const port = (this.sink.address() as { port: number }).port;
      // Without the bypass rule, loopback addresses would skip the proxy.
      const args = [...RENDER_FLAGS, `--proxy-server=http://127.0.0.1:${port}`, '--proxy-bypass-list=<-loopback>'];
      this.starting = launchChromium(this.executablePath, args)
        .then(async (browser) => {
          if (this.closed) {
            await browser.close().catch(() => {});
            throw new RenderError('closed', 'render: this Renderer is closed');
          }
          browser.on('disconnected', () => {
            if (!this.closed)
              this.log?.warn({ chromium: this.executablePath }, 'Chromium exited: the next render starts a new one');
          });
          if (replacing) this.relaunches++;
          this.browser = browser;
          return browser;
        })
        .finally(() => {
          this.starting = null;
        });
    }
    return this.starting;
  }

  /**
   * Renders one page. Fails with a RenderError when the page makes more than `maxRequests` requests, needs more than
   * `maxServedBytes`, crashes its renderer process, or is not done by `deadlineMs`. When Chromium itself exits under
   * the render, a new one is started and the page rendered once more, within the same deadline. The browsing
   * context is closed either way.
   */
  async render(html: string, opts: RenderOptions = {}): Promise<RenderResult> {
    const o = { ...this.defaults, ...opts };
    const deadline = Date.now() + o.deadlineMs;
    try {
      return await this.attempt(html, o, deadline);
    } catch (err) {
      if (!(err instanceof RenderError) || err.reason !== 'browser' || Date.now() >= deadline) throw err;
      this.log?.warn({ err: err.message }, 'Chromium exited during a render: rendering the page once more');
      return await this.attempt(html, o, deadline);
    }
  }

  private async attempt(html: string, o: Required<RenderOptions>, deadline: number): Promise<RenderResult> {
    let fail!: (err: RenderError) => void;
    const failed = new Promise<never>((_, reject) => (fail = reject));
    failed.catch(() => {}); // a late failure (a request after the end) has no one left to tell
    const late = () =>
      fail(new RenderError('deadline', `render: the page was not done within its ${o.deadlineMs} ms deadline`));
    const timer = setTimeout(late, deadline - Date.now());
    const gone = () => fail(new RenderError('browser', 'render: Chromium exited during the render'));
    const box: RenderBox = {};
    try {
      return await Promise.race([
        this.currentBrowser().then((browser) => {
          box.browser = browser;
          browser.once('disconnected', gone);
          if (!browser.isConnected()) gone();
          return this.renderIn(browser, html, o, box, fail);
        }),
        failed,
      ]);
    } catch (err) {
      if (err instanceof RenderError) throw err;
      // Playwright may report the closed pipe before the browser says it is disconnected.
      await new Promise((r) => setTimeout(r, 50));
      if (box.browser && !box.browser.isConnected())
        throw new RenderError(
          'browser',
          `render: Chromium exited during the render (${(err as Error).message.split('\n')[0]})`,
        );
      throw err;
    } finally {
      clearTimeout(timer);
      box.over = true;
      box.browser?.off('disconnected', gone);
      await this.dispose(box);
    }
  }

  /** Closes a render's context; a browser that cannot do that in time is closed too, and the next render starts another. */
  private async dispose(box: RenderBox): Promise<void> {
    if (!box.context || !box.browser?.isConnected()) return;
    if (
      (await within(
        box.context.close().catch(() => {}),
        CLOSE_GRACE_MS,
      )) !== 'timeout'
    )
      return;
    this.log?.warn({}, 'Chromium did not close a page in time: closing the browser');
    await within(
      box.browser.close().catch(() => {}),
      CLOSE_GRACE_MS,
    );
  }

  private async renderIn(
    browser: Browser,
    html: string,
    o: Required<RenderOptions>,
    box: RenderBox,
    fail: (err: RenderError) => void,
  ): Promise<RenderResult> {
    const context: BrowserContext = await browser.newContext({
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
    // The render may have failed (its deadline) while the context was being made: then no one else closes it.
    if (box.over) await this.dispose(box);
    const blocked: string[] = [];
    let requests = 0;
    const admit = (): boolean => {
      if (++requests <= o.maxRequests) return true;
      fail(
        new RenderError(
          'requests',
          `render: the page made more than ${o.maxRequests} requests, the cap for one render`,
        ),
      );
      return false;
    };
    let served = 0;
    // Every answer is copied, base64-encoded and sent to Chromium by this thread: the budget bounds that work (a
    // page asking for the 3 MB stylesheet under a hundred names), as the request cap bounds the number of answers.
    const fulfill = async (route: Route, body: string | Buffer, contentType: string): Promise<void> => {
      served += Buffer.byteLength(body);
      if (served > o.maxServedBytes) {
        fail(
          new RenderError(
            'bytes',
            `render: the page needed more than ${o.maxServedBytes} bytes served (itself, stylesheets, pictures), the cap for one render`,
          ),
        );
        await route.abort('blockedbyclient');
        return;
      }
      await route.fulfill({ status: 200, contentType, body });
    };
    const turn = oneATurn();
    const handle = async (route: Route): Promise<void> => {
      await turn();
      if (!admit()) {
        await route.abort('blockedbyclient');
        return;
      }
      const url = route.request().url();
      if (url === PAGE_URL && route.request().isNavigationRequest())
        return fulfill(route, html, 'text/html; charset=utf-8');
      const answer = offlineResponse(url);
      if (answer) return fulfill(route, answer.body, answer.contentType);
      blocked.push(url);
      await route.abort('blockedbyclient');
    };
    await context.route('**/*', (route) => handle(route).catch(() => {}));
    await context.routeWebSocket(/.*/, (ws) => {
      if (admit()) blocked.push(ws.url());
      ws.close().catch(() => {});
    });
    context.on('page', (p) => {
      p.on('dialog', (d) => d.dismiss().catch(() => {}));
      p.on('crash', () => fail(new RenderError('crashed', 'render: the page crashed its Chromium renderer process')));
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
    disabled.catch(() => {}); // awaited below; a render that ended meanwhile rejects it first
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
    this.closed = true;
    const browser = this.browser ?? (await this.starting?.catch(() => null));
    await browser?.close().catch(() => {});
    await new Promise<void>((r) => this.sink.close(() => r()));
  }
}
