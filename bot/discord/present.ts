// How engine results look on Discord: message bodies (split under 2,000 characters, never cut), the hidden
// information, agent messages with their screenshots, results and the rating buttons.
import {
  ActionRowBuilder,
  AttachmentBuilder,
  ButtonBuilder,
  ButtonStyle,
  MessageFlags,
  type BaseMessageOptions,
} from 'discord.js';
import type { CollaboratorView } from '../../tasks/protocol.ts';
import type { AgentStep, EvaluatedSession, ScoringState, StudyConsent } from '../session/engine.ts';
import { splitCodeBlock, splitText } from '../split.ts';

/** A message to post; `flags` only to suppress link previews (embeds), which agent messages always do. */
export type Part = BaseMessageOptions & { flags?: MessageFlags.SuppressEmbeds };

/** A study paying through a recruiting platform asks the person's id there once: a button opens the form (components.ts). */
export function platformIdMessage(a: { platform: string; label: string; study: string }, kind: string | null): Part {
  return {
    content: `**Study ${a.study} pays through ${a.platform}.** Before your first session, please give your ${a.label}: it is kept only to pay you, never exported, and deleted with your data.`,
    components: [
      new ActionRowBuilder<ButtonBuilder>().addComponents(
        new ButtonBuilder()
          .setCustomId(`payid:${a.platform}:${kind ?? 'any'}`)
          .setLabel(`Enter your ${a.label}`)
          .setStyle(ButtonStyle.Primary),
      ),
    ],
  };
}

/** The consent text with its Accept button; a study's button names the version shown (`:<study id>:<version>`). */
export function consentMessage(
  consentText: string,
  kind: string | null,
  study?: Pick<StudyConsent, 'studyId' | 'version' | 'study'>,
): Part {
  const id = `consent:accept:${kind ?? 'any'}${study ? `:${study.studyId}:${study.version}` : ''}`;
  return {
    content: `${study ? `**Study ${study.study}: consent (version ${study.version})**` : '**Before your first session**'}\n${consentText}`,
    components: [
      new ActionRowBuilder<ButtonBuilder>().addComponents(
        new ButtonBuilder().setCustomId(id).setLabel('Accept').setStyle(ButtonStyle.Success),
      ),
    ],
  };
}

/** The hidden information, as private messages: the first goes in the reply, the rest as follow-ups. */
export function hiddenInfoParts(
  view: CollaboratorView,
  targetPng: Buffer | undefined,
  threadId: string | null,
): Part[] {
  const where = threadId ? `Your session is open in <#${threadId}>. ` : '';
  if (view.kind === 'backend') {
    const head = `${where}**Only you can see this.**\n${view.instructions}`;
    const blocks = splitCodeBlock(view.referenceCode, 'python');
    const parts = splitText(head).map((content) => ({ content }));
    for (const b of blocks) {
      const last = parts.at(-1)!;
      if (last.content.length + 1 + b.length <= 2000) last.content = `${last.content}\n${b}`;
      else parts.push({ content: b });
    }
    return parts;
  }
  const parts: Part[] = splitText(
    `${where}**Only you can see this.**\n${view.instructions}\nThe page you have in mind:`,
  ).map((content) => ({ content }));
  if (targetPng)
    parts[parts.length - 1]!.files = [
      new AttachmentBuilder(targetPng, { name: 'target.png', description: 'The page you have in mind' }),
    ];
  return parts;
}

/**
 * One agent message as thread messages; a screenshot (draft or answer page) goes on the last one. Links the model
 * writes are not unfurled (SuppressEmbeds): a preview would fetch the address from Discord's side and show a page
 * nobody vetted inside the session.
 */
export function agentStepParts(step: AgentStep): Part[] {
  const header = `**Agent** (message ${step.agentTurn} of ${step.maxTurns})${step.answered ? ' — final answer' : ''}:`;
  const part = (content: string): Part => ({ content, flags: MessageFlags.SuppressEmbeds });
  if (step.view.type === 'screenshot') {
    const body = step.view.text ? `${header}\n${step.view.text}` : `${header}\n*(shows a page)*`;
    const parts = splitText(body).map(part);
    if (step.png)
      parts[parts.length - 1]!.files = [
        new AttachmentBuilder(step.png, { name: step.answered ? 'answer.png' : `draft-${step.agentTurn}.png` }),
      ];
    else parts.push(part('*(the page could not be rendered)*'));
    return parts;
  }
  return splitText(`${header}\n${step.view.text}`).map(part);
}

/** Where the answer stands in the scoring pool (bot/session/scoring.ts). */
export function scoringText(s: ScoringState): string {
  if (s.state === 'scoring') return '*Scoring your answer…*';
  const ahead = s.ahead === 1 ? '1 answer is' : `${s.ahead} answers are`;
  return `*Your answer is saved and waits to be scored: ${ahead} ahead of it.*`;
}

export function resultText(e: EvaluatedSession): string {
  return `${outcomeText(e)}${e.completionCode ? `\n**Your completion code for this study: \`${e.completionCode}\`** (enter it where you signed up, e.g. on Prolific, when you are done).` : ''}`;
}

function outcomeText(e: EvaluatedSession): string {
  const o = e.outcome;
  if (e.kind === 'backend') {
    const tests = o.testsTotal ? `${o.testsPassed ?? 0} of ${o.testsTotal} tests passed` : 'no tests could be run';
    return `**Result:** ${tests} (score ${o.score.toFixed(2)})${o.success ? ' — success!' : ''}`;
  }
  return `**Result:** similarity to your page ${o.score.toFixed(3)}${o.metric ? ` (${o.metric})` : ''}${o.success ? ' — success!' : ''}`;
}

/** The result with the rating prompt under it and its buttons: the two messages' text and buttons in one. */
export function resultWithRating(e: EvaluatedSession): Part {
  const rating = ratingMessage(e.sessionId);
  return { ...rating, content: `${resultText(e)}\n${rating.content}` };
}

export function ratingMessage(sessionId: string): Part {
  return {
    content: 'How helpful was the agent? 1 = useless … 5 = excellent. You can also add a comment.',
    components: [
      new ActionRowBuilder<ButtonBuilder>().addComponents(
        [1, 2, 3, 4, 5].map((n) =>
          new ButtonBuilder().setCustomId(`rate:${sessionId}:${n}`).setLabel(String(n)).setStyle(ButtonStyle.Secondary),
        ),
      ),
      new ActionRowBuilder<ButtonBuilder>().addComponents(
        new ButtonBuilder().setCustomId(`comment:${sessionId}`).setLabel('Add a comment').setStyle(ButtonStyle.Primary),
      ),
    ],
  };
}
