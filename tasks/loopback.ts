// Whether a server listens on loopback only, and whether a request's Host header names this machine: the rule every
// server of ours applies before it admits requests without a token (bot/dashboard/access.ts, trainer/env-server.ts).
import { isIP } from 'node:net';

/** Whether an address to listen on is loopback only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^::ffff:127\./.test(h);
  return false;
}

/** The Host header names this machine by a loopback name (a page from another origin resolving to 127.0.0.1 does not: DNS rebinding). */
export function loopbackHostHeader(hostHeader: string | undefined): boolean {
  if (!hostHeader) return false;
  const m = /^(\[[^\]]+\]|[^:]+)(:\d+)?$/.exec(hostHeader);
  return !!m && isLoopbackHost(m[1]!);
}
