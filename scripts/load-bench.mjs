#!/usr/bin/env node
// Load benchmark of `glass serve`: total generated tokens/s, time to first token (TTFT)
// and inter-token latency (ITL), p50 and p99.
//
//   node scripts/load-bench.mjs [--workload concurrency|shared-prefix|multi-turn|chat]
//        [--glass build/glass] [--model DIR | --like qwen2.5-0.5b] [--weight-type T]
//        [--threads 0] [--write-docs docs/performance.md] [workload options below]
//
// Workloads:
//   concurrency (default): several levels of C clients ([--concurrency 1,4,16]); each
//     sends [--requests-per-client 2] requests one after another ([--prompt-words 48],
//     [--max-tokens 32]); clients get different prompts (no shared prefix beyond the
//     chat template's).
//   shared-prefix: [--users 16] users who share one system prompt of [--system-words
//     1500] words (about one token each) and each ask [--questions 1] short questions,
//     all starting at once; run with the prefix cache and with --no-prefix-cache, back
//     to back.
//   multi-turn: [--conversations 2] conversations of [--turns 8] turns, each turn a user
//     message of [--turn-words 420] words and a reply of --max-tokens; every turn sends
//     the whole history (about 4,000 tokens by the 8th); cache on and off.
//   chat: `glass chat --format jsonl` with a first message of [--chat-words 2000] words
//     and a short second one; the second turn's time to first token, cache on and off.
// Streamed requests are greedy, ignore_eos, with a fixed max_tokens and token ids on, so
// every token is one SSE chunk and is timed. Without --model it makes a random-weight
// checkpoint at the --like shape (speed does not depend on the values) in a temporary
// folder. Uses only Node's own fetch: no npm install needed.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';

function parseArgs(argv) {
  const o = { workload: 'concurrency', glass: 'build/glass', model: '', like: 'qwen2.5-0.5b', weightType: '',
              concurrency: '1,4,16', requestsPerClient: 2, promptWords: 48, maxTokens: 32, threads: 0, writeDocs: '',
              users: 16, systemWords: 1500, questions: 1, conversations: 2, turns: 8, turnWords: 420,
              chatWords: 2000, ctxSize: 0 };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(key in o)) throw new Error(`unknown option ${argv[i]}`);
    o[key] = typeof o[key] === 'number' ? Number(argv[++i]) : argv[++i];
  }
  o.levels = o.concurrency.split(',').map(Number);
  if (!['concurrency', 'shared-prefix', 'multi-turn', 'chat'].includes(o.workload))
    throw new Error(`--workload: ${o.workload} is not one of concurrency, shared-prefix, multi-turn, chat`);
  return o;
}

const percentile = (sorted, p) => sorted.length === 0 ? NaN
  : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

const modelArgs = (o) => o.weightType ? ['--weight-type', o.weightType] : [];

async function startServer(o, modelDir, parallel, { ctxSize = 2048, prefixCache = true } = {}) {
  const args = ['serve', '-m', modelDir, '--model-name', 'bench', '--port', '0', '--parallel', String(parallel),
                '--threads', String(o.threads), '--quiet', '--ctx-size', String(ctxSize), ...modelArgs(o),
                ...(prefixCache ? [] : ['--no-prefix-cache'])];
  const proc = spawn(o.glass, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    proc.on('exit', (code) => reject(new Error(`glass serve exited (${code}):\n${log}`)));
  });
  return { proc, url: `http://127.0.0.1:${port}`, log: () => log };
}

async function stopServer(server) {
  const exited = new Promise((resolve) => server.proc.on('exit', resolve));
  server.proc.kill('SIGTERM');
  await exited;
}

