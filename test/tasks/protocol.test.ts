import { describe, expect, it } from 'vitest';
import type { Agent, ChatMessage, Collaborator } from '../../tasks/agent.ts';
import type { BackendTask, FrontendTask } from '../../tasks/model.ts';
import {
  ANSWER_MARKER,
  AGENT_MESSAGE_CAP,
  COLLABORATOR_REPLY_CAP,
  HTML_MARKER,
  HUMAN_MESSAGE_CAP,
  MAX_AGENT_TURNS,
  MessageTooLongError,
  ProtocolError,
  agentMessageView,
  agentSystemPrompt,
  buildDialogue,
  type DialogueTurn,
  capCollaboratorReply,
  checkAgentMessage,
  checkHumanMessage,
  collaboratorView,
  parseAgentMessage,
  playEpisode,
  sanitizeText,
} from '../../tasks/protocol.ts';
import { estimateTokens, fitDialogue } from '../../tasks/context-budget.ts';

// Written for these tests; not taken from ColBench.
const backend: BackendTask = {
  kind: 'backend',
  description:
    'I need a function that works out the shipping fee for a parcel. The signature of the function is: def shipping_fee(weight_kg, express)',
  reference:
    'def shipping_fee(weight_kg, express):\n    fee = 4.5 + 1.2 * weight_kg\n    return round(fee * (2 if express else 1), 2)',
  testCases: ['shipping_fee(1, False)', 'shipping_fee(2.5, True)'],
};
const frontend: FrontendTask = {
  kind: 'frontend',
  description: 'Bakery: a landing page with a hero photo and an order button.',
  reference: '<html><body class="bg-yellow-100"><h1 class="text-4xl">Fresh bread</h1></body></html>',
};
const fn = 'def shipping_fee(weight_kg, express):\n    return 1';
const page = '<html><body class="bg-white"><p>Hi</p></body></html>';

describe('parseAgentMessage', () => {
  const be = (text: string, turnIndex = 0) => parseAgentMessage(text, { kind: 'backend', turnIndex });
  const fe = (text: string, turnIndex = 0) => parseAgentMessage(text, { kind: 'frontend', turnIndex });

  it('treats a message without a marker as a question before the last turn', () => {
    const p = be('Should express parcels cost double?', 3);
    expect(p).toEqual({ type: 'question', text: 'Should express parcels cost double?' });
    // A function written without the marker before turn 10 is still just talk.
    expect(be(fn, 8).type).toBe('question');
  });

  it('finds the marker anywhere and keeps the prose before it apart', () => {
    const p = be(`Thanks, that settles it.\n${ANSWER_MARKER}\n${fn}`, 4);
    expect(p.type).toBe('answer');
    expect(p.answer).toBe(fn);
    expect(p.text).toBe('Thanks, that settles it.');
    expect(p.fallback).toBeUndefined();
    expect(be(`${ANSWER_MARKER} ${fn}`).answer).toBe(fn);
  });

  it('accepts decorated and differently cased markers', () => {
    expect(be(`**I WANT TO ANSWER:**\n${fn}`).answer).toBe(fn);
    expect(be(`I want to answer: ${fn}`).answer).toBe(fn);
  });

  it('strips markdown fences from the answer', () => {
    const p = be(`${ANSWER_MARKER}\n\`\`\`python\n${fn}\n\`\`\`\nHope this helps!`);
    expect(p.answer).toBe(fn);
  });

  it('takes the whole last message as the answer when turn 10 has no marker', () => {
    const p = be(fn, MAX_AGENT_TURNS - 1);
    expect(p).toMatchObject({ type: 'answer', answer: fn, fallback: true });
    const fenced = be('Here you go:\n```python\n' + fn + '\n```', 9);
    expect(fenced.answer).toBe(fn);
    // maxTurns is respected: with 3 turns, index 2 is the last.
    expect(parseAgentMessage('just a question?', { kind: 'backend', turnIndex: 2, maxTurns: 3 }).type).toBe('answer');
    expect(() => parseAgentMessage('x', { kind: 'backend', turnIndex: 10 })).toThrow(ProtocolError);
  });

  it('reads frontend drafts after OUTPUT: and answers as pages', () => {
    const draft = fe(`Here is a first try, what do you think?\n${HTML_MARKER}\n\`\`\`html\n${page}\n\`\`\``, 2);
    expect(draft).toEqual({ type: 'draft', html: page, text: 'Here is a first try, what do you think?' });

    const answer = fe(`${ANSWER_MARKER} ${HTML_MARKER}\n${page}`, 5);
    expect(answer).toMatchObject({ type: 'answer', answer: page, html: page });

    // Prose around the page is cut away; only the document is the answer.
    const wrapped = fe(`${ANSWER_MARKER}\nFinal version below.\n<!DOCTYPE html>${page}\nEnjoy!`, 5);
    expect(wrapped.answer).toBe(`<!DOCTYPE html>${page}`);

    const last = fe(`Final:\n${HTML_MARKER}${page}`, 9);
    expect(last).toMatchObject({ type: 'answer', answer: page, fallback: true, text: 'Final:' });

    // OUTPUT: means nothing for backend tasks, and a bare OUTPUT: is not a draft.
    expect(be(`${HTML_MARKER} 42`, 1).type).toBe('question');
    expect(fe(`What should the ${HTML_MARKER}`, 1).type).toBe('question');
    expect(fe('Is the expected output: a blue header?', 1).type).toBe('question');
  });
});

