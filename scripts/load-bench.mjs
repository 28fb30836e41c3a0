#!/usr/bin/env node
// Load benchmark of `glass serve`: total generated tokens/s, time to first token (TTFT)
// and inter-token latency (ITL), p50 and p99, at several concurrency levels.
//
//   node scripts/load-bench.mjs [--glass build/glass] [--model DIR | --like qwen2.5-0.5b]
//        [--concurrency 1,4,16] [--requests-per-client 2] [--prompt-words 48]
//        [--max-tokens 32] [--threads 0] [--write-docs docs/performance.md]
//
// Without --model it makes a random-weight checkpoint at the --like shape (speed does
// not depend on the values) in a temporary folder. Each level runs C clients; each
// sends its requests one after another (streamed, greedy, ignore_eos, a fixed
// max_tokens, token ids on, so every token is one SSE chunk and is timed). Clients get
// different prompts (no two share a prefix beyond the chat template's). Uses only
// Node's own fetch: no npm install needed.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join } from 'node:path';

function parseArgs(argv) {
  const o = { glass: 'build/glass', model: '', like: 'qwen2.5-0.5b', concurrency: '1,4,16', requestsPerClient: 2,
              promptWords: 48, maxTokens: 32, threads: 0, writeDocs: '' };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    if (!(key in o)) throw new Error(`unknown option ${argv[i]}`);
    o[key] = typeof o[key] === 'number' ? Number(argv[++i]) : argv[++i];
  }
  o.levels = o.concurrency.split(',').map(Number);
  return o;
}

const percentile = (sorted, p) => sorted.length === 0 ? NaN
  : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

async function startServer(o, modelDir, parallel) {
  const args = ['serve', '-m', modelDir, '--model-name', 'bench', '--port', '0', '--parallel', String(parallel),
                '--threads', String(o.threads), '--quiet', '--ctx-size', '2048'];
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

// One streamed request: the time of each token chunk after the send.
async function timedRequest(url, prompt, maxTokens) {
  const start = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: prompt }], max_tokens: maxTokens,
                           temperature: 0, ignore_eos: true, stream: true, return_token_ids: true,
                           stream_options: { include_usage: true } }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const times = [];
  let usage = null;
  let buffer = '';
  const decoder = new TextDecoder();
  for await (const bytes of res.body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const chunk = JSON.parse(event.slice(6));
      if (chunk.usage) usage = chunk.usage;
      const ids = chunk.choices?.[0]?.token_ids;
      if (ids) for (let i = 0; i < ids.length; i++) times.push(performance.now() - start);
    }
  }
  return { times, usage };
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

function writeDocs(path, section) {
  const text = existsSync(path) ? readFileSync(path, 'utf8') : '# Performance\n';
  const start = text.indexOf('\n## Serving');
  let out;
  if (start < 0) {
    out = text.replace(/\n*$/, '\n\n') + section.trimStart();
  } else {
    const next = text.indexOf('\n## ', start + 1);
    out = text.slice(0, start) + '\n' + section.trimStart() + (next < 0 ? '' : text.slice(next));
  }
  writeFileSync(path, out.replace(/\n*$/, '\n'));
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
    writeDocs(o.writeDocs, section);
    console.error(`wrote the Serving section of ${o.writeDocs}`);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
