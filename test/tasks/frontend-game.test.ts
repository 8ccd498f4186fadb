// A whole frontend game with real parts: the protocol, the rule-based simulator, real Chromium screenshots and
// the visual diff. The agent is scripted: a wrong first draft, then the page the collaborator asked for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Agent } from '../../tasks/agent.ts';
import type { FrontendTask } from '../../tasks/model.ts';
import { ANSWER_MARKER, HTML_MARKER, playEpisode } from '../../tasks/protocol.ts';
import { Renderer } from '../../tasks/render.ts';
import { createRuleSimulator } from '../../tasks/simulator.ts';
import { screenshotDescriber } from '../../tasks/visual-diff.ts';

const TW = '<link href="https://cdn.jsdelivr.net/npm/tailwindcss@2.2.19/dist/tailwind.min.css" rel="stylesheet">';
const page = (bodyClass: string, banner: string) =>
  `<html>${TW}<body class="${bodyClass}"><header class="${banner} p-10"><h1 class="text-4xl text-white">Corner Bakery</h1></header>` +
  '<main class="p-8"><p class="text-lg">Fresh bread every morning, cakes to order and coffee all day.</p></main></body></html>';

const task: FrontendTask = {
  kind: 'frontend',
  description: 'Bakery: a simple landing page with a coloured banner and a short welcome text.',
  reference: page('bg-yellow-100 min-h-screen', 'bg-red-700'),
};

let renderer: Renderer;
let renders = 0;
beforeAll(async () => {
  renderer = await Renderer.launch();
});
afterAll(async () => {
  await renderer?.close();
});

describe('a frontend game with screenshots', () => {
  it('shows drafts as screenshots, describes the difference, and ends on the page', async () => {
    const drafts = [page('bg-white min-h-screen', 'bg-blue-700'), task.reference];
    const scripted: Agent = {
      name: 'scripted-designer',
      async reply(dialogue) {
        const turn = dialogue.filter((m) => m.role === 'assistant').length;
        if (turn === 0) return { text: `Here is a first version, how close is it?\n${HTML_MARKER}\n${drafts[0]}` };
        return { text: `${ANSWER_MARKER}\n${drafts[1]}` };
      },
    };
    const describe = screenshotDescriber(async (html) => {
      renders++;
      return (await renderer.render(html)).png;
    });
    const collaborator = createRuleSimulator(task, { describeVisualDifference: describe });
    const ep = await playEpisode({ task, agent: scripted, collaborator });

    expect(ep.endReason).toBe('answered');
    expect(ep.answer).toBe(task.reference);
    expect(ep.turns[0]!.parsed?.type).toBe('draft');
    const feedback = ep.turns[1]!.content;
    // The reference has a light yellow page and a red banner; the draft a white page and a blue banner.
    expect(feedback).toMatch(/red|yellow/);
    expect(feedback).toMatch(/blue|white/);
    expect(feedback.split(/(?<=\.)\s+/).length).toBeLessThanOrEqual(2);
    expect(renders).toBe(2);

    // Same page again: the reference screenshot is reused, and a matching draft is called close.
    expect(await describe({ referenceHtml: task.reference, draftHtml: task.reference })).toBe(
      'That looks very close to what I have in mind.',
    );
    expect(renders).toBe(3);
  });
});
