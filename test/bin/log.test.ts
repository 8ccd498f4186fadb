// The logger: readable lines unless JSON is asked for, and secrets redacted in both.
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../bin/config.ts';
import { createLogger, redactText } from '../../bin/log.ts';

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
    log.warn(
      { policy: 'starter-1a2b3c4d', DISCORD_TOKEN: 'secret-token-value', request: { authorization: 'Bearer xyz' } },
      'policy deployed',
    );
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
    expect(rec).toMatchObject({
      level: 40,
      name: 'sweetloop-test',
      msg: 'tools missing',
      SIMULATOR_LLM_KEY: '[redacted]',
    });
  });

  it('scrubs tokens and secrets from every string it writes: query values, URL passwords, bearer headers, dashboard tokens, configured secrets', async () => {
    const config = parseConfig({
      LOG_FORMAT: 'json',
      HF_TOKEN: 'hf_abcdefghijklmnop',
      PRIVACY_KEY: 'a-private-key-of-my-own',
    });
    const { stream, text } = capture();
    const log = createLogger(config, 'sweetloop', { destination: stream });
    const dashboardToken = 'sld_Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA';
    log.error(
      {
        path: `/login?token=${dashboardToken}&next=/people`,
        err: new Error(`GET https://huggingface.co/api?access_token=hf_abcdefghijklmnop failed`),
      },
      `request /login?token=${dashboardToken} failed`,
    );
    log.warn(
      {
        nested: [{ note: 'connecting to postgres://sweetloop:hunter2-secret@db:5432/sweetloop' }],
        header: 'Authorization: Bearer abcdef123456',
      },
      'key a-private-key-of-my-own seen',
    );
    await new Promise((r) => setImmediate(r));
    const out = text();
    for (const secret of [
      dashboardToken,
      dashboardToken.slice(4, 24),
      'hf_abcdefghijklmnop',
      'hunter2-secret',
      'abcdef123456',
      'a-private-key-of-my-own',
    ])
      expect(out, secret).not.toContain(secret);
    const [first, second] = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, any>);
    expect(first!.msg).toBe('request /login?token=[redacted] failed');
    expect(first!.path).toBe('/login?token=[redacted]&next=[redacted]');
    expect(first!.err.message).toContain('access_token=[redacted]');
    expect(second!.nested[0].note).toBe('connecting to postgres://sweetloop:[redacted]@db:5432/sweetloop');
    expect(redactText('see sld_abcdefghijklmnopqrst and Bot MTIzNDU2Nzg5.abc.def')).toBe(
      'see sld_[redacted] and Bot [redacted]',
    );
    // An error logged alone keeps pino's shape: under `err`, its message as the line's.
    const { stream: s2, text: t2 } = capture();
    createLogger(config, 'sweetloop', { destination: s2 }).error(
      new Error('GET /login?token=sld_abcdefghijklmnopqrst failed'),
    );
    await new Promise((r) => setImmediate(r));
    const alone = JSON.parse(t2()) as { msg: string; err: { type: string; message: string } };
    expect(alone.msg).toBe('GET /login?token=[redacted] failed');
    expect(alone.err).toMatchObject({ type: 'Error', message: 'GET /login?token=[redacted] failed' });
    expect(redactText('plain text, a=b & c=d, 50% of cases')).toBe('plain text, a=b & c=d, 50% of cases');
  });

  it('refuses an unknown LOG_FORMAT with a clear message', () => {
    expect(() => parseConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT: expected pretty or json/);
  });
});
