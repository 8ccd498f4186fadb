// The built-in pages in the real renderer: they load with nothing blocked, Tailwind styles them (an unstyled
// copy looks clearly different), and they differ from one another. About two seconds a page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTasks } from '../../tasks/library.ts';
import { Renderer } from '../../tasks/render.ts';
import { pixelSimilarity } from '../../tasks/similarity.ts';

let renderer: Renderer;
beforeAll(async () => {
  renderer = await Renderer.launch();
});
afterAll(async () => {
  await renderer?.close();
});

describe('built-in frontend pages in Chromium', () => {
  it('render offline with Tailwind applied and look unlike each other', async () => {
    const pages = builtinTasks({ kind: 'frontend' });
    const shots: Buffer[] = [];
    for (const page of pages) {
      const styled = await renderer.render(page.reference);
      // `proxy:` lines are Chromium's own background traffic (updates, accounts), not requests of the page.
      expect(styled.blockedRequests.filter((r) => !r.startsWith('proxy:')), page.externalId).toEqual([]);
      if (shots.length === 0) {
        // Once is enough to see the stylesheet is served and applied.
        const unstyled = await renderer.render(page.reference.replace(/<link [^>]*tailwind[^>]*>/, ''));
        expect(pixelSimilarity(styled.png, unstyled.png), page.externalId).toBeLessThan(0.9);
      }
      shots.push(styled.png);
    }
    for (let i = 1; i < shots.length; i++) expect(pixelSimilarity(shots[i - 1]!, shots[i]!), pages[i]!.externalId).toBeLessThan(0.95);
  });
});
