// A reference web page cut into facts (facts.ts) a person can say from looking at it (title, headings, colours,
// layout, images, buttons), and what a person would notice first when a draft page differs from it, compared by
// text alone (without screenshots).
import { makeFact, type Fact } from './facts.ts';
import { sentence } from './words.ts';

/** The text a page shows, tags dropped and white space collapsed. */
export function stripTags(html: string): string {
  return html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&middot;/g, '·')
    .replace(/&#?\w+;/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

interface Element {
  tag: string;
  classes: string[];
  text: string;
  inner: string;
  attrs: string;
}

function elements(html: string, tags: string): Element[] {
  const out: Element[] = [];
  const re = new RegExp(`<(${tags})\\b([^>]*)>([\\s\\S]*?)</\\1>`, 'gi');
  let m: RegExpExecArray | null;
  while ((m = re.exec(html))) {
    const attrs = m[2] ?? '';
    out.push({
      tag: (m[1] as string).toLowerCase(),
      classes: (/class="([^"]*)"/.exec(attrs)?.[1] ?? '').split(/\s+/).filter(Boolean),
      text: stripTags(m[3] ?? ''),
      inner: m[3] ?? '',
      attrs,
    });
  }
  return out;
}

const COLOR_CLASS =
  /^(bg|text|from|to|via|border)-(white|black|transparent|(?:gray|red|yellow|green|blue|indigo|purple|pink|orange|teal|cyan|lime|amber|emerald|sky|violet|fuchsia|rose|slate|zinc|neutral|stone)-\d{2,3})$/;

/** The colours a page's classes name, as a person says them (Tailwind's bg-blue-500 is "blue"). */
export function pageColours(html: string): string[] {
  const classes = [...html.matchAll(/class="([^"]*)"/g)].flatMap((m) => (m[1] ?? '').split(/\s+/));
  return [
    ...new Set(classes.map((c) => COLOR_CLASS.exec(c)?.[2]?.replace(/-\d+$/, '')).filter((c): c is string => !!c)),
  ];
}

function colourWords(classes: string[]): string[] {
  const out: string[] = [];
  for (const c of classes) {
    const m = COLOR_CLASS.exec(c);
    if (!m) continue;
    const [, role, colour] = m;
    const shade = /-(\d+)$/.exec(colour as string)?.[1];
    const base = (colour as string).replace(/-\d+$/, '');
    const tone = shade === undefined ? '' : Number(shade) <= 200 ? 'light ' : Number(shade) >= 700 ? 'dark ' : '';
    const where =
      role === 'bg' || role === 'from' || role === 'to' || role === 'via'
        ? 'background'
        : role === 'text'
          ? 'text'
          : 'border';
    out.push(`${tone}${base} ${where}`);
  }
  return [...new Set(out)];
}

