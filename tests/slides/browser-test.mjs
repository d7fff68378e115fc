// Looks at the rendered decks as a person would: headless Chromium with the network
// off opens every deck of build/slides/ (as a file, then served from 127.0.0.1),
// steps through every slide, takes a screenshot of each, and fails when
//   - a script, style sheet, font or figure did not load, or the page tried the web
//   - the page logged an error or a warning, or a script threw
//   - math did not render (KaTeX missing, or a TeX error shown in red)
//   - the number of slides differs from the deck's title + '#' + '##' headings
//   - a slide is blank, a '##' slide has nothing but its heading, a figure is
//     missing, or the content runs off the slide
// and checks build/slides/index.html: every link and picture there resolves.
//
//   node tests/slides/browser-test.mjs --chromium /usr/bin/chromium \
//        [--slides build/slides] [--shots build/slides-test] [DECK.html ...]
//
// One line per check (PASS/FAIL, with the reasons below a FAIL), then
// "N passed, M failed". Screenshots: --shots DIR/NN-name/NNN.png.
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync,
         writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { decodePng, inkShare } from './png.mjs';

const root = resolve(dirname(new URL(import.meta.url).pathname), '../..');
const require = createRequire(join(root, 'slides/package.json'));
const { chromium } = require('playwright-core');

const BLANK_INK = 0.001;     // below this share of non-background pixels a slide is blank
const OVERFLOW_PX = 4;       // content may stick out this much (slide pixels) before it counts
const VIEWPORT = { width: 1280, height: 720 };

function parseArgs(argv) {
  const a = { chromium: '/usr/bin/chromium', slides: join(root, 'build/slides'),
              shots: join(root, 'build/slides-test'), decks: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--chromium') a.chromium = argv[++i];
    else if (argv[i] === '--slides') a.slides = resolve(argv[++i]);
    else if (argv[i] === '--shots') a.shots = resolve(argv[++i]);
    else a.decks.push(resolve(argv[i]));
  }
  if (!a.decks.length) {  // the decks of slides/ (not what an older render left behind)
    a.decks = readdirSync(join(root, 'slides')).filter((f) => /^\d\d-.*\.md$/.test(f)).sort()
      .map((f) => join(a.slides, f.replace(/\.md$/, '.html')));
  }
  return a;
}

