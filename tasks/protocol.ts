// One turn of the ColBench game, for both kinds: the rules every player follows, whoever plays (the deployed
// policy on Discord, the simulators, the trainer's rollouts). Anything that decides what a message means, what
// the other side is shown, or when a game ends belongs here and nowhere else.
import type { Agent, ChatMessage, Collaborator, TurnProvenance } from './agent.ts';
import type { TaskContent, TaskKind } from './model.ts';
import { stripCodeFences } from './answer.ts';

/** Written by the agent, followed by its raw answer, to end the game. */
export const ANSWER_MARKER = 'I WANT TO ANSWER:';
/** Written by a frontend agent, followed by an HTML page, to show a draft (the human sees its screenshot). */
export const HTML_MARKER = 'OUTPUT:';
/** ColBench's limit on agent turns; the last one is the answer whether or not it carries the marker. */
export const MAX_AGENT_TURNS = 10;

/** ColBench cuts a simulated collaborator's reply to this many characters. */
export const COLLABORATOR_REPLY_CAP: Readonly<Record<TaskKind, number>> = { backend: 400, frontend: 1000 };
/**
 * A person answering as the collaborator is held to the same budget as ColBench's simulated one, so human and
 * simulated dialogues look alike to the learner; unlike a simulator's, a person's message is refused, not cut.
 */
export const HUMAN_MESSAGE_CAP: Readonly<Record<TaskKind, number>> = COLLABORATOR_REPLY_CAP;
/**
 * Longest agent message accepted. A full frontend page is a few KB (the ColBench references are under 3 KB);
 * anything far beyond is a runaway generation, which the caller must refuse rather than show or store.
 */
export const AGENT_MESSAGE_CAP: Readonly<Record<TaskKind, number>> = { backend: 8000, frontend: 16000 };

export type Speaker = 'agent' | 'human';

/** A message that broke a length rule. The caller must refuse it (and say so); it is never silently cut. */
export class MessageTooLongError extends Error {
  constructor(
    readonly speaker: Speaker,
    readonly length: number,
    readonly limit: number,
  ) {
    super(
      speaker === 'human'
        ? `Your message is ${length} characters long; the limit is ${limit}. Please shorten it and send it again.`
        : `The agent's message is ${length} characters long; the limit is ${limit}.`,
    );
    this.name = 'MessageTooLongError';
  }
}

/** A message that cannot be part of a dialogue (empty, or turns out of order). */
export class ProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProtocolError';
  }
}

/** Throws MessageTooLongError or ProtocolError when a person's reply may not be sent; returns it trimmed. */
export function checkHumanMessage(text: string, kind: TaskKind): string {
  const trimmed = text.trim();
  if (trimmed === '') throw new ProtocolError('Your message is empty.');
  if (trimmed.length > HUMAN_MESSAGE_CAP[kind])
    throw new MessageTooLongError('human', trimmed.length, HUMAN_MESSAGE_CAP[kind]);
  return trimmed;
}

/** Throws MessageTooLongError when the agent's message is over the cap; returns it unchanged otherwise. */
export function checkAgentMessage(text: string, kind: TaskKind): string {
  if (text.length > AGENT_MESSAGE_CAP[kind])
    throw new MessageTooLongError('agent', text.length, AGENT_MESSAGE_CAP[kind]);
  return text;
}

/**
 * Text as Postgres can store it: a NUL (U+0000), which Postgres text cannot hold and a byte-level model can emit,
 * becomes U+FFFD. Applied to model output (bot sessions and simulated games alike) and to people's messages.
 */
export function sanitizeText(text: string): string {
  return text.includes('\u0000') ? text.replace(/\u0000/g, '\uFFFD') : text;
}

/** ColBench's rule for a simulated collaborator: the reply is cut to the cap (whitespace trimmed first). */
export function capCollaboratorReply(text: string, kind: TaskKind): string {
  return text.trim().slice(0, COLLABORATOR_REPLY_CAP[kind]);
}

// ---------------------------------------------------------------------------------------------------------
// What the agent sees