export function frontendFacts(html: string): Fact[] {
  const facts: Fact[] = [];
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1]?.trim();
  if (title)
    facts.push(
      makeFact(
        `The page is called "${stripTags(title)}"`,
        [
          ['title name call brand page site', 1],
          [title, 0.8],
        ],
        0.3,
      ),
    );

  const body = /<body\b([^>]*)>/i.exec(html)?.[1] ?? '';
  const bodyClasses = (/class="([^"]*)"/.exec(body)?.[1] ?? '').split(/\s+/).filter(Boolean);
  const bodyColours = colourWords(bodyClasses);
  if (bodyColours.length)
    facts.push(
      makeFact(
        `The page overall has ${bodyColours.join(' and ')}`,
        [
          ['color background theme page overall text main', 1],
          [bodyColours.join(' '), 0.8],
        ],
        0.3,
      ),
    );
  const fonts = bodyClasses.filter((c) => /^font-(serif|sans|mono)$/.test(c));
  if (fonts.length)
    facts.push(makeFact(`The text uses a ${fonts[0]?.replace('font-', '')} font`, [['font text style', 1]], 0.2));

  const headings = elements(html, 'h1|h2|h3');
  const h1 = headings.find((h) => h.tag === 'h1');
  if (h1)
    facts.push(
      makeFact(
        `The main heading says "${h1.text}"`,
        [
          ['heading main title big top text say', 1],
          [h1.text, 0.8],
        ],
        0.4,
      ),
    );
  const subs = headings.filter((h) => h.tag !== 'h1').map((h) => `"${h.text}"`);
  if (subs.length)
    facts.push(
      makeFact(
        `The section headings are ${subs.slice(0, 6).join(', ')}`,
        [
          ['heading section titles', 1],
          [subs.join(' '), 0.7],
        ],
        0.2,
      ),
    );

  const blocks = elements(html, 'header|nav|section|main|footer|article');
  const top = blocks.filter((b) => ['header', 'nav', 'section', 'main', 'footer'].includes(b.tag));
  if (top.length) {
    const layout = top.map((b) => {
      const grid = b.classes.find((c) => /^grid-cols-\d+$/.test(c));
      return grid ? `a ${b.tag} with ${grid.replace('grid-cols-', '')} columns` : `a ${b.tag}`;
    });
    facts.push(
      makeFact(
        `From top to bottom there is ${layout.slice(0, 6).join(', ')}`,
        [
          ['layout structure column grid arrange organise organize', 1],
          ['section part order top bottom', 0.7],
        ],
        0.3,
      ),
    );
  }
  for (const b of top) {
    const colours = colourWords(b.classes);
    if (colours.length)
      facts.push(
        makeFact(
          `The ${b.tag} has ${colours.join(' and ')}`,
          [
            [b.tag, 1],
            ['color background', 0.8],
            [colours.join(' '), 0.7],
          ],
          0.2,
        ),
      );
  }
  const nav = elements(html, 'nav')[0];
  if (nav) {
    const links = elements(nav.inner, 'a')
      .slice(0, 6)
      .map((a) => `"${a.text}"`);
    if (links.length) facts.push(makeFact(`The navigation links are ${links.join(', ')}`, [['nav link', 1]], 0.3));
  }
  const images = [...html.matchAll(/<img\b[^>]*>/gi)].map((m) => m[0]);
  if (images.length) {
    const alts = images
      .map((i) => /alt="([^"]*)"/.exec(i)?.[1])
      .filter(Boolean)
      .slice(0, 4);
    const round = images.some((i) => /rounded-full/.test(i));
    facts.push(
      makeFact(
        `There ${images.length === 1 ? 'is one picture' : `are ${images.length} pictures`}${alts.length ? ` (${alts.join(', ')})` : ''}${round ? ', some of them round' : ''}`,
        [
          ['image many count where', 1],
          [alts.join(' '), 0.6],
        ],
        0.3,
      ),
    );
  }
  const buttons = [
    ...elements(html, 'button'),
    ...elements(html, 'a').filter((a) => a.classes.some((c) => c.startsWith('bg-') || c.startsWith('border'))),
  ];
  if (buttons.length) {
    const colours = colourWords(buttons[0]?.classes ?? []);
    facts.push(
      makeFact(
        `The buttons say ${[...new Set(buttons.map((b) => `"${b.text}"`))].slice(0, 4).join(', ')}${colours.length ? `, with ${colours.join(' and ')}` : ''}`,
        [
          ['button call action link click', 1],
          [buttons.map((b) => b.text).join(' '), 0.6],
        ],
        0.3,
      ),
    );
  }
  for (const e of elements(html, 'p|li|td|span|blockquote|h1|h2|h3|h4|a|button')) {
    if (e.text.length >= 3 && e.text.length <= 160)
      facts.push(makeFact(`There is a ${e.tag === 'a' ? 'link' : e.tag} saying "${e.text}"`, [[e.text, 0.8]]));
  }
  return facts;
}

/** Without screenshots: what a person would notice first, from the two pages' text. */
export function describeDraftByText(referenceHtml: string, draftHtml: string): string {
  const notes: string[] = [];
  const refH1 = elements(referenceHtml, 'h1')[0]?.text;
  const draftText = stripTags(draftHtml).toLowerCase();
  if (refH1 && !draftText.includes(refH1.toLowerCase())) notes.push(`The main heading should say "${refH1}"`);
  const refColours = colourWords((/<body\b[^>]*class="([^"]*)"/i.exec(referenceHtml)?.[1] ?? '').split(/\s+/));
  const draftColours = colourWords((/<body\b[^>]*class="([^"]*)"/i.exec(draftHtml)?.[1] ?? '').split(/\s+/));
  if (refColours.length && refColours.join() !== draftColours.join())
    notes.push(`The page should have ${refColours.join(' and ')}`);
  const refImages = (referenceHtml.match(/<img\b/gi) ?? []).length;
  const draftImages = (draftHtml.match(/<img\b/gi) ?? []).length;
  if (refImages !== draftImages)
    notes.push(
      `I want ${refImages === 0 ? 'no pictures' : refImages === 1 ? 'one picture' : `${refImages} pictures`}, not ${draftImages}`,
    );
  const refSections = elements(referenceHtml, 'h2|h3')
    .map((h) => h.text)
    .filter((t) => !draftText.includes(t.toLowerCase()));
  if (refSections.length) notes.push(`It is missing the part "${refSections[0]}"`);
  if (notes.length === 0) return 'That looks close to what I have in mind.';
  return notes
    .slice(0, 2)
    .map((n) => sentence(n))
    .join(' ');
}
