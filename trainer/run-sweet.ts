// SWEET-RL's three phases of a training run (trainer/runs.ts): the critic (Bradley-Terry over trajectory pairs,
// then each agent turn's advantage stored for the dashboard and the critic checked against the tests), the
// candidates sampled from the policy and ranked by the critic, and the actor trained on them.
import { existsSync } from 'node:fs';
import { appendFile, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { saveRunMetrics } from '../prisma/run-store.ts';
import {
  ACTOR_PHASE,
  actorPhase,
  COLLECT_PHASE,
  criticGap,
  pairsForState,
  readActorPairs,
  selectStates,
} from './actor.ts';
import { widestGaps } from './pairs.ts';
import { peoplePairs } from '../prisma/preference-store.ts';
import { saveSessionAdvantages } from '../prisma/dashboard-store.ts';
import { Critic, CRITIC_PHASE, criticPairs, criticPhase, type PeoplePair } from './critic.ts';
import { criticAgainstTests, CRITIC_TESTS_METRIC, formatCriticTests } from './critic-tests.ts';
import type { Trajectory } from './data.ts';
import { saveCheckpoint } from './model/checkpoint.ts';
import { saveLora } from './model/lora.ts';
import { writeFileAtomic } from './model/safetensors.ts';
import type { LoadedModel } from './sequences.ts';
import { copyTokenizerFiles } from './versions.ts';
import {
  finishPhase,
  policyAnchor,
  runUpdates,
  saveProgress,
  startingPolicy,
  trainablePolicy,
  type RunState,
  type SnapshotPreference,
} from './run-state.ts';

/**
 * The people's preferences the snapshot recorded that still hold: the rater has not withdrawn or been deleted,
 * the answer is unchanged, and both sessions are still usable (`data`). A changed answer is left out rather than
 * followed, so the run trains on what its snapshot says or less, never on something else.
 */
async function snapshotPreferences(r: RunState, data: readonly Trajectory[]): Promise<PeoplePair[]> {
  const run = await r.ctx.prisma.trainingRun.findUniqueOrThrow({
    where: { id: r.runId },
    select: { dataSnapshot: true },
  });
  const recorded = (run.dataSnapshot as { preferences?: SnapshotPreference[] } | null)?.preferences ?? [];
  if (recorded.length === 0) return [];
  const key = (p: SnapshotPreference) => `${p.id}:${p.chosen}:${p.rejected}`;
  const holding = new Set(
    (
      await peoplePairs(
        r.ctx.prisma,
        data.map((t) => t.sessionId),
      )
    ).map(key),
  );
  const kept = recorded.filter((p) => holding.has(key(p)));
  if (kept.length < recorded.length)
    r.say(
      `${recorded.length - kept.length} preference(s) of the snapshot no longer hold (withdrawn, changed, or a session no longer usable): left out`,
    );
  return kept.map((p) => ({ chosen: p.chosen, rejected: p.rejected }));
}

/**
 * SWEET-RL, phase 1: the critic (sees the reference) learns turn advantages with Bradley-Terry. In a LoRA run
 * the critic trains adapters too (same rank, alpha and targets), and its checkpoints and result are adapters over
 * the base; a run that continues an adapter still gives its critic fresh adapters over the bare base.
 */
export async function trainCritic(r: RunState, data: Trajectory[]): Promise<string> {
  const base = r.cfg.fromCheckpoint;
  const criticDir = join(r.dir, 'critic');
  if (r.progress.done.includes(CRITIC_PHASE)) return criticDir;
  const resume = r.progress.current?.phase === CRITIC_PHASE ? r.progress.current : undefined;
  const lora = r.cfg.train.lora ? { ...r.cfg.train.lora, seed: r.cfg.train.seed } : null;
  const critic = await Critic.load(base, resume ? resume.dir : base, { lora });
  try {
    const examples = await critic.prepare(data, r.cfg.train.truncation);
    const pairs = criticPairs(data, examples, r.cfg.train.maxPairsPerTask, await snapshotPreferences(r, data));
    const people = pairs.filter((p) => p.from === 'people').length;
    r.say(
      `${CRITIC_PHASE}: ${pairs.length} trajectory pairs from ${data.length} sessions${people ? ` (${people} from people's preferences)` : ''}${critic.lora ? ' (LoRA)' : ''}`,
    );
    // Which pairs the critic trained on, by session, for whoever audits the run.
    await writeFileAtomic(
      join(r.dir, 'critic-pairs.json'),
      JSON.stringify(
        pairs.map((p) => ({ chosen: p.chosen.sessionId, rejected: p.rejected.sessionId, from: p.from })),
        null,
        2,
      ) + '\n',
    );
    const phase = criticPhase(critic, pairs, r.cfg.train);
    await runUpdates(r, phase, critic.lora, resume ? { step: resume.step, dir: resume.dir } : undefined);
    phase.dispose();
    // Each agent turn's advantage under the trained critic, for the dashboard's session page.
    const stored = await saveSessionAdvantages(r.ctx.prisma, r.runId, await critic.turnAdvantages(examples));
    r.say(
      `${CRITIC_PHASE}: advantages stored for ${stored.turns} agent turns${stored.skipped ? ` (${stored.skipped} sessions skipped: more turns scored than stored)` : ''}`,
    );
    // Does the trained critic order the run's sessions as their tests do? Stored now, so a resumed run keeps it.
    const byId = new Map(data.map((t) => [t.sessionId, t]));
    const check = criticAgainstTests(
      examples.map((e) => byId.get(e.sessionId)!),
      await critic.trajectoryScores(examples, r.cfg.train.criticTrajectoryScore),
    );
    r.metrics[CRITIC_TESTS_METRIC] = check;
    await saveRunMetrics(r.ctx.prisma, r.runId, r.metrics);
    r.say(`${CRITIC_PHASE}: ${formatCriticTests(check)}`);
    await rm(criticDir, { recursive: true, force: true });
    if (critic.lora) await saveLora(criticDir, critic.model);
    else await saveCheckpoint(criticDir, critic.model);
    await copyTokenizerFiles(base, criticDir);
  } finally {
    critic.dispose();
  }
  await finishPhase(r, CRITIC_PHASE);
  return criticDir;
}

/**
 * SWEET-RL, phase 2: for a fraction of the turn states, candidates sampled from the policy and ranked by the
 * critic (or, in a benchmark's control, the context's ranker: `criticDir` null), paired top half against bottom
 * half. One line a state in actor-pairs.jsonl: states collected before a
 * kill are kept, a line cut by the kill is dropped.
 */
export async function collectCandidates(r: RunState, data: Trajectory[], criticDir: string | null): Promise<string> {
  const { cfg } = r;
  const pairsFile = join(r.dir, 'actor-pairs.jsonl');
  if (r.progress.done.includes(COLLECT_PHASE)) return pairsFile;
  const critic = criticDir ? await Critic.load(cfg.fromCheckpoint, criticDir) : await r.ctx.ranker!.load();
  const sampler = await startingPolicy(r, 'sampler');
  try {
    const states = selectStates(data, cfg.train.stateFraction, cfg.train.seed, cfg.train.actorStates);
    let collected = 0;
    if (existsSync(pairsFile)) {
      const text = await readFile(pairsFile, 'utf8');
      const complete = text.lastIndexOf('\n') + 1;
      if (complete < text.length) await truncate(pairsFile, Buffer.byteLength(text.slice(0, complete)));
      collected = text.slice(0, complete).split('\n').filter(Boolean).length;
    }
    (r.progress.totals ??= {})[COLLECT_PHASE] = states.length;
    r.say(
      `actor: sampling ${cfg.train.candidates} candidates for ${states.length} turn states (${collected} already done)`,
    );
    for (let k = collected; k < states.length; k++) {
      const pairs = await pairsForState(sampler, critic, states[k]!, cfg.train, (cfg.train.seed * 7919 + k) >>> 0);
      await appendFile(pairsFile, JSON.stringify({ state: k, pairs }) + '\n');
      r.progress.collected = k + 1;
      if ((k + 1) % 5 === 0 || k + 1 === states.length) {
        await saveProgress(r);
        if (r.ctx.progress !== 'none') r.say(`actor: ${k + 1}/${states.length} states sampled`);
      }
    }
  } finally {
    critic.dispose();
    sampler.model.dispose();
  }
  await finishPhase(r, COLLECT_PHASE);
  return pairsFile;
}

/** SWEET-RL, phase 3: the actor, DPO (+ NLL) on the critic-ranked candidate pairs. */
export async function trainActor(r: RunState, pairsFile: string): Promise<LoadedModel> {
  const sampled = await readActorPairs(pairsFile);
  const pairs = widestGaps(sampled, criticGap, r.cfg.train.pairGapQuantile);
  r.say(
    `actor: ${pairs.length} candidate pairs${pairs.length < sampled.length ? ` (of ${sampled.length}: the critic's widest gaps)` : ''}`,
  );
  const t = await trainablePolicy(r, ACTOR_PHASE);
  const phase = actorPhase(t.m, pairs, r.cfg.train, await policyAnchor(r, t.m));
  await runUpdates(r, phase, !!r.cfg.train.lora, t.resume);
  phase.dispose();
  return t.m;
}
