// The dataset card written beside every export (Hugging Face README style): what is in the file, how it was
// selected, how it was collected, and what was done to protect the people in it.
import { sourceOf, type ExportFilters } from './query.ts';
import { hfFeatures, type HfFeature } from './parquet.ts';
import { pipelineSection } from './official-pipeline.ts';
import { TRAINING_FIELDS, trainingSection, type TrainingFormat } from './training-card.ts';
import type { TrainingStats } from './training-rows.ts';
import { REFERENCE_COMMITS, SWEET_RL_FORMAT_VERSION, type SweetRlStats } from './sweet-rl.ts';
import type { ExportStats } from './stats.ts';

export type ExportFormat = 'sweet-rl' | 'jsonl' | 'parquet' | 'hf' | TrainingFormat;

const FIELDS: Record<ExportFormat, [string, string][]> = {
  ...TRAINING_FIELDS,
  'sweet-rl': [
    ['task.problem_description', 'The request the agent saw (also the first "user" entry).'],
    [
      'task.ground_truth',
      'Training-time information: the reference Python function (backend) or HTML page (frontend). Never part of `input`.',
    ],
    ['task.test_cases', 'Backend only: {"test1": call, ...}; expected outputs come from running ground_truth.'],
    [
      'dialogue_history',
      'The first entry is {role: "user", content: problem description}; then the agent\'s turns as {role: "assistant", content, input, output} and the collaborator\'s as {role: "user", content} (cut to 400 / 1,000 characters); it ends on an assistant entry. Session notices are dropped.',
    ],
    [
      'dialogue_history[].input',
      'The full prompt the agent was given for that turn, rendered with the chat template named below (generation prompt included): the recorded prompt where one was stored, otherwise rebuilt by the protocol (counts below).',
    ],
    [
      'dialogue_history[].output',
      'The raw generation of that turn (a frontend page stays in it, after `OUTPUT:` or `I WANT TO ANSWER:` as the agent wrote it).',
    ],
    [
      'answer',
      "Backend: the answer the agent committed to. Frontend: the path, relative to this file's folder, of a screenshot of the final page.",
    ],
    [
      'reward',
      "The evaluation's score: backend, the fraction of tests passed; frontend, the similarity of the screenshots (metric below). Human ratings never enter it.",
    ],
    [
      'consent_version',
      "Ours, ignored by the official scripts: the version of the study's consent text the person had accepted when the session started (null where the study had no text of its own).",
    ],
    [
      'session_id',
      "Ours, ignored by the official scripts: the session's id, as in the other formats (a person's deletion removes their lines by it).",
    ],
  ],
  jsonl: [
    [
      'session',
      "id, channel, simulated, status, startedAt, endedAt, endReason, durationMs, turnCount, answer, reward, consentVersion (the version of the study's consent text the person had accepted when the session started; null where the study had none of its own).",
    ],
    ['task', 'id, kind, source, externalId, split, problemDescription, groundTruth, testCases.'],
    ['participant', 'pseudonym (salted HMAC-SHA256 of the Discord id) and role.'],
    ['policyVersion', 'id, name, algorithm, status of the policy that played the agent (null if unknown).'],
    [
      'turns',
      "List of {index, role (agent | human | system), content, rawOutput, promptTokens, completionTokens, latencyMs, createdAt, offsetMs since the session start, prompt (agent turns: the messages the model was sent, when recorded; else null), tokens ({ids, logprobs, weightsVersion}: the completion's exact token ids and log-probabilities as the server generated them, for versions that record them; else null), tokenRecording (recorded | off: the version does not record tokens | unavailable: the server gave no ids | null)}.",
    ],
    [
      'evaluation',
      'score, success, testsPassed, testsTotal, metric, evaluatorVersion, detail (null if not evaluated).',
    ],
    ['ratings', 'List of {rater (pseudonym), value 1-5, comment, createdAt}; ratingMean.'],
    ['flags', 'Moderation flags {reason, createdAt, resolvedAt}.'],
  ],
  hf: [
    [
      'data/<kind>/<split>.parquet',
      'One Parquet file per task kind (a config) and split, rows as in the `parquet` format below.',
    ],
  ],
  parquet: [
    [
      'session_id, started_at, ended_at, duration_ms, status, end_reason, channel, simulated, turn_count, answer, reward, consent_version',
      'The session (timestamps in UTC milliseconds; consent_version: the study consent text version the person had accepted, null where none).',
    ],
    [
      'task_id, kind, source, external_id, split, problem_description, ground_truth, test_cases',
      'The task; test_cases is list<string> (null for frontend).',
    ],
    ['participant, participant_role', 'Pseudonymised collaborator.'],
    ['policy_id, policy_name, policy_algorithm', 'Policy version that played the agent.'],
    [
      'score, success, tests_passed, tests_total, metric, evaluator_version, evaluation_detail',
      'Evaluation; evaluation_detail is a JSON string.',
    ],
    ['rating_mean, ratings', 'ratings is list<struct{rater, value, comment, created_at}>.'],
    ['flagged', 'True when an unresolved moderation flag exists (only with --include-flagged).'],
    [
      'turns',
      'list<struct{index, role, content, raw_output, prompt_tokens, completion_tokens, latency_ms, created_at, offset_ms, token_recording, token_ids (list<int32>), token_logprobs (list<float64>), weights_version}>: token_* as `tokens` in the jsonl format.',
    ],
  ],
};

