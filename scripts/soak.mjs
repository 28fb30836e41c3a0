#!/usr/bin/env node
// The load client of scripts/soak.sh (run that): phases of mixed traffic against a live
// `glass serve`, with checks after each phase. Node's own fetch and net, no packages.
//
//   node scripts/soak.mjs --port P --pid PID --minutes M --reference-ids "1 2 3"
//        [--reference-prompt TEXT] [--reference-tokens N] [--seed S] [--max-body-mb 1]
//        [--header-timeout-s 2] [--request-timeout-s 4] [--ctx-size 512]
//
// Phases (equal shares of the time): mixed (streamed and whole chat and completions),
// disconnects (clients that leave mid-request, streamed or not), invalid (bad JSON,
// wrong types, out-of-range values, oversize bodies, bad framing, bad Host, unknown
// routes), slow (slow-loris headers and bodies, paused readers) and all of them at
// once. /health is probed throughout. After each phase, once the server is idle:
//   - every KV block is free and none reserved (/health);
//   - VmRSS (/proc/PID/status) within the tolerance of the first phase's;
//   - a greedy reference request returns the reference tokens (from `glass run`).
// Exit status 1 if any check failed or any response was not the one expected.
import net from 'node:net';
import { readFileSync } from 'node:fs';

// A crash of this client is a failed soak, said on stdout where CI shows it.
for (const event of ['uncaughtException', 'unhandledRejection'])
  process.on(event, (e) => {
    console.log(`\nSOAK FAILED: the load client crashed (${event}): ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });

function parseArgs(argv) {
  const o = { port: 0, pid: 0, minutes: 5, referenceIds: '', referencePrompt: 'The reference prompt', referenceTokens: 24,
              seed: Date.now() % 100000, maxBodyMb: 1, headerTimeoutS: 2, requestTimeoutS: 4, ctxSize: 512 };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(key in o)) throw new Error(`unknown option ${argv[i]}`);
    o[key] = typeof o[key] === 'number' ? Number(argv[++i]) : argv[++i];
  }
  o.reference = o.referenceIds.trim().split(/\s+/).map(Number);
  return o;
}
const o = parseArgs(process.argv.slice(2));
const base = `http://127.0.0.1:${o.port}`;

// RSS may grow this much over the first phase's (allocator arenas settle, thread
// stacks are cached): 10% + 24 MiB.
const RSS_TOLERANCE_FRACTION = 0.10;
const RSS_TOLERANCE_KIB = 24 * 1024;
const HEALTH_LIMIT_MS = 3000;

// --- randomness (seeded, so a run can be repeated) ---------------------------------------
let rngState = o.seed >>> 0;
function rand() {  // mulberry32
  rngState = (rngState + 0x6d2b79f5) >>> 0;
  let t = rngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const randInt = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const words = ['alpha', 'river', 'stone', 'quiet', 'orange', 'seven', 'window', 'glass', 'north', 'paper', 'cloud', 'tiger'];
const text = (n) => Array.from({ length: n }, () => pick(words)).join(' ');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- tallies -------------------------------------------------------------------------------
const tally = { served: 0, byStatus: {}, clientErrors: {}, disconnects: 0, unexpected: [], healthMs: [], failures: [] };
function countStatus(status) {
  tally.byStatus[status] = (tally.byStatus[status] || 0) + 1;
  tally.served++;
}
function unexpected(what) {
  if (tally.unexpected.length < 50) tally.unexpected.push(what);
  else tally.unexpected.length++;  // keep counting
}
function countClientError(code) { tally.clientErrors[code] = (tally.clientErrors[code] || 0) + 1; }

// --- requests through fetch ----------------------------------------------------------------
async function post(path, body, { abortAfterMs = null } = {}) {
  const ac = new AbortController();
  const timer = abortAfterMs == null ? null : setTimeout(() => ac.abort(), abortAfterMs);
  try {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' },
                                           body: typeof body === 'string' ? body : JSON.stringify(body), signal: ac.signal });
    const textBody = await res.text();
    return { status: res.status, text: textBody };
  } catch (e) {
    if (e.name === 'AbortError') return { aborted: true };
    return { error: (e.cause && (e.cause.code || e.cause.name)) || e.name || String(e) };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

function checkCompletion(kind, req, r) {
  if (r.status !== 200) return `${kind}: status ${r.status}: ${r.text.slice(0, 200)}`;
  try {
    if (req.stream) {
      const data = r.text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
      if (data[data.length - 1] !== '[DONE]') return `${kind}: the stream did not end with [DONE]`;
      for (const d of data.slice(0, -1)) {
        const j = JSON.parse(d);
        if (j.error) return `${kind}: error in the stream: ${d}`;
      }
      if (req.stream_options && !JSON.parse(data[data.length - 2]).usage) return `${kind}: no usage chunk`;
      return null;
    }
    const j = JSON.parse(r.text);
    if (j.choices.length !== (req.n ?? 1)) return `${kind}: ${j.choices.length} choices for n = ${req.n ?? 1}`;
    const c = j.choices[0];
    const content = kind.startsWith('chat') ? c.message.content : c.text;
    if (typeof content !== 'string') return `${kind}: no text`;
    if (j.usage.completion_tokens > req.max_tokens * (req.n ?? 1)) return `${kind}: ${j.usage.completion_tokens} tokens > max_tokens`;
    if (!['stop', 'length'].includes(c.finish_reason)) return `${kind}: finish_reason ${c.finish_reason}`;
    return null;
  } catch (e) {
    return `${kind}: unreadable response (${e.message}): ${r.text.slice(0, 200)}`;
  }
}

function validRequest() {
  const kind = pick(['chat', 'chat-stream', 'completion', 'completion-stream', 'completion-ids']);
  const req = { max_tokens: randInt(1, 40) };
  if (rand() < 0.5) { req.temperature = 0.9; req.seed = randInt(0, 1e6); } else { req.temperature = 0; }
  if (kind.startsWith('chat')) req.messages = [{ role: 'user', content: text(randInt(1, 30)) }];
  else if (kind === 'completion-ids') req.prompt = Array.from({ length: randInt(1, 40) }, () => randInt(0, 150000));
  else req.prompt = text(randInt(1, 40));
  if (kind.endsWith('stream')) { req.stream = true; if (rand() < 0.5) req.stream_options = { include_usage: true }; }
  if (rand() < 0.3) req.ignore_eos = true;
  if (rand() < 0.15) req.n = 2;
  return { kind, path: kind.startsWith('chat') ? '/v1/chat/completions' : '/v1/completions', req };
}

async function validWorker(until) {
  while (Date.now() < until) {
    const { kind, path, req } = validRequest();
    const r = await post(path, req);
    if (r.error) { countClientError(r.error); unexpected(`${kind}: ${r.error}`); continue; }
    countStatus(r.status);
    const problem = checkCompletion(kind, req, r);
    if (problem) unexpected(problem);
  }
}

// Clients that leave: a raw socket that sends a whole request (streamed or not) and
// hangs up after a while, whatever came back by then. Not fetch with an AbortSignal:
// Node 18's fetch can throw an uncaught error from an aborted body read, which ended a
// CI run of this client.
async function disconnectWorker(until) {
  while (Date.now() < until) {
    const { path, req } = validRequest();
    req.max_tokens = randInt(50, 400);
    req.ignore_eos = true;
    const body = JSON.stringify(req);
    const r = await raw(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
                        { closeAfterMs: randInt(10, 1500) });
    if (r.err === 'closed by us') { tally.disconnects++; continue; }
    if (!r.status) { countClientError(r.err || 'no response'); unexpected(`disconnecting client: no response (${r.err})`); continue; }
    countStatus(r.status);
    if (r.status !== 200) unexpected(`disconnecting client finished with ${r.status}`);
  }
}

// --- requests on raw sockets ---------------------------------------------------------------
function responseComplete(buf) {
  const s = buf.toString('latin1');
  const end = s.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = s.slice(0, end);
  const m = /\r\ncontent-length: *(\d+)/i.exec(head);
  if (m) return buf.length >= end + 4 + Number(m[1]);
  return /\r\ntransfer-encoding: *chunked/i.test(head) && s.endsWith('\r\n0\r\n\r\n');
}

// Sends `bytes` (all at once, or `chunk` bytes every `gapMs`), reads the response.
// closeAfterMs: hang up then, whatever came. pauseReadMs: read nothing for that long.
function raw(bytes, { gapMs = 0, chunk = 1, timeoutMs = 20000, closeAfterMs = null, pauseReadMs = 0, untilClose = false } = {}) {
  return new Promise((resolve) => {
    const start = Date.now();
    const data = Buffer.from(bytes, 'latin1');
    const sock = net.connect(o.port, '127.0.0.1');
    let got = Buffer.alloc(0);
    let done = false;
    let trickler = null;
    const timers = [];
    const finish = (err) => {
      if (done) return;
      done = true;
      if (trickler) clearInterval(trickler);
      timers.forEach(clearTimeout);
      sock.destroy();
      const head = got.toString('latin1');
      resolve({ status: /^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] | 0, text: head, err, ms: Date.now() - start });
    };
    sock.on('connect', () => {
      if (!gapMs) sock.write(data);
      else {
        let i = 0;
        trickler = setInterval(() => {
          if (i < data.length) sock.write(data.subarray(i, i + chunk));
          i += chunk;
        }, gapMs);
      }
      if (pauseReadMs) {
        sock.pause();
        timers.push(setTimeout(() => sock.resume(), pauseReadMs));
      }
    });
    sock.on('data', (d) => {
      got = Buffer.concat([got, d]);
      if (!untilClose && responseComplete(got)) finish();
    });
    sock.on('end', () => finish());
    sock.on('close', () => finish());
    sock.on('error', (e) => finish(e.code || String(e)));
    timers.push(setTimeout(() => finish('timeout'), timeoutMs));
    if (closeAfterMs != null) timers.push(setTimeout(() => finish('closed by us'), closeAfterMs));
  });
}

const jsonHead = (path, length, extra = '') =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}Connection: close\r\n\r\n`;
const chat = (fields) => JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...fields });

// Each: a name, the status it must get, and how to send it.
const invalidCases = [
  ['bad JSON', 400, () => post('/v1/chat/completions', '{"messages": [')],
  ['not an object', 400, () => post('/v1/chat/completions', '[1, 2]')],
  ['temperature a string', 400, () => post('/v1/chat/completions', chat({ temperature: 'hot' }))],
  ['max_tokens a string', 400, () => post('/v1/chat/completions', chat({ max_tokens: 'many' }))],
  ['messages a number', 400, () => post('/v1/chat/completions', JSON.stringify({ messages: 5 }))],
  ['top_p out of range', 400, () => post('/v1/chat/completions', chat({ top_p: 7 }))],
  ['max_tokens negative', 400, () => post('/v1/chat/completions', chat({ max_tokens: -1 }))],
  ['top_logprobs 50', 400, () => post('/v1/chat/completions', chat({ logprobs: true, top_logprobs: 50 }))],
  ['n 0', 400, () => post('/v1/chat/completions', chat({ n: 0 }))],
  ['best_of under n', 400, () => post('/v1/completions', JSON.stringify({ prompt: 'hi', n: 3, best_of: 2 }))],
  ['token id out of vocabulary', 400, () => post('/v1/completions', JSON.stringify({ prompt: [999999999] }))],
  ['empty prompt', 400, () => post('/v1/completions', JSON.stringify({ prompt: '' }))],
  ['prompt over the context', 400, () => post('/v1/completions', JSON.stringify({ prompt: text(o.ctxSize + 50) }))],
  ['unknown model', 404, () => post('/v1/chat/completions', chat({ model: 'no-such-model' }))],
  ['unknown route', 404, () => post('/v1/embeddings', '{}')],
  ['oversize body', 413, () => {
    const body = JSON.stringify({ prompt: 'a'.repeat(Math.round(o.maxBodyMb * 1.5 * 1048576)) });
    return raw(jsonHead('/v1/completions', body.length) + body);
  }],
  ['oversize length, no body sent', 413, () => raw(jsonHead('/v1/completions', 1 << 30))],
  ['conflicting Content-Length', 400, () => {
    const body = JSON.stringify({ prompt: 'hi', max_tokens: 2 });
    return raw(jsonHead('/v1/completions', body.length, `Content-Length: ${body.length + 5}\r\n`) + body);
  }],
  ['Content-Length and chunked', 400, () => raw(jsonHead('/v1/completions', 5, 'Transfer-Encoding: chunked\r\n') + '0\r\n\r\n')],
  ['GET with a body', 400, () => raw('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 4\r\nConnection: close\r\n\r\nabcd')],
  ['foreign Host', 403, () => raw('GET /v1/models HTTP/1.1\r\nHost: rebind.example\r\nConnection: close\r\n\r\n')],
  ['foreign Origin', 403, () => {
    const body = chat({ max_tokens: 2 });
    return raw(jsonHead('/v1/chat/completions', body.length, 'Origin: https://evil.example\r\n') + body);
  }],
  ['garbage request line', 400, () => raw('HELLO\r\n\r\n')],
];

async function invalidWorker(until) {
  while (Date.now() < until) {
    const [name, want, send] = pick(invalidCases);
    const r = await send();
    if (r.error) { countClientError(r.error); unexpected(`${name}: ${r.error}`); continue; }
    if (!r.status) { countClientError(r.err || 'no response'); unexpected(`${name}: no response (${r.err})`); continue; }
    countStatus(r.status);
    if (r.status !== want) unexpected(`${name}: status ${r.status}, not ${want}`);
  }
}

// Slow clients: headers or a body a byte at a time (408 once the deadline passes), a
// streamed reply read only after a pause (it must arrive whole).
async function slowWorker(until) {
  while (Date.now() < until) {
    const which = pick(['headers', 'body', 'reader']);
    if (which === 'headers') {
      const r = await raw('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'a'.repeat(200) + '\r\n\r\n', { gapMs: 100 });
      countStatus(r.status);
      if (r.status !== 408) unexpected(`slow headers: status ${r.status} (${r.err})`);
      else if (r.ms > (o.headerTimeoutS + 1.5) * 1000) unexpected(`slow headers: 408 after ${r.ms} ms`);
    } else if (which === 'body') {
      const body = JSON.stringify({ prompt: text(200), max_tokens: 2 });
      const r = await raw(jsonHead('/v1/completions', body.length) + body, { gapMs: 20, chunk: 2 });
      countStatus(r.status);
      if (r.status !== 408) unexpected(`slow body: status ${r.status} (${r.err})`);
      else if (r.ms > (o.requestTimeoutS + 1.5) * 1000) unexpected(`slow body: 408 after ${r.ms} ms`);
    } else {
      const body = JSON.stringify({ prompt: text(5), max_tokens: 60, ignore_eos: true, stream: true });
      const r = await raw(jsonHead('/v1/completions', body.length) + body, { pauseReadMs: randInt(500, 3000), untilClose: true });
      countStatus(r.status);
      if (r.status !== 200 || !r.text.includes('data: [DONE]')) unexpected(`paused reader: status ${r.status}, ${r.err}`);
    }
  }
}

async function healthProbe(until) {
  while (Date.now() < until) {
    const start = performance.now();
    try {
      const r = await fetch(`${base}/health`, { signal: AbortSignal.timeout(10000) });
      await r.text();
      tally.healthMs.push(performance.now() - start);
      if (r.status !== 200) unexpected(`/health: ${r.status}`);
    } catch (e) {
      unexpected(`/health: ${e.name}`);
    }
    await sleep(250);
  }
}

// --- checks between phases -----------------------------------------------------------------
async function health() { return (await fetch(`${base}/health`)).json(); }
function rssKiB() {
  const s = readFileSync(`/proc/${o.pid}/status`, 'utf8');
  return { rss: Number(/VmRSS:\s+(\d+)/.exec(s)[1]), hwm: Number(/VmHWM:\s+(\d+)/.exec(s)[1]), threads: Number(/Threads:\s+(\d+)/.exec(s)[1]) };
}
async function referenceIds() {
  const r = await post('/v1/completions', { prompt: o.referencePrompt, max_tokens: o.referenceTokens, temperature: 0,
                                           ignore_eos: true, return_token_ids: true });
  if (r.status !== 200) return `status ${r.status}`;
  return JSON.parse(r.text).choices[0].token_ids;
}

let baselineRss = 0;
const phaseRows = [];
async function check(phase, startedAt) {
  // Idle: every request over (the cancelled ones leave before the next pass).
  let h;
  const deadline = Date.now() + 60000;
  for (;;) {
    h = await health();
    if ((h.running === 0 && h.waiting === 0) || Date.now() > deadline) break;
    await sleep(100);
  }
  const leaked = h.kv_blocks_total - h.kv_blocks_free;
  const mem = rssKiB();
  const ids = await referenceIds();
  const refOk = Array.isArray(ids) && ids.length === o.reference.length && ids.every((x, i) => x === o.reference[i]);
  if (!baselineRss) baselineRss = mem.rss;
  const limit = Math.round(baselineRss * (1 + RSS_TOLERANCE_FRACTION) + RSS_TOLERANCE_KIB);
  const row = { phase, seconds: Math.round((Date.now() - startedAt) / 1000), served: tally.served, disconnects: tally.disconnects,
                running: h.running, waiting: h.waiting, kvLeaked: leaked, kvReserved: h.kv_blocks_reserved,
                rssMiB: (mem.rss / 1024).toFixed(1), threads: mem.threads, reference: refOk ? 'ok' : 'MISMATCH' };
  phaseRows.push(row);
  console.log(`after ${phase}: ${JSON.stringify(row)}`);
  if (h.running !== 0 || h.waiting !== 0) tally.failures.push(`${phase}: still ${h.running} running, ${h.waiting} waiting after 60 s`);
  if (leaked !== 0 || h.kv_blocks_reserved !== 0) tally.failures.push(`${phase}: ${leaked} KV blocks not free, ${h.kv_blocks_reserved} reserved`);
  if (mem.rss > limit) tally.failures.push(`${phase}: VmRSS ${mem.rss} KiB over the limit ${limit} KiB (first phase ${baselineRss} KiB)`);
  if (!refOk) tally.failures.push(`${phase}: the reference request gave ${JSON.stringify(ids)}, not ${o.reference.join(' ')}`);
  return { h, mem };
}

// --- the run -------------------------------------------------------------------------------
const phases = [
  ['mixed', { valid: 6 }],
  ['disconnects', { valid: 3, disconnect: 5 }],
  ['invalid', { valid: 2, invalid: 4 }],
  ['slow', { valid: 2, slow: 24 }],
  ['everything', { valid: 3, disconnect: 3, invalid: 2, slow: 12 }],
];
const phaseMs = Math.max(8000, (o.minutes * 60000) / phases.length);
console.log(`soak: ${o.minutes} min against ${base} (pid ${o.pid}), seed ${o.seed}, ${phases.length} phases of ${(phaseMs / 1000).toFixed(0)} s`);

const t0 = Date.now();
const first = await referenceIds();
if (JSON.stringify(first) !== JSON.stringify(o.reference))
  tally.failures.push(`before the load: the reference request gave ${JSON.stringify(first)}, not ${o.reference.join(' ')} (glass run)`);
let last;
for (const [name, mix] of phases) {
  const until = Date.now() + phaseMs;
  const workers = [healthProbe(until)];
  for (let i = 0; i < (mix.valid || 0); i++) workers.push(validWorker(until));
  for (let i = 0; i < (mix.disconnect || 0); i++) workers.push(disconnectWorker(until));
  for (let i = 0; i < (mix.invalid || 0); i++) workers.push(invalidWorker(until));
  for (let i = 0; i < (mix.slow || 0); i++) workers.push(slowWorker(until));
  await Promise.all(workers);
  last = await check(name, t0);
}

const sortedHealth = [...tally.healthMs].sort((a, b) => a - b);
const p = (q) => sortedHealth.length ? sortedHealth[Math.min(sortedHealth.length - 1, Math.ceil(q * sortedHealth.length) - 1)] : NaN;
const healthMax = sortedHealth.length ? sortedHealth[sortedHealth.length - 1] : NaN;
if (healthMax > HEALTH_LIMIT_MS) tally.failures.push(`/health took ${healthMax.toFixed(0)} ms at worst (limit ${HEALTH_LIMIT_MS})`);
if (tally.unexpected.length) tally.failures.push(`${tally.unexpected.length} unexpected responses`);

const h = last.h;
const summary = {
  minutes: ((Date.now() - t0) / 60000).toFixed(2),
  seed: o.seed,
  requests_served: tally.served,
  responses_by_status: tally.byStatus,
  client_disconnects: tally.disconnects,
  client_side_errors: tally.clientErrors,
  server_counters: { completed: h.completed, cancelled: h.cancelled, rejected: h.rejected, forward_passes: h.forward_passes,
                     peak_running: h.peak_running },
  health_ms: { n: sortedHealth.length, p50: +p(0.5).toFixed(1), p99: +p(0.99).toFixed(1), max: +healthMax.toFixed(1) },
  rss_mib: { first_phase: +(baselineRss / 1024).toFixed(1), last: +(last.mem.rss / 1024).toFixed(1),
             peak: +(last.mem.hwm / 1024).toFixed(1),
             limit: +((baselineRss * (1 + RSS_TOLERANCE_FRACTION) + RSS_TOLERANCE_KIB) / 1024).toFixed(1) },
  kv_blocks_leaked: h.kv_blocks_total - h.kv_blocks_free,
  reference_ok: phaseRows.every((r) => r.reference === 'ok'),
  unexpected: tally.unexpected,
  failures: tally.failures,
};
console.log('\nphase\tserved\tdisconnects\tkv leaked\tRSS MiB\tthreads\treference');
for (const r of phaseRows) console.log(`${r.phase}\t${r.served}\t${r.disconnects}\t${r.kvLeaked}\t${r.rssMiB}\t${r.threads}\t${r.reference}`);
console.log(`\nsoak summary: ${JSON.stringify(summary, null, 2)}`);
console.log(tally.failures.length ? `\nSOAK FAILED:\n  ${tally.failures.join('\n  ')}` : '\nsoak passed');
process.exit(tally.failures.length ? 1 : 0);
