// A session's dialogue as the agent played it, the one reading every trajectory format shares (sweet-rl.ts,
// trl.ts, verl.ts): system notices dropped, an opening copy of the description dropped, cut after the last agent
// turn, agent and collaborator alternating (agent first); and for each agent turn the messages it was sent (the
// recorded prompt, else rebuilt by the protocol from the turns before it).
import type { ChatMessage } from '../../tasks/agent.ts';
import { buildDialogue, type DialogueTurn } from '../../tasks/protocol.ts';
import type { ExportRecord, ExportTurn } from './record.ts';
import { isDialogueTurn } from '../../prisma/cohorts.ts';

/** A session that cannot become a trajectory; trajectory sinks leave it out and count why. */
export class NotATrajectoryError extends Error {}

export interface PlayedTurn {
  turn: ExportTurn;
  /** Agent turns: the messages the model was sent for it, and whether they are the recorded ones. */
  prompt: ChatMessage[] | null;
  exactPrompt: boolean;
}

/** Our turns as the dialogue the agent played: system notices dropped, cut after the last agent turn. */
function playedTurns(r: ExportRecord): ExportTurn[] {
  let turns = r.turns.filter(isDialogueTurn);
  // Some sessions stored the description as an opening human turn; the formats carry it as the first user message.
  if (turns[0]?.role === 'human' && turns[0].content === r.task.problemDescription) turns = turns.slice(1);
  let last = -1;
  turns.forEach((t, i) => {
    if (t.role === 'agent') last = i;
  });
  // An abandoned or expired session (or one whose person spoke last) ends at its last agent turn.
  return turns.slice(0, last + 1);
}

/** The played dialogue with each agent turn's prompt; NotATrajectoryError when there is no agent turn or the turns do not alternate. */
export function playedDialogue(r: ExportRecord): PlayedTurn[] {
  const turns = playedTurns(r);
  if (turns.length === 0) throw new NotATrajectoryError(`session ${r.session.id} has no agent turn`);
  turns.forEach((t, i) => {
    const expected = i % 2 === 0 ? 'agent' : 'human';
    if (t.role !== expected)
      throw new NotATrajectoryError(
        `session ${r.session.id}: turn ${i} is from the ${t.role}, expected the ${expected} (turns alternate, agent first)`,
      );
  });
  const played: DialogueTurn[] = [];
  return turns.map((t) => {
    let prompt: ChatMessage[] | null = null;
    let exactPrompt = false;
    if (t.role === 'agent') {
      exactPrompt = t.prompt !== null;
      // Turns stored before prompts were recorded: the protocol rebuilds what the agent was sent.
      prompt = t.prompt ?? buildDialogue({ kind: r.task.kind, description: r.task.problemDescription }, played);
    }
    played.push({ role: t.role === 'agent' ? 'agent' : 'human', content: t.content });
    return { turn: t, prompt, exactPrompt };
  });
}

/**
 * The whole conversation as chat messages: the opening (system prompt and the task description, as the first agent
 * turn was sent them), then the agent's raw generations as `assistant` and the collaborator's replies as `user`.
 * `opening` is how many messages precede the first agent turn.
 */
export function conversation(
  r: ExportRecord,
  dialogue: readonly PlayedTurn[] = playedDialogue(r),
): { messages: ChatMessage[]; opening: number } {
  // The first agent turn's prompt holds no turns yet: its messages are the opening (system prompt, description).
  const opening = dialogue[0]!.prompt!;
  const messages: ChatMessage[] = opening.map((m) => ({ role: m.role, content: m.content }));
  for (const { turn } of dialogue)
    messages.push(
      turn.role === 'agent'
        ? { role: 'assistant', content: turn.rawOutput ?? turn.content }
        : { role: 'user', content: turn.content },
    );
  return { messages, opening: opening.length };
}