describe('caps', () => {
  it('rejects an over-long human message with a clear error instead of cutting it', () => {
    const long = 'a'.repeat(HUMAN_MESSAGE_CAP.backend + 1);
    expect(() => checkHumanMessage(long, 'backend')).toThrow(MessageTooLongError);
    expect(() => checkHumanMessage(long, 'backend')).toThrow(/401 characters long; the limit is 400/);
    // The same text is fine for a frontend task, whose cap is 1,000.
    expect(checkHumanMessage(`  ${long}  `, 'frontend')).toBe(long);
    expect(() => checkHumanMessage('   ', 'backend')).toThrow(/empty/);
  });

  it('rejects runaway agent messages', () => {
    expect(() => checkAgentMessage('x'.repeat(AGENT_MESSAGE_CAP.backend + 1), 'backend')).toThrow(/agent's message/);
    expect(checkAgentMessage('short', 'backend')).toBe('short');
  });

  it('cuts simulated replies to 400 / 1,000 characters', () => {
    expect(COLLABORATOR_REPLY_CAP).toEqual({ backend: 400, frontend: 1000 });
    expect(capCollaboratorReply('b'.repeat(2000), 'backend')).toHaveLength(400);
    expect(capCollaboratorReply('b'.repeat(2000), 'frontend')).toHaveLength(1000);
  });
});

describe('buildDialogue and views', () => {
  it('starts with the system prompt and the description, then alternates', () => {
    const d = buildDialogue(backend, [
      { role: 'agent', content: 'Is express double?' },
      { role: 'human', content: 'Yes.' },
    ]);
    expect(d.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(d[0]!.content).toBe(agentSystemPrompt('backend'));
    expect(d[0]!.content).toContain(ANSWER_MARKER);
    expect(d[0]!.content).toContain(`at most ${MAX_AGENT_TURNS} messages`);
    expect(d[1]!.content).toBe(backend.description);
    expect(d[3]!.content).toBe('Yes.');
    expect(buildDialogue(frontend, [], { maxTurns: 4 })[0]!.content).toMatch(/OUTPUT:.*screenshot/s);
    expect(buildDialogue(frontend, [], { maxTurns: 4 })[0]!.content).toContain('at most 4 messages');
  });

  it('refuses turns out of order', () => {
    expect(() => buildDialogue(backend, [{ role: 'human', content: 'hi' }])).toThrow(/turn 0 is from the human/);
    expect(() =>
      buildDialogue(backend, [
        { role: 'agent', content: 'a' },
        { role: 'agent', content: 'b' },
      ]),
    ).toThrow(ProtocolError);
  });

  it('shows the reference code for backend and only a screenshot for frontend', () => {
    const b = collaboratorView(backend);
    expect(b.kind === 'backend' && b.referenceCode).toBe(backend.reference);
    const f = collaboratorView(frontend);
    expect(f.kind).toBe('frontend');
    expect(f.instructions).toMatch(/screenshot/);
    expect(f.kind === 'frontend' && f.targetHtml).toBe(frontend.reference);

    const msg = `Try this:\n${HTML_MARKER}${page}`;
    expect(agentMessageView(msg, parseAgentMessage(msg, { kind: 'frontend', turnIndex: 0 }), 'frontend')).toEqual({
      type: 'screenshot',
      text: 'Try this:',
      html: page,
    });
    expect(
      agentMessageView(
        'Which colour?',
        parseAgentMessage('Which colour?', { kind: 'frontend', turnIndex: 0 }),
        'frontend',
      ),
    ).toEqual({ type: 'text', text: 'Which colour?' });
  });
});

/** An agent that plays a fixed script and records what it was shown. */
function scriptedAgent(lines: string[]): Agent & { seen: ChatMessage[][] } {
  const seen: ChatMessage[][] = [];
  let i = 0;
  return {
    name: 'scripted',
    seen,
    async reply(dialogue) {
      seen.push(dialogue);
      const text = lines[i++];
      if (text === undefined) throw new Error('script exhausted');
      return { text, completionTokens: text.length };
    },
  };
}

function echoCollaborator(answer: (last: string) => string): Collaborator & { seen: ChatMessage[][] } {
  const seen: ChatMessage[][] = [];
  return {
    name: 'echo',
    seen,
    async reply(dialogue) {
      seen.push(dialogue);
      return answer(dialogue[dialogue.length - 1]!.content);
    },
  };
}

describe('playEpisode', () => {
  it('plays questions and answers until the marker', async () => {
    const agent = scriptedAgent(['Is express double the price?', 'What is the base fee?', `${ANSWER_MARKER}\n${fn}`]);
    const collaborator = echoCollaborator((q) =>
      q.includes('express') ? 'Yes, twice.' : 'It is 4.5 plus 1.2 per kilo.',
    );
    const seenTurns: number[] = [];
    const ep = await playEpisode({ task: backend, agent, collaborator, onTurn: (_t, i) => void seenTurns.push(i) });
    expect(ep.endReason).toBe('answered');
    expect(ep.answer).toBe(fn);
    expect(ep.turns.map((t) => t.role)).toEqual(['agent', 'human', 'agent', 'human', 'agent']);
    expect(ep.turns[1]!.content).toBe('Yes, twice.');
    expect(ep.turns[4]!.completionTokens).toBe(`${ANSWER_MARKER}\n${fn}`.length);
    expect(seenTurns).toEqual([0, 1, 2, 3, 4]);
    // The agent's third view holds everything said so far; the collaborator always answers an agent message.
    expect(agent.seen[2]!.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant', 'user']);
    expect(collaborator.seen.every((d) => d[d.length - 1]!.role === 'assistant')).toBe(true);
  });

  it('ends at the turn limit with the last message as the answer, and caps the collaborator', async () => {
    const agent = scriptedAgent(['q1?', 'q2?', fn]);
    const collaborator = echoCollaborator(() => 'z'.repeat(900));
    const ep = await playEpisode({ task: backend, agent, collaborator, maxTurns: 3 });
    expect(ep.endReason).toBe('turn-limit');
    expect(ep.answer).toBe(fn);
    expect(ep.turns).toHaveLength(5);
    expect(ep.turns[1]!.content).toHaveLength(400);
  });

  it('refuses a runaway agent message', async () => {
    const agent = scriptedAgent(['y'.repeat(AGENT_MESSAGE_CAP.backend + 1)]);
    await expect(playEpisode({ task: backend, agent, collaborator: echoCollaborator(() => 'ok') })).rejects.toThrow(
      MessageTooLongError,
    );
  });

  it('passes frontend drafts to the collaborator and ends on a page', async () => {
    const agent = scriptedAgent([`Draft:\n${HTML_MARKER}${page}`, `${ANSWER_MARKER}${page}`]);
    const collaborator = echoCollaborator((last) =>
      parseAgentMessage(last, { kind: 'frontend', turnIndex: 0 }).type === 'draft' ? 'Make it yellow.' : '?',
    );
    const ep = await playEpisode({ task: frontend, agent, collaborator });
    expect(ep.turns[0]!.parsed?.type).toBe('draft');
    expect(ep.turns[1]!.content).toBe('Make it yellow.');
    expect(ep.answer).toBe(page);
  });
});

describe('sanitizeText', () => {
  it('replaces every NUL with U+FFFD and leaves other text alone', () => {
    expect(sanitizeText('a\u0000b\u0000')).toBe('a\uFFFDb\uFFFD');
    expect(sanitizeText('\u0000')).toBe('\uFFFD');
    const clean = 'déjà vu\n\t';
    expect(sanitizeText(clean)).toBe(clean);
  });
});

describe('fitDialogue (the context budget)', () => {
  const task = { kind: 'backend' as const, description: 'Task description.' };
  const turns: DialogueTurn[] = Array.from({ length: 8 }, (_, i) => ({
    role: i % 2 === 0 ? ('agent' as const) : ('human' as const),
    content: `turn ${i} ${'x'.repeat(40)}`,
  }));
  const dialogue = buildDialogue(task, turns);
  // One "token" per character: easy to reason about.
  const chars = (ms: readonly { content: string }[]) => ms.reduce((n, m) => n + m.content.length, 0);

  it('keeps everything when it fits', () => {
    const f = fitDialogue(dialogue, chars(dialogue), chars);
    expect(f).toEqual({ messages: dialogue, droppedTurns: 0, tokens: chars(dialogue), fits: true });
  });

  it('drops the oldest agent/human pairs, keeping system prompt, task and the latest turns', () => {
    const f = fitDialogue(dialogue, chars(dialogue) - 1, chars);
    expect(f.droppedTurns).toBe(2);
    expect(f.messages.slice(0, 2)).toEqual(dialogue.slice(0, 2));
    expect(f.messages.slice(2)).toEqual(dialogue.slice(4));
    expect(f.messages[2]!.role).toBe('assistant');
    expect(f.tokens).toBeLessThanOrEqual(chars(dialogue) - 1);
    // The fewest pairs that fit: a budget for the head and the last pair only drops three pairs.
    const lastPair = chars(dialogue.slice(0, 2)) + chars(dialogue.slice(-2));
    const g = fitDialogue(dialogue, lastPair, chars);
    expect(g.droppedTurns).toBe(6);
    expect(g.messages.slice(2)).toEqual(dialogue.slice(-2));
  });

  it('falls back to the task alone, and says when even that does not fit', () => {
    const head = chars(dialogue.slice(0, 2));
    const f = fitDialogue(dialogue, head + 10, chars);
    expect(f).toMatchObject({ droppedTurns: 8, fits: true, messages: dialogue.slice(0, 2) });
    const g = fitDialogue(dialogue, head - 1, chars);
    expect(g).toMatchObject({ droppedTurns: 8, fits: false, tokens: head });
  });

  it('estimates tokens pessimistically (3 characters a token, 8 a message)', () => {
    expect(estimateTokens([{ role: 'user', content: 'x'.repeat(30) }])).toBe(18);
  });
});