/** The study an export was made of (bot/export/export.ts `study`), as its card names it. */
export interface StudyCard {
  name: string;
  perTask: number | null;
  split: string;
  consentVersion: number;
  consentSha256: string | null;
  arms: { policy: string; share: number }[];
  payPerSessionCents: number | null;
  bonusSuccessCents: number | null;
  currency: string | null;
  opensAt: Date | null;
  closesAt: Date | null;
  /** Tasks with fewer than k selected sessions, left out of the k-blocks. */
  partialTasksLeftOut: number;
}

export interface CardInput {
  format: ExportFormat;
  fileName: string;
  filters: ExportFilters;
  excludeComments: boolean;
  stats: ExportStats;
  createdAt: Date;
  /** True when the salt is the development default (the card then warns). */
  defaultSalt?: boolean;
  sweetRl?: {
    stats: SweetRlStats;
    /** Chat template that rendered `input`. */
    template: string;
    kind: string | null;
    /** Folder of the frontend screenshots, relative to the file. */
    screenshotsDir: string | null;
    metric: string | null;
  };
  /** The Hugging Face dataset folder's files: config (task kind) -> split -> file and rows. */
  hf?: { kind: string; splits: { split: string; path: string; rows: number }[] }[];
  study?: StudyCard;
  /** The training formats (training-card.ts): their rows and what was left out. */
  training?: TrainingStats;
  /** Why nothing was selected (query.ts describeSteps), for a card written beside an empty file (--allow-empty). */
  empty?: string;
}

const money = (cents: number | null, currency: string | null) =>
  cents === null ? 'none' : `${(cents / 100).toFixed(2)} ${currency ?? ''}`.trim();

