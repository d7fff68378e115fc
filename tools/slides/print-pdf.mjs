// make slides-pdf: every rendered deck as a PDF, through reveal.js's print mode in
// headless Chromium (the same pages, math and figures as on the projector, no LaTeX).
//
//   node tools/slides/print-pdf.mjs --chromium /usr/bin/chromium --out build/slides/pdf \
//        [--notes] build/slides/NN-name.html ...
//
// --notes puts each slide's speaker notes on a page of its own after it (handouts for
// instructors). The network stays off: a deck that needs it fails here too.
//
// reveal.js lays the deck out for print after it says it is ready (Reveal.isReady()):
// each slide moves into a .pdf-page of its own and 'pdf-ready' is sent at the end. A PDF
// printed before that is one blank page, so this waits for 'pdf-ready' and for as many
// .pdf-page elements as the deck has slides, and afterwards counts the PDF's pages: fewer
// pages than slides fails, naming the deck, and the PDF is removed.
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const require = createRequire(join(root, 'slides/package.json'));
const { chromium } = require('playwright-core');

const args = { chromium: '/usr/bin/chromium', out: join(root, 'build/slides/pdf'), notes: false, decks: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--chromium') args.chromium = argv[++i];
  else if (argv[i] === '--out') args.out = resolve(argv[++i]);
  else if (argv[i] === '--notes') args.notes = true;
  else args.decks.push(resolve(argv[i]));
}
if (!args.decks.length) {
  console.error('print-pdf.mjs: no deck given (make slides-pdf renders and passes them)');
  process.exit(2);
}

mkdirSync(args.out, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), 'slides-pdf-'));
let failed = 0;

// The pages of a PDF: its /Type /Page objects (the page tree's /Pages nodes are not pages).
function pdfPageCount(file) {
  const text = readFileSync(file).toString('latin1');
  return (text.match(/\/Type\s*\/Page(?![A-Za-z])/g) || []).length;
}

const context = await chromium.launchPersistentContext(profile, {
  executablePath: args.chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync'],
});
try {
  for (const deck of args.decks) {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.route('**/*', (r) => (r.request().url().startsWith('file:') ? r.continue() : r.abort()));
    // Listen before reveal.js starts: 'pdf-ready' bubbles from the .reveal element.
    await page.addInitScript(() => {
      window.__pdfReady = false;
      document.addEventListener('pdf-ready', () => { window.__pdfReady = true; }, true);
    });
    const query = args.notes ? '?print-pdf&showNotes=separate-page' : '?print-pdf';
    await page.goto(pathToFileURL(deck).href + query, { waitUntil: 'load' });
    const ready = await page.waitForFunction(() => typeof Reveal !== 'undefined' && Reveal.isReady(),
      null, { timeout: 15000 }).then(() => true, () => false);
    if (!ready || errors.length) {
      console.error(`print-pdf: ${basename(deck)} did not start: ${errors.join('; ') || 'reveal.js missing?'}`);
      failed++;
      await page.close();
      continue;
    }
    // The deck's slides, as reveal.js counts them (stacks of vertical slides are not slides).
    const slides = await page.evaluate(() => Reveal.getTotalSlides());
    const laidOut = await page.waitForFunction((n) => window.__pdfReady &&
      document.querySelectorAll('.pdf-page').length >= n, slides, { timeout: 30000 }).then(() => true, () => false);
    if (!laidOut) {
      const pages = await page.evaluate(() => document.querySelectorAll('.pdf-page').length);
      console.error(`print-pdf: ${basename(deck)}: reveal.js's print layout did not finish in 30 s ` +
        `(${pages} .pdf-page elements for ${slides} slides${errors.length ? '; ' + errors.join('; ') : ''})`);
      failed++;
      await page.close();
      continue;
    }
    await page.evaluate(() => Promise.all([document.fonts.ready,
      ...Array.from(document.images).filter((i) => !i.complete)
        .map((i) => new Promise((done) => { i.addEventListener('load', done); i.addEventListener('error', done); }))]));
    const pdf = join(args.out, basename(deck, '.html') + (args.notes ? '-notes' : '') + '.pdf');
    await page.pdf({ path: pdf, preferCSSPageSize: true, printBackground: true });
    const pages = pdfPageCount(pdf);
    if (pages < slides) {
      console.error(`print-pdf: ${basename(deck)}: the PDF has ${pages} page${pages === 1 ? '' : 's'} for ` +
        `${slides} slides (printed before reveal.js's layout?); removed ${pdf.replace(root + '/', '')}`);
      rmSync(pdf, { force: true });
      failed++;
      await page.close();
      continue;
    }
    console.log(`wrote ${pdf.replace(root + '/', '')} (${pages} pages, ${slides} slides)`);
    await page.close();
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
