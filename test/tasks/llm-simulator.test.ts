import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BackendTask, FrontendTask } from '../../tasks/model.ts';
import { buildDialogue, HTML_MARKER } from '../../tasks/protocol.ts';
import { createLlmCollaborator, LlmSimulatorError } from '../../tasks/llm-simulator.ts';

// A local stand-in for an OpenAI-compatible endpoint: each test queues the responses it wants and reads back
// the requests the simulator really sent over HTTP.
interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  body: { model: string; messages: { role: string; content: unknown }[]; max_tokens: number };
}
type Reply = { status: number; body: string; headers?: Record<string, string> } | 'hang';
let server: Server;
let base: string;
let queue: Reply[] = [];
let seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      seen.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(data) });
      const next = queue.shift() ?? { status: 500, body: 'queue empty' };
      if (next === 'hang') return; // never answers: the client must time out
      res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
      res.end(next.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const ok = (content: string) => ({
  status: 200,
  body: JSON.stringify({ choices: [{ message: { role: 'assistant', content } }] }),
});
function reset(...replies: Reply[]) {
  queue = replies;
  seen = [];
}

const task: BackendTask = {
  kind: 'backend',
  description: 'A function that converts a temperature. The signature of the function is: def convert(t)',
  reference: 'def convert(t):\n    return round(t * 9 / 5 + 32, 1)',
  testCases: ['convert(0)'],
};
const dialogue = buildDialogue(task, [
  { role: 'agent', content: 'Celsius to Fahrenheit?' },
  { role: 'human', content: 'Yes.' },
  { role: 'agent', content: 'Should I round the result?' },
]);

describe('LLM collaborator simulator', () => {
  it('sends model, messages and the bearer key to /chat/completions', async () => {
    reset(ok('  Yes, to one decimal place.  '));
    const sim = createLlmCollaborator(task, { url: base, model: 'sim-model', key: 'sk-test-123' });
    expect(await sim.reply(dialogue)).toBe('Yes, to one decimal place.');
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.headers.authorization).toBe('Bearer sk-test-123');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body.model).toBe('sim-model');
    // The simulator's own prompt with the hidden reference, then the agent's messages as the user's turns.
    const roles = req.body.messages.map((m) => m.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'user']);
    const system = req.body.messages[0]!.content as string;
    expect(system).toContain(task.reference);
    expect(system).toContain(task.description);
    expect(system).toMatch(/at most two sentences/);
    expect(system).toMatch(/I don't know/);
    expect(req.body.messages.slice(1).map((m) => m.content)).toEqual([
      'Celsius to Fahrenheit?',
      'Yes.',
      'Should I round the result?',
    ]);
    // The agent's system prompt is not passed on.
    expect(JSON.stringify(req.body.messages)).not.toContain('I WANT TO ANSWER');
  });

  it('sends no authorization header without a key, and accepts a full endpoint URL', async () => {
    reset(ok('No.'));
    const sim = createLlmCollaborator(task, { url: `${base}/chat/completions`, model: 'm' });
    await sim.reply(dialogue);
    expect(seen[0]!.path).toBe('/v1/chat/completions');
    expect(seen[0]!.headers.authorization).toBeUndefined();
  });

  it('cuts replies to the 400 / 1,000 character caps', async () => {
    reset(ok('x'.repeat(3000)), ok('y'.repeat(3000)));
    expect(await createLlmCollaborator(task, { url: base, model: 'm' }).reply(dialogue)).toHaveLength(400);
    const fe: FrontendTask = {
      kind: 'frontend',
      description: 'Shop page.',
      reference: '<html><body>shop</body></html>',
    };
    const feDialogue = buildDialogue(fe, [{ role: 'agent', content: `${HTML_MARKER}<html></html>` }]);
    expect(await createLlmCollaborator(fe, { url: base, model: 'm' }).reply(feDialogue)).toHaveLength(1000);
    expect(seen[1]!.body.messages[0]!.content).toContain(fe.reference);
  });

  it('retries 429 and 5xx with backoff, then succeeds', async () => {
    reset(
      { status: 429, body: '{"error":"slow down"}', headers: { 'retry-after': '0' } },
      { status: 503, body: 'busy' },
      ok('Yes.'),
    );
    const sim = createLlmCollaborator(task, { url: base, model: 'm', retries: 3, backoffMs: 5 });
    expect(await sim.reply(dialogue)).toBe('Yes.');
    expect(seen).toHaveLength(3);
  });

  it('gives up with a clear error after the retries, without leaking the key', async () => {
    reset({ status: 500, body: 'boom' }, { status: 500, body: 'boom' });
    const sim = createLlmCollaborator(task, { url: base, model: 'm', key: 'sk-secret', retries: 1, backoffMs: 1 });
    const err = await sim.reply(dialogue).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LlmSimulatorError);
    expect((err as Error).message).toMatch(/HTTP 500: boom \(gave up after 2 attempts\)/);
    expect((err as LlmSimulatorError).status).toBe(500);
    // The server stayed in trouble: the game may be tried again later (a 4xx below is not that).
    expect((err as LlmSimulatorError).unavailable).toBe(true);
    expect((err as Error).message).not.toContain('sk-secret');
  });

  it('does not retry a 4xx other than 429', async () => {
    reset({ status: 401, body: '{"error":"bad key"}' }, ok('never'));
    const sim = createLlmCollaborator(task, { url: base, model: 'm', retries: 3, backoffMs: 1 });
    await expect(sim.reply(dialogue)).rejects.toThrow(/refused the request: HTTP 401/);
    expect(seen).toHaveLength(1);
  });

  it('times out a request that never answers, and reports malformed bodies', async () => {
    reset('hang');
    const slow = createLlmCollaborator(task, { url: base, model: 'm', retries: 0, timeoutMs: 200 });
    await expect(slow.reply(dialogue)).rejects.toThrow(/did not answer within 200 ms/);
    reset({ status: 200, body: '{"choices": []}' });
    await expect(createLlmCollaborator(task, { url: base, model: 'm' }).reply(dialogue)).rejects.toThrow(
      /no choices\[0\]\.message\.content/,
    );
    reset({ status: 200, body: '<html>proxy error</html>' });
    await expect(createLlmCollaborator(task, { url: base, model: 'm' }).reply(dialogue)).rejects.toThrow(/not JSON/);
  });

  it('refuses a dialogue that does not end with an agent message', async () => {
    reset(ok('x'));
    const sim = createLlmCollaborator(task, { url: base, model: 'm' });
    await expect(sim.reply(buildDialogue(task, []))).rejects.toThrow(/must end with one/);
    expect(seen).toHaveLength(0);
  });

  it('sends screenshots as images to a vision model when given a renderer', async () => {
    reset(ok('Make the header blue.'));
    const fe: FrontendTask = {
      kind: 'frontend',
      description: 'Shop page.',
      reference: '<html><body>target</body></html>',
    };
    const rendered: string[] = [];
    const screenshot = async (html: string) => {
      rendered.push(html);
      return Buffer.from(`png-of:${html}`);
    };
    const draft = '<html><body>draft</body></html>';
    const sim = createLlmCollaborator(fe, { url: base, model: 'vl', screenshot });
    await sim.reply(buildDialogue(fe, [{ role: 'agent', content: `How is this?\n${HTML_MARKER}${draft}` }]));
    expect(rendered).toEqual([fe.reference, draft]);
    const last = seen[0]!.body.messages.at(-1)!;
    const parts = last.content as { type: string; text?: string; image_url?: { url: string } }[];
    expect(parts.map((p) => p.type)).toEqual(['text', 'image_url', 'image_url']);
    expect(parts[0]!.text).toBe('How is this?');
    expect(parts[2]!.image_url!.url).toBe(`data:image/png;base64,${Buffer.from(`png-of:${draft}`).toString('base64')}`);
    // With images, the target's HTML is not in the prompt.
    expect(seen[0]!.body.messages[0]!.content).not.toContain('target');
  });
});
