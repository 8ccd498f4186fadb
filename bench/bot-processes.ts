// bench:bot's two other processes: the OpenAI-compatible server whose replies take a fixed time (its own time on
// each reply reported back), and the bot (bench/bot-process.ts) answering the driver's IPC requests.
import { fork, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

/** What makes a person's message unique in the run: the server's time on the reply to it is looked up by it. */
export const personKey = (k: number, n: number, p: number) => `Reply ${k} from person ${n} of phase ${p}`;
const PERSON_MESSAGE = /Reply \d+ from person \d+ of phase \d+/;

/** The reply every agent turn gets: `maxTokens` words, then the answer on the last turn (the endpoint repeats it). */
export async function startModelServer(
  maxTokens: number,
  tokenDelayMs: number,
): Promise<{ url: string; close: () => void; servedMs: Map<string, number> }> {
  const words = Array.from({ length: maxTokens }, (_, i) => (i === 0 ? 'Could' : `w${i}`)).join(' ') + '?';
  const serverModule = pathToFileURL(join(import.meta.dirname, '../testing/openai-server.ts')).href;
  const code =
    `const { startOpenAiServer } = await import(${JSON.stringify(serverModule)});` +
    `const s = await startOpenAiServer({ model: 'bench-model', maxModelLen: 8192, tokenDelayMs: ${tokenDelayMs}, reply: () => ${JSON.stringify(words)}, onServed: (b, ms) => console.log(JSON.stringify({ last: String(b.messages.at(-1)?.content ?? ''), ms })) });` +
    `console.log(s.url);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // The server's own time on each reply (testing/openai-server.ts onServed), by the person's message it answers.
  const servedMs = new Map<string, number>();
  const url = await new Promise<string>((resolveUrl, reject) => {
    child.once('exit', (c) => reject(new Error(`the OpenAI-compatible server process exited (${c})`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{')) return resolveUrl(line.trim());
      const r = JSON.parse(line) as { last: string; ms: number };
      const key = PERSON_MESSAGE.exec(r.last)?.[0];
      if (key) servedMs.set(key, r.ms);
    });
  });
  return { url, close: () => void child.kill('SIGTERM'), servedMs };
}

/** The bot in its own process, answering the driver's IPC requests (bench/bot-process.ts). */
export async function startBot(env: Record<string, string>, profileDir: string | undefined) {
  const execArgv = [
    '--expose-gc',
    '--import',
    'tsx',
    ...(profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []),
  ];
  const child = fork(join(import.meta.dirname, 'bot-process.ts'), [], {
    execArgv,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<string, (m: Record<string, any>) => void>();
  let ready!: () => void;
  const readyP = new Promise<void>((r) => (ready = r));
  child.on('message', (m: { op: string } & Record<string, any>) =>
    m.op === 'ready' ? ready() : pending.get(m.op)?.(m),
  );
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  await Promise.race([
    readyP,
    exited.then((c) => Promise.reject(new Error(`the bot process exited (${c}) before it was ready`))),
  ]);
  const ask = (op: string) =>
    new Promise<Record<string, any>>((resolve) => {
      pending.set(op, resolve);
      child.send({ op });
    });
  return {
    ask,
    stop: async () => {
      child.send({ op: 'stop' });
      const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(t);
    },
  };
}