export function agentSystemPrompt(kind: TaskKind, maxTurns: number = MAX_AGENT_TURNS): string {
  if (kind === 'backend') {
    return [
      'You are a programming assistant helping a person who needs one Python function.',
      'Their first message describes it only roughly: they have a precise function in mind, and details such as constants, thresholds, units, rounding, argument order and edge cases may be missing from the description.',
      'Ask short clarifying questions, one message at a time, about what you cannot infer. The person answers briefly and may not know everything.',
      `You have at most ${maxTurns} messages in total, and your last one must be your answer; do not spend turns on anything you already know.`,
      `When you are ready, write ${ANSWER_MARKER} followed directly by the complete Python function, with exactly the signature the person gave, and nothing else after it.`,
    ].join('\n');
  }
  return [
    'You are a web designer helping a person who wants one web page.',
    'Their first message gives only the idea; they can see a picture of the exact page they want, and you cannot.',
    'Ask short questions about layout, colours, text and images, one message at a time. The person answers briefly.',
    `You may also show a draft: write ${HTML_MARKER} followed by a complete HTML page. The person sees a screenshot of it, never the code, and tells you how it differs from what they want.`,
    'Style pages with Tailwind CSS 2.2.19 (<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">); for pictures use https://picsum.photos/id/48/WIDTH/HEIGHT.',
    `You have at most ${maxTurns} messages in total, and your last one must be your answer.`,
    `When you are ready, write ${ANSWER_MARKER} followed directly by the complete HTML page, and nothing else after it.`,
  ].join('\n');
}

/** One message of a game as it is stored: the agent's text as produced, the human's as sent. */
export interface DialogueTurn {
  role: Speaker;
  content: string;
}

/**
 * The conversation the agent answers: system prompt, the task description as the first user message, then its
 * own messages (assistant) alternating with the collaborator's (user). Turns must start with the agent and
 * alternate; anything else is a ProtocolError, since a model fed a malformed dialogue fails silently.
 */
export function buildDialogue(
  task: Pick<TaskContent, 'kind' | 'description'>,
  turns: readonly DialogueTurn[],
  options: { maxTurns?: number } = {},
): ChatMessage[] {
  const messages: ChatMessage[] = [
    { role: 'system', content: agentSystemPrompt(task.kind, options.maxTurns ?? MAX_AGENT_TURNS) },
    { role: 'user', content: task.description },
  ];
  turns.forEach((turn, i) => {
    const expected: Speaker = i % 2 === 0 ? 'agent' : 'human';
    if (turn.role !== expected) {
      throw new ProtocolError(
        `turn ${i} is from the ${turn.role}, expected the ${expected} (turns alternate, agent first)`,
      );
    }
    messages.push({ role: turn.role === 'agent' ? 'assistant' : 'user', content: turn.content });
  });
  return messages;
}

// ---------------------------------------------------------------------------------------------------------
// What an agent message means

export interface ParsedAgentMessage {
  /** question: the game goes on; draft: a frontend page to show; answer: the game ends with `answer`. */
  type: 'question' | 'answer' | 'draft';
  /** The raw answer (code or HTML) for type 'answer'. */
  answer?: string;
  /** The page to render: the draft for 'draft', the answer page for a frontend 'answer'. */
  html?: string;
  /** The prose to show the collaborator as text (without the page or answer); may be empty. */
  text: string;
  /** True when the answer came from the last-turn rule rather than the marker. */
  fallback?: boolean;
}

export interface ParseOptions {
  kind: TaskKind;
  /** 0-based index of this agent message among the agent's messages (0 .. maxTurns - 1). */
  turnIndex: number;
  maxTurns?: number;
}

// Models decorate markers (`**I WANT TO ANSWER:**`, `Output:`); accept those rather than lose the answer.
const ANSWER_RE = /(?:\*\*|__)?\s*I\s+WANT\s+TO\s+ANSWER\s*:\s*(?:\*\*|__)?/i;
const HTML_RE = /(?:\*\*|__)?\bOUTPUT\s*:\s*(?:\*\*|__)?/i;

