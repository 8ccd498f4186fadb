// The dataset card's parts for the training formats (trl.ts, verl.ts): their fields, how to load them with
// Hugging Face `datasets`, and the TRL and verl commands that train on them, with the export's own file name.
import type { TrainingStats } from './training-rows.ts';

export const TRAINING_FORMATS = ['trl-sft', 'trl-dpo', 'verl-rl', 'verl-sft'] as const;
export type TrainingFormat = (typeof TRAINING_FORMATS)[number];

const CONVERSATION =
  "The whole session as chat messages: the system prompt and the task description as the first agent turn was sent them, then the agent's raw generations (`assistant`) and the collaborator's replies (`user`), ending on the agent's last turn. Session notices are dropped; nothing hidden (reference, tests) is in it.";
const FILTER_COLUMNS =
  "Ours: the session, its task, kind and split, the evaluation's score (`reward`, null when not evaluated), `success` (every test passed) and the policy version that played the agent.";

export const TRAINING_FIELDS: Record<TrainingFormat, [string, string][]> = {
  'trl-sft': [
    ['messages', CONVERSATION],
    ['session_id, task_id, kind, split, reward, success, policy', FILTER_COLUMNS],
  ],
  'trl-dpo': [
    [
      'prompt',
      "Trajectory pairs: the opening (system prompt, task description). Turn pairs: the session's dialogue up to the agent turn the candidates answer.",
    ],
    [
      'chosen, rejected',
      "Trajectory pairs: the rest of each session's conversation (assistant and user turns, ending on the agent's last turn). Turn pairs: one assistant message each, two of the policy's candidates for that turn.",
    ],
    [
      'pair',
      "`trajectory`: within a task, its best session (highest score) against every session scored strictly lower, the rule of the official pipeline (scripts/evaluate_code.py) and of Sweetloop's trainer (trainer/pairs.ts). `turn`: SWEET-RL's actor pairs, a candidate the run's critic ranked in the top half against one in the bottom half.",
    ],
    [
      'task_id, chosen_session_id, rejected_session_id',
      "Where each side comes from (a turn pair's two candidates share their session).",
    ],
    [
      'chosen_score, rejected_score',
      "Trajectory pairs: the evaluation's scores. Turn pairs: the critic's advantages (mean over the candidate's tokens).",
    ],
    ['agent_turn', 'Turn pairs: the agent turn (0-based) the candidates answer; null for trajectory pairs.'],
  ],
  'verl-rl': [
    [
      'data_source',
      '`sweetloop/colbench-backend` or `sweetloop/colbench-frontend`: what a reward function dispatches on.',
    ],
    [
      'prompt',
      'The chat messages the agent starts from: the system prompt and the task description. Never the reference or the tests.',
    ],
    ['ability', '`code` (backend) or `web-design` (frontend).'],
    ['reward_model', '{style: "rule", ground_truth}: the reference Python function (backend) or HTML page (frontend).'],
    [
      'extra_info',
      '{index, split, task_id, kind, source, external_id, test_cases (backend call expressions; expected outputs come from running the reference), sessions (selected sessions of the task), mean_score, success_rate (theirs), interaction_kwargs}.',
    ],
    [
      'extra_info.interaction_kwargs',
      '{name: "sweetloop_collaborator", task_id, kind, hidden_information (the reference, for the simulated collaborator only), test_cases, max_turns: 10}: what verl hands the Interaction of a multi-turn rollout.',
    ],
  ],
  'verl-sft': [
    ['messages', CONVERSATION],
    ['session_id, task_id, kind, split, reward, success, policy', FILTER_COLUMNS],
  ],
};

const TRL_CAVEAT =
  "**Caveat:** TRL's DPOTrainer masks only the prompt: its loss covers the whole completion, user turns included. In trajectory pairs the completion holds the collaborator's `user` turns as well as the agent's, so their tokens are trained on too (SWEET-RL's own multi-turn DPO scores the agent's tokens only). Turn pairs have one assistant message as the completion and do not have this problem. `loss_type=\"sigmoid_norm\"` is the length-normalised form.";

function load(kind: 'json' | 'parquet', file: string, columns?: string): string[] {
  return [
    '```python',
    'from datasets import load_dataset',
    `ds = load_dataset("${kind}", data_files="${file}", split="train")${columns ? `.select_columns(${columns})` : ''}`,
    '```',
  ];
}

