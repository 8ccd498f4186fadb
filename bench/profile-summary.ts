// Summarises a V8 CPU profile (`node --cpu-prof`, e.g. the bot process of `npm run bench:bot -- --cpu-prof DIR`):
// the functions with the most self time, and the share of the profile spent under each of the project's folders
// and each dependency (total time: a frame counted once per sample however deep it recurs).
// Usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [--top 25]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' } },
});
if (positionals.length !== 1) throw new Error('usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [--top 25]');
const profile = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

/** Where a frame's code lives: a project folder, a dependency, Node itself, or V8's own states. */
function area(url: string, name: string): string {
  if (!url) return `(${name || 'native'})`;
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return `dep ${dep[1]}`;
  if (url.startsWith('node:')) return 'node internals';
  const own = /\/(bot|tasks|prisma|trainer|bin|bench)\/(?:([^/]+)\/)?/.exec(url);
  return own ? `${own[1]}/${own[2] && !own[2].includes('.') ? `${own[2]}/` : ''}` : url;
}
const label = (n: Node) =>
  `${n.callFrame.functionName || '(anonymous)'} ${n.callFrame.url.replace(/^.*?\/(node_modules|bot|tasks|prisma|trainer|bench)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;

const self = new Map<string, number>();
const under = new Map<string, number>();
let total = 0;
for (const [i, id] of profile.samples.entries()) {
  const dt = profile.timeDeltas[i] ?? 0;
  total += dt;
  const leaf = byId.get(id)!;
  self.set(label(leaf), (self.get(label(leaf)) ?? 0) + dt);
  const seen = new Set<string>();
  for (let n: Node | undefined = leaf; n; n = byId.get(parent.get(n.id) ?? -1))
    seen.add(area(n.callFrame.url, n.callFrame.functionName));
  for (const a of seen) under.set(a, (under.get(a) ?? 0) + dt);
}
const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
const top = Number(values.top);
console.log(`${(total / 1e6).toFixed(2)} s profiled, ${profile.samples.length} samples`);
console.log('\nself time, top functions:');
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
console.log('\ntime under each area (a sample counts for every area on its stack):');
for (const [k, v] of [...under].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