function splitAt(text: string, re: RegExp): { before: string; after: string } | null {
  const m = re.exec(text);
  if (!m) return null;
  return { before: text.slice(0, m.index), after: text.slice(m.index + m[0].length) };
}

/** The HTML document in a piece of text: fences removed, and cut to <!DOCTYPE|html> … </html> when present. */
export function extractHtml(text: string): string {
  const body = stripCodeFences(text).trim();
  const start = body.search(/<!doctype\s+html|<html[\s>]/i);
  if (start < 0) return body;
  const endMatch = /<\/html\s*>/gi;
  let end = -1;
  for (let m = endMatch.exec(body); m; m = endMatch.exec(body)) end = m.index + m[0].length;
  return body.slice(start, end > start ? end : undefined).trim();
}

function extractAnswer(raw: string, kind: TaskKind): { answer: string; html?: string } {
  if (kind === 'backend') return { answer: stripCodeFences(raw).trim() };
  // "I WANT TO ANSWER: OUTPUT: <html>" is a common mix of the two markers.
  const inner = splitAt(raw, HTML_RE);
  const html = extractHtml(inner && inner.before.trim() === '' ? inner.after : raw);
  return { answer: html, html };
}

/**
 * Decides what an agent message is. The answer marker may appear anywhere (text before it is prose for the
 * collaborator); on the last turn a message without it is the answer as a whole, as in ColBench. A frontend
 * message with OUTPUT: before the last turn is a draft to be shown as a screenshot; anything else is a question.
 */
export function parseAgentMessage(text: string, options: ParseOptions): ParsedAgentMessage {
  const maxTurns = options.maxTurns ?? MAX_AGENT_TURNS;
  if (!Number.isInteger(options.turnIndex) || options.turnIndex < 0 || options.turnIndex >= maxTurns) {
    throw new ProtocolError(`turnIndex ${options.turnIndex} is outside 0..${maxTurns - 1}`);
  }
  const lastTurn = options.turnIndex === maxTurns - 1;

  const marked = splitAt(text, ANSWER_RE);
  if (marked) {
    return { type: 'answer', ...extractAnswer(marked.after, options.kind), text: marked.before.trim() };
  }
  const draft = options.kind === 'frontend' ? splitAt(text, HTML_RE) : null;
  if (lastTurn) {
    const source = draft ? draft.after : text;
    return {
      type: 'answer',
      ...extractAnswer(source, options.kind),
      text: draft ? draft.before.trim() : '',
      fallback: true,
    };
  }
  if (draft) {
    const html = extractHtml(draft.after);
    // "OUTPUT:" followed by no markup ("the expected output: a blue header?") is talk, not a page.
    if (/<[a-z!]/i.test(html)) return { type: 'draft', html, text: draft.before.trim() };
  }
  return { type: 'question', text: text.trim() };
}

// ---------------------------------------------------------------------------------------------------------
// What the human collaborator is shown

export type CollaboratorView =
  | { kind: 'backend'; instructions: string; referenceCode: string }
  /** The caller renders `targetHtml` and shows the screenshot only; the HTML itself is never shown. */
  | { kind: 'frontend'; instructions: string; targetHtml: string };

export function collaboratorView(task: TaskContent): CollaboratorView {
  if (task.kind === 'backend') {
    return {
      kind: 'backend',
      instructions:
        'You play the person who asked for this function. Below is the function you have in mind; the agent cannot see it. ' +
        'Answer its questions briefly (at most two sentences) and only from this code; say you do not know when the code does not tell. ' +
        `Do not paste the code. Replies are limited to ${HUMAN_MESSAGE_CAP.backend} characters.`,
      referenceCode: task.reference,
    };
  }
  return {
    kind: 'frontend',
    instructions:
      'You play the person who wants this web page. You are shown a screenshot of the page you have in mind; the agent cannot see it. ' +
      'Answer its questions briefly, and when it shows a draft, say how the draft differs from your page (layout, colours, text, images). ' +
      `Replies are limited to ${HUMAN_MESSAGE_CAP.frontend} characters.`,
    targetHtml: task.reference,
  };
}

