// A session's story, for a violation of the crash soak: the bot's lives (started, gateway connected, start()
// done, killed and where), what the person sent (and whether a bot was connected to receive it), and every
// request the bot made on the session's thread, in one time line (seconds from the phase's start). Written
// beside the bot's logs, so that whoever fixes the fault can see what the bot did and did not do.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FakeDiscord } from '../testing/fake-discord.ts';
import type { Epoch } from './crash-process.ts';
import type { Sent } from './crash-people.ts';

export async function writeTimeline(o: {
  dir: string;
  sessionId: string;
  threadId: string;
  fake: FakeDiscord;
  sent: Sent[];
  epochs: Epoch[];
  t0: number;
}): Promise<string> {
  const rows: [number, string][] = [];
  const sec = (t: number) => ((t - o.t0) / 1000).toFixed(2).padStart(8);
  for (const e of o.epochs) {
    rows.push([e.spawnAt, `bot life ${e.n} starts (log ${e.logFile})`]);
    if (e.gatewayAt !== null) rows.push([e.gatewayAt, `bot life ${e.n}: gateway connected`]);
    if (e.readyAt !== null) rows.push([e.readyAt, `bot life ${e.n}: start() done (resumed, caught up)`]);
    if (e.killAt !== null)
      rows.push([e.killAt, `bot life ${e.n} killed: ${e.point}${e.cued ? '' : ' (cue not reached)'}`]);
    else if (e.exitAt !== null) rows.push([e.exitAt, `bot life ${e.n} exited by itself (code ${e.exitCode})`]);
  }
  for (const m of o.sent.filter((x) => x.threadId === o.threadId)) {
    rows.push([
      m.at,
      `person sends ${m.id} (${m.why} to agent message ${m.question}, ${m.live ? 'a bot connected' : 'no bot connected'}): ${JSON.stringify(m.content)}`,
    ]);
  }
  for (const r of o.fake.requests.filter((x) => x.path.startsWith(`/channels/${o.threadId}`))) {
    const content = typeof r.body?.content === 'string' ? ` ${JSON.stringify(r.body.content.slice(0, 60))}` : '';
    const ref = r.body?.message_reference?.message_id ? ` replying to ${r.body.message_reference.message_id}` : '';
    rows.push([r.at, `bot ${r.method} ${r.path}${r.query} -> ${r.status}${content}${ref}`]);
  }
  rows.sort((a, b) => a[0] - b[0]);
  const file = join(o.dir, `session-${o.sessionId.slice(0, 8)}.txt`);
  await writeFile(
    file,
    `session ${o.sessionId}, thread ${o.threadId}\n` + rows.map(([t, what]) => `${sec(t)} ${what}`).join('\n') + '\n',
  );
  return file;
}
