// The web UI in a real browser (puppeteer-core driving the system Chromium, and Firefox
// when /usr/bin/firefox-esr exists) against `glass serve` on the built-in demo model:
// chat, the token view, the inspector (candidates, logit lens, attention) and their
// consistency with the stream and /props, keyboard use, phone and desktop layouts
// (screenshots), model output that tries to inject HTML, storage that is full, error
// display, the API key prompt, and a server with the trace API off. Fails on any console
// error or uncaught page error.
//   GLASS_BINARY               the glass binary (required)
//   GLASS_WEBUI_SCREENSHOTS    where the screenshots go (default: the working directory)
//   GLASS_CHROMIUM             default /usr/bin/chromium
//   GLASS_FIREFOX              default /usr/bin/firefox-esr (skipped when missing)
//   GLASS_WEBUI_DIR            serve the page from this folder (glass serve --webui-dir)
//   GLASS_WEBUI_FAKE_API=1     a binary without the web UI: the page, /props and /inspect
//                              come from fake_api.mjs (see there); chat is still real
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { startGlass } from './glass_server.mjs';
import { fakeApi } from './fake_api.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const WEBUI_SRC = resolve(process.env.GLASS_WEBUI_SRC || join(here, '../../src/webui'));
const CHROMIUM = process.env.GLASS_CHROMIUM || '/usr/bin/chromium';
const FIREFOX = process.env.GLASS_FIREFOX || '/usr/bin/firefox-esr';
const SHOTS = resolve(process.env.GLASS_WEBUI_SCREENSHOTS || process.cwd());
const FAKE = process.env.GLASS_WEBUI_FAKE_API === '1';
// Screenshots of the stand-in's made-up numbers are named apart from the real ones.
const SHOT_SUFFIX = FAKE ? '-fake-api' : '';
const DESKTOP = { width: 1280, height: 800 };
// Not isMobile: puppeteer reloads the page to change that, and the layout only follows the width.
const PHONE = { width: 390, height: 844, deviceScaleFactor: 2 };
const STAGES = ['logits', 'repetition_penalty', 'presence_penalty', 'frequency_penalty', 'temperature', 'top_k', 'top_p', 'min_p'];

let browser;
let main;
const servers = [];

async function serve(extra = []) {
  const server = await startGlass(extra);
  servers.push(server);
  return server;
}

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--font-render-hinting=none'],
  });
  main = await serve();
  if (FAKE) {
    console.log('# GLASS_WEBUI_FAKE_API=1: the page, /props and /inspect come from fake_api.mjs; chat completions from glass serve');
  } else {
    const res = await fetch(`${main.baseURL}/`);
    assert.equal(res.status, 200, `GET / should serve the web UI (set GLASS_WEBUI_FAKE_API=1 to test the page against a stand-in with a binary that has none):\n${await res.text()}`);
    assert.match(res.headers.get('content-type'), /text\/html/);
    const csp = res.headers.get('content-security-policy') || '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'", "frame-ancestors 'none'"])
      assert.ok(csp.includes(directive), `the page's Content-Security-Policy should have ${directive}: ${csp}`);
  }
});

after(async () => {
  if (browser) await browser.close();
  for (const server of servers) await server.stop();
});

// Request interception for the routes (each: request -> response, 'abort', or null).
async function route(page, routes) {
  if (!routes.length) return;
  await page.setRequestInterception(true);
  page.on('request', async (request) => {
    if (request.isInterceptResolutionHandled()) return;
    try {
      for (const r of routes) {
        const answer = await r(request);
        if (answer === 'abort') { await request.abort('failed'); return; }
        if (answer) { await request.respond(answer); return; }
      }
      await request.continue();
    } catch (e) {
      // A listener's rejection would be unhandled: say what failed, and let the request go on.
      if (!/Request is already handled|Target closed|Session closed/.test(String(e))) console.error(`# route for ${request.url()} failed:`, e);
      if (!request.isInterceptResolutionHandled()) await request.continue().catch(() => {});
    }
  });
}

function fakeRoutes(server, options = {}) {
  return FAKE ? [fakeApi({ baseURL: server.baseURL, webuiDir: WEBUI_SRC, ...options })] : [];
}

// The pages open now: a failing test leaves a screenshot of each (failure-N.png).
const openPages = new Set();
function screenshotOnFailure(fn) {
  return async (t) => {
    try {
      await fn(t);
    } catch (e) {
      let i = 0;
      for (const page of openPages) {
        const path = join(SHOTS, `failure-${++i}.png`);
        await page.screenshot({ path }).then(() => console.log(`# screenshot of the failing page: ${path}`), () => {});
      }
      throw e;
    } finally {
      openPages.clear();
    }
  };
}

// A page in a fresh browser context (its own localStorage).
async function openPage(server, { routes = [], viewport = DESKTOP, before: setup } = {}) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  openPages.add(page);
  await page.setViewport(viewport);
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
  const assets = new Map();
  page.on('response', async (response) => {
    const type = response.request().resourceType();
    if (!['document', 'script', 'stylesheet'].includes(type) || !response.url().startsWith(server.baseURL)) return;
    try { assets.set(new URL(response.url()).pathname, (await response.buffer()).length); } catch { /* a redirect or gone */ }
  });
  await route(page, routes);
  if (setup) await setup(page);
  await page.goto(`${server.baseURL}/`, { waitUntil: 'load' });
  return { context, page, errors, assets };
}

async function connected(page) {
  await page.waitForSelector('#send:not([disabled])', { timeout: 20000 });
}

// Sends a message and waits for the reply to finish; returns the stored reply.
async function chat(page, text) {
  await connected(page);
  await page.click('#prompt');
  await page.type('#prompt', text);
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => {
    const s = globalThis.glass.state;
    const m = s.current.messages[s.current.messages.length - 1];
    return !s.streaming && m && m.role === 'assistant' && (m.finish_reason || m.error || m.stopped);
  }, { timeout: 30000 });
  // Let the last animation frame render.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  return page.evaluate(() => {
    const ms = globalThis.glass.state.current.messages;
    return JSON.parse(JSON.stringify(ms[ms.length - 1]));
  });
}

