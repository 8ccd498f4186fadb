// The official pipeline's commands (bot/export/official-pipeline.ts), as the dataset card and the README give them:
// every flag they pass exists in the official script it is passed to, read from a checkout of the official
// repositories at the commits the format was checked against (skipped, saying so, where no checkout is at hand:
// SWEET_RL_REPO and COLLAB_OPENRLHF_REPO name one, a work tree or a bare mirror), and the README shows them.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { pipelineCommands, responseTemplate } from '../../../bot/export/official-pipeline.ts';
import { REFERENCE_COMMITS } from '../../../bot/export/sweet-rl.ts';

// Checkouts live outside the repository, so only the environment names them.
const SWEET_RL = process.env.SWEET_RL_REPO ?? '';
const OPENRLHF = process.env.COLLAB_OPENRLHF_REPO ?? '';
const haveCheckouts = SWEET_RL !== '' && OPENRLHF !== '' && existsSync(SWEET_RL) && existsSync(OPENRLHF);
if (!haveCheckouts)
  console.warn(
    `[skip] official-pipeline.test.ts: SWEET_RL_REPO and COLLAB_OPENRLHF_REPO do not both name a checkout of the official repositories (now: "${SWEET_RL}", "${OPENRLHF}"): the flags are not checked against them`,
  );

function show(repo: string, commit: string, path: string): string {
  return execFileSync('git', ['-C', repo, 'show', `${commit}:${path}`], { encoding: 'utf8' });
}

/** One command a line: continuation lines joined, comments and blank lines dropped. */
function commands(lines: string[]): string[] {
  return lines
    .join('\n')
    .replace(/ \\\n\s*/g, ' ')
    .split('\n')
    .filter((l) => l.trim() && !l.trimStart().startsWith('#'));
}

const flagsOf = (cmd: string) => [...cmd.matchAll(/(?:^|\s)--([a-z_0-9]+)/g)].map((m) => m[1]!);

const variants = [
  { file: 'backend.jsonl', k: 3, template: 'llama3', kind: 'backend' as const },
  { file: 'front/frontend.jsonl', k: 2, template: 'chatml', kind: 'frontend' as const },
  { file: 'b.jsonl', k: 2, template: './tokenizer_config.json', kind: 'backend' as const },
];

describe('the official pipeline for an export', () => {
  it.skipIf(!haveCheckouts)('passes only flags the official scripts define', () => {
    const sweet = REFERENCE_COMMITS['facebookresearch/sweet_rl'];
    const fork = REFERENCE_COMMITS['YifeiZhou02/collab_openrlhf'];
    const dpoFlags = new Set(
      [...show(OPENRLHF, fork, 'openrlhf/cli/train_dpo.py').matchAll(/add_argument\(\s*"--([a-z_0-9]+)"/g)].map(
        (m) => m[1]!,
      ),
    );
    expect(dpoFlags.has('mean_log_prob')).toBe(true);
    let checked = 0;
    for (const v of variants) {
      for (const cmd of commands(pipelineCommands(v))) {
        const script = /scripts\/([a-z_]+\.py)/.exec(cmd)?.[1];
        if (script) {
          // fire.Fire(main): the flags are main's parameters.
          const main = /def main\(([^]*?)\):/.exec(show(SWEET_RL, sweet, `scripts/${script}`))![1]!;
          const params = new Set(
            [...main.replace(/#.*$/gm, '').matchAll(/(?:^|,)\s*([a-z_]+)\s*=/g)].map((m) => m[1]!),
          );
          for (const f of flagsOf(cmd)) expect(params, `${script} --${f}`).toContain(f);
          checked++;
        } else if (cmd.includes('openrlhf.cli.train_dpo')) {
          for (const f of flagsOf(cmd.split('openrlhf.cli.train_dpo')[1]!))
            expect(dpoFlags, `train_dpo --${f}`).toContain(f);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(14);
    // What the commands work around is still so at that commit.
    expect(show(SWEET_RL, sweet, 'scripts/sample_best_of_n.py')).toMatch(
      /agent_model="\/fsx-ram\/shared\/Meta-Llama-3\.1-8B-Instruct"/,
    );
    expect(show(SWEET_RL, sweet, 'scripts/generate_random_pairs_from_ranks.py')).toContain(
      '"/fsx-ram/shared/Meta-Llama-3.1-8B-Instruct"',
    );
    expect(show(SWEET_RL, sweet, 'scripts/rank_best_of_n.py')).toMatch(/best_of_n = 16/);
    expect(show(OPENRLHF, fork, 'openrlhf/utils/deepspeed/deepspeed.py')).toMatch(/merge_and_unload\(\)/);
  });

  it("samples from the model being trained, never the script's default path, and fits the chat template", () => {
    for (const v of variants) {
      const cmds = commands(pipelineCommands(v));
      expect(cmds.find((c) => c.includes('sample_best_of_n.py'))).toContain('--agent_model "$BASE"');
      expect(cmds.find((c) => c.includes('sample_best_of_n.py'))).toContain('"$DATA"');
      expect(pipelineCommands(v)).toContain(`DATA=${v.file}`);
      const critic = cmds.find((c) => c.includes('--save_path "$OUT/critic"'));
      if (v.kind === 'frontend') expect(critic).toBeUndefined();
      else expect(critic).toContain(`--response_template "${responseTemplate(v.template) ?? '$RESPONSE_TEMPLATE'}"`);
      expect(cmds.some((c) => c.startsWith('sweetloop policy add') && c.includes('--adapter'))).toBe(true);
    }
  });

  it("is in the README, for the README's example export", () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).toContain(
      [
        '```bash',
        ...pipelineCommands({ file: 'colbench.jsonl', k: 3, template: 'llama3', kind: 'backend' }),
        '```',
      ].join('\n'),
    );
    expect(readme).toContain('sweetloop export --format sweet-rl --kind backend --per-task 3 --out colbench.jsonl');
  });
});
