// A stand-in for the server side of the web UI, for working on the page before a glass
// binary serves it: with GLASS_WEBUI_FAKE_API=1 the browser test answers, by request
// interception, GET / and /webui/* from src/webui (with the server's Content-Security-
// Policy), GET /props and POST /inspect (with made-up but well-formed numbers, in the
// shapes docs/webui.md documents), and passes everything else (chat completions) to the
// real server. The API key and --no-inspect are emulated for those two routes. Never used
// unless asked for: by default the tests run against the real server.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

const TYPES = { html: 'text/html; charset=utf-8', css: 'text/css; charset=utf-8', js: 'text/javascript; charset=utf-8' };

export const FAKE_ARCHITECTURE = { layers: 2, heads: 4, kv_heads: 2, experts: 0, vocab_size: 151936 };
const DEFAULTS = {
  temperature: 0.7, top_k: 20, top_p: 0.8, min_p: 0, repetition_penalty: 1.05, presence_penalty: 0,
  frequency_penalty: 0, max_tokens: null, seed: null,
};

function json(status, value) {
  return { status, contentType: 'application/json', body: JSON.stringify(value) };
}

function unauthorized() {
  return json(401, { error: { message: 'Missing or wrong API key', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
}

// Returns a route for the test's router: (request) -> response or null (pass it on).
// experts: answer as a mixture-of-experts model with that many experts (the demo model is
// dense). routes: which of 'page', 'props', 'inspect' to answer (default all).
export function fakeApi({ baseURL, webuiDir, apiKey = null, inspect = true, experts = 0, routes = ['page', 'props', 'inspect'] }) {
  const texts = new Map();
  let model = null;
  const textOf = async (id) => {
    if (!texts.has(id)) {
      const headers = { 'content-type': 'application/json' };
      if (apiKey) headers.authorization = `Bearer ${apiKey}`;
      const res = await fetch(`${baseURL}/detokenize`, { method: 'POST', headers, body: JSON.stringify({ tokens: [id] }) });
      texts.set(id, res.ok ? (await res.json()).content : `<${id}>`);
    }
    return texts.get(id);
  };
  return async (request) => {
    const url = new URL(request.url());
    if (url.origin !== baseURL) return null;
    const authorized = !apiKey || request.headers().authorization === `Bearer ${apiKey}`;
    if (routes.includes('page') && request.method() === 'GET' && (url.pathname === '/' || url.pathname.startsWith('/webui/'))) {
      const name = url.pathname === '/' ? 'index.html' : url.pathname.slice('/webui/'.length);
      if (!/^[\w.-]+$/.test(name)) return { status: 404, body: 'not found' };
      try {
        const body = await readFile(join(webuiDir, name));
        return {
          status: 200,
          headers: { 'content-security-policy': CSP, 'x-content-type-options': 'nosniff' },
          contentType: TYPES[name.split('.').pop()] || 'application/octet-stream',
          body,
        };
      } catch {
        return { status: 404, body: 'not found' };
      }
    }
    if (routes.includes('props') && request.method() === 'GET' && url.pathname === '/props') {
      if (!authorized) return unauthorized();
      if (!model) {
        const headers = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
        model = (await (await fetch(`${baseURL}/v1/models`, { headers })).json()).data[0].id;
      }
      return json(200, {
        model, context_length: 4096, chat_template: true, inspect,
        default_generation_settings: DEFAULTS, architecture: { ...FAKE_ARCHITECTURE, experts, experts_per_token: experts ? 2 : 0 },
      });
    }
    if (routes.includes('inspect') && request.method() === 'POST' && url.pathname === '/inspect') {
      if (!authorized) return unauthorized();
      if (!inspect) return json(404, { error: { message: 'The inspection API is off on this server (glass serve --no-inspect)', type: 'invalid_request_error', param: null, code: 'inspect_disabled' } });
      const body = JSON.parse((await postData(request)) || '{}');
      if (!Array.isArray(body.tokens) || !body.tokens.length) return json(400, { error: { message: "'tokens' is empty", param: 'tokens' } });
      return json(200, await fakeInspection(body, textOf, experts));
    }
    return null;
  };
}

// WebDriver BiDi (Firefox) has no synchronous postData().
async function postData(request) {
  try {
    const data = request.postData();
    if (data !== undefined) return data;
  } catch { /* UnsupportedOperation */ }
  return request.fetchPostData();
}

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function softmax(logits) {
  const max = Math.max(...logits.filter(Number.isFinite));
  const e = logits.map((l) => (Number.isFinite(l) ? Math.exp(l - max) : 0));
  const s = e.reduce((x, y) => x + y, 0);
  return e.map((x) => x / s);
}

// A step over a made-up vocabulary of 300 candidates (the chosen token among them), run
// through the processors the request's settings turn on, in the server's order.
async function fakeInspection(body, textOf, experts = 0) {
  const n = body.tokens.length;
  const top = body.top ?? 10;
  const chosen = body.token ?? null;
  const random = rng(n * 7919 + (chosen ?? 1));
  const ids = new Set(chosen === null ? [] : [chosen]);
  for (const id of body.tokens.slice(-12)) ids.add(id);
  while (ids.size < 300) ids.add(100 + Math.floor(random() * 20000));
  const vocab = [...ids];
  let logits = vocab.map(() => random() * 6 - 3);
  if (chosen !== null) logits[0] = 2.4;
  const s = { ...DEFAULTS, ...body };
  const prompt = body.prompt_tokens ?? n;
  const seen = new Set(body.tokens);
  const generated = body.tokens.slice(prompt);
  const steps = [];
  if (s.repetition_penalty !== 1) steps.push(['repetition_penalty', `repetition_penalty=${s.repetition_penalty}`, (l) => l.map((x, i) => (seen.has(vocab[i]) ? (x > 0 ? x / s.repetition_penalty : x * s.repetition_penalty) : x))]);
  if (s.presence_penalty !== 0) steps.push(['presence_penalty', `presence_penalty=${s.presence_penalty}`, (l) => l.map((x, i) => (generated.includes(vocab[i]) ? x - s.presence_penalty : x))]);
  if (s.frequency_penalty !== 0) steps.push(['frequency_penalty', `frequency_penalty=${s.frequency_penalty}`, (l) => l.map((x, i) => x - s.frequency_penalty * generated.filter((g) => g === vocab[i]).length)]);
  if (s.temperature > 0) {
    if (s.temperature !== 1) steps.push(['temperature', `temperature=${s.temperature}`, (l) => l.map((x) => x / s.temperature)]);
    if (s.top_k > 0) steps.push(['top_k', `top_k=${s.top_k}`, (l) => { const kth = [...l].sort((a, b) => b - a)[Math.min(s.top_k, l.length) - 1]; return l.map((x) => (x >= kth ? x : -Infinity)); }]);
    if (s.top_p < 1) steps.push(['top_p', `top_p=${s.top_p}`, (l) => {
      const p = softmax(l);
      const order = p.map((x, i) => [x, i]).sort((a, b) => b[0] - a[0]);
      const keep = new Set();
      let sum = 0;
      for (const [x, i] of order) { if (sum >= s.top_p) break; keep.add(i); sum += x; }
      return l.map((x, i) => (keep.has(i) ? x : -Infinity));
    }]);
    if (s.min_p > 0) steps.push(['min_p', `min_p=${s.min_p}`, (l) => { const p = softmax(l); const m = Math.max(...p); return l.map((x, i) => (p[i] >= s.min_p * m ? x : -Infinity)); }]);
  }
  const standing = (l, p) => {
    if (chosen === null) return null;
    if (!Number.isFinite(l[0])) return { rank: null, logit: null, prob: 0 };
    return { rank: l.filter((x) => x > l[0]).length, logit: l[0], prob: p[0] };
  };
  const stageOf = async (name, setting, l, before) => {
    const p = softmax(l);
    const order = l.map((x, i) => [x, i]).filter(([x]) => Number.isFinite(x)).sort((a, b) => b[0] - a[0]).slice(0, top);
    const surviving = l.filter(Number.isFinite).length;
    return {
      name, setting, surviving, removed: before - surviving,
      top: await Promise.all(order.map(async ([x, i]) => ({ id: vocab[i], text: await textOf(vocab[i]), logit: x, prob: p[i] }))),
      token: standing(l, p),
    };
  };
  const stages = [await stageOf('logits', 'logits', logits, vocab.length)];
  for (const [name, setting, fn] of steps) {
    const before = logits.filter(Number.isFinite).length;
    logits = fn(logits);
    stages.push(await stageOf(name, setting, logits, before));
  }
  const L = FAKE_ARCHITECTURE.layers;
  const H = FAKE_ARCHITECTURE.heads;
  const lensLayers = [];
  for (let layer = 0; layer < L; layer++) {
    const l = vocab.map(() => random() * 4);
    if (chosen !== null) l[0] = 1 + layer * 2;
    const st = await stageOf('lens', 'lens', l, vocab.length);
    lensLayers.push({ layer, top: st.top, token: st.token && { rank: st.token.rank, prob: st.token.prob } });
  }
  const weights = [];
  for (let layer = 0; layer < L; layer++) {
    const heads = [];
    for (let hd = 0; hd < H; hd++) heads.push(softmax(body.tokens.map((_, j) => (j === 0 ? 3 : random() * 3))).map((w) => Math.round(w * 1e5) / 1e5));
    weights.push(heads);
  }
  return {
    object: 'inspection',
    position: n - 1,
    context: await Promise.all(body.tokens.map(async (id) => ({ id, text: await textOf(id) }))),
    token: chosen === null ? null : { id: chosen, text: await textOf(chosen) },
    sampling: steps.map(([, setting]) => setting).join(' -> '),
    stages,
    lens: body.lens === false ? null : { layers: lensLayers },
    attention: body.attention === false ? null : { layers: L, heads: H, keys: n, weights },
    experts: experts && body.experts !== false ? {
      experts,
      layers: Array.from({ length: L }, (_, layer) => {
        const a = Math.floor(random() * experts);
        const w = 0.5 + random() * 0.4;
        return { layer, chosen: [{ expert: a, weight: w }, { expert: (a + 1 + Math.floor(random() * (experts - 1))) % experts, weight: 1 - w }] };
      }),
    } : null,
  };
}
