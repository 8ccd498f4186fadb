// Every `sweetloop ...` command shown in a code block of README.md or docs/*.md parses with the real command line
// (bin/cli.ts buildProgram, what bin/sweetloop.cjs runs): no unknown command or option, no missing required option
// or argument, no excess argument, no value its option refuses; and `--help` of each prints its usage. The actions
// are replaced by no-ops, so nothing runs. Synopsis notation in the docs, read as a person would:
// `a|b|c` in one word: each alternative; `cmd x | y ARG`: `cmd y ARG` (a sibling of the last subcommand) unless
// the part after ` | ` starts with `sweetloop`; `[--flag V]` optional (kept), `[words]` a placeholder (dropped);
// `<thing>`, and words in capitals (FILE, N), placeholders any option takes; `# ...` a comment; `\` continues.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Command, CommanderError } from 'commander';
import { buildProgram } from '../bin/cli.ts';
import { SWEETLOOP_ENTRY } from '../testing/sweetloop-cli.ts';

const DOCS = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
];

/** The code blocks of a markdown file: fenced ones and 4-space indented ones (as lists of lines). */
function codeBlocks(text: string): string[][] {
  const blocks: string[][] = [];
  let fenced: string[] | null = null;
  let indented: string[] | null = null;
  for (const line of text.split('\n')) {
    if (fenced) {
      if (/^\s*```/.test(line)) blocks.push(fenced), (fenced = null);
      else fenced.push(line);
      continue;
    }
    if (/^\s*```/.test(line)) {
      if (indented) blocks.push(indented), (indented = null);
      fenced = [];
      continue;
    }
    if (/^ {4,}\S/.test(line)) (indented ??= []).push(line);
    else if (indented && line.trim() !== '') blocks.push(indented), (indented = null);
  }
  if (indented) blocks.push(indented);
  return blocks;
}

const PLACEHOLDER = /^(<[^>]*>|[A-Z][A-Z0-9_]*(\.\.\.)?|"\$[A-Z_]+[^"]*"|\$[A-Z_]+.*)$/;

/** Words of one doc line's command, notation resolved; each result is one command line to parse. */
function expand(line: string): string[][] {
  const text = line
    .replace(/\s#.*$/, '')
    .replace(/<[^>]*>/g, (m) => m.replace(/\s+/g, '_'))
    .replace(/\[([^\][]*)\]/g, (_m, inner: string) => (inner.trim().startsWith('-') ? inner : ''))
    .replace(/\.\.\./g, '');
  const words = text.trim().split(/\s+/).filter(Boolean);
  // Alternatives inside one word (a value list, or --a|--b): one command per alternative, the other words as they are.
  const out: string[][] = [[]];
  for (const w of words) {
    const alts = w.includes('|') && !/^["'$]/.test(w) ? w.split('|').filter(Boolean) : [w];
    if (alts.length > 1) {
      const base = out.splice(0);
      for (const b of base) for (const a of alts) out.push([...b, a]);
    } else for (const b of out) b.push(w);
  }
  return out;
}

/** Every documented command: [where, argv after `sweetloop`]. */
function documentedCommands(): [string, string[]][] {
  const found: [string, string[]][] = [];
  for (const doc of DOCS) {
    for (const block of codeBlocks(readFileSync(doc, 'utf8'))) {
      const joined = block
        .join('\n')
        .replace(/\\\n\s*/g, ' ')
        .split('\n');
      for (const raw of joined) {
        const m = /^\s*(?:\$\s+)?(?:npx\s+)?sweetloop(\s.*)?$/.exec(raw);
        if (!m) continue;
        const segments = (m[1] ?? '').split(/\s+\|\s+/);
        let parent: string[] = [];
        segments.forEach((seg, i) => {
          const own = /^\s*(?:npx\s+)?sweetloop\b(.*)$/.exec(seg);
          const tail = i === 0 ? seg : own ? own[1]! : null;
          for (const words of expand(tail ?? seg)) {
            const argv = i === 0 || own ? words : [...parent, ...words];
            found.push([`${doc}: ${raw.trim()}`, argv]);
            if (i === 0 || own) parent = commandPath(argv).slice(0, -1);
          }
        });
      }
    }
  }
  return found;
}

/** The subcommand names an argv walks through (e.g. study arms start). */
function commandPath(argv: string[]): string[] {
  let cmd: Command = buildProgram();
  const path: string[] = [];
  for (const w of argv) {
    const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w));
    if (!sub) break;
    path.push(w);
    cmd = sub;
  }
  return path;
}

/** The real program with every action a no-op, quiet, and placeholders accepted by any option's parser. */
function dryProgram(): { program: Command; out: string[]; ran: { path: string; args: unknown[] }[] } {
  const program = buildProgram();
  const out: string[] = [];
  const ran: { path: string; args: unknown[] }[] = [];
  const walk = (cmd: Command, path: string[]) => {
    cmd.configureOutput({
      writeOut: (s) => out.push(s),
      writeErr: (s) => out.push(s),
      outputError: (s) => out.push(s),
    });
    cmd.exitOverride();
    for (const o of cmd.options as unknown as { parseArg?: (v: string, p: unknown) => unknown }[]) {
      const parse = o.parseArg;
      if (parse) o.parseArg = (v, p) => (PLACEHOLDER.test(v) ? v : parse(v, p));
    }
    for (const a of cmd.registeredArguments as unknown as { parseArg?: (v: string, p: unknown) => unknown }[]) {
      const parse = a.parseArg;
      if (parse) a.parseArg = (v, p) => (PLACEHOLDER.test(v) ? v : parse(v, p));
    }
    // Leaves, and commands with subcommands that also act themselves (`dashboard` serves; `dashboard token …` manages).
    const acts = (cmd as unknown as { _actionHandler: unknown })._actionHandler != null;
    if (cmd.commands.length === 0 || acts)
      cmd.action((...args: unknown[]) => void ran.push({ path: path.join(' '), args: args.slice(0, -1) }));
    for (const sub of cmd.commands) walk(sub, [...path, sub.name()]);
  };
  walk(program, []);
  return { program, out, ran };
}

async function parse(argv: string[]) {
  const dry = dryProgram();
  let error: CommanderError | Error | null = null;
  await dry.program.parseAsync(argv, { from: 'user' }).catch((e: Error) => (error = e));
  return { ...dry, error: error as CommanderError | Error | null };
}

const commands = documentedCommands();

describe('the sweetloop commands in README.md and docs/*.md', () => {
  it('are found (the extraction works)', () => {
    expect(commands.length).toBeGreaterThan(30);
    const where = new Set(commands.map(([w]) => w.split(':')[0]));
    for (const doc of ['README.md', 'docs/running-a-study.md', 'docs/serving-and-vllm.md', 'docs/training.md'])
      expect(where).toContain(doc);
  });

  it.each(commands.map(([where, argv]) => [`${argv.join(' ')}   (${where})`, argv] as const))(
    'parse: %s',
    async (_name, argv) => {
      const r = await parse(argv);
      expect(r.error, `${r.error?.message ?? ''} ${r.out.join('')}`).toBeNull();
      expect(r.ran.length, 'a command runs (a group alone only prints its help)').toBe(argv.includes('--help') ? 0 : 1);
      const help = await parse([...commandPath(argv), '--help']);
      expect((help.error as CommanderError | null)?.code).toBe('commander.helpDisplayed');
      expect(help.out.join('')).toContain(`Usage: sweetloop ${commandPath(argv).join(' ')}`.trim());
    },
  );

  it('the check fails on a command or option that does not exist, a missing required option, an excess argument', async () => {
    expect(((await parse(['trian'])).error as CommanderError).code).toBe('commander.unknownCommand');
    expect(((await parse(['train', '--status'])).error as CommanderError).code).toBe('commander.unknownOption');
    expect(((await parse(['export', '--format', 'jsonl'])).error as CommanderError).code).toBe(
      'commander.missingMandatoryOptionValue',
    );
    expect(((await parse(['deploy', 'a', 'b'])).error as CommanderError).code).toBe('commander.excessArguments');
    expect((await parse(['export', '--format', 'csv', '--out', 'x'])).error).not.toBeNull();
    expect(expand('export --format sweet-rl|jsonl --out PATH [filters] [--batch-size N]')).toEqual([
      ['export', '--format', 'sweet-rl', '--out', 'PATH', '--batch-size', 'N'],
      ['export', '--format', 'jsonl', '--out', 'PATH', '--batch-size', 'N'],
    ]);
  });

  it('the entry in bin/ runs them too: help, and a clear failure on an unknown option', async () => {
    const exec = promisify(execFile);
    const { stdout } = await exec(process.execPath, [SWEETLOOP_ENTRY, 'export', '--help']);
    expect(stdout).toMatch(/^Usage: sweetloop export --format <format> --out <path> \[options\]/);
    expect(stdout).toMatch(/--out <path>[^]*\(required\)/);
    const bad = await exec(process.execPath, [SWEETLOOP_ENTRY, 'train', '--status']).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(bad?.code).toBe(1);
    expect(bad?.stderr).toMatch(/unknown option '--status'/);
  });
});
