import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { NotATrajectoryError, toTrajectory } from '../../../bot/export/sweet-rl.ts';
import { resolveChatTemplate, ChatTemplateError } from '../../../bot/export/chat-template.ts';
import { testCasesOf, type ExportRecord, type ExportTurn } from '../../../bot/export/record.ts';
import { agentSystemPrompt } from '../../../tasks/protocol.ts';
import type { ChatMessage } from '../../../tasks/agent.ts';

type T = [ExportTurn['role'], string, { raw?: string; prompt?: ChatMessage[] }?];

function record(
  turns: T[],
  extra: Partial<ExportRecord['session']> = {},
  score: number | null = 0.25,
  kind: 'backend' | 'frontend' = 'backend',
): ExportRecord {
  return {
    session: {
      id: 's',
      channel: 'console',
      simulated: false,
      status: 'answered',
      startedAt: '2026-01-01T00:00:00.000Z',
      endedAt: null,
      endReason: null,
      durationMs: null,
      turnCount: 1,
      answer: 'ANSWER',
      reward: 0.9,
      consentVersion: null,
      ...extra,
    },
    task: {
      id: 't',
      kind,
      source: 'builtin',
      externalId: null,
      split: 'train',
      problemDescription: 'DESCRIPTION',
      groundTruth: 'REF',
      testCases: kind === 'backend' ? ['f(1)', 'f(2)'] : null,
    },
    participant: { pseudonym: 'p_x', role: 'participant' },
    policyVersion: null,
    turns: turns.map(([role, content, o], index) => ({
      index,
      role,
      content,
      rawOutput: o?.raw ?? null,
      promptTokens: null,
      completionTokens: null,
      latencyMs: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      offsetMs: 0,
      prompt: o?.prompt ?? null,
      tokens: null,
      tokenRecording: null,
    })),
    evaluation:
      score === null
        ? null
        : {
            score,
            success: false,
            testsPassed: null,
            testsTotal: null,
            metric: null,
            evaluatorVersion: 'x',
            detail: {},
          },
    ratings: [],
    ratingMean: null,
    flags: [],
  };
}

const llama3 = resolveChatTemplate('llama3').formatter;

/**
 * What facebookresearch/sweet_rl's sweet_rl/models/vllm_agent.py (VLLMAgent.get_action) sends for a dialogue:
 * messages = [{"role": "system", "content": agent_prompt}] + dialogue_history (role and content of each entry),
 * rendered by Llama-3.1-8B-Instruct's tokenizer.apply_chat_template(..., tokenize=False,
 * add_generation_prompt=True). Written out by hand: BOS, the system header with the cutoff and default date lines,
 * the stripped system prompt, each message stripped between its header and <|eot_id|>, the assistant header.
 */
function officialLlama31Prompt(system: string, dialogue: { role: string; content: string }[]): string {
  let s = '<|begin_of_text|>';
  s += '<|start_header_id|>system<|end_header_id|>\n\n';
  s += 'Cutting Knowledge Date: December 2023\n';
  s += 'Today Date: 26 Jul 2024\n\n';
  s += system.trim() + '<|eot_id|>';
  for (const m of dialogue)
    s += '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' + m.content.trim() + '<|eot_id|>';
  return s + '<|start_header_id|>assistant<|end_header_id|>\n\n';
}