export type AgentMessageView =
  | { type: 'text'; text: string }
  /** A frontend draft or answer: show `text` (if any) and a rendered screenshot of `html`, not the HTML. */
  | { type: 'screenshot'; text: string; html: string };

/** What the collaborator is shown for one agent message. */
export function agentMessageView(rawText: string, parsed: ParsedAgentMessage, kind: TaskKind): AgentMessageView {
  if (kind === 'frontend' && parsed.html !== undefined && parsed.html !== '') {
    return { type: 'screenshot', text: parsed.text, html: parsed.html };
  }
  return { type: 'text', text: rawText.trim() };
}

// ---------------------------------------------------------------------------------------------------------
// A whole game

export interface EpisodeTurn extends DialogueTurn {
  /** For agent turns: what the message was taken to be. */
  parsed?: ParsedAgentMessage;
  promptTokens?: number;
  completionTokens?: number;
  /** For agent turns: where the message came from, as the agent reported it (stored with the turn). */
  provenance?: TurnProvenance;
}

/** Why a game ended with an answer: the agent wrote the marker, or its last allowed message became the answer. */
export type EndReason = 'answered' | 'turn-limit';

/** The end reason of an agent message parsed as an answer (a fallback answer is the turn limit's). */
export function endReasonOf(parsed: Pick<ParsedAgentMessage, 'fallback'>): EndReason {
  return parsed.fallback ? 'turn-limit' : 'answered';
}

export interface Episode {
  turns: EpisodeTurn[];
  /** The answer the agent committed to (always set: the last turn is an answer by rule). */
  answer: string;
  endReason: EndReason;
}

export interface PlayEpisodeOptions {
  task: TaskContent;
  agent: Agent;
  /** Built for this task: it knows the hidden reference. */
  collaborator: Collaborator;
  maxTurns?: number;
  signal?: AbortSignal;
  /** Called after every turn (for logging or storing as the game goes). */
  onTurn?: (turn: EpisodeTurn, index: number) => void | Promise<void>;
}

/**
 * Plays one game. The agent gets `buildDialogue(task, turns)`; the collaborator gets the same dialogue, ending
 * with the agent's latest message, and its reply is cut to the ColBench cap. An agent message over
 * AGENT_MESSAGE_CAP throws MessageTooLongError (the game cannot be recorded faithfully).
 */
export async function playEpisode(options: PlayEpisodeOptions): Promise<Episode> {
  const { task, agent, collaborator, signal } = options;
  const maxTurns = options.maxTurns ?? MAX_AGENT_TURNS;
  if (!Number.isInteger(maxTurns) || maxTurns < 1)
    throw new ProtocolError(`maxTurns must be a positive integer, got ${maxTurns}`);
  const turns: EpisodeTurn[] = [];
  const push = async (turn: EpisodeTurn) => {
    turns.push(turn);
    await options.onTurn?.(turn, turns.length - 1);
  };

  for (let turnIndex = 0; turnIndex < maxTurns; turnIndex++) {
    signal?.throwIfAborted();
    const reply = await agent.reply(buildDialogue(task, turns, { maxTurns }), signal ? { signal } : undefined);
    const text = checkAgentMessage(reply.text, task.kind);
    const parsed = parseAgentMessage(text, { kind: task.kind, turnIndex, maxTurns });
    const agentTurn: EpisodeTurn = { role: 'agent', content: text, parsed };
    if (reply.promptTokens !== undefined) agentTurn.promptTokens = reply.promptTokens;
    if (reply.completionTokens !== undefined) agentTurn.completionTokens = reply.completionTokens;
    if (reply.provenance) agentTurn.provenance = reply.provenance;
    await push(agentTurn);
    if (parsed.type === 'answer') {
      return { turns, answer: parsed.answer ?? '', endReason: endReasonOf(parsed) };
    }
    signal?.throwIfAborted();
    const answer = await collaborator.reply(buildDialogue(task, turns, { maxTurns }), signal ? { signal } : undefined);
    await push({ role: 'human', content: capCollaboratorReply(answer, task.kind) });
  }
  // Unreachable: the last turn always parses as an answer.
  throw new ProtocolError('game ended without an answer');
}
