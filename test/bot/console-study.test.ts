// A study made with `sweetloop study create` (bound to no Discord server) is what the next console session joins
// (bot/assign.ts chooseStudy): the console says so once, with how to leave it, and says nothing in the default
// pool. The real runtime over Postgres, a policy served by a real OpenAI-compatible server, the console driven
// through its streams.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../testing/database.ts';
import { startOpenAiServer, type OpenAiServer } from '../../testing/openai-server.ts';
import { joinedStudyLine } from '../../bot/console.ts';
import type { Runtime } from '../../bot/runtime.ts';
import { resolveStudy } from '../../bot/studies.ts';
import { deployPolicyByName } from '../../prisma/deployment-store.ts';
import { createStudy, setStudyStatus } from '../../prisma/study-store.ts';
import { importTasks } from '../../prisma/task-store.ts';
import { generateMiniTasks } from '../../tasks/mini.ts';
import { registerEndpointVersion } from '../../trainer/policies/registry.ts';
import { consoleRuntime, ConsolePerson } from '../helpers/console-person.ts';

let t: TestDatabase;
let server: OpenAiServer;
let runtime: Runtime;
let root: string;

beforeAll(async () => {
  t = await createTestDatabase();
  root = await mkdtemp(join(tmpdir(), 'console-study-'));
  await importTasks(t.prisma, generateMiniTasks({ seed: 3, count: 4, split: 'train' }));
  server = await startOpenAiServer({ model: 'm', reply: () => 'I WANT TO ANSWER: def f():\n    return None' });
  await registerEndpointVersion(t.prisma, { name: 'served', url: server.url, model: 'm', maxTokens: 64 });
  await deployPolicyByName(t.db, 'test', 'served');
  runtime = await consoleRuntime(t);
}, 120_000);

afterAll(async () => {
  await runtime?.close();
  await server?.close();
  await t?.drop();
  if (root) await rm(root, { recursive: true, force: true });
});

/** One console start of the person `name`, up to the question of which kind of task, then `q`: its transcript. */
async function consoleStart(name: string): Promise<string> {
  const person = new ConsolePerson({ engine: runtime.engine, name, root, consentText: 'Consent text.' });
  const at = await person.expect('Do you accept? [y/N]');
  person.type('y');
  await person.expect('Which kind of task?', at);
  person.type('q');
  await person.done;
  return person.out;
}

describe('the console and a study made with study create', () => {
  it('says nothing of studies in the default pool', async () => {
    expect(await consoleStart('before')).not.toContain('count in the study');
    expect(joinedStudyLine('default')).toBeNull();
  });

  it('tells the person which study their sessions join, and closing it sends the console back to the default pool', async () => {
    const tasks = await t.prisma.task.findMany({ select: { id: true } });
    const spec = await resolveStudy(t.prisma, {
      name: 'trial',
      seed: 1,
      perTask: 2,
      split: 'train',
      taskIds: tasks.map((x) => x.id),
    });
    await createStudy(t.prisma, 'cli', spec, { requireConsent: false });
    const out = await consoleStart('during');
    expect(out).toContain(joinedStudyLine('trial')!);
    expect(out).toContain(
      'Your sessions here count in the study "trial" (made with `sweetloop study create`): its tasks and its policies, not the default pool.',
    );
    expect(out.indexOf('count in the study')).toBeLessThan(out.indexOf('Which kind of task?'));

    await setStudyStatus(t.prisma, 'cli', 'trial', 'closed', { requireConsent: false });
    expect(await consoleStart('after')).not.toContain('count in the study');
  });
});