describe('sweet-rl trajectories', () => {
  it('carry input (the rendered prompt) and output (the raw generation) on every assistant entry, and end on one', () => {
    const r = record([
      ['agent', 'Q?', { raw: 'thinking... Q?' }],
      ['system', 'notice'],
      ['human', 'A.'],
      ['agent', 'I WANT TO ANSWER: done'],
      ['human', 'thanks!'],
    ]);
    const { trajectory: t, reconstructedInputs, exactInputs } = toTrajectory(r, { template: llama3 });
    expect(t.dialogue_history.map((e) => [e.role, e.content])).toEqual([
      ['user', 'DESCRIPTION'],
      ['assistant', 'Q?'],
      ['user', 'A.'],
      ['assistant', 'I WANT TO ANSWER: done'],
    ]);
    expect(Object.keys(t.dialogue_history[0]!).sort()).toEqual(['content', 'role']);
    expect(Object.keys(t.dialogue_history[2]!).sort()).toEqual(['content', 'role']);
    const [, a1, , a2] = t.dialogue_history as { input: string; output: string }[];
    expect(a1!.output).toBe('thinking... Q?');
    expect(a2!.output).toBe('I WANT TO ANSWER: done');
    expect(reconstructedInputs).toBe(2);
    expect(exactInputs).toBe(0);
    expect(t.task).toEqual({
      problem_description: 'DESCRIPTION',
      ground_truth: 'REF',
      test_cases: { test1: 'f(1)', test2: 'f(2)' },
    });
    expect(t.answer).toBe('ANSWER');
    // The evaluation's score, not the session's (possibly rating-blended) reward.
    expect(t.reward).toBe(0.25);
  });

  it('renders input byte for byte as the official vllm_agent.py prompt with the Llama-3.1 template', () => {
    const sys = agentSystemPrompt('backend');
    const r = record([
      ['agent', 'What should f return for 1?\n'],
      ['human', '  It adds one. '],
      ['agent', 'I WANT TO ANSWER: def f(x): return x + 1'],
    ]);
    const { trajectory: t } = toTrajectory(r, { template: llama3 });
    const a1 = t.dialogue_history[1] as { input: string };
    const a2 = t.dialogue_history[3] as { input: string };
    expect(a1.input).toBe(officialLlama31Prompt(sys, [{ role: 'user', content: 'DESCRIPTION' }]));
    expect(a2.input).toBe(
      officialLlama31Prompt(sys, [
        { role: 'user', content: 'DESCRIPTION' },
        { role: 'assistant', content: 'What should f return for 1?\n' },
        { role: 'user', content: '  It adds one. ' },
      ]),
    );
    // The same string spelled out once, so a slip in the helper cannot hide one in the template.
    expect(a1.input).toBe(
      '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n' +
        sys +
        '<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nDESCRIPTION<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
    );
    // The reference (training-time information) is not in any input.
    for (const e of t.dialogue_history) if (e.role === 'assistant') expect(e.input).not.toContain('REF');
  });

  it('uses the prompt recorded with a turn when there is one', () => {
    const recorded: ChatMessage[] = [
      { role: 'system', content: 'RECORDED SYSTEM' },
      { role: 'user', content: 'DESCRIPTION' },
    ];
    const {
      trajectory: t,
      exactInputs,
      reconstructedInputs,
    } = toTrajectory(record([['agent', 'Q?', { prompt: recorded }]]), { template: llama3 });
    expect((t.dialogue_history[1] as { input: string }).input).toBe(
      officialLlama31Prompt('RECORDED SYSTEM', [{ role: 'user', content: 'DESCRIPTION' }]),
    );
    expect([exactInputs, reconstructedInputs]).toEqual([1, 0]);
  });

  it('cuts user entries to ColBench caps (400 backend, 1,000 frontend) and drops an opening description turn', () => {
    const long = 'y'.repeat(1500);
    const b = toTrajectory(
      record([
        ['human', 'DESCRIPTION'],
        ['agent', 'Q?'],
        ['human', long],
        ['agent', 'A'],
      ]),
      { template: llama3 },
    ).trajectory;
    expect(b.dialogue_history.map((e) => e.content.length)).toEqual([11, 2, 400, 1]);
    const f = toTrajectory(
      record(
        [
          ['agent', 'Q?'],
          ['human', long],
          ['agent', 'A'],
        ],
        {},
        0.5,
        'frontend',
      ),
      { template: llama3, answerPath: 'x.screenshots/a.png' },
    ).trajectory;
    expect(f.dialogue_history[2]!.content).toHaveLength(1000);
    expect(f.answer).toBe('x.screenshots/a.png');
    expect(f.task.test_cases).toBeUndefined();
  });

  it('refuses sessions that are not trajectories', () => {
    expect(() => toTrajectory(record([['agent', 'A']], {}, null), { template: llama3 })).toThrow(NotATrajectoryError);
    expect(() => toTrajectory(record([['human', 'only the person spoke']]), { template: llama3 })).toThrow(
      /no agent turn/,
    );
    expect(() =>
      toTrajectory(
        record([
          ['agent', 'Q'],
          ['agent', 'Q again'],
        ]),
        { template: llama3 },
      ),
    ).toThrow(/turn 1 is from the agent/);
  });

  it('test cases: arrays and ColBench objects are accepted, anything else is a named error', () => {
    expect(testCasesOf(['a', 'b'])).toEqual(['a', 'b']);
    expect(testCasesOf({ test1: 'a', test2: 'b' })).toEqual(['a', 'b']);
    expect(testCasesOf(null)).toBeNull();
    expect(() => testCasesOf([1, 2], 'task-9')).toThrow(/task task-9: testCases/);
  });
});

