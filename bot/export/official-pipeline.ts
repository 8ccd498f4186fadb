// The official SWEET-RL pipeline (facebookresearch/sweet_rl and its OpenRLHF fork YifeiZhou02/collab_openrlhf, at
// the commits of sweet-rl.ts REFERENCE_COMMITS) run on a sweet-rl export, end to end: critic pairs with the ground
// truth, critic training, best-of-n sampling, ranking by the critic, actor pairs, actor DPO, and bringing the result
// back into Sweetloop. One renderer for the dataset card (card.ts, with the export's own file, k and chat template)
// and the README (test/bot/export/official-pipeline.test.ts checks both, and every flag against the official
// scripts when a checkout of them is at hand). Flags and values are those of the official README's backend
// example; what the scripts hard-code is said where it bites (sample_best_of_n.py's default --agent_model,
// generate_random_pairs_from_ranks.py's tokenizer path, rank_best_of_n.py's n = 16).

export interface PipelineInput {
  /** The export file, as the commands name it (relative to the folder they are run from). */
  file: string;
  /** Blocks of the export (`--per-task`); the critic pairs need k >= 2. */
  k: number;
  /** Chat template that rendered each `input` (`--chat-template`): llama3, chatml, or a tokenizer_config.json path. */
  template: string;
  kind: 'backend' | 'frontend' | null;
}

/** The header the chat template puts before an assistant turn: what the critic's loss mask looks for. */
export function responseTemplate(template: string): string | null {
  if (template === 'llama3') return '<|start_header_id|>assistant<|end_header_id|>';
  if (template === 'chatml') return '<|im_start|>assistant';
  return null;
}

/** Flags of `deepspeed --module openrlhf.cli.train_dpo` both trainings share (official README, backend example). */
const DPO_COMMON = [
  '--save_steps -1',
  '--logging_steps 1',
  '--eval_steps -1',
  '--train_batch_size 8',
  '--micro_train_batch_size 1',
  '--pretrain "$BASE"',
  '--bf16',
  '--zero_stage 3',
  '--learning_rate 2e-7',
  '--beta 0.1',
  '--chosen_key chosen',
  '--rejected_key rejected',
  '--flash_attn',
  '--gradient_checkpointing',
];

const cont = (lines: string[]) =>
  lines.map((l, i) => (i === lines.length - 1 ? l : `${l} \\`)).map((l, i) => (i === 0 ? l : `  ${l}`));

