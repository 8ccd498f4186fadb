// The chat-completions client against a real OpenAI-compatible HTTP server (testing/openai-server.ts):
// streaming and not, logprobs, usage, the SDK's retries (429 with Retry-After, 500, refused connections), ours
// (a connection dropped mid-stream, a slow first token), timeouts, the in-flight cap, and the key kept out of
// errors and logs.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import pino from 'pino';
import { AgentUnavailableError } from '../../tasks/agent.ts';
import { chatCompletion, endpointRequest } from '../../tasks/chat-client.ts';
import { EndpointRequestError, EndpointUnavailableError, endpointBaseUrl } from '../../tasks/chat-endpoint.ts';
import { startOpenAiServer, splitTokens, type OpenAiServer } from '../../testing/openai-server.ts';

let server: OpenAiServer;
const messages = [
  { role: 'system' as const, content: 'You are terse.' },
  { role: 'user' as const, content: 'What is the rounding rule?' },
];
const REPLY = 'Round to one decimal place, half up.';

beforeAll(async () => {
  server = await startOpenAiServer({ model: 'llama-test', reply: () => REPLY });
});
afterAll(async () => {
  await server.close();
});
afterEach(() => {
  server.requests.length = 0;
});

describe('chat client', () => {
  it('streams a reply with logprobs, usage, served model and first-token time', async () => {
    const r = await chatCompletion(
      { url: server.url },
      {
        model: 'llama-test',
        messages,
        temperature: 0.5,
        topP: 0.9,
        maxTokens: 64,
        seed: 7,
        logprobs: true,
        topLogprobs: 2,
      },
    );
    expect(r.text).toBe(REPLY);
    expect(r.finishReason).toBe('stop');
    expect(r.servedModel).toBe('llama-test');
    expect(r.usage).toEqual({ promptTokens: expect.any(Number), completionTokens: splitTokens(REPLY).length });
    expect(r.logprobs!.map((l) => l.token).join('')).toBe(REPLY);
    expect(r.logprobs![0]!.top).toHaveLength(2);
    expect(r.firstTokenMs).toBeGreaterThanOrEqual(0);
    expect(r.latencyMs).toBeGreaterThanOrEqual(r.firstTokenMs!);
    expect(r.attempts).toBe(1);
    const sent = server.chatRequests()[0]!.body;
    expect(sent).toMatchObject({
      model: 'llama-test',
      stream: true,
      temperature: 0.5,
      top_p: 0.9,
      max_tokens: 64,
      seed: 7,
      logprobs: true,
      top_logprobs: 2,
    });
    expect(sent.messages).toEqual(messages);
    expect(server.chatRequests()[0]!.headers.authorization).toBeUndefined();
  });

  it('asks without streaming, and cuts at max_tokens with finish reason length', async () => {
    const r = await chatCompletion(
      { url: `${server.url}/chat/completions` },
      { model: 'llama-test', messages, maxTokens: 3, stream: false, logprobs: true },
    );
    expect(r.text).toBe(splitTokens(REPLY).slice(0, 3).join(''));
    expect(r.finishReason).toBe('length');
    expect(r.firstTokenMs).toBeNull();
    expect(r.logprobs).toHaveLength(3);
    expect(server.chatRequests()[0]!.body.stream).toBe(false);
    const plain = await chatCompletion({ url: server.url }, { model: 'llama-test', messages });
    expect(plain.logprobs).toBeNull();
  });

  it('honours Retry-After on 429 and retries a 500 (the SDK), then succeeds', async () => {
    server.fault({ status: 429, retryAfter: 1 }, { status: 500 });
    const r = await chatCompletion({ url: server.url }, { model: 'llama-test', messages });
    expect(r.text).toBe(REPLY);
    expect(r.attempts).toBe(3);
    const at = server.chatRequests().map((q) => q.at);
    expect(at).toHaveLength(3);
    // Retry-After: 1 second between the 429 and the next attempt.
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);
  });

  it('re-sends a reply whose connection dropped mid-stream', async () => {
    server.fault({ dropAfterTokens: 2 });
    const r = await chatCompletion(
      { url: server.url },
      { model: 'llama-test', messages, logprobs: true },
      { backoffMs: 10 },
    );
    expect(r.text).toBe(REPLY);
    // The broken attempt's tokens are not kept.
    expect(r.logprobs).toHaveLength(splitTokens(REPLY).length);
    expect(r.attempts).toBe(2);
    expect(server.chatRequests()).toHaveLength(2);
  });

  it('gives up on a first token that does not come in time, as unavailable', async () => {
    server.fault({ firstTokenDelayMs: 1500 }, { firstTokenDelayMs: 1500 });
    const err = await chatCompletion(
      { url: server.url },
      { model: 'llama-test', messages },
      { firstTokenTimeoutMs: 200, maxRetries: 1, backoffMs: 10 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointUnavailableError);
    expect(err).toBeInstanceOf(AgentUnavailableError);
    expect((err as Error).message).toMatch(/sent no token within 200 ms \(gave up after 2 attempts\)/);
    // A slow first token once is only retried.
    server.fault({ firstTokenDelayMs: 1500 });
    const r = await chatCompletion(
      { url: server.url },
      { model: 'llama-test', messages },
      { firstTokenTimeoutMs: 200, backoffMs: 10 },
    );
    expect(r.text).toBe(REPLY);
  });

  it('ends a reply that exceeds the total timeout, retries included', async () => {
    server.fault('hang');
    const err = await chatCompletion(
      { url: server.url },
      { model: 'llama-test', messages, stream: false },
      { totalTimeoutMs: 300 },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EndpointUnavailableError);
    expect((err as Error).message).toMatch(/did not answer within 300 ms/);
  });

  it('reports a server that stays down as unavailable, and works again once it is back', async () => {
    await server.down(2500);
    const err = await chatCompletion({ url: server.url }, { model: 'llama-test', messages }, { maxRetries: 1 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EndpointUnavailableError);
    expect((err as Error).message).toMatch(/unreachable/);
    expect((err as EndpointUnavailableError).attempts).toBe(2);
    await server.up();
    expect((await chatCompletion({ url: server.url }, { model: 'llama-test', messages })).text).toBe(REPLY);
  });

  it('makes a 4xx a clear error that names endpoint and status, without retrying it', async () => {
    const err = await chatCompletion({ url: server.url }, { model: 'no-such-model', messages }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EndpointRequestError);
    expect(err).not.toBeInstanceOf(AgentUnavailableError);
    expect((err as Error).message).toBe(
      `chat endpoint ${server.url} refused the request: HTTP 404: The model \`no-such-model\` does not exist.`,
    );
    expect((err as EndpointRequestError).status).toBe(404);
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('reads the key from the named variable and keeps it out of errors and logs', async () => {
    const secret = 'sk-very-secret-0123456789';
    const keyed = await startOpenAiServer({ apiKey: secret, reply: (b) => `echo ${secret}` });
    const lines: string[] = [];
    const log = pino({ level: 'debug' }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
    try {
      process.env.TEST_CHAT_KEY = secret;
      const ok = await chatCompletion(
        { url: keyed.url, apiKeyEnv: 'TEST_CHAT_KEY' },
        { model: 'test-model', messages },
        { log },
      );
      expect(ok.text).toBe(`echo ${secret}`);
      expect(keyed.requests[0]!.headers.authorization).toBe(`Bearer ${secret}`);

      // A wrong key: 401, not retried, and the message does not carry the key (nor does the log).
      process.env.TEST_CHAT_KEY = `${secret}-wrong`;
      const err = await chatCompletion(
        { url: keyed.url, apiKeyEnv: 'TEST_CHAT_KEY' },
        { model: 'test-model', messages },
        { log },
      ).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EndpointRequestError);
      expect((err as Error).message).toMatch(/HTTP 401/);
      // A failure path that logs: a broken stream.
      process.env.TEST_CHAT_KEY = secret;
      keyed.fault({ dropAfterTokens: 1 }, { status: 503 });
      await chatCompletion(
        { url: keyed.url, apiKeyEnv: 'TEST_CHAT_KEY' },
        { model: 'test-model', messages },
        { log, backoffMs: 5 },
      );
      const down = await chatCompletion(
        { url: keyed.url, apiKeyEnv: 'UNSET_KEY_VARIABLE' },
        { model: 'test-model', messages },
      ).catch((e: unknown) => e);
      expect((down as Error).message).toMatch(/environment variable UNSET_KEY_VARIABLE, which is not set/);
      for (const text of [(err as Error).message, (err as Error).stack ?? '', JSON.stringify(err), ...lines])
        expect(text).not.toContain(secret);
      expect(lines.some((l) => l.includes('retrying a broken reply'))).toBe(true);
    } finally {
      delete process.env.TEST_CHAT_KEY;
      await keyed.close();
    }
  });

  it('hides a short key only where it stands alone, not inside the words of a message (`x` in `proxy-box`)', async () => {
    const keyed = await startOpenAiServer({ apiKey: 'x', reply: () => 'ok' });
    try {
      const err = await chatCompletion({ url: keyed.url, apiKey: 'x' }, { model: 'proxy-box', messages }).catch(
        (e: unknown) => e,
      );
      expect((err as Error).message).toBe(
        `chat endpoint ${keyed.url} refused the request: HTTP 404: The model \`proxy-box\` does not exist.`,
      );
    } finally {
      await keyed.close();
    }
  });

  it('never sends OPENAI_API_KEY to an endpoint configured without a key', async () => {
    process.env.OPENAI_API_KEY = 'sk-openai-should-not-leak';
    try {
      await chatCompletion({ url: server.url }, { model: 'llama-test', messages });
      expect(server.chatRequests()[0]!.headers.authorization).toBeUndefined();
    } finally {
      delete process.env.OPENAI_API_KEY;
    }
  });

  it('caps requests in flight per endpoint, process-wide', async () => {
    const slow = await startOpenAiServer({ reply: () => 'one two three four', tokenDelayMs: 30 });
    try {
      const replies = await Promise.all(
        Array.from({ length: 6 }, () =>
          chatCompletion({ url: slow.url }, { model: 'test-model', messages }, { maxInFlight: 2 }),
        ),
      );
      expect(replies.map((r) => r.text)).toEqual(Array(6).fill('one two three four'));
      expect(slow.chatRequests()).toHaveLength(6);
      expect(slow.stats.maxActive).toBe(2);
    } finally {
      await slow.close();
    }
  });

  it('normalises endpoint URLs and reaches the other routes with the same client', async () => {
    expect(endpointBaseUrl('http://h:8000/v1/')).toBe('http://h:8000/v1');
    expect(endpointBaseUrl('http://h:8000/v1/chat/completions')).toBe('http://h:8000/v1');
    expect(() => endpointBaseUrl('not a url')).toThrow(/not a URL/);
    const models = (await endpointRequest({ url: server.url }, 'get', '/models')) as {
      data: { id: string; max_model_len?: number }[];
    };
    expect(models.data[0]).toMatchObject({ id: 'llama-test', max_model_len: 4096 });
  });
});