const squash = (s) => s.replace(/\s+/g, ' ').trim();

// The page's visible-token form (dom.js visibleToken) for plain tokens.
function visible(t) {
  if (t === '') return '∅';
  if (/^ +$/.test(t)) return '·'.repeat(t.length);
  return t.replace(/\r/g, '␍').replace(/\t/g, '→').replace(/\n/g, '↵');
}

function checkReply(reply) {
  assert.equal(reply.error, null, `the reply failed: ${reply.error}`);
  assert.ok(['stop', 'length'].includes(reply.finish_reason), `finish_reason ${reply.finish_reason}`);
  assert.ok(reply.content.length > 0, 'the reply has text');
  assert.ok(Array.isArray(reply.prompt_token_ids) && reply.prompt_token_ids.length > 0, 'prompt_token_ids kept');
  assert.ok(reply.tokens.length > 0 && reply.tokens.every((t) => Number.isInteger(t.id) && typeof t.logprob === 'number'), 'each token has an id and a logprob');
  assert.ok(reply.usage, 'usage kept');
  assert.equal(reply.usage.prompt_tokens, reply.prompt_token_ids.length);
  assert.equal(reply.usage.completion_tokens, reply.tokens.length);
}

test('chat, the token view and the inspector (Chromium, desktop and phone)', { timeout: 90000 }, screenshotOnFailure(async () => {
  const inspectBodies = [];
  const { page, errors, assets, context } = await openPage(main, { routes: fakeRoutes(main) });
  page.on('request', (r) => { if (r.url().endsWith('/inspect')) inspectBodies.push(JSON.parse(r.postData())); });
  const paint = await page.evaluate(() => Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, e.startTime])));
  await connected(page);
  const props = await page.evaluate(() => globalThis.glass.state.props);
  assert.equal(props.inspect, true);
  assert.ok(props.architecture.layers > 0 && props.architecture.heads > 0, JSON.stringify(props.architecture));
  assert.equal(await page.$eval('#model-name', (e) => e.textContent), props.model);

  const reply = await chat(page, 'Tell me about glass.');
  checkReply(reply);
  assert.equal(reply.model, props.model);
  for (const [key, value] of Object.entries(props.default_generation_settings))
    if (value !== null && key !== 'chain_order') assert.equal(reply.settings[key], value, `the request used the server's default ${key}`);
  // The reply rendered as markdown (the demo model writes plain words), not as tokens.
  assert.equal(squash(await page.$eval('.msg.assistant .msg-body', (e) => e.textContent)), squash(reply.content));
  assert.equal(await page.$$eval('.msg.assistant .tok', (e) => e.length), 0, 'no token spans before the token view is on');
  assert.equal(await page.$eval('#chat-title', (e) => e.textContent), 'Tell me about glass.');
  assert.match(await page.$eval('.msg.assistant .msg-meta', (e) => e.textContent), /finished: (stop|length)/);
  assert.equal(await page.$eval('#announce', (e) => e.textContent), `Reply finished, ${reply.tokens.length} tokens.`);

  // The token view: one span per generated token, labelled, shaded by probability.
  await page.click('#token-view');
  await page.waitForSelector('.msg.assistant .tok');
  const tokens = await page.$$eval('.msg.assistant .tok', (els) => els.map((e) => ({
    text: e.textContent, label: e.getAttribute('aria-label'), role: e.getAttribute('role'), cls: e.className, tabindex: e.getAttribute('tabindex'),
  })));
  assert.equal(tokens.length, reply.tokens.length);
  tokens.forEach((t, k) => {
    assert.equal(t.role, 'button');
    assert.match(t.label, /probability \d/);
    assert.match(t.cls, /\bb[0-4]\b/);
    if (!reply.tokens[k].text.includes('\uFFFD')) assert.equal(t.text, visible(reply.tokens[k].text));
  });
  assert.equal(tokens.filter((t) => t.tabindex === '0').length, 1, 'one tab stop per reply (arrow keys move between tokens)');
  assert.equal(await page.$eval('#legend', (e) => e.hidden), false);
  // Every shade of the legend (the tokens' classes) is readable in both color schemes.
  for (const scheme of ['dark', 'light']) {
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: scheme }]);
    const ratios = await page.evaluate(() => {
      const luminance = (css) => {
        const [r, g, b] = css.match(/[\d.]+/g).slice(0, 3).map((v) => {
          const c = Number(v) / 255;
          return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      return [...document.querySelectorAll('.tok-sample, .msg.assistant .tok')].map((e) => {
        const style = getComputedStyle(e);
        const [a, b] = [luminance(style.color), luminance(style.backgroundColor)].sort((x, y) => y - x);
        return { cls: e.className, ratio: (a + 0.05) / (b + 0.05) };
      });
    });
    for (const { cls, ratio } of ratios) assert.ok(ratio >= 4.5, `${scheme}: ${cls} has contrast ${ratio.toFixed(2)}`);
  }

  // The inspector for token k: the request the page sends, then the three views.
  const k = Math.min(2, reply.tokens.length - 1);
  const ids = reply.tokens.map((t) => t.id);
  const inspected = page.waitForResponse((r) => r.url().endsWith('/inspect'));
  await page.click(`.msg.assistant .tok[data-k="${k}"]`);
  const inspection = await (await inspected).json();
  await page.waitForSelector('#insp-candidates table.cand');
  const body = inspectBodies[inspectBodies.length - 1];
  assert.deepEqual(body.tokens, [...reply.prompt_token_ids, ...ids.slice(0, k)], 'the context the model saw');
  assert.equal(body.prompt_tokens, reply.prompt_token_ids.length);
  assert.equal(body.token, ids[k]);
  assert.equal(body.top, 10);
  for (const key of ['temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty'])
    assert.equal(body[key], reply.settings[key], `/inspect gets the reply's ${key}`);
  assert.ok(await page.evaluate(() => document.getElementById('inspector').contains(document.activeElement)), 'focus moved into the inspector');
  assert.equal(await page.$eval('#tab-experts', (e) => e.hidden), props.architecture.experts === 0, 'the experts view only for MoE models');

  // The response agrees with itself, with /props and with the stream.
  assert.equal(inspection.position, body.tokens.length - 1);
  assert.equal(inspection.token.id, ids[k]);
  assert.equal(inspection.context.length, body.tokens.length);
  assert.deepEqual(inspection.context.map((c) => c.id), body.tokens);
  const names = inspection.stages.map((s) => s.name);
  assert.equal(names[0], 'logits');
  for (const n of names) assert.ok(STAGES.includes(n), `unknown stage ${n}`);
  assert.deepEqual(names.slice(1), inspection.sampling ? inspection.sampling.split(' -> ').map((s) => s.split('=')[0]) : [], 'stages follow the sampling chain');
  for (const s of inspection.stages) {
    assert.ok(s.top.length > 0 && s.top.length <= 10);
    assert.ok(s.token, `stage ${s.name} places the chosen token`);
    if (s.token.rank !== null) assert.ok(s.token.prob > 0);
  }
  if (!FAKE) {
    // The stream's logprob is the model's own (raw logits) probability of the token...
    const raw = inspection.stages[0].token.prob;
    assert.ok(Math.abs(raw - Math.exp(reply.tokens[k].logprob)) < 2e-3 * Math.max(1, raw * 10),
      `raw-logits probability ${raw} vs the stream's exp(logprob) ${Math.exp(reply.tokens[k].logprob)}`);
    // The raw logits cover the vocabulary (what they "remove" are the embedding's padding
    // rows past the tokenizer, never drawn)...
    assert.equal(inspection.stages[0].surviving + inspection.stages[0].removed, props.architecture.vocab_size);
    // ...and a token that was sampled survived every stage.
    assert.notEqual(inspection.stages[inspection.stages.length - 1].token.rank, null, 'the sampled token survived the processors');
    for (let i = 1; i < inspection.stages.length; i++)
      assert.equal(inspection.stages[i].surviving + inspection.stages[i].removed, inspection.stages[i - 1].surviving, `${names[i]}: kept + removed = what the stage before kept`);
  }
  // The table shows what the response says.
  assert.deepEqual(await page.$$eval('#insp-candidates th.stage', (els) => els.map((e) => e.dataset.stage)), names);
  const chosenCells = await page.$$eval('#insp-candidates td.cand-cell.chosen', (els) => els.map((e) => Number(e.dataset.id)));
  assert.equal(chosenCells.length, inspection.stages.filter((s) => s.token.rank !== null && s.token.rank < s.top.length).length);
  for (const id of chosenCells) assert.equal(id, ids[k]);
  const chosenRow = await page.$$eval('#insp-candidates tr.summary:nth-child(3) td', (els) => els.map((e) => e.textContent));
  inspection.stages.forEach((s, i) => assert.ok(s.token.rank === null ? chosenRow[i] === 'removed' : chosenRow[i].startsWith(`#${s.token.rank + 1}`), `chosen row, ${s.name}: ${chosenRow[i]}`));

  // The logit lens: a row per layer, then the model's output.
  assert.equal(inspection.lens.layers.length, props.architecture.layers);
  inspection.lens.layers.forEach((l, i) => { assert.equal(l.layer, i); assert.ok(l.token && l.top.length > 0); });
  if (!FAKE) {
    // The lens of the last layer is the model's output: the chosen token's probability there
    // is its raw-logits probability.
    const last = inspection.lens.layers[inspection.lens.layers.length - 1].token.prob;
    assert.ok(Math.abs(last - inspection.stages[0].token.prob) < 1e-3, `last lens layer ${last} vs raw logits ${inspection.stages[0].token.prob}`);
  }
  await page.click('#tab-lens');
  await page.waitForSelector('#insp-lens:not([hidden]) table.lens');
  assert.equal(await page.$$eval('#insp-lens tr.layer', (e) => e.length), props.architecture.layers);
  assert.equal(await page.$$eval('#insp-lens tr.final', (e) => e.length), 1);
  const lensChosen = await page.$$eval('#insp-lens tr.layer .lens-chosen', (els) => els.map((e) => e.textContent));
  inspection.lens.layers.forEach((l, i) => assert.ok(lensChosen[i].startsWith(`#${l.token.rank + 1} `), lensChosen[i]));

  await page.click('#tab-candidates');
  await page.screenshot({ path: join(SHOTS, `webui-desktop${SHOT_SUFFIX}.png`) });

  // Attention: heads × context tokens for the chosen layer (the last by default).
  const a = inspection.attention;
  assert.equal(a.layers, props.architecture.layers);
  assert.equal(a.heads, props.architecture.heads);
  assert.equal(a.keys, body.tokens.length);
  assert.equal(a.weights.length, a.layers);
  for (const layer of a.weights) {
    assert.equal(layer.length, a.heads);
    for (const row of layer) {
      assert.equal(row.length, a.keys);
      const sum = row.reduce((x, y) => x + y, 0);
      assert.ok(Math.abs(sum - 1) < 2e-3, `a head's weights sum to 1 (${sum})`);
    }
  }
  await page.click('#tab-attention');
  await page.waitForSelector('#insp-attention:not([hidden]) canvas.attn-canvas');
  const attn = await page.evaluate(() => ({
    layers: [...document.querySelectorAll('#attn-layer option')].map((o) => o.value),
    layer: document.getElementById('attn-layer').value,
    width: document.querySelector('.attn-canvas').width,
    strip: document.querySelectorAll('.attn-strip .attn-tok').length,
  }));
  assert.equal(attn.layers.length, props.architecture.layers);
  assert.equal(attn.layer, String(props.architecture.layers - 1));
  assert.ok(attn.width > 0);
  assert.equal(attn.strip, a.keys);
  const box = await (await page.$('.attn-canvas')).boundingBox();
  await page.mouse.move(box.x + box.width - 3, box.y + 3);
  assert.match(await page.$eval('.attn-readout', (e) => e.textContent), new RegExp(`^Layer ${a.layers - 1}, head 0 → token #${a.keys - 1} `));
  await page.focus('.attn-canvas');
  await page.keyboard.press('ArrowDown');
  assert.match(await page.$eval('.attn-readout', (e) => e.textContent), /head 1 → token #/);
  if (a.layers > 1) {
    await page.select('#attn-layer', '0');
    assert.match(await page.$eval('.attn-top', (e) => e.textContent), /^Most attended in layer 0:/);
  }

  // Keyboard: Escape closes and gives focus back; Tab reaches a token; arrows move; Enter opens.
  await page.keyboard.press('Escape');
  await page.waitForSelector('#inspector', { hidden: true });
  assert.equal(await page.evaluate(() => document.activeElement.dataset.k), String(k), 'focus back on the token');
  await page.focus('#token-view');
  let reached = null;
  for (let i = 0; i < 30 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => (document.activeElement.classList.contains('tok') ? document.activeElement.dataset.k : null));
  }
  assert.ok(reached !== null, 'Tab reaches the tokens');
  await page.keyboard.press('ArrowRight');
  const moved = await page.evaluate(() => document.activeElement.dataset.k);
  assert.equal(Number(moved), Math.min(Number(reached) + 1, reply.tokens.length - 1));
  await page.keyboard.press('Enter');
  await page.waitForSelector('#inspector:not([hidden]) #insp-candidates table.cand');
  assert.match(await page.$eval('#inspector-title', (e) => e.textContent), new RegExp(`^Token ${Number(moved) + 1} of ${reply.tokens.length}`));
  assert.ok(await page.evaluate(() => document.getElementById('inspector').contains(document.activeElement)));
  // A second look at a step comes from the cache.
  const before = inspectBodies.length;
  await page.click('.insp-nav button:first-child');  // previous
  await page.waitForFunction((t) => document.getElementById('inspector-title').textContent.startsWith(`Token ${t} `), {}, Number(moved));
  await page.click('.insp-nav button:last-child');  // next: cached
  await page.waitForSelector('#insp-candidates table.cand');
  assert.equal(inspectBodies.length, before + (Number(moved) === k + 1 ? 0 : 1), 'steps already inspected are not asked again');
  await page.keyboard.press('Escape');
  await page.waitForSelector('#inspector', { hidden: true });
  assert.equal(await page.evaluate(() => document.activeElement.classList.contains('tok')), true);

  // Phone width: the inspector is a bottom sheet over the chat.
  await page.setViewport(PHONE);
  // The sidebar slides out of view (a 0.15 s transition): click once it has.
  await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().right <= 0);
  await page.click(`.msg.assistant .tok[data-k="${k}"]`);
  await page.waitForSelector('#inspector:not([hidden]) #insp-candidates table.cand');
  const sheet = await page.$eval('#inspector', (e) => { const r = e.getBoundingClientRect(); return { left: r.left, width: r.width, bottom: r.bottom, top: r.top }; });
  assert.ok(Math.abs(sheet.left) < 1 && Math.abs(sheet.width - PHONE.width) < 1, `full width: ${JSON.stringify(sheet)}`);
  assert.ok(Math.abs(sheet.bottom - PHONE.height) < 1 && sheet.top > PHONE.height * 0.25, `at the bottom: ${JSON.stringify(sheet)}`);
  await page.click('#tab-attention');
  await page.waitForSelector('#insp-attention:not([hidden]) canvas.attn-canvas');
  await page.screenshot({ path: join(SHOTS, `webui-phone${SHOT_SUFFIX}.png`) });
  await page.keyboard.press('Escape');
  // The sidebar opens over the chat and closes with a tap beside it.
  await page.click('#toggle-sidebar');
  await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().left >= 0);
  assert.equal(await page.$eval('#toggle-sidebar', (e) => e.getAttribute('aria-expanded')), 'true');
  await page.mouse.click(PHONE.width - 20, PHONE.height / 2);
  await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().right <= 0);
  await page.setViewport(DESKTOP);

  // The conversation survives a reload, with its tokens; the token view stays on.
  await page.reload({ waitUntil: 'load' });
  await connected(page);
  assert.deepEqual(await page.$$eval('.conv-open', (els) => els.map((e) => e.textContent)), ['Tell me about glass.']);
  assert.equal(await page.$$eval('.msg.assistant .tok', (e) => e.length), reply.tokens.length);
  // A new chat, and back.
  await page.click('#new-chat');
  assert.equal(await page.$$eval('.msg', (e) => e.length), 0);
  await page.click('.conv-open:not([aria-current])');
  assert.equal(await page.$$eval('.msg', (e) => e.length), 2);
  // Delete it (two clicks: the first asks): gone from the list and from storage.
  await page.click('.conv.current .conv-delete');
  assert.equal(await page.$eval('.conv.current .conv-delete', (e) => e.textContent), 'Delete?');
  await page.click('.conv.current .conv-delete');
  assert.deepEqual(await page.$$eval('.conv-open', (els) => els.map((e) => e.textContent)), ['New chat']);
  assert.deepEqual(await page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('glass.conversation.'))), []);
  assert.deepEqual(await page.evaluate(() => JSON.parse(localStorage.getItem('glass.conversations'))), []);

  assert.deepEqual(errors, [], 'no console errors');
  await context.close();

  // Reported, not asserted: first contentful paint of this first load (a cold browser) and
  // of five more loads in fresh contexts; what the page weighs.
  const later = [];
  for (let i = 0; i < 5; i++) {
    const fresh = await openPage(main, { routes: fakeRoutes(main) });
    await connected(fresh.page);
    later.push(await fresh.page.evaluate(() => performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint').startTime));
    assert.deepEqual(fresh.errors, []);
    await fresh.context.close();
  }
  later.sort((x, y) => x - y);
  const weight = [...assets.values()].reduce((x, y) => x + y, 0);
  console.log(`first contentful paint: ${paint['first-contentful-paint']?.toFixed(0)} ms on the first load, median ${later[2].toFixed(0)} ms (${later.map((t) => t.toFixed(0)).join(', ')}) over 5 more loads in fresh contexts (Chromium headless, ${FAKE ? 'fake API' : 'glass serve'} on loopback)`);
  console.log(`page weight: ${weight} bytes (${[...assets.entries()].map(([p, n]) => `${p} ${n}`).join(', ')})`);
}));

