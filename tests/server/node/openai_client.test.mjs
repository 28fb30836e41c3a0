// glass serve through the official openai npm client, over loopback, on the demo model
// (random weights: the text is meaningless, but it is deterministic for greedy decoding
// and fixed seeds). GLASS_BINARY and GLASS_MODEL come from CTest.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { MODEL, startGlass } from './serve_helper.mjs';

let glass;
let client;
let baseURL;

before(async () => {
  glass = await startGlass();
  baseURL = glass.baseURL;
  client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'not-checked', maxRetries: 0, timeout: 60000 });
});

after(async () => glass?.stop());

const health = async () => (await fetch(`${baseURL}/health`)).json();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const messages = (text) => [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: text }];

async function collect(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

test('models lists the served model', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m.id);
  assert.deepEqual(models, [MODEL]);
  const m = await client.models.retrieve(MODEL);
  assert.equal(m.object, 'model');
});

test('non-streaming chat completion', async () => {
  const r = await client.chat.completions.create({ model: MODEL, messages: messages('Hello'), max_tokens: 8,
                                                   temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, MODEL);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 10, 'the chat template adds its tokens');
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 8);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('n choices, whole and streamed, each the single request with seed + index', async () => {
  const params = { model: MODEL, messages: messages('Tell me'), max_tokens: 6, temperature: 1, seed: 30 };
  const r = await client.chat.completions.create({ ...params, n: 3 });
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1, 2]);
  for (const [i, c] of r.choices.entries()) {
    const single = await client.chat.completions.create({ ...params, seed: 30 + i });
    assert.equal(c.message.content, single.choices[0].message.content);
  }
  const stream = await client.chat.completions.create({ ...params, n: 3, stream: true });
  const text = ['', '', ''];
  for await (const chunk of stream) for (const c of chunk.choices) text[c.index] += c.delta.content ?? '';
  assert.deepEqual(text, r.choices.map((c) => c.message.content));
});

test('streaming chat completion with usage equals the whole response', async () => {
  const params = { model: MODEL, messages: messages('Stream please'), max_tokens: 24, temperature: 0.8, seed: 7 };
  const whole = await client.chat.completions.create(params);
  const chunks = await collect(await client.chat.completions.create(
    { ...params, stream: true, stream_options: { include_usage: true } }));
  assert.equal(chunks[0].object, 'chat.completion.chunk');
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  let content = '';
  let finish = null;
  for (const c of chunks.slice(0, -1)) {
    assert.equal(c.id, chunks[0].id);
    assert.equal(c.usage, null);
    content += c.choices[0].delta.content ?? '';
    if (c.choices[0].finish_reason) finish = c.choices[0].finish_reason;
  }
  const last = chunks.at(-1);
  assert.deepEqual(last.choices, []);
  // The same counts; the second request found the first's prompt blocks in the prefix cache.
  const { prompt_tokens_details: cachedNow, ...counts } = last.usage;
  const { prompt_tokens_details: cachedBefore, ...wholeCounts } = whole.usage;
  assert.deepEqual(counts, wholeCounts);
  assert.equal(cachedBefore.cached_tokens, 0);
  assert.ok(cachedNow.cached_tokens > 0 && cachedNow.cached_tokens < last.usage.prompt_tokens);
  assert.equal(content, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);

  // Without stream_options: no usage chunk.
  const plain = await collect(await client.chat.completions.create({ ...params, stream: true }));
  assert.ok(plain.every((c) => c.usage === undefined && c.choices.length === 1));
});

test('logprobs are the model distribution, whatever the sampling settings', async () => {
  const base = { model: MODEL, messages: messages('Count'), max_tokens: 6, logprobs: true, top_logprobs: 4 };
  // repetition_penalty 1 turns off the demo checkpoint's 1.05 (generation_config.json).
  const greedy = await client.chat.completions.create({ ...base, temperature: 0, repetition_penalty: 1 });
  const lp = greedy.choices[0].logprobs.content;
  assert.equal(lp.length, greedy.usage.completion_tokens);
  for (const entry of lp) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 4);
    for (let i = 1; i < 4; i++) assert.ok(entry.top_logprobs[i - 1].logprob >= entry.top_logprobs[i].logprob);
    // Greedy without penalties picks the most likely token.
    assert.equal(entry.token, entry.top_logprobs[0].token);
    assert.equal(entry.logprob, entry.top_logprobs[0].logprob);
    assert.ok(Array.isArray(entry.bytes) && entry.bytes.length > 0);
    const total = entry.top_logprobs.reduce((s, t) => s + Math.exp(t.logprob), 0);
    assert.ok(total <= 1 + 1e-5);
  }
  // The first step sees the same prompt: the same distribution at temperature 2.
  const hot = await client.chat.completions.create({ ...base, temperature: 2, top_k: 2, seed: 3 });
  const first = hot.choices[0].logprobs.content[0].top_logprobs;
  assert.deepEqual(first.map((t) => t.token), lp[0].top_logprobs.map((t) => t.token));
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(first[i].logprob - lp[0].top_logprobs[i].logprob) < 1e-6);

  // Streamed: one logprobs entry per token, the same as the whole response's.
  const chunks = await collect(await client.chat.completions.create({ ...base, temperature: 0, repetition_penalty: 1,
                                                                      stream: true }));
  const streamed = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? []);
  assert.deepEqual(streamed, lp);
});