// The slides a deck's source promises: its title slide, '#' sections, '##' slides.
function expectedSlides(mdPath) {
  const lines = readFileSync(mdPath, 'utf8').split('\n');
  let title = 0, h1 = 0, h2 = 0, fenced = false, i = 0;
  if (lines[0].trim() === '---') {
    for (i = 1; i < lines.length && !/^(---|\.\.\.)\s*$/.test(lines[i]); i++)
      if (/^title:/.test(lines[i])) title = 1;
    i++;
  }
  for (; i < lines.length; i++) {
    if (/^(```|~~~)/.test(lines[i])) fenced = !fenced;
    else if (!fenced && /^# /.test(lines[i])) h1++;
    else if (!fenced && /^## /.test(lines[i])) h2++;
  }
  return { title, h1, h2, total: title + h1 + h2 };
}

// Runs in the page: what the current slide shows.
function inspectSlide(overflowPx) {
  const slide = Reveal.getCurrentSlide();
  const box = document.querySelector('.reveal .slides').getBoundingClientRect();
  const scale = Reveal.getScale();
  const heading = slide.querySelector(':scope > h1, :scope > h2, :scope > header h1');
  const level = slide.classList.contains('level2') ? 2 : slide.id === 'title-slide' ? 0 : 1;
  const shows = (el) => {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    if (el.matches('img, svg, table, pre, canvas, video, .katex')) return true;
    return el.textContent.trim().length > 0;
  };
  const body = [...slide.children].filter((c) => c !== heading && !c.matches('aside.notes'));
  const problems = [];
  for (const img of slide.querySelectorAll('img')) {
    if (!img.complete || img.naturalWidth === 0)
      problems.push(`figure did not load: ${img.getAttribute('src')}`);
  }
  // What a person sees: the text itself (not the boxes around it, which may be wider)
  // and pictures, tables, code, KaTeX's rendering.
  const inks = [];  // [rect, what it is]
  const walker = document.createTreeWalker(slide, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const el = t.parentElement;
    if (!t.textContent.trim() || el.closest('aside.notes') || el.closest('.katex')) continue;
    // word by word: a space where a line wraps may hang past the edge, unseen
    for (const m of t.textContent.matchAll(/\S+/g)) {
      const range = document.createRange();
      range.setStart(t, m.index);
      range.setEnd(t, m.index + m[0].length);
      for (const r of range.getClientRects()) inks.push([r, `"${t.textContent.trim().slice(0, 40)}"`]);
    }
  }
  for (const el of slide.querySelectorAll('img, svg, canvas, video, table, pre, .katex-html')) {
    if (el.closest('aside.notes') || el.parentElement.closest('svg')) continue;
    const what = el.matches('.katex-html') ? `the formula "${el.closest('.math').textContent.slice(0, 40)}"`
      : el.matches('img') ? `the figure ${el.getAttribute('src')}` : `a ${el.tagName.toLowerCase()}`;
    inks.push([el.getBoundingClientRect(), what]);
  }
  let bottom = [0, ''], right = [0, ''];
  for (const [r, what] of inks) {
    if (r.width < 1 || r.height < 1) continue;
    if ((r.bottom - box.bottom) / scale > bottom[0]) bottom = [(r.bottom - box.bottom) / scale, what];
    if ((r.right - box.right) / scale > right[0]) right = [(r.right - box.right) / scale, what];
  }
  if (bottom[0] > overflowPx)
    problems.push(`${bottom[1]} runs ${Math.round(bottom[0])} px off the bottom of the slide: shorten or split the slide`);
  if (right[0] > overflowPx)
    problems.push(`${right[1]} runs ${Math.round(right[0])} px off the right of the slide`);
  for (const code of slide.querySelectorAll('pre code')) {
    if (code.scrollWidth > code.clientWidth + 2)
      problems.push(`a code line is too long for the slide: "${code.textContent.split('\n').sort((a, b) => b.length - a.length)[0].trim().slice(0, 60)}..."`);
  }
  const notes = slide.querySelector('aside.notes');
  return {
    title: heading ? heading.textContent.trim() : '(no heading)',
    level,
    empty: level === 2 && !body.some(shows),
    notes: notes ? notes.textContent.trim().length : 0,
    problems,
    rect: { x: box.x, y: box.y, width: box.width, height: box.height },
  };
}

// Runs in the page once it has started.
function inspectPage() {
  const math = [...document.querySelectorAll('.math')];
  return {
    reveal: typeof Reveal !== 'undefined' && Reveal.isReady(),
    katex: typeof katex === 'object',
    notesPlugin: typeof Reveal !== 'undefined' && Reveal.hasPlugin('notes'),
    math: math.length,
    unrendered: math.filter((m) => !m.querySelector('.katex')).map((m) => m.textContent.slice(0, 60)),
    errors: [...document.querySelectorAll('.katex-error')]
      .map((e) => `${e.textContent.slice(0, 60)}: ${e.getAttribute('title') || ''}`),
    total: typeof Reveal !== 'undefined' && Reveal.isReady() ? Reveal.getTotalSlides() : 0,
    level2: document.querySelectorAll('section.slide.level2').length,
  };
}

// Listens to what goes wrong while a page loads and runs.
// Chromium's warning about a <meta> tag in pandoc's template: harmless, and not ours.
const KNOWN_WARNINGS = [/apple-mobile-web-app-capable/];

function watch(page, allowedOrigin) {
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'warning' && KNOWN_WARNINGS.some((w) => w.test(m.text()))) return;
    if (m.type() === 'error' || m.type() === 'warning') problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`script error: ${e.message}`));
  page.on('requestfailed', (r) => {
    if (!r.url().startsWith('http') || (allowedOrigin && r.url().startsWith(allowedOrigin)))
      problems.push(`did not load: ${r.url().replace(/^.*\/build\/slides\//, '')} (${r.failure()?.errorText})`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`did not load: ${r.url()} (HTTP ${r.status()})`);
  });
  return problems;
}

// Blocks every request that would leave the machine, and says so.
async function offline(page, allowedOrigin, problems) {
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file:') || (allowedOrigin && url.startsWith(allowedOrigin))) return route.continue();
    problems.push(`tried the network: ${url} (every file must come from beside the page)`);
    return route.abort('internetdisconnected');
  });
}

// A static file server for build/slides/ on 127.0.0.1 (a random free port).
async function serve(dir) {
  const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css',
                  '.svg': 'image/svg+xml', '.png': 'image/png', '.woff2': 'font/woff2',
                  '.woff': 'font/woff', '.ttf': 'font/ttf', '.pdf': 'application/pdf' };
  const server = createServer((req, res) => {
    const path = join(dir, decodeURIComponent(new URL(req.url, 'http://x').pathname));
    if (!path.startsWith(dir) || !existsSync(path)) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': types[extname(path)] || 'application/octet-stream' });
    res.end(readFileSync(path));
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return server;
}

const results = { passed: 0, failed: 0 };
const stray = [];  // network attempts of windows the decks open
function report(name, problems, started) {
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (problems.length === 0) {
    results.passed++;
    console.log(`PASS  ${name} (${secs} s)`);
  } else {
    results.failed++;
    console.log(`FAIL  ${name} (${secs} s)`);
    for (const p of [...new Set(problems)].slice(0, 15)) console.log(`        ${p}`);
  }
}

async function openDeck(context, url, allowedOrigin) {
  const page = await context.newPage();
  const problems = watch(page, allowedOrigin);
  await offline(page, allowedOrigin, problems);
  await page.goto(url, { waitUntil: 'load' });
  const ready = await page.waitForFunction(() => typeof Reveal !== 'undefined' && Reveal.isReady(),
    null, { timeout: 10000 }).then(() => true, () => false);
  if (ready) await page.evaluate(() => document.fonts.ready.then(() => true));
  const info = await page.evaluate(inspectPage);
  if (!info.reveal) problems.push('reveal.js did not start (its script did not load?)');
  if (!info.katex && info.math > 0) problems.push('KaTeX did not load: math cannot render');
  if (info.reveal && !info.notesPlugin) problems.push('the speaker notes plugin did not load');
  return { page, problems, info };
}

async function testDeck(context, html, shots) {
  const name = basename(html, '.html');
  const md = join(root, 'slides', `${name}.md`);
  const expect = existsSync(md) ? expectedSlides(md) : null;
  if (!existsSync(html)) {
    report(`${name}: rendered`, [`${html} does not exist (make slides)`], Date.now());
    return;
  }

  let started = Date.now();
  const { page, problems, info } = await openDeck(context, pathToFileURL(html).href, null);
  report(`${name}: loads offline from file:// with reveal.js, KaTeX and notes, no errors`,
    [...problems], started);
  const reported = problems.length;  // what goes wrong later counts for the slides

  started = Date.now();
  const math = info.unrendered.map((m) => `not rendered: ${m}`)
    .concat(info.errors.map((e) => `TeX error: ${e}`));
  report(`${name}: all ${info.math} math expressions render`, math, started);

  started = Date.now();
  const counts = [];
  if (!expect) counts.push(`no source slides/${name}.md to count the headings of`);
  else {
    if (info.total !== expect.total)
      counts.push(`${info.total} slides, but the source has ${expect.title} title + ${expect.h1} '#' + ${expect.h2} '##' headings = ${expect.total} (a '---' rule or a heading inside something?)`);
    if (info.level2 !== expect.h2)
      counts.push(`${info.level2} '##' slides rendered, ${expect.h2} '##' headings in the source`);
  }
  report(`${name}: ${info.total} slides, as many as its headings`, counts, started);

  started = Date.now();
  const seen = [];
  const dir = join(shots, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  if (info.reveal) {
    await page.evaluate(() => Reveal.configure({ transition: 'none', backgroundTransition: 'none',
                                                 fragments: false }));
    const slides = await page.evaluate(() => Reveal.getSlides().map((s) => Reveal.getIndices(s)));
    for (let i = 0; i < slides.length; i++) {
      await page.evaluate(({ h, v }) => Reveal.slide(h, v), slides[i]);
      await page.evaluate(() => new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok))));
      const s = await page.evaluate(inspectSlide, OVERFLOW_PX);
      const file = join(dir, `${String(i + 1).padStart(3, '0')}.png`);
      const png = await page.screenshot({ path: file });
      const ink = inkShare(decodePng(png), s.rect);
      const where = `slide ${i + 1} "${s.title}"`;
      if (ink < BLANK_INK) seen.push(`${where} is blank (${(ink * 100).toFixed(2)}% ink; ${file})`);
      if (s.empty) seen.push(`${where} has nothing but its heading (an empty slide)`);
      for (const p of s.problems) seen.push(`${where}: ${p}`);
    }
    if (slides.length !== info.total) seen.push(`stepped through ${slides.length} of ${info.total} slides`);
    seen.push(...problems.slice(reported));
  } else {
    seen.push('reveal.js did not start: no slide to step through');
  }
  report(`${name}: every slide shows its content and figures, nothing off the slide (screenshots in ${dir.replace(root + '/', '')})`,
    seen, started);
  if (info.reveal) await testSpeakerView(context, page, name, dir);
  await page.close();
}