/** How many rows, and what was left out, in the card's words. */
function counts(format: TrainingFormat, s: TrainingStats): string[] {
  const lines = [`- rows: ${s.rows}`];
  if (format === 'trl-dpo') {
    lines.push(`- trajectory pairs: ${s.trajectoryPairs}; turn pairs: ${s.turnPairs}`);
    if (s.candidatesUnmatched || s.candidatesWithoutText) {
      lines.push(
        `- candidate pairs not written: ${s.candidatesUnmatched} (session or turn not in the selection), ${s.candidatesWithoutText} (the run kept token ids only)`,
      );
    }
  }
  if (format === 'verl-rl') lines.push(`- tasks: ${s.tasks}`);
  if (s.leftOut.size)
    lines.push(`- sessions left out: ${[...s.leftOut].map(([why, n]) => `${n} (${why})`).join('; ')}`);
  return lines;
}

/** The card's section for a training format: counts, loading, training commands. */
export function trainingSection(format: TrainingFormat, file: string, s: TrainingStats): string[] {
  const head = ['## Loading and training', '', ...counts(format, s), ''];
  switch (format) {
    case 'trl-sft':
      return [
        ...head,
        ...load('json', file),
        '',
        "Rejection fine-tuning (the paper's baseline) keeps the successful sessions; TRL's SFTTrainer reads `messages`:",
        '',
        '```python',
        'from trl import SFTConfig, SFTTrainer',
        'ds = ds.filter(lambda r: r["success"]).select_columns(["messages"])',
        'SFTTrainer(model="BASE_MODEL", train_dataset=ds, args=SFTConfig(output_dir="sft", assistant_only_loss=True)).train()',
        '```',
        '',
        "`assistant_only_loss=True` trains on the agent's turns only (it needs a chat template that marks them).",
        '',
      ];
    case 'trl-dpo':
      return [
        ...head,
        ...load('json', file, '["prompt", "chosen", "rejected"]'),
        '',
        '```python',
        'from trl import DPOConfig, DPOTrainer',
        '# Paper defaults for 8B models: lr 2e-7, beta 0.1. Keep one kind of pair with ds.filter(lambda r: r["pair"] == "turn") before select_columns.',
        'DPOTrainer(model="BASE_MODEL", train_dataset=ds, args=DPOConfig(output_dir="dpo", beta=0.1, learning_rate=2e-7)).train()',
        '```',
        '',
        TRL_CAVEAT,
        '',
      ];
    case 'verl-rl':
      return [
        ...head,
        ...load('parquet', file),
        '',
        'verl reads the file as it is (`data.prompt_key=prompt`). A multi-turn rollout plays the collaborator through an',
        'Interaction registered under the name `sweetloop_collaborator` in the interaction config; it gets',
        '`extra_info.interaction_kwargs`. The reward function gets `reward_model.ground_truth` and `extra_info` (run the test',
        "calls against the reference and the answer in a sandbox, as Sweetloop's evaluator does):",
        '',
        '```bash',
        'python3 -m verl.trainer.main_ppo \\',
        '  algorithm.adv_estimator=grpo \\',
        `  data.train_files=${file} data.val_files=${file} data.prompt_key=prompt \\`,
        '  actor_rollout_ref.model.path=BASE_MODEL \\',
        '  actor_rollout_ref.rollout.name=sglang actor_rollout_ref.rollout.multi_turn.enable=True \\',
        '  actor_rollout_ref.rollout.multi_turn.interaction_config_path=interaction.yaml \\',
        '  custom_reward_function.path=colbench_reward.py custom_reward_function.name=compute_score',
        '```',
        '',
        'The collaborator sees `hidden_information`; a simulator that reads it may leak it to the agent, which a policy',
        'trained against it learns to extract: check the simulator against people (`sweetloop study calibrate`).',
        '',
      ];
    case 'verl-sft':
      return [
        ...head,
        ...load('parquet', file),
        '',
        "verl's multi-turn SFT trains on the assistant turns of `messages`:",
        '',
        '```bash',
        'torchrun --nproc_per_node=8 -m verl.trainer.fsdp_sft_trainer \\',
        `  data.train_files=${file} data.val_files=${file} \\`,
        '  data.multiturn.enable=true data.multiturn.messages_key=messages \\',
        '  model.partial_pretrain=BASE_MODEL trainer.default_local_dir=./sft',
        '```',
        '',
      ];
  }
}