// One streamed request: the time of each token chunk after the send, the usage, the text.
// `prompt` is the user message, or the whole list of messages.
async function timedRequest(url, prompt, maxTokens) {
  const start = performance.now();
  const messages = typeof prompt === 'string' ? [{ role: 'user', content: prompt }] : prompt;
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'bench', messages, max_tokens: maxTokens,
                           temperature: 0, ignore_eos: true, stream: true, return_token_ids: true,
                           stream_options: { include_usage: true } }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const times = [];
  let usage = null;
  let text = '';
  let done = false;
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (event === 'data: [DONE]') done = true;
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const chunk = JSON.parse(event.slice(6));
      if (chunk.error) throw new Error(`error in the stream: ${JSON.stringify(chunk.error)}`);
      if (chunk.usage) usage = chunk.usage;
      text += chunk.choices?.[0]?.delta?.content ?? '';
      const ids = chunk.choices?.[0]?.token_ids;
      if (ids) for (let i = 0; i < ids.length; i++) times.push(performance.now() - start);
    }
  }
  // Every stream ends with [DONE] (after an error object when it failed): one that is
  // cut off without either is a server bug, and ends the benchmark.
  if (!done) throw new Error(`a stream was cut off without [DONE] after ${times.length} tokens`);
  if (!usage) throw new Error('the stream had no usage chunk');
  return { times, usage, text };
}

const VOCABULARY = ('time year people way day man thing woman life child world school state family student group ' +
  'country problem hand part place case week company system program question work government number night point ' +
  'home water room mother area money story fact month lot right study book eye job word business issue side kind ' +
  'head house service friend father power hour game line end member law car city community name president team ' +
  'minute idea kid body information back parent face others level office door health person art war history party ' +
  'result change morning reason research girl guy moment air teacher force education').split(' ');

