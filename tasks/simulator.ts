// The rule-based collaborator: answers the agent's latest question from the hidden reference only, the way
// ColBench's simulated human is told to (at most two sentences, "I don't know" when the reference does not say,
// replies cut to 400 characters for backend and 1,000 for frontend).
//
// Backend: the reference is cut into facts (python-facts.ts); a question is matched to the facts by shared words
// weighted by rarity, and the best one or two are said in plain words (facts.ts). Frontend: a draft page is
// described by a pluggable screenshot comparison (see `describeVisualDifference`); questions are answered from
// the reference HTML's text (html-facts.ts).
import type { ChatMessage, Collaborator } from './agent.ts';
import type { TaskContent } from './model.ts';
import { COLLABORATOR_REPLY_CAP, parseAgentMessage, MAX_AGENT_TURNS } from './protocol.ts';
import { answerFacts, DONT_KNOW } from './facts.ts';
import { describeDraftByText, frontendFacts } from './html-facts.ts';
import { backendFacts } from './python-facts.ts';
import { splitSentences } from './words.ts';

export interface VisualDifferenceInput {
  referenceHtml: string;
  draftHtml: string;
  /** What the agent wrote along with its draft (may be empty). */
  question: string;
  signal?: AbortSignal;
}

export interface RuleSimulatorOptions {
  /**
   * Describes how a frontend draft differs from the reference as a person looking at both screenshots would
   * (e.g. render both, then tasks/visual-diff.ts `describeVisualDifferences`). Without it, drafts are compared
   * by their text (headings, colours, images).
   */
  describeVisualDifference?: (input: VisualDifferenceInput) => Promise<string>;
}

export function createRuleSimulator(task: TaskContent, options: RuleSimulatorOptions = {}): Collaborator {
  if (task.kind === 'backend') {
    const facts = backendFacts(task.reference);
    return {
      name: 'rule-simulator',
      async reply(dialogue) {
        return finish(answerFacts(facts, latestAgentMessage(dialogue)), COLLABORATOR_REPLY_CAP.backend);
      },
    };
  }
  const facts = frontendFacts(task.reference);
  return {
    name: 'rule-simulator',
    async reply(dialogue, opts) {
      const message = latestAgentMessage(dialogue);
      const turnIndex = Math.min(dialogue.filter((m) => m.role === 'assistant').length - 1, MAX_AGENT_TURNS - 2);
      const parsed = parseAgentMessage(message, { kind: 'frontend', turnIndex: Math.max(turnIndex, 0) });
      if (parsed.type === 'draft' && parsed.html) {
        const text = options.describeVisualDifference
          ? await options.describeVisualDifference({
              referenceHtml: task.reference,
              draftHtml: parsed.html,
              question: parsed.text,
              ...(opts?.signal ? { signal: opts.signal } : {}),
            })
          : describeDraftByText(task.reference, parsed.html);
        return finish(text, COLLABORATOR_REPLY_CAP.frontend);
      }
      return finish(answerFacts(facts, message), COLLABORATOR_REPLY_CAP.frontend);
    },
  };
}

/** The backend answer to one agent message, from the reference code alone (exported for tests and tools). */
export function answerFromReference(reference: string, message: string): string {
  return finish(answerFacts(backendFacts(reference), message), COLLABORATOR_REPLY_CAP.backend);
}

/** The frontend answer to one agent question, from the reference page's text. */
export function answerFromHtml(html: string, message: string): string {
  return finish(answerFacts(frontendFacts(html), message), COLLABORATOR_REPLY_CAP.frontend);
}

function latestAgentMessage(dialogue: ChatMessage[]): string {
  for (let i = dialogue.length - 1; i >= 0; i--) {
    const m = dialogue[i];
    if (m && m.role === 'assistant') return m.content;
  }
  return '';
}

/** At most two sentences, cut to the cap at a word boundary. */
function finish(text: string, cap: number): string {
  const sentences = splitSentences(text.trim()).slice(0, 2);
  let reply = sentences.join(' ');
  if (reply.length > cap) {
    const cut = reply.slice(0, cap - 1);
    const space = cut.lastIndexOf(' ');
    reply = (space > cap / 2 ? cut.slice(0, space) : cut) + '…';
  }
  return reply || DONT_KNOW;
}
