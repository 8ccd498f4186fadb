// The health and metrics server's address (bot/health.ts): they answer without a token, so unless configured they
// listen on this machine only, and bin/config.ts HEALTH_HOST says so by default. The endpoints themselves are
// exercised during a session in test/bot/discord/health.test.ts.
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../bin/config.ts';
import { startHealthServer } from '../../bot/health.ts';

/** Whether a TCP connection to host:port is accepted. */
const reachable = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, host);
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

describe('health and metrics endpoints', () => {
  it('listen on 127.0.0.1 unless configured: another interface of the machine is refused', async () => {
    expect(parseConfig({}).HEALTH_HOST).toBe('127.0.0.1');
    const server = await startHealthServer({ port: 0, metrics: { registry: new Registry() }, ready: {} });
    try {
      expect((await fetch(`http://127.0.0.1:${server.port}/health/live`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${server.port}/metrics`)).status).toBe(200);
      const external = Object.values(networkInterfaces())
        .flat()
        .find((a) => a && !a.internal && a.family === 'IPv4')?.address;
      if (!external) console.warn('no non-loopback IPv4 interface here: only the loopback half is checked');
      else expect(await reachable(external, server.port), `${external}:${server.port}`).toBe(false);
    } finally {
      await server.close();
    }
  });

  it('listen where HEALTH_HOST says', async () => {
    const server = await startHealthServer({
      port: 0,
      host: '0.0.0.0',
      metrics: { registry: new Registry() },
      ready: {},
    });
    try {
      const external =
        Object.values(networkInterfaces())
          .flat()
          .find((a) => a && !a.internal && a.family === 'IPv4')?.address ?? '127.0.0.1';
      expect(await reachable(external, server.port)).toBe(true);
    } finally {
      await server.close();
    }
  });
});