async function runLevel(o, url, clients) {
  const ttft = [], itl = [];
  let tokens = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: clients }, async (_, c) => {
    for (let r = 0; r < o.requestsPerClient; r++) {
      // Common English words (about one token each; digits would be one token per digit).
      const words = Array.from({ length: o.promptWords },
                               (_, w) => VOCABULARY[(c * 7919 + r * 104729 + w * 31) % VOCABULARY.length]);
      const { times, usage } = await timedRequest(url, `Client ${c} request ${r}: ${words.join(' ')}`, o.maxTokens);
      if (times.length === 0) throw new Error('no tokens came back');
      ttft.push(times[0]);
      for (let i = 1; i < times.length; i++) itl.push(times[i] - times[i - 1]);
      tokens += usage.completion_tokens;
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  ttft.sort((a, b) => a - b);
  itl.sort((a, b) => a - b);
  return { clients, requests: clients * o.requestsPerClient, tokens, seconds, tokensPerSecond: tokens / seconds,
           ttft50: percentile(ttft, 50), ttft99: percentile(ttft, 99), itl50: percentile(itl, 50),
           itl99: percentile(itl, 99) };
}

function table(rows) {
  const f = (x, d = 0) => x.toFixed(d);
  const lines = ['| concurrency | requests | tokens | wall s | tokens/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms |',
                 '|---|---|---|---|---|---|---|---|---|'];
  for (const r of rows)
    lines.push(`| ${r.clients} | ${r.requests} | ${r.tokens} | ${f(r.seconds, 1)} | ${f(r.tokensPerSecond, 1)} | ` +
               `${f(r.ttft50)} | ${f(r.ttft99)} | ${f(r.itl50)} | ${f(r.itl99)} |`);
  return lines.join('\n');
}

// Replaces the section that starts with `heading` (up to the next "## ") or appends it.
function writeDocs(path, heading, section) {
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '# Performance\n';
  const start = text.indexOf(`\n${heading}\n`);
  let out;
  if (start < 0) {
    out = text.replace(/\n*$/, '\n\n') + section.trimStart();
  } else {
    const next = text.indexOf('\n## ', start + 1);
    out = text.slice(0, start) + '\n' + section.trimStart() + (next < 0 ? '' : text.slice(next));
  }
  writeFileSync(path, out.replace(/\n*$/, '\n'));
}

// --- prefix-caching workloads ---------------------------------------------------------------

// `n` common words (about one token each), different for each seed.
const words = (n, seed) => Array.from({ length: n },
  (_, w) => VOCABULARY[(seed * 7919 + w * 31 + ((w * w) % 97)) % VOCABULARY.length]).join(' ');
const median = (xs) => percentile([...xs].sort((a, b) => a - b), 50);
const f0 = (x) => x.toFixed(0);
const f1 = (x) => x.toFixed(1);

async function sharedPrefixRun(o, url) {
  const system = `You answer questions about the following notes. ${words(o.systemWords, 1)}`;
  const ttft = [];
  let tokens = 0, prompt = 0, cached = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: o.users }, async (_, u) => {
    for (let q = 0; q < o.questions; q++) {
      const r = await timedRequest(url, [{ role: 'system', content: system },
                                         { role: 'user', content: `User ${u}, question ${q}: ${words(10, 1000 + 10 * u + q)}?` }],
                                   o.maxTokens);
      ttft.push(r.times[0]);
      tokens += r.usage.completion_tokens;
      prompt += r.usage.prompt_tokens;
      cached += r.usage.prompt_tokens_details?.cached_tokens ?? 0;
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  ttft.sort((a, b) => a - b);
  return { requests: o.users * o.questions, prompt, cached, tokens, seconds, tokensPerSecond: tokens / seconds,
           ttft50: percentile(ttft, 50), ttft99: percentile(ttft, 99) };
}

async function multiTurnRun(o, url) {
  const turns = Array.from({ length: o.turns }, () => ({ ttft: [], prompt: [], cached: [] }));
  const start = performance.now();
  let tokens = 0;
  await Promise.all(Array.from({ length: o.conversations }, async (_, c) => {
    const messages = [];
    for (let t = 0; t < o.turns; t++) {
      messages.push({ role: 'user', content: `Turn ${t + 1}. ${words(o.turnWords, 100 * c + t)}` });
      const r = await timedRequest(url, messages, o.maxTokens);
      turns[t].ttft.push(r.times[0]);
      turns[t].prompt.push(r.usage.prompt_tokens);
      turns[t].cached.push(r.usage.prompt_tokens_details?.cached_tokens ?? 0);
      tokens += r.usage.completion_tokens;
      messages.push({ role: 'assistant', content: r.text });
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  return { turns, seconds, tokens };
}

// glass chat through a pipe: each turn's JSON line (seconds_to_first_token, cached_tokens, ...).
async function chatRun(o, modelDir, prefixCache) {
  const args = ['chat', '-m', modelDir, '--format', 'jsonl', '--greedy', '--ignore-eos', '-n', String(o.maxTokens),
                '--threads', String(o.threads), ...modelArgs(o), ...(prefixCache ? [] : ['--no-prefix-cache'])];
  const proc = spawn(o.glass, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stderr.on('data', (d) => (err += d));
  const lines = [];
  let waiting = null;
  proc.stdout.on('data', (d) => {
    out += d;
    let end;
    while ((end = out.indexOf('\n')) >= 0) {
      const line = out.slice(0, end);
      out = out.slice(end + 1);
      if (line.trim()) lines.push(JSON.parse(line));
      if (waiting) waiting();
    }
  });
  const exited = new Promise((resolve) => proc.on('exit', resolve));
  const turn = async (text, n) => {
    proc.stdin.write(`${text}\n`);
    while (lines.length < n) {
      await Promise.race([new Promise((resolve) => (waiting = resolve)), exited]);
      if (proc.exitCode !== null && lines.length < n) throw new Error(`glass chat exited:\n${err}`);
    }
  };
  await turn(`Read these notes. ${words(o.chatWords, 7)}`, 1);
  await turn('What was the first word?', 2);
  proc.stdin.end();
  await exited;
  return lines;
}

function comparisonNote(o, description) {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `Machine: ${cpus().length} CPUs (${cpu}), load average ${loadavg()[0].toFixed(1)} at the end (shared with
other jobs: compare the two rows of one run, measured back to back). Server: ${description.replace(/^glass serve: /, '')}.`;
}

async function prefixCacheWorkload(o, modelDir) {
  const command = `node scripts/load-bench.mjs ${process.argv.slice(2).join(' ')}`.trim();
  const model = o.model || `a random-weight ${o.like} checkpoint${o.weightType ? ` as ${o.weightType}` : ' (bf16)'}`;
  let heading, section, summary;
  if (o.workload === 'chat') {
    const on = await chatRun(o, modelDir, true);
    const off = await chatRun(o, modelDir, false);
    const row = (name, l) => `| ${name} | ${l[1].prompt_tokens} | ${l[1].cached_tokens} | ${f0(1000 * l[1].seconds_to_first_token)} | ${f0(1000 * l[0].seconds_to_first_token)} |`;
    const ratio = off[1].seconds_to_first_token / on[1].seconds_to_first_token;
    summary = ['| prefix cache | 2nd-turn prompt tokens | cached | 2nd-turn TTFT ms | 1st-turn TTFT ms |', '|---|---|---|---|---|',
               row('on', on), row('off', off)].join('\n') + `\n\nSecond turn's time to first token: ${f1(ratio)}x lower with the cache.`;
    heading = '## Prefix caching: glass chat';
    section = `
${heading}

\`glass chat --format jsonl\` on ${model}: a first message of about ${o.chatWords} words
(a ${on[0].prompt_tokens}-token prompt with the chat template), then a short question. The second
turn's prompt is the whole conversation; with the prefix cache only what follows the last full
KV block of the first turn is computed. Times are the ones glass chat reports in its JSON lines
(from the line read to the first token).

\`\`\`sh
${command}
\`\`\`

${summary}

${comparisonNote(o, `glass chat, ${o.threads || 'all'} threads`)}
`;
  } else if (o.workload === 'shared-prefix') {
    const rows = [];
    let description = '';
    for (const prefixCache of [true, false]) {
      const server = await startServer(o, modelDir, o.users, { ctxSize: Math.max(2048, o.systemWords + 512), prefixCache });
      try {
        description = server.log().match(/glass serve: model .*/)?.[0] ?? '';
        await timedRequest(server.url, 'warm up', 2);
        rows.push({ prefixCache, ...(await sharedPrefixRun(o, server.url)) });
      } finally {
        await stopServer(server);
      }
      console.error(`prefix cache ${prefixCache ? 'on' : 'off'}: ${rows.at(-1).tokensPerSecond.toFixed(1)} tokens/s`);
    }
    const [on, off] = rows;
    summary = ['| prefix cache | requests | prompt tokens | cached tokens | TTFT p50 ms | TTFT p99 ms | tokens/s | wall s |',
               '|---|---|---|---|---|---|---|---|',
               ...rows.map((r) => `| ${r.prefixCache ? 'on' : 'off'} | ${r.requests} | ${r.prompt} | ${r.cached} | ${f0(r.ttft50)} | ` +
                                  `${f0(r.ttft99)} | ${f1(r.tokensPerSecond)} | ${f1(r.seconds)} |`)].join('\n') +
              `\n\nWith the cache: TTFT p50 ${f1(off.ttft50 / on.ttft50)}x lower, throughput ${f1(on.tokensPerSecond / off.tokensPerSecond)}x higher.`;
    heading = '## Prefix caching: shared system prompt';
    section = `
${heading}

${o.users} users of ${model} share one system prompt of about ${o.systemWords} words and each ask
${o.questions} short question(s) (${o.maxTokens} tokens each, greedy, \`ignore_eos\`), all starting at once,
\`--parallel ${o.users}\`. The same run with \`--no-prefix-cache\`, back to back. Throughput is every
generated token over the wall time; TTFT is from sending a request to its first token.

\`\`\`sh
${command}
\`\`\`

${summary}

${comparisonNote(o, description)}
`;
  } else {
    const runs = [];
    let description = '';
    for (const prefixCache of [true, false]) {
      const ctxSize = o.turns * (o.turnWords + o.maxTokens + 64) + 512;
      const server = await startServer(o, modelDir, o.conversations, { ctxSize, prefixCache });
      try {
        description = server.log().match(/glass serve: model .*/)?.[0] ?? '';
        await timedRequest(server.url, 'warm up', 2);
        runs.push(await multiTurnRun(o, server.url));
      } finally {
        await stopServer(server);
      }
      console.error(`prefix cache ${prefixCache ? 'on' : 'off'}: ${runs.at(-1).seconds.toFixed(1)} s`);
    }
    const [on, off] = runs;
    const lines = ['| turn | prompt tokens | cached (on) | TTFT p50 ms, cache on | TTFT p50 ms, cache off | ratio |', '|---|---|---|---|---|---|'];
    for (let t = 0; t < o.turns; t++) {
      const a = median(on.turns[t].ttft), b = median(off.turns[t].ttft);
      lines.push(`| ${t + 1} | ${f0(median(on.turns[t].prompt))} | ${f0(median(on.turns[t].cached))} | ${f0(a)} | ${f0(b)} | ${f1(b / a)}x |`);
    }
    const last = o.turns - 1;
    summary = lines.join('\n') + `\n\nTurn ${o.turns}: TTFT ${f1(median(off.turns[last].ttft) / median(on.turns[last].ttft))}x lower with the cache; ` +
              `wall time of the whole run ${f1(on.seconds)} s against ${f1(off.seconds)} s.`;
    heading = '## Prefix caching: multi-turn conversations';
    section = `
${heading}

${o.conversations} conversations with ${model}, at once, of ${o.turns} turns: each turn a user message of
about ${o.turnWords} words and a reply of ${o.maxTokens} tokens (greedy, \`ignore_eos\`), every request
carrying the whole history. The same run with \`--no-prefix-cache\`, back to back.

\`\`\`sh
${command}
\`\`\`

${summary}

${comparisonNote(o, description)}
`;
  }
  console.log(summary);
  if (o.writeDocs) {
    writeDocs(o.writeDocs, heading, section);
    console.error(`wrote "${heading}" in ${o.writeDocs}`);
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  let modelDir = o.model;
  let tmp = '';
  if (!modelDir) {
    tmp = mkdtempSync(join(tmpdir(), 'glass-load-bench-'));
    modelDir = join(tmp, o.like);
    execFileSync(o.glass, ['random-model', '--like', o.like, '--out', modelDir, '--quiet'], { stdio: 'inherit' });
  }
  if (o.workload !== 'concurrency') {
    try {
      await prefixCacheWorkload(o, modelDir);
    } finally {
      if (tmp) rmSync(tmp, { recursive: true, force: true });
    }
    return;
  }
  const rows = [];
  let description = '';
  try {
    for (const clients of o.levels) {
      // --parallel = the concurrency, so every client's request runs in the batch.
      const server = await startServer(o, modelDir, clients);
      try {
        description = server.log().match(/glass serve: model .*/)?.[0] ?? '';
        await timedRequest(server.url, 'warm up', 2);
        const row = await runLevel(o, server.url, clients);
        rows.push(row);
        console.error(`concurrency ${clients}: ${row.tokensPerSecond.toFixed(1)} tokens/s`);
      } finally {
        await stopServer(server);
      }
    }
  } finally {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }
  const command = `node scripts/load-bench.mjs ${process.argv.slice(2).join(' ')}`.trim();
  const result = table(rows);
  console.log(result);
  if (o.writeDocs) {
    const cpu = cpus()[0]?.model ?? 'unknown CPU';
    const section = `
## Serving

\`glass serve\` under load: ${o.like && !o.model ? `a random-weight ${o.like} checkpoint (bf16)` : o.model}, each
client sending ${o.requestsPerClient} streamed chat requests one after another (a prompt of about
${o.promptWords} words plus the chat template, ${o.maxTokens} generated tokens, greedy, \`ignore_eos\`),
\`--parallel\` equal to the concurrency. Tokens/s is every generated token over the wall time of the
level; TTFT is from sending the request to its first token (queueing and prefill included); ITL is
the gap between consecutive tokens of one stream.

\`\`\`sh
cmake -S . -B build && cmake --build build -j2
${command}
\`\`\`

${result}

Machine: ${cpus().length} CPUs (${cpu}), shared with other jobs (load average ${loadavg()[0].toFixed(1)} at the end), so
the numbers are noisy; compare levels of the same run. Server: ${description.replace(/^glass serve: /, '')}.

How to read it: on two cores prefill dominates. A level's prompts arrive together, so the
last request's TTFT includes everyone's prefill, and a decoding stream waits out each
prefill chunk (\`--prefill-chunk\`, 512 tokens by default) that shares its forward pass: that
is the ITL p99. Between prefills, a decode step of the whole batch costs little more than
one sequence's (the weights are read once per step), which is where the batching gain
comes from.
`;
    writeDocs(o.writeDocs, '## Serving', section);
    console.error(`wrote the Serving section of ${o.writeDocs}`);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
