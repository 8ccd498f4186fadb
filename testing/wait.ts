// Waiting on a child process or a server in tests: a free loopback port to give it, and polling until it says so.
import { createServer } from 'node:net';

/** A TCP port free on 127.0.0.1 now (the OS picks it), for a server a test starts in another process. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Polls `fn` every 100 ms until it gives something other than null (a throw counts as null); fails after `ms`. */
export async function until<T>(what: string, fn: () => Promise<T | null>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
