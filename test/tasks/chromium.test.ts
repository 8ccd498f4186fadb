// Chromium's own sandbox: on for every user but root (where Chromium cannot start with it). As root, this test
// runs a renderer as the unprivileged user `nobody` in a child process and looks at its processes from outside.
import { describe, expect, it } from 'vitest';
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PNG } from 'pngjs';
import { chromiumSandbox } from '../../tasks/chromium.ts';
import { Renderer } from '../../tasks/render.ts';
import {
  chromiumChildren,
  commandLine,
  descendants,
  hasFlag,
  seccompMode,
  userNamespace,
} from '../helpers/chromium-processes.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const isRoot = process.getuid?.() === 0;
const GREEN = '<html><body style="margin:0;background:#00ff00"></body></html>';
// A page that keeps its process busy, so there is a page process to look at.
const BUSY = '<html><body><script>while (true) {}</script></body></html>';
const BUSY_OPTIONS = { scriptTimeoutMs: 30_000, deadlineMs: 40_000 };

// Launches a Renderer, renders GREEN, starts rendering BUSY, prints one JSON line, and closes on a line on stdin.
const CHILD = `
import { pathToFileURL } from 'node:url';
const { Renderer } = await import(pathToFileURL(process.argv[2]).href);
try {
  const r = await Renderer.launch();
  const shot = await r.render(${JSON.stringify(GREEN)});
  r.render(${JSON.stringify(BUSY)}, ${JSON.stringify(BUSY_OPTIONS)}).catch(() => {});
  console.log(JSON.stringify({ png: shot.png.toString('base64') }));
  process.stdin.once('data', async () => { await r.close(); process.exit(0); });
} catch (err) {
  console.log(JSON.stringify({ error: err.message }));
  process.exit(0);
}
`;

/**
 * Inspects the browser a Renderer started below `parent` while it renders BUSY: its arguments, and whether its page
 * processes are in a user namespace of their own.
 */
async function inspectBrowser(
  parent: number,
): Promise<{ noSandboxFlag: boolean; pagesInOwnUserNamespace: boolean; pagesUnderSeccomp: boolean }> {
  const [browser] = chromiumChildren(parent);
  expect(browser, 'a Chromium browser below the renderer process').toBeDefined();
  let renderers: number[] = [];
  for (let i = 0; i < 100 && renderers.length === 0; i++) {
    renderers = descendants(browser!).filter((p) => hasFlag(commandLine(p), '--type=renderer'));
    if (renderers.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
  expect(renderers.length, 'a page process while BUSY renders').toBeGreaterThan(0);
  // A page process starts, then puts itself under seccomp: allow it a moment (up to 5 s) before reading its mode.
  for (let i = 0; i < 50 && !renderers.every((p) => seccompMode(p) === 2); i++) {
    await new Promise((r) => setTimeout(r, 100));
    renderers = descendants(browser!).filter((p) => hasFlag(commandLine(p), '--type=renderer'));
  }
  const outside = userNamespace(browser!);
  return {
    noSandboxFlag: hasFlag(commandLine(browser!), '--no-sandbox'),
    pagesInOwnUserNamespace: renderers.every((p) => userNamespace(p) !== null && userNamespace(p) !== outside),
    pagesUnderSeccomp: renderers.every((p) => seccompMode(p) === 2),
  };
}

function greenAt(png: Buffer): boolean {
  const img = PNG.sync.read(png);
  const i = (img.width * 10 + 10) * 4;
  return img.data[i] === 0 && img.data[i + 1] === 255 && img.data[i + 2] === 0;
}

describe('Chromium sandbox', () => {
  it('is asked for by every user but root', () => {
    expect(chromiumSandbox(0)).toBe(false);
    expect(chromiumSandbox(1000)).toBe(true);
    expect(chromiumSandbox(65534)).toBe(true);
  });

  it.runIf(isRoot)('as root: Chromium runs without it (it refuses to start otherwise), and renders', async () => {
    const r = await Renderer.launch();
    try {
      expect(greenAt((await r.render(GREEN)).png)).toBe(true);
      const busy = r.render(BUSY, BUSY_OPTIONS).catch(() => {});
      expect(await inspectBrowser(process.pid)).toEqual({
        noSandboxFlag: true,
        pagesInOwnUserNamespace: false,
        pagesUnderSeccomp: false,
      });
      await r.close();
      await busy;
    } finally {
      await r.close();
    }
  });

  it.runIf(isRoot)(
    'as an unprivileged user: on (page processes in their own user namespace, under seccomp), and the page renders',
    async () => {
      const uid = Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }));
      const gid = Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' }));
      const home = mkdtempSync(join(tmpdir(), 'sweetloop-nobody-'));
      chownSync(home, uid, gid);
      const script = join(home, 'render.mjs');
      writeFileSync(script, CHILD, { mode: 0o644 });
      // Whether this host lets an unprivileged user make a user namespace at all (Chromium's sandbox needs one).
      const namespaces = (() => {
        try {
          execFileSync('unshare', ['--user', 'true'], { uid, gid, stdio: 'ignore' });
          return true;
        } catch {
          return false;
        }
      })();
      const child = spawn(process.execPath, ['--import', 'tsx', script, join(ROOT, 'tasks/render.ts')], {
        cwd: ROOT,
        uid,
        gid,
        env: { PATH: process.env.PATH, HOME: home },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      try {
        const line = await new Promise<string>((res, rej) => {
          let out = '';
          child.stdout!.on('data', (c: Buffer) => {
            out += c.toString();
            if (out.includes('\n')) res(out.split('\n')[0]!);
          });
          child.once('exit', (code) => rej(new Error(`the child exited (${code}) before answering: ${out}`)));
        });
        const answer = JSON.parse(line) as { png?: string; error?: string };
        if (!namespaces) {
          // Then it cannot start, and says why rather than running without.
          expect(answer.error).toMatch(/user namespaces/);
          return;
        }
        expect(answer.error).toBeUndefined();
        expect(greenAt(Buffer.from(answer.png!, 'base64'))).toBe(true);
        expect(await inspectBrowser(child.pid!)).toEqual({
          noSandboxFlag: false,
          pagesInOwnUserNamespace: true,
          pagesUnderSeccomp: true,
        });
      } finally {
        child.stdin!.end('done\n');
        await new Promise((r) => child.once('exit', r));
        rmSync(home, { recursive: true, force: true });
      }
    },
  );
});
