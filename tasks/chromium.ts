// Starting headless Chromium (playwright-core, the system's browser): the one place that decides its flags, so the
// page renderer (render.ts) and the report's plots (bot/report/png.ts) run it the same way.
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';

export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/** Quiet, offline, no GPU: what every headless use needs. */
export const BASE_FLAGS: readonly string[] = [
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/**
 * Whether Chromium's own sandbox (user namespaces and seccomp around every page's process) is on: always, except
 * for root, where Chromium refuses to start with it. (Playwright adds `--no-sandbox` unless asked otherwise.)
 */
export function chromiumSandbox(uid: number | undefined = process.getuid?.()): boolean {
  return uid !== 0;
}

/** Launches Chromium with BASE_FLAGS, the sandbox rule and `args`; failures say what to do, in one line. */
export async function launchChromium(executablePath: string, args: readonly string[] = []): Promise<Browser> {
  if (!existsSync(executablePath)) {
    throw new Error(
      `Chromium not found at ${executablePath}: install it (Debian: apt-get install chromium) or set CHROMIUM_PATH.`,
    );
  }
  const { chromium } = await import('playwright-core');
  const sandbox = chromiumSandbox();
  try {
    return await chromium.launch({
      executablePath,
      args: [...BASE_FLAGS, ...args],
      chromiumSandbox: sandbox,
      timeout: 60_000,
      // Playwright's own handlers would close the browser and exit(130/143) on the first signal, cutting short the
      // process's shutdown (measured: `npm start` left its dashboard, database lock and socket behind on Ctrl-C).
      // Each process closes its browser in its own shutdown; SIGHUP (a closed terminal) is still Playwright's.
      handleSIGINT: false,
      handleSIGTERM: false,
    });
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    const hint =
      sandbox && /sandbox|namespace/i.test(text)
        ? ' As a non-root user Chromium runs with its sandbox, which needs unprivileged user namespaces (in a container: a seccomp profile that allows them).'
        : '';
    throw new Error(`cannot start Chromium at ${executablePath}: ${text.split('\n')[0]}.${hint}`);
  }
}
