// The logger: readable lines unless JSON is asked for, and secrets redacted in both.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../bin/config.ts';
import { createLogger } from '../../bin/log.ts';

function capture(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  let out = '';
  stream.on('data', (d: Buffer) => (out += d.toString('utf8')));
  return { stream, text: () => out };
}

describe('createLogger', () => {
  it('writes one readable line a record by default (info and above), with secrets redacted', async () => {
    const config = parseConfig({});
    expect(config.LOG_FORMAT).toBe('pretty');
    const { stream, text } = capture();
    const log = createLogger(config, 'sweetloop', { destination: stream });
    log.warn({ policy: 'starter-1a2b3c4d', DISCORD_TOKEN: 'secret-token-value', request: { authorization: 'Bearer xyz' } }, 'policy deployed');
    log.info('seeded the built-in tasks');
    await new Promise((r) => setImmediate(r));
    const lines = text().trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\] WARN: policy deployed /);
    expect(lines[0]).toContain('"policy":"starter-1a2b3c4d"');
    expect(lines[0]).not.toMatch(/^\{/);
    expect(text()).not.toContain('secret-token-value');
    expect(text()).not.toContain('Bearer xyz');
    expect(text()).toContain('[redacted]');
    // No colour codes when the destination is not a terminal.
    expect(text()).not.toContain('\u001b[');
  });

  it('writes pino JSON lines with LOG_FORMAT=json, secrets redacted, and honours the level given', async () => {
    const config = parseConfig({ LOG_FORMAT: 'json', LOG_LEVEL: 'debug' });
    const { stream, text } = capture();
    const log = createLogger(config, 'sweetloop-test', { level: 'warn', destination: stream });
    log.info('not shown');
    log.warn({ SIMULATOR_LLM_KEY: 'sk-very-secret' }, 'tools missing');
    await new Promise((r) => setImmediate(r));
    const lines = text().trim().split('\n');
    expect(lines).toHaveLength(1);
    const rec = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(rec).toMatchObject({ level: 40, name: 'sweetloop-test', msg: 'tools missing', SIMULATOR_LLM_KEY: '[redacted]' });
  });

  it('refuses an unknown LOG_FORMAT with a clear message', () => {
    expect(() => parseConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT: expected pretty or json/);
  });
});