// The speaker view (key S) is a second window that reveal.js's notes plugin writes
// itself: it must open without a network and show the current slide's notes.
async function testSpeakerView(context, page, name, dir) {
  const started = Date.now();
  const problems = [];
  const notes = await page.evaluate(() => {
    const slide = Reveal.getSlides().find((s) => s.querySelector('aside.notes'));
    if (!slide) return null;
    const { h, v } = Reveal.getIndices(slide);
    Reveal.slide(h, v);
    return slide.querySelector('aside.notes').textContent.trim().replace(/\s+/g, ' ').slice(0, 50);
  });
  if (notes === null) {
    report(`${name}: the speaker view shows the notes`, ['the deck has no speaker notes at all'], started);
    return;
  }
  const popup = await Promise.all([context.waitForEvent('page', { timeout: 5000 }), page.keyboard.press('s')])
    .then(([p]) => p, () => null);
  if (!popup) {
    problems.push('pressing S opened no speaker view');
  } else {
    problems.push(...watch(popup, null));
    const shown = await popup.waitForFunction((text) => {
      const el = document.querySelector('.speaker-controls-notes');
      return el && el.textContent.replace(/\s+/g, ' ').includes(text);
    }, notes, { timeout: 5000 }).then(() => true, () => false);
    if (!shown) problems.push(`the speaker view does not show the notes "${notes}..."`);
    await popup.screenshot({ path: join(dir, 'speaker-view.png') });
    await popup.close();
  }
  report(`${name}: the speaker view (S) opens offline and shows the notes`, problems, started);
}