describe('chat templates', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sweetloop-tpl-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const msgs: ChatMessage[] = [
    { role: 'system', content: 'S' },
    { role: 'user', content: 'U' },
  ];

  it('chatml and a tokenizer_config.json (with its BOS and named templates) render as the model would', () => {
    expect(resolveChatTemplate('chatml').formatter.format(msgs, { addGenerationPrompt: true })).toBe(
      '<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n',
    );
    const path = join(dir, 'tokenizer_config.json');
    writeFileSync(
      path,
      JSON.stringify({
        bos_token: { content: '<s>' },
        chat_template: [
          { name: 'tool_use', template: 'WRONG' },
          {
            name: 'default',
            template:
              '{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}',
          },
        ],
      }),
    );
    const t = resolveChatTemplate(path, { root: dir });
    expect(t.name).toBe(path);
    expect(t.formatter.format(msgs, { addGenerationPrompt: true })).toBe('<s>[system]S[user]U[assistant]');
  });

  it('a bad --chat-template is a clear error', () => {
    expect(() => resolveChatTemplate('llama2')).toThrow(ChatTemplateError);
    expect(() => resolveChatTemplate('llama2')).toThrow(/neither llama3 nor chatml/);
    const path = join(dir, 'none.json');
    writeFileSync(path, '{}');
    expect(() => resolveChatTemplate(path, { root: dir })).toThrow(/has no chat_template/);
    expect(() => resolveChatTemplate('none.json', { root: dir })).toThrow(/has no chat_template/); // relative to the project
  });

  it('reads a template file only from under the project, and no error quotes a file', () => {
    const project = join(dir, 'project');
    mkdirSync(project, { recursive: true });
    const outside = join(dir, 'outside.json');
    writeFileSync(outside, JSON.stringify({ chat_template: '{{ messages }}' }));
    expect(() => resolveChatTemplate(outside, { root: project })).toThrow(/outside the project folder/);
    expect(() => resolveChatTemplate('../outside.json', { root: project })).toThrow(/outside the project folder/);
    symlinkSync(outside, join(project, 'link.json'));
    expect(() => resolveChatTemplate('link.json', { root: project })).toThrow(/outside the project folder/);
    expect(() => resolveChatTemplate('/etc/passwd', { root: project })).toThrow(/outside the project folder/);
    const errorOf = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        expect(err).toBeInstanceOf(ChatTemplateError);
        return (err as Error).message;
      }
      throw new Error('expected a ChatTemplateError');
    };
    writeFileSync(join(project, 'notes.json'), 'root:x:0:0:SECRET-FIRST-LINE\n');
    const notJson = errorOf(() => resolveChatTemplate('notes.json', { root: project }));
    expect(notJson).toMatch(/is not valid JSON/);
    expect(notJson).not.toContain('SECRET');
    expect(notJson).not.toContain('root:x');
    writeFileSync(
      join(project, 'bad-template.json'),
      JSON.stringify({ chat_template: '{% if SECRET_TEMPLATE_BIT %}' }),
    );
    const badTemplate = errorOf(() => resolveChatTemplate('bad-template.json', { root: project }));
    expect(badTemplate).toMatch(/not a Jinja template this exporter can render/);
    expect(badTemplate).not.toContain('SECRET_TEMPLATE_BIT');
    expect(errorOf(() => resolveChatTemplate('.', { root: project }))).toMatch(/not a file/);
  });
});