// A chat completion answered by the test: SSE events from the given chunks.
function sse(events) {
  return { status: 200, contentType: 'text/event-stream', headers: { 'cache-control': 'no-cache' }, body: events.map((e) => `data: ${typeof e === 'string' ? e : JSON.stringify(e)}\n\n`).join('') };
}

function fakeStream(text, { promptIds = [1, 2, 3], error = null } = {}) {
  const pieces = text.match(/[\s\S]{1,6}/g) || [];
  const events = [{ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], prompt_token_ids: promptIds }];
  pieces.forEach((piece, i) => events.push({
    choices: [{ index: 0, delta: { content: piece }, logprobs: { content: [{ token: piece, logprob: -0.1 * (i % 30), bytes: [], top_logprobs: [{ token: piece, logprob: -0.1 * (i % 30), bytes: [] }] }] }, finish_reason: null, token_ids: [1000 + i] }],
  }));
  if (error) { events.push({ error: { message: error, type: 'server_error', param: null, code: null } }); return sse(events); }
  events.push({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  events.push({ choices: [], usage: { prompt_tokens: promptIds.length, completion_tokens: pieces.length, total_tokens: promptIds.length + pieces.length } });
  events.push('[DONE]');
  return sse(events);
}

test('model output cannot inject HTML; settings validation; full storage; errors shown as errors', { timeout: 60000 }, screenshotOnFailure(async () => {
  const evil = 'Look: <script>window.__pwned=1</script> and <img src=x onerror="window.__pwned=1"> **bold**.\n\n'
    + '```html\n<script>window.__pwned=2</script>\n```\n\n[click](javascript:window.__pwned=3) <a href="javascript:x">a</a>';
  const chatBodies = [];
  let next = [];  // what the next chat completion answers
  const fakeChat = (request) => {
    if (!request.url().endsWith('/v1/chat/completions')) return null;
    chatBodies.push(JSON.parse(request.postData() ?? '{}'));
    return next.shift() ?? fakeStream('Fine.');
  };
  const { page, errors, context } = await openPage(main, { routes: [fakeChat, ...fakeRoutes(main)] });
  await connected(page);
  const props = await page.evaluate(() => globalThis.glass.state.props);

  // Invalid settings are flagged and not sent; reset brings the server's defaults back.
  await page.click('#open-settings');
  await page.waitForSelector('#settings-dialog[open]');
  const setField = async (key, text) => {
    await page.click(`#setting-${key}`, { clickCount: 3 });
    await page.keyboard.press('Backspace');
    if (text) await page.type(`#setting-${key}`, text);
  };
  await setField('temperature', '5');
  await setField('top_p', '0');
  await setField('seed', '42');
  await setField('stop', 'a\nb\nc\nd\ne');
  const invalid = await page.$$eval('#settings-fields [aria-invalid="true"]', (els) => els.map((e) => e.id));
  assert.deepEqual(invalid.sort(), ['setting-stop', 'setting-temperature', 'setting-top_p']);
  assert.match(await page.$eval('#setting-temperature-error', (e) => e.textContent), /0 to 2/);
  await page.keyboard.press('Escape');
  await page.waitForSelector('#settings-dialog:not([open])');
  assert.match(await page.$eval('#open-settings', (e) => e.textContent), /3 invalid/);
  await chat(page, '<b>not bold</b>');
  let sent = chatBodies[chatBodies.length - 1];
  assert.equal(sent.temperature, undefined, 'an invalid temperature is not sent');
  assert.equal(sent.top_p, undefined);
  assert.equal(sent.stop, undefined);
  assert.equal(sent.seed, 42);
  assert.equal(sent.stream, true);
  assert.equal(sent.logprobs, true);
  assert.equal(sent.top_logprobs, 5);
  assert.equal(sent.return_token_ids, true);
  assert.deepEqual(sent.stream_options, { include_usage: true });
  assert.equal(sent.model, props.model);
  assert.match(await page.$eval('.notice.warn', (e) => e.textContent), /Temperature, Top-p, Stop strings/);
  assert.equal(await page.$eval('.msg.user .msg-text', (e) => e.textContent), '<b>not bold</b>');
  assert.equal(await page.$$eval('.msg.user b', (e) => e.length), 0);
  // Settings persist across a reload.
  await page.reload({ waitUntil: 'load' });
  await connected(page);
  await page.click('#open-settings');
  assert.equal(await page.$eval('#setting-temperature', (e) => e.value), '5');
  await page.click('#reset-settings');
  assert.equal(await page.$eval('#setting-temperature', (e) => e.value), String(props.default_generation_settings.temperature));
  assert.equal(await page.$$eval('#settings-fields [aria-invalid="true"]', (e) => e.length), 0);
  await page.keyboard.press('Escape');
  await setSystemAndStop(page);
  await page.click('#new-chat');

  // Storage full: a notice, and the page keeps working.
  await page.evaluate(() => {
    Storage.prototype.setItem = function setItem() { throw new DOMException('The quota has been exceeded.', 'QuotaExceededError'); };
  });
  next.push(fakeStream(evil));
  const reply = await chat(page, 'Say something dangerous');
  sent = chatBodies[chatBodies.length - 1];
  assert.equal(sent.temperature, props.default_generation_settings.temperature);
  assert.deepEqual(sent.stop, ['STOP1', 'STOP2']);
  assert.deepEqual(sent.messages[0], { role: 'system', content: 'Be brief.' });
  assert.equal(reply.content, evil);
  assert.match(await page.$eval('.notice.warn[data-key="storage"]', (e) => e.textContent), /storage is full/);
  const dom = await page.evaluate(() => {
    const body = document.querySelector('.msg.assistant .msg-body');
    return {
      text: body.textContent,
      pwned: window.__pwned,
      scripts: body.querySelectorAll('script').length,
      images: document.querySelectorAll('img').length,
      pageScripts: document.querySelectorAll('script').length,
      links: body.querySelectorAll('a').length,
      code: body.querySelector('pre code') && body.querySelector('pre code').textContent,
      lang: body.querySelector('pre') && body.querySelector('pre').dataset.lang,
      bold: body.querySelector('strong') && body.querySelector('strong').textContent,
      elements: [...body.querySelectorAll('*')].map((e) => e.tagName.toLowerCase()),
    };
  });
  assert.ok(dom.text.includes('<script>window.__pwned=1</script>'), dom.text);
  assert.ok(dom.text.includes('<img src=x onerror="window.__pwned=1">'), dom.text);
  assert.ok(dom.text.includes('[click](javascript:window.__pwned=3)'), dom.text);
  assert.ok(dom.text.includes('<a href="javascript:x">a</a>'), dom.text);
  assert.equal(dom.pwned, undefined);
  assert.equal(dom.scripts, 0);
  assert.equal(dom.images, 0);
  assert.equal(dom.pageScripts, 1, 'only the page\'s own module script');
  assert.equal(dom.links, 0);
  assert.equal(dom.code, '<script>window.__pwned=2</script>');
  assert.equal(dom.lang, 'html');
  assert.equal(dom.bold, 'bold');
  for (const tag of dom.elements) assert.ok(['p', 'strong', 'pre', 'code', 'br'].includes(tag), `unexpected <${tag}> in the reply`);
  // The token view shows the same text as tokens, as text.
  await page.click('#token-view');
  await page.waitForSelector('.msg.assistant .tok');
  assert.equal(await page.$$eval('.msg.assistant .msg-tokens *:not(.tok):not(br)', (e) => e.length), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  await page.click('#token-view');

  // While a reply streams: its tokens appear as they come (token view), a half-written code
  // fence already renders as code (text view), and Stop ends it, keeping what came.
  await page.evaluate(() => {
    const realFetch = window.fetch;
    window.__realFetch = realFetch;
    window.fetch = (url, init) => {
      if (!String(url).endsWith('/v1/chat/completions')) return realFetch(url, init);
      const encoder = new TextEncoder();
      let controller;
      const stream = new ReadableStream({ start(c) { controller = c; } });
      window.__feed = (events) => { for (const e of events) controller.enqueue(encoder.encode(`data: ${JSON.stringify(e)}\n\n`)); };
      init.signal.addEventListener('abort', () => controller.error(new DOMException('The user aborted a request.', 'AbortError')));
      return Promise.resolve(new Response(stream, { status: 200, headers: { 'content-type': 'text/event-stream' } }));
    };
  });
  const token = (text, i) => ({ choices: [{ index: 0, delta: { content: text }, logprobs: { content: [{ token: text, logprob: -1, bytes: [], top_logprobs: [] }] }, finish_reason: null, token_ids: [500 + i] }] });
  await page.click('#token-view');
  await page.type('#prompt', 'Stream slowly');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => typeof window.__feed === 'function');
  await page.evaluate((events) => window.__feed(events), [
    { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], prompt_token_ids: [7, 8, 9] },
    token('Code', 0), token(':\n', 1), token('```js\n', 2)]);
  await page.waitForFunction(() => document.querySelectorAll('.msg.assistant:last-of-type .tok').length === 3);
  assert.deepEqual(await page.$$eval('.msg.assistant:last-of-type .tok', (els) => els.map((e) => e.textContent)), ['Code', ':↵', '```js↵']);
  assert.equal(await page.$eval('#stop', (e) => e.hidden), false);
  assert.equal(await page.$eval('#send', (e) => e.hidden), true);
  await page.evaluate((events) => window.__feed(events), [token('let x', 3), token(' = 1;', 4)]);
  await page.waitForFunction(() => document.querySelectorAll('.msg.assistant:last-of-type .tok').length === 5);
  await page.click('#token-view');
  assert.equal(await page.$eval('.msg.assistant:last-of-type .msg-body pre code', (e) => e.textContent), 'let x = 1;');
  await page.click('#stop');
  await page.waitForFunction(() => !globalThis.glass.state.streaming);
  const stopped = await page.evaluate(() => { const ms = globalThis.glass.state.current.messages; return JSON.parse(JSON.stringify(ms[ms.length - 1])); });
  assert.equal(stopped.stopped, true);
  assert.equal(stopped.error, null);
  assert.equal(stopped.tokens.length, 5);
  assert.equal(stopped.content, 'Code:\n```js\nlet x = 1;');
  assert.match(await page.$eval('.msg.assistant:last-of-type .msg-meta', (e) => e.textContent), /^stopped/);
  await page.evaluate(() => { window.fetch = window.__realFetch; });

  // Errors: an HTTP error, an error event mid-stream, a network failure. None is model text.
  next.push({ status: 400, contentType: 'application/json', body: JSON.stringify({ error: { message: "'temperature' must be between 0 and 2, got 5", type: 'invalid_request_error', param: 'temperature', code: 'invalid_value' } }) });
  let failed = await chat(page, 'one');
  assert.match(failed.error, /must be between 0 and 2/);
  assert.equal(failed.content, '');
  assert.match(await page.$eval('.msg.assistant:last-of-type .msg-error', (e) => e.textContent), /^Error: 'temperature' must be between 0 and 2, got 5 \(invalid_value\)$/);
  assert.equal(await page.$eval('.msg.assistant:last-of-type .msg-body', (e) => e.textContent), '');
  next.push(fakeStream('partial words', { error: 'The generation failed: boom' }));
  failed = await chat(page, 'two');
  assert.equal(failed.error, 'The generation failed: boom');
  assert.equal(await page.$eval('.msg.assistant:last-of-type .msg-body', (e) => e.textContent), 'partial words');
  assert.match(await page.$eval('.msg.assistant:last-of-type .msg-error', (e) => e.textContent), /boom/);
  next.push('abort');
  failed = await chat(page, 'three');
  assert.match(failed.error, /^Network error/);
  assert.match(await page.$eval('.msg.assistant:last-of-type .msg-error', (e) => e.textContent), /Network error/);
  // Regenerate replaces the last reply.
  await page.click('.msg.assistant:last-of-type .msg-actions button:last-child');
  await page.waitForFunction(() => { const ms = globalThis.glass.state.current.messages; return !globalThis.glass.state.streaming && ms[ms.length - 1].finish_reason === 'stop'; });
  assert.equal(await page.$$eval('.msg.assistant', (e) => e.length), 5);

  // Reasoning (Qwen3's thinking) goes in a collapsible block, not in the reply.
  next.push(sse([
    { choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], prompt_token_ids: [1, 2] },
    { choices: [{ index: 0, delta: { reasoning_content: 'Let me <think> about it.' }, logprobs: { content: [{ token: 'Let me <think> about it.', logprob: -0.2, bytes: [], top_logprobs: [] }] }, finish_reason: null, token_ids: [11] }] },
    { choices: [{ index: 0, delta: { content: 'The answer.' }, logprobs: { content: [{ token: 'The answer.', logprob: -0.3, bytes: [], top_logprobs: [] }] }, finish_reason: null, token_ids: [12] }] },
    { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
    '[DONE]',
  ]));
  const thought = await chat(page, 'Think first');
  assert.equal(thought.reasoning, 'Let me <think> about it.');
  assert.equal(thought.content, 'The answer.');
  assert.deepEqual(thought.tokens.map((t) => t.r ?? 0), [1, 0]);
  const shown = await page.$eval('.msg.assistant:last-of-type', (e) => ({
    hidden: e.querySelector('details.reasoning').hidden,
    open: e.querySelector('details.reasoning').open,
    reasoning: e.querySelector('.reasoning-text').textContent,
    body: e.querySelector('.msg-body').textContent,
  }));
  assert.deepEqual(shown, { hidden: false, open: false, reasoning: 'Let me <think> about it.', body: 'The answer.' });
  // Another chat's messages in the history; no reasoning sent back.
  sent = chatBodies[chatBodies.length - 1];
  assert.deepEqual(sent.messages.slice(-2), [{ role: 'assistant', content: 'Fine.' }, { role: 'user', content: 'Think first' }]);

  // Edit the last message: back in the box, it and its reply gone.
  const count = await page.$$eval('.msg', (e) => e.length);
  await page.click('.msg.user:nth-last-child(2) .msg-actions button:last-child');
  assert.equal(await page.$eval('#prompt', (e) => e.value), 'Think first');
  assert.equal(await page.$$eval('.msg', (e) => e.length), count - 2);
  await page.$eval('#prompt', (e) => { e.value = ''; });

  // Expected: the browser logs the 400 and the failed request it was given.
  const unexpected = errors.filter((e) => !/status of 400|net::ERR_FAILED/.test(e));
  assert.deepEqual(unexpected, [], 'no other console errors');
  await context.close();
}));