async function testServed(context, origin, html) {
  const name = basename(html, '.html');
  if (!existsSync(html)) return;
  const started = Date.now();
  const { page, problems, info } = await openDeck(context, `${origin}/${name}.html`, origin);
  const math = info.math - info.unrendered.length - info.errors.length;
  if (math !== info.math) problems.push(`${info.math - math} math expressions did not render`);
  report(`${name}: served from ${origin}: loads, math renders, no errors`, problems, started);
  await page.close();
}

async function testIndex(context, slidesDir, deckPaths) {
  const started = Date.now();
  const page = await context.newPage();
  const problems = watch(page, null);
  await offline(page, null, problems);
  const index = join(slidesDir, 'index.html');
  if (!existsSync(index)) {
    report('index.html lists the decks and figures', ['build/slides/index.html is missing'], started);
    return;
  }
  await page.goto(pathToFileURL(index).href, { waitUntil: 'load' });
  const links = await page.evaluate(() => [...document.querySelectorAll('a[href]')].map((a) => a.getAttribute('href')));
  for (const href of links) {
    if (!existsSync(join(slidesDir, href))) problems.push(`link to a missing file: ${href}`);
  }
  const broken = await page.evaluate(() => [...document.images]
    .filter((i) => !i.complete || i.naturalWidth === 0).map((i) => i.getAttribute('src')));
  for (const src of broken) problems.push(`picture did not load: ${src}`);
  const decks = deckPaths.map((d) => basename(d));
  for (const d of decks) if (!links.includes(d)) problems.push(`does not list ${d}`);
  await page.screenshot({ path: join(resolve(slidesDir, '..', 'slides-test'), 'index.png'), fullPage: true })
    .catch(() => {});
  report(`index.html links every deck (${decks.length}), every link and picture resolves`, problems, started);
  await page.close();
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  mkdirSync(args.shots, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'slides-chromium-'));
  const server = await serve(args.slides);
  const origin = `http://127.0.0.1:${server.address().port}`;
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: args.chromium,
      headless: true,
      viewport: VIEWPORT,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
             '--disable-component-update', '--disable-sync', '--disable-default-apps',
             '--disable-extensions'],
    });
    // Pages other than the ones under test (the speaker view) get no network either.
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('file:') || url.startsWith(origin)) return route.continue();
      stray.push(`tried the network: ${url}`);
      return route.abort('internetdisconnected');
    });
    for (const html of args.decks) await testDeck(context, html, args.shots);
    for (const html of args.decks) await testServed(context, origin, html);
    await testIndex(context, args.slides, args.decks);
    if (stray.length) report('no other window tried the network', stray, Date.now());
  } catch (e) {
    report('the browser test ran', [String(e.stack || e)], Date.now());
  } finally {
    if (context) await context.close();
    server.close();
    rmSync(profile, { recursive: true, force: true });
  }
  writeFileSync(join(args.shots, 'result.txt'), `${results.passed} passed, ${results.failed} failed\n`);
  console.log(`${results.passed} passed, ${results.failed} failed`);
  process.exit(results.failed ? 1 : 0);
}

main();