function studySection(s: StudyCard): string[] {
  return [
    '## Study',
    '',
    `- study: \`${s.name}\` (${s.split} split${s.split === 'test' ? ': an evaluation study, never training data' : ''})`,
    `- sessions a task (k): ${s.perTask ?? 'no cap (the default study)'}; tasks left out with fewer than k sessions: ${s.partialTasksLeftOut}`,
    `- consent text: ${s.consentSha256 ? `version ${s.consentVersion} (current), sha256 \`${s.consentSha256}\`; each row's consent version is the one its person had accepted` : "the bot's configured notice"}`,
    `- arms: ${s.arms.map((a) => `${a.policy} ${a.share}%`).join(', ') || 'the deployed version'}`,
    `- pay: ${money(s.payPerSessionCents, s.currency)} a session, bonus on success ${money(s.bonusSuccessCents, s.currency)}`,
    `- opens: ${s.opensAt?.toISOString() ?? 'at creation'}; closes: ${s.closesAt?.toISOString() ?? 'when closed'}`,
    '',
  ];
}

function describeFilters(f: ExportFilters, excludeComments: boolean): string[] {
  const lines = [
    `- statuses: ${(f.statuses ?? ['answered']).join(', ')}`,
    `- started since: ${f.since?.toISOString() ?? 'any time'}`,
    `- started before: ${f.until?.toISOString() ?? 'any time'}`,
    `- task kind: ${f.kind ?? 'all'}`,
    `- split: ${f.split ?? 'all'}`,
    `- policy version: ${f.policy ?? 'all'}`,
    `- minimum mean human rating: ${f.minRating ?? 'none'}`,
    `- collaborators: ${{ human: 'people only', simulated: 'simulators only', both: 'people and simulators' }[sourceOf(f)]}`,
    `- sessions with an unresolved moderation flag: ${f.includeFlagged ? 'included' : 'excluded'}`,
    `- free-text comments: ${excludeComments ? 'excluded' : 'included'}`,
  ];
  if (f.perTask !== undefined)
    lines.push(
      `- tasks with at least ${f.perTask} such sessions, and their first ${f.perTask} (by start): ${f.perTask} blocks`,
    );
  if (f.requireTrajectory)
    lines.push('- only evaluated sessions with at least one agent turn (required by the sweet-rl format)');
  return lines;
}

function table(title: string, m: Map<string, number>): string {
  const rows = [...m.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return [
    `| ${title} | sessions |`,
    '| --- | ---: |',
    ...rows.map(([k, v]) => `| ${k.replace(/\|/g, '\\|')} | ${v} |`),
  ].join('\n');
}

/** A YAML scalar: JSON's double-quoted strings are valid YAML, and safe whatever the text. */
const q = (v: string) => JSON.stringify(v);

function featureYaml(f: HfFeature, indent: string): string[] {
  const head = `${indent}- name: ${q(f.name)}`;
  if ('dtype' in f) return [head, `${indent}  dtype: ${q(f.dtype)}`];
  if (typeof f.list === 'string') return [head, `${indent}  list: ${q(f.list)}`];
  return [head, `${indent}  list:`, ...f.list.flatMap((x) => featureYaml(x, `${indent}  `))];
}

/** `configs` (one per task kind, data files per split) and `dataset_info` (features, rows per split). */
function hfFrontMatter(configs: NonNullable<CardInput['hf']>): string[] {
  const features = hfFeatures();
  return [
    'configs:',
    ...configs.flatMap((c, i) => [
      `- config_name: ${q(c.kind)}`,
      ...(i === 0 ? ['  default: true'] : []),
      '  data_files:',
      ...c.splits.flatMap((x) => [`  - split: ${q(x.split)}`, `    path: ${q(x.path)}`]),
    ]),
    'dataset_info:',
    ...configs.flatMap((c) => [
      `- config_name: ${q(c.kind)}`,
      '  features:',
      ...features.flatMap((f) => featureYaml(f, '  ')),
      '  splits:',
      ...c.splits.flatMap((x) => [`  - name: ${q(x.split)}`, `    num_examples: ${x.rows}`]),
    ]),
  ];
}

function sweetRlSection(c: CardInput): string[] {
  const r = c.sweetRl!;
  const k = c.filters.perTask ?? 1;
  const file = c.fileName;
  const commits = Object.entries(REFERENCE_COMMITS)
    .map(([repo, sha]) => `\`${repo}\` at \`${sha}\``)
    .join(' and ');
  const frontend = r.kind === 'frontend';
  return [
    '## SWEET-RL format',
    '',
    `- format version: \`${SWEET_RL_FORMAT_VERSION}\`, checked against ${commits}`,
    `- task kind: ${r.kind ?? '-'} (one kind per file)`,
    r.stats.written === 0
      ? '- blocks: none (the file is empty)'
      : `- blocks: k = ${k}${c.filters.perTask ? `: line i and line i + ${r.stats.written / k} are the same task, for every i` : ' (no --per-task: sessions in start order; the official scripts make no pairs with k = 1)'}`,
    `- \`input\` rendered with the chat template \`${r.template}\`: ${r.stats.exactInputs} assistant entries from the recorded prompt, ${r.stats.reconstructedInputs} reconstructed by the protocol (turns stored without their prompt)`,
    ...(frontend
      ? [
          `- screenshots of the final pages: \`${r.screenshotsDir}/\` (${r.stats.screenshots} files); reward metric: ${r.metric ?? 'as stored'} (evaluate_html.py replaces it with CLIP similarity)`,
        ]
      : []),
    '',
    // An empty file gives the official scripts nothing to pair: no commands to run on it.
    ...(r.stats.written === 0
      ? []
      : pipelineSection({
          file,
          k,
          template: r.template,
          kind: r.kind === 'backend' || r.kind === 'frontend' ? r.kind : null,
        })),
  ];
}