async function setSystemAndStop(page) {
  await page.click('#open-settings');
  await page.waitForSelector('#settings-dialog[open]');
  await page.type('#setting-system', 'Be brief.');
  await page.click('#setting-stop', { clickCount: 3 });
  await page.keyboard.press('Backspace');
  await page.type('#setting-stop', 'STOP1');
  await page.keyboard.down('Shift');
  await page.keyboard.press('Enter');
  await page.keyboard.up('Shift');
  await page.type('#setting-stop', 'STOP2');
  await page.click('#settings-form button[type="submit"]');
  await page.waitForSelector('#settings-dialog:not([open])');
}

test('the API key: asked for on 401, a wrong one is refused, then chat and inspect work', { timeout: 60000 }, screenshotOnFailure(async () => {
  const keyed = await serve(['--api-key', 'secret']);
  if (!FAKE) {
    assert.equal((await fetch(`${keyed.baseURL}/`)).status, 200, 'the page loads without the key');
    assert.equal((await fetch(`${keyed.baseURL}/webui/app.js`)).status, 200);
    const props = await fetch(`${keyed.baseURL}/props`);
    assert.equal(props.status, 401);
    assert.equal((await props.json()).error.code, 'invalid_api_key');
  }
  const { page, errors, context } = await openPage(keyed, { routes: fakeRoutes(keyed, { apiKey: 'secret' }) });
  await page.waitForSelector('#key-dialog[open]');
  assert.match(await page.$eval('#key-message', (e) => e.textContent), /needs an API key/);
  await page.type('#key-input', 'wrong');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('key-dialog').open && document.getElementById('key-error').textContent !== '');
  assert.match(await page.$eval('#key-error', (e) => e.textContent), /invalid_api_key|key/i);
  assert.match(await page.$eval('#key-message', (e) => e.textContent), /refused/);
  await page.type('#key-input', 'secret');
  await page.keyboard.press('Enter');
  await connected(page);
  assert.equal(await page.$eval('#key-dialog', (e) => e.open), false);
  const reply = await chat(page, 'Hello with a key');
  checkReply(reply);
  await page.click('#token-view');
  await page.click('.msg.assistant .tok[data-k="0"]');
  await page.waitForSelector('#insp-candidates table.cand');
  // Forget the key: the next load asks again.
  await page.keyboard.press('Escape');
  await page.click('#open-key');
  await page.waitForSelector('#key-dialog[open]');
  await page.click('#key-forget');
  await page.click('#key-cancel');
  await page.reload({ waitUntil: 'load' });
  await page.waitForSelector('#key-dialog[open]');
  assert.match(await page.$eval('#key-message', (e) => e.textContent), /needs an API key/);
  const unexpected = errors.filter((e) => !/status of 401/.test(e));
  assert.deepEqual(unexpected, [], 'no console errors but the 401s');
  await context.close();
}));