/** The commands, as one bash block (without the fences). */
export function pipelineCommands(p: PipelineInput): string[] {
  const rt = responseTemplate(p.template);
  const frontend = p.kind === 'frontend';
  return [
    '# What you bring: a checkout of facebookresearch/sweet_rl (`pip install -e .`) with its fork',
    '# YifeiZhou02/collab_openrlhf installed, GPUs, and the Hugging Face folder of the model to train (the agent',
    '# that played these sessions, or its base: it starts the critic too). Run from the folder that holds $DATA.',
    'SWEET_RL=/path/to/sweet_rl',
    'BASE=/path/to/Llama-3.1-8B-Instruct',
    `DATA=${p.file}`,
    'OUT=./sweet-rl-run && mkdir -p "$OUT"',
    ...(rt ? [] : ["RESPONSE_TEMPLATE='...'   # the text your chat template puts before an assistant turn"]),
    '',
    ...(frontend
      ? [
          '# 1. Critic pairs: evaluate_html.py re-scores with CLIP (Firefox + geckodriver, a GPU) and REWRITES $DATA: work on a copy.',
          `python "$SWEET_RL/scripts/evaluate_html.py" "$DATA" --k ${p.k} --temp_path "$OUT/render" --ground_truth_preference_path "$OUT/gt_preferences.jsonl"`,
          '# Its pairs are {input, output} objects, which openrlhf.cli.train_dpo does not read as text; the official',
          '# repository documents no frontend critic training (its fork has train_dpo_qwen.py for a Qwen2-VL critic).',
          '# With a critic trained your own way as $OUT/critic, steps 3-6 below are the same.',
        ]
      : [
          `# 1. Critic pairs, the reference solution prefixed to each prompt (needs k >= 2; this export: k = ${p.k}).`,
          `python "$SWEET_RL/scripts/evaluate_code.py" "$DATA" --k ${p.k} --ground_truth_preference_path "$OUT/gt_preferences.jsonl"`,
          '',
          '# 2. Critic: length-normalised (--mean_log_prob) DPO over the agent turns found by --response_template.',
          ...cont([
            'deepspeed --module openrlhf.cli.train_dpo',
            '--save_path "$OUT/critic"',
            '--dataset "$OUT/gt_preferences.jsonl"',
            ...DPO_COMMON,
            '--max_epochs 4',
            '--max_len 8192',
            `--response_template ${rt ? `"${rt}"` : '"$RESPONSE_TEMPLATE"'}`,
            '--mean_log_prob',
          ]),
        ]),
    '',
    '# 3. 16 candidates for each agent turn of the first 10% of lines, sampled from $BASE (without --agent_model the',
    '#    script loads its own hard-coded default path). Keep --best_of_n at 16: rank_best_of_n.py assumes 16.',
    'python "$SWEET_RL/scripts/sample_best_of_n.py" "$DATA" "$OUT/sampled.jsonl" --agent_model "$BASE" --data_fraction 0.1',
    '',
    "# 4. The critic ranks them (its log-probabilities given the ground truth, minus $BASE's recorded in step 3).",
    'python "$SWEET_RL/scripts/rank_best_of_n.py" --model_id "$OUT/critic" --input_path "$OUT/sampled.jsonl" --output_path "$OUT/ranked.jsonl"',
    '',
    '# 5. Actor pairs: 4 a turn, one of the better half against one of the worse. The script loads its tokenizer from',
    '#    the fixed path /fsx-ram/shared/Meta-Llama-3.1-8B-Instruct (no flag): put $BASE there first.',
    'mkdir -p /fsx-ram/shared && ln -sfn "$(realpath "$BASE")" /fsx-ram/shared/Meta-Llama-3.1-8B-Instruct',
    'python "$SWEET_RL/scripts/generate_random_pairs_from_ranks.py" "$OUT/ranked.jsonl" "$OUT/pairs.jsonl" --no_prompt --num_pairs 4',
    '',
    '# 6. Actor DPO with an NLL term. (--lora_rank R --lora_alpha 2R trains LoRA on q/k/v/o, which this fork',
    '#    hard-codes; it still saves a full, merged model.)',
    ...cont([
      'deepspeed --module openrlhf.cli.train_dpo',
      '--save_path "$OUT/actor"',
      '--dataset "$OUT/pairs.jsonl"',
      ...DPO_COMMON,
      '--max_epochs 1',
      '--max_len 16384',
      '--nll_loss_coef 0.01',
    ]),
    '',
    '# 7. Back into Sweetloop: $OUT/actor is a full model. Serve it (vLLM), register it, compare, deploy.',
    'vllm serve "$OUT/actor" --served-model-name sweet-actor --port 8000',
    'sweetloop policy add sweet-actor --endpoint http://127.0.0.1:8000/v1 --model sweet-actor --base-model-dir "$OUT/actor"',
    'sweetloop evaluate --compare sweet-actor deployed --episodes 100',
    'sweetloop deploy sweet-actor',
    '# A LoRA adapter trained elsewhere (PEFT, TRL) on a base an endpoint version serves (vLLM --enable-lora):',
    'sweetloop policy add sweet-lora --adapter ./adapter --on llama-8b',
  ];
}

/** The dataset card's section: the commands with the export's own paths, in a bash block. */
export function pipelineSection(p: PipelineInput): string[] {
  return ['## Training on it with the official SWEET-RL pipeline', '', '```bash', ...pipelineCommands(p), '```', ''];
}