export function renderCard(c: CardInput): string {
  const s = c.stats;
  const lines: string[] = [
    '---',
    'license: other',
    'pretty_name: Sweetloop collaborative-agent sessions',
    `tags: [colbench, sweet-rl, multi-turn, human-ai-collaboration]`,
    ...(c.hf ? hfFrontMatter(c.hf) : []),
    '---',
    '',
    `# Sweetloop sessions: \`${c.fileName}\``,
    '',
    `Exported ${c.createdAt.toISOString()} in the **${c.format}** format by \`sweetloop export\`.`,
    '',
    '## Counts',
    '',
    `- sessions: ${s.sessions}`,
    ...(s.sessions === 0 ? [`- the file is empty: ${c.empty ?? 'no selected session could be written'}`] : []),
    `- turns: ${s.totalTurns} (agent ${s.turns.agent}, human ${s.turns.human}, system ${s.turns.system})`,
    `- participants: ${s.participantCount} (pseudonymous)`,
    `- agent turns with their exact tokens (ids, log-probabilities, weights version): ${s.tokenRecording.recorded}; without: ${s.tokenRecording.off} (the policy version does not record tokens), ${s.tokenRecording.unavailable} (the server gave no token ids), ${s.tokenRecording.unknown} (stored before tokens were recorded)`,
    `- human ratings: ${s.ratings} from ${s.raterCount} raters; distribution 1-5: ${s.ratingHistogram.join(' / ')}`,
    `- evaluated sessions: ${s.evaluated}; successes: ${s.successes}`,
    `- simulated sessions: ${s.simulated}`,
    ...(c.sweetRl && c.sweetRl.stats.leftOut.size > 0
      ? [`- left out (not a trajectory): ${[...c.sweetRl.stats.leftOut].map(([why, n]) => `${n} (${why})`).join('; ')}`]
      : []),
    `- sessions started between ${s.firstStart ?? '-'} and ${s.lastStart ?? '-'}`,
    '',
    table('task kind', s.byKind),
    '',
    table('split', s.bySplit),
    '',
    table('collaborator', s.bySource),
    '',
    table('policy version', s.byPolicy),
    '',
    '## Selection',
    '',
    'Only sessions of participants who gave consent, have not withdrawn it and have not asked for deletion are',
    'exported, whatever the filters; ratings by raters who fail the same test are left out. Filters used:',
    '',
    ...describeFilters(c.filters, c.excludeComments),
    '',
    ...(c.study ? studySection(c.study) : []),
    '## Fields',
    '',
    '| field | meaning |',
    '| --- | --- |',
    ...FIELDS[c.format].map(([k, v]) => `| \`${k}\` | ${v} |`),
    '',
    ...(c.training ? trainingSection(c.format as TrainingFormat, c.fileName, c.training) : []),
    ...(c.sweetRl
      ? sweetRlSection(c)
      : [
          "The official SWEET-RL pipeline reads the sweet-rl format: `sweetloop export --format sweet-rl --kind backend --per-task 3 --out FILE` writes one, with the pipeline's commands in its card.",
          '',
        ]),
    '## Collection protocol',
    '',
    'Sessions follow the ColBench protocol (SWEET-RL, arXiv 2503.15478). The agent sees only the problem description',
    'and the dialogue; the human collaborator also sees the hidden reference (backend: the reference Python function;',
    'frontend: a screenshot of the target page). The agent has at most 10 turns and ends by writing',
    "`I WANT TO ANSWER:` followed by its answer. Backend answers are scored by running the task's test calls against",
    'the reference in a sandbox (score = fraction of tests passed, success = all passed); frontend answers by the',
    'similarity of the rendered pages. Collaborators were people on Discord (or the local console) who accepted the',
    'consent text, and, where marked `simulated`, rule-based or LLM simulators. Afterwards people could rate a',
    'session from 1 (useless) to 5 (excellent) with an optional comment.',
    '',
    '## Pseudonymisation',
    '',
    'Participants and raters appear only as `p_` + the first 128 bits of HMAC-SHA256(salt, Discord user id). The salt',
    'is secret (EXPORT_SALT): without it a pseudonym cannot be linked back to a Discord account, and exports made',
    'with the same salt share pseudonyms. Display names and Discord guild, channel, thread and message ids are never',
    'exported. Free text written by people (dialogue turns, and unless excluded, rating comments and moderation',
    'reasons) may still contain personal details they typed themselves.',
    ...(c.defaultSalt
      ? ['', '**Warning:** this export used the development default salt; set EXPORT_SALT before sharing it.']
      : []),
    '',
    '## Licence',
    '',
    "The dialogue, ratings and comments are the participants' contributions, shared under the terms of the consent",
    'they gave (research use for training and evaluating collaborative agents); check those terms before',
    "redistributing. Tasks imported from ColBench keep ColBench's own licence (non-commercial); built-in and",
    "generated tasks are the project's. Withdrawn or deleted participants must be removed from copies on request.",
    '',
  ];
  return lines.join('\n');
}