test('with the trace API off (--no-inspect) the page is a plain chat', { timeout: 60000 }, screenshotOnFailure(async () => {
  const plain = await serve(FAKE ? [] : ['--no-inspect']);
  if (!FAKE) {
    const res = await fetch(`${plain.baseURL}/inspect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tokens: [1] }) });
    assert.equal(res.status, 404);
  }
  const requests = [];
  const { page, errors, context } = await openPage(plain, {
    routes: fakeRoutes(plain, { inspect: false }),
    // Even with the token view left on from before.
    before: (p) => p.evaluateOnNewDocument(() => localStorage.setItem('glass.tokenView', 'true')),
  });
  page.on('request', (r) => requests.push(new URL(r.url()).pathname));
  await connected(page);
  assert.equal(await page.evaluate(() => globalThis.glass.state.props.inspect), false);
  assert.equal(await page.$eval('#token-switch', (e) => e.hidden), true);
  const reply = await chat(page, 'Hello without the glass box');
  checkReply(reply);
  assert.equal(await page.$$eval('.tok', (e) => e.length), 0);
  assert.equal(await page.$eval('#legend', (e) => e.hidden), true);
  assert.equal(await page.$eval('#inspector', (e) => e.hidden), true);
  assert.equal(squash(await page.$eval('.msg.assistant .msg-body', (e) => e.textContent)), squash(reply.content));
  assert.ok(!requests.includes('/inspect'));
  assert.deepEqual(errors, [], 'no console errors');
  await context.close();
}));

test('a mixture-of-experts model: the experts view (faked /props and /inspect)', { timeout: 60000 }, screenshotOnFailure(async () => {
  const fakeChat = (request) => (request.url().endsWith('/v1/chat/completions') ? fakeStream('Experts at work here.', { promptIds: [9707, 11, 1879] }) : null);
  const moe = fakeApi({ baseURL: main.baseURL, webuiDir: WEBUI_SRC, experts: 8, routes: FAKE ? ['page', 'props', 'inspect'] : ['props', 'inspect'] });
  const { page, errors, context } = await openPage(main, { routes: [fakeChat, moe] });
  await chat(page, 'Route me');
  await inspectExperts(page);
  assert.deepEqual(errors, [], 'no console errors');
  await context.close();
}));

// Inspects the second token of the last reply and checks that the experts tab shows the
// experts the inspection names, layer by layer; returns the inspection.
async function inspectExperts(page) {
  await page.click('#token-view');
  const inspected = page.waitForResponse((r) => r.url().endsWith('/inspect'));
  await page.click('.msg.assistant .tok[data-k="1"]');
  const inspection = await (await inspected).json();
  await page.waitForSelector('#insp-candidates table.cand');
  assert.equal(await page.$eval('#tab-experts', (e) => e.hidden), false);
  await page.click('#tab-experts');
  await page.waitForSelector('#insp-experts:not([hidden]) table.experts');
  const rows = await page.$$eval('#insp-experts tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('.expert .ct')].map((e) => e.textContent)));
  assert.deepEqual(rows, inspection.experts.layers.map((l) => l.chosen.map((c) => `E${c.expert}`)));
  return inspection;
}

// The real thing where the fixtures are: glass serve on the tiny Qwen3-MoE checkpoint.
const FIXTURES = process.env.GLASS_FIXTURES || process.env.GLASS_DEFAULT_FIXTURES || join(here, '../../../shared/fixtures');
const MOE_DIR = join(FIXTURES, 'tiny-qwen3-moe');
test('a mixture-of-experts model: the experts view (glass serve on tiny-qwen3-moe)',
  { timeout: 60000, skip: FAKE ? 'GLASS_WEBUI_FAKE_API=1' : existsSync(join(MOE_DIR, 'config.json')) ? false : `no fixture at ${MOE_DIR}` },
  screenshotOnFailure(async () => {
    const moe = await serve(['-m', MOE_DIR]);
    const props = await (await fetch(`${moe.baseURL}/props`)).json();
    assert.ok(props.architecture.experts > 0 && props.architecture.experts_per_token > 0, JSON.stringify(props));
    // Random weights rarely end a reply: 12 tokens, set as a user's setting would be.
    const maxTokens = (page) => page.evaluateOnNewDocument(() => localStorage.setItem('glass.settings', JSON.stringify({ max_tokens: '12' })));
    const { page, errors, context } = await openPage(moe, { before: maxTokens });
    const reply = await chat(page, 'Route me');
    assert.equal(reply.finish_reason, 'length');
    assert.ok(reply.tokens.length >= 2, JSON.stringify(reply));
    const inspection = await inspectExperts(page);
    assert.equal(inspection.token.id, reply.tokens[1].id);
    assert.equal(inspection.experts.experts, props.architecture.experts);
    assert.equal(inspection.experts.layers.length, props.architecture.layers);
    for (const layer of inspection.experts.layers) assert.equal(layer.chosen.length, props.architecture.experts_per_token);
    assert.deepEqual(errors, [], 'no console errors');
    await context.close();
  }));

test('Firefox (WebDriver BiDi): chat, token view, inspector, phone width', { timeout: 90000, skip: existsSync(FIREFOX) ? false : `no Firefox at ${FIREFOX}` }, async () => {
  const firefox = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true });
  try {
    const page = await firefox.newPage();
    await page.setViewport(DESKTOP);
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(`uncaught: ${e.message}`));
    await route(page, fakeRoutes(main));
    await page.goto(`${main.baseURL}/`, { waitUntil: 'load' });
    const reply = await chat(page, 'Hello from Firefox');
    checkReply(reply);
    await page.click('#token-view');
    await page.waitForSelector('.msg.assistant .tok');
    assert.equal(await page.$$eval('.msg.assistant .tok', (e) => e.length), reply.tokens.length);
    await page.click('.msg.assistant .tok[data-k="1"]');
    await page.waitForSelector('#insp-candidates table.cand');
    await page.click('#tab-lens');
    await page.waitForSelector('#insp-lens:not([hidden]) table.lens');
    await page.click('#tab-attention');
    await page.waitForSelector('#insp-attention:not([hidden]) canvas.attn-canvas');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#inspector', { hidden: true });
    // Phone width: the sidebar slides away and the inspector is a full-width bottom sheet.
    await page.setViewport({ width: PHONE.width, height: PHONE.height });
    await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().right <= 0);
    await page.click('.msg.assistant .tok[data-k="1"]');
    await page.waitForSelector('#inspector:not([hidden]) #insp-candidates table.cand');
    const sheet = await page.$eval('#inspector', (e) => { const r = e.getBoundingClientRect(); return { left: r.left, width: r.width, bottom: r.bottom, top: r.top }; });
    assert.ok(Math.abs(sheet.left) < 1 && Math.abs(sheet.width - PHONE.width) < 1, `full width: ${JSON.stringify(sheet)}`);
    assert.ok(Math.abs(sheet.bottom - PHONE.height) < 1 && sheet.top > PHONE.height * 0.25, `at the bottom: ${JSON.stringify(sheet)}`);
    assert.deepEqual(errors, [], 'no console errors');
  } finally {
    await firefox.close();
  }
});