test('stop strings end the text and are not returned', async () => {
  const base = { model: MODEL, messages: messages('Say something long'), max_tokens: 40, temperature: 0,
                 ignore_eos: true };
  const full = (await client.chat.completions.create(base)).choices[0].message.content;
  assert.ok(full.length >= 20, `need a longer reply: ${JSON.stringify(full)}`);
  const stop = full.slice(12, 16);
  const expected = full.slice(0, full.indexOf(stop));
  const r = await client.chat.completions.create({ ...base, stop: [stop, 'never-there'] });
  assert.equal(r.choices[0].message.content, expected);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const chunks = await collect(await client.chat.completions.create({ ...base, stop, stream: true }));
  assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), expected);
  assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
});

test('completions endpoint', async () => {
  const r = await client.completions.create({ model: MODEL, prompt: 'Once upon a time', max_tokens: 5,
                                              temperature: 0, logprobs: 2, ignore_eos: true });
  assert.equal(r.object, 'text_completion');
  assert.equal(typeof r.choices[0].text, 'string');
  assert.equal(r.usage.completion_tokens, 5);
  assert.equal(r.choices[0].logprobs.tokens.length, 5);
  assert.equal(Object.keys(r.choices[0].logprobs.top_logprobs[0]).length, 2);
  const chunks = await collect(await client.completions.create({ model: MODEL, prompt: 'Once upon a time',
                                                                 max_tokens: 5, temperature: 0, stream: true,
                                                                 ignore_eos: true }));
  assert.equal(chunks.map((c) => c.choices[0].text).join(''), r.choices[0].text);
});

test('errors come back as OpenAI errors', async () => {
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: messages('x'), temperature: 'hot' }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature' && /temperature/.test(e.message));
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: messages('x'), top_p: 3 }),
                       (e) => e.status === 400 && e.param === 'top_p');
  await assert.rejects(client.chat.completions.create({ model: 'gpt-4o', messages: messages('x') }),
                       (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  await assert.rejects(client.chat.completions.create({ model: MODEL, messages: messages('word '.repeat(5000)) }),
                       (e) => e.status === 400 && e.code === 'context_length_exceeded');
  const r = await client.chat.completions.create({ model: MODEL, messages: messages('still up?'), max_tokens: 2 });
  assert.equal(r.choices.length, 1);
});

test('chat_template_kwargs passes through the client as an extra body field', async () => {
  const params = { model: MODEL, messages: messages('Hello'), max_tokens: 4, temperature: 0 };
  const plain = await client.chat.completions.create(params);
  // Qwen2.5's template does not read enable_thinking: the same prompt, and no reasoning.
  const r = await client.chat.completions.create({ ...params, chat_template_kwargs: { enable_thinking: false } });
  assert.equal(r.usage.prompt_tokens, plain.usage.prompt_tokens);
  assert.equal(r.choices[0].message.content, plain.choices[0].message.content);
  assert.equal(r.choices[0].message.reasoning_content, undefined);
  await assert.rejects(client.chat.completions.create({ ...params, chat_template_kwargs: ['enable_thinking'] }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'chat_template_kwargs');
});

test('16 concurrent seeded and greedy requests get the tokens they get alone', async () => {
  const requests = Array.from({ length: 16 }, (_, i) => ({
    model: MODEL, messages: messages(`Request ${i}` + ' more'.repeat(i)), max_tokens: 12 + i, ignore_eos: true,
    logprobs: true, ...(i % 2 ? { temperature: 1.0, seed: 100 + i } : { temperature: 0 }),
  }));
  const tokens = (r) => r.choices[0].logprobs.content.map((t) => t.bytes.join(','));
  const alone = [];
  for (const req of requests) alone.push(await client.chat.completions.create(req));
  const together = await Promise.all(requests.map((req) => client.chat.completions.create(req)));
  for (let i = 0; i < requests.length; i++) {
    assert.deepEqual(tokens(together[i]), tokens(alone[i]), `request ${i}`);
    assert.equal(together[i].choices[0].message.content, alone[i].choices[0].message.content, `request ${i}`);
  }
  assert.ok((await health()).peak_running >= 4, 'the concurrent requests shared forward passes');
});

test('a client that aborts mid-stream frees its slot', async () => {
  const before = await health();
  const controller = new AbortController();
  const stream = await client.chat.completions.create(
    { model: MODEL, messages: messages('endless'), max_tokens: 3000, ignore_eos: true, stream: true },
    { signal: controller.signal });
  let seen = 0;
  try {
    for await (const chunk of stream) {
      // Stop reading at the abort: chunks the client had already read from the socket would
      // still come out of the iterator (seen 4 in one CI-like run).
      if (chunk.choices[0]?.delta?.content && ++seen === 3) {
        controller.abort();
        break;
      }
    }
  } catch (e) {
    // The client ends the iteration quietly on abort or throws an abort error.
    assert.ok(e.name === 'AbortError' || e instanceof OpenAI.APIUserAbortError, String(e));
  }
  assert.equal(seen, 3);
  let h = await health();
  for (let i = 0; i < 200 && (h.running > 0 || h.cancelled === before.cancelled); i++) {
    await sleep(25);
    h = await health();
  }
  assert.equal(h.cancelled, before.cancelled + 1);
  assert.equal(h.running, 0);
  assert.equal(h.kv_blocks_reserved, 0);
  const r = await client.chat.completions.create({ model: MODEL, messages: messages('next'), max_tokens: 2 });
  assert.equal(r.choices.length, 1);
});
