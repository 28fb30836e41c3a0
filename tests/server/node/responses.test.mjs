// POST /v1/responses (OpenAI's Responses API) through the official openai npm client, on
// the demo model (random weights: meaningless text, deterministic for a seed). The
// response object and its output items, the stream's event grammar (also read raw, to see
// the event: lines), the same text as /v1/chat/completions for the same seed, stored
// responses (GET, DELETE, previous_response_id), forced function calls and their round
// trip, text.format json_schema, and the errors. GLASS_BINARY and GLASS_MODEL come from
// CTest.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { MODEL, assertValid, parametersOf, postJSON, readSSE, runTool, seeds, startGlass, timeParameters, weatherParameters } from './serve_helper.mjs';

let glass;
let client;

before(async () => {
  glass = await startGlass();
  client = new OpenAI({ baseURL: `${glass.baseURL}/v1`, apiKey: 'not-checked', maxRetries: 0, timeout: 120000 });
});
after(async () => glass?.stop());


// Function tools as the Responses API spells them (flat, not under `function`).
const tools = [
  { type: 'function', name: 'get_weather', description: 'The weather in a city', parameters: weatherParameters,
    strict: false },
  { type: 'function', name: 'get_time', description: 'The time now', parameters: timeParameters, strict: false },
];
const ask = 'What is the weather in Paris, and what time is it?';

// The text of a response's message items, as the client's output_text joins it.
const textOf = (r) => r.output.filter((i) => i.type === 'message')
  .flatMap((i) => i.content).map((c) => c.text).join('');

function checkItem(item, status = ['completed']) {
  const where = JSON.stringify(item);
  assert.ok(status.includes(item.status), where);
  if (item.type === 'message') {
    assert.match(item.id, /^msg_/, where);
    assert.equal(item.role, 'assistant', where);
    assert.ok(item.content.length >= 1, where);
    for (const part of item.content) {
      assert.equal(part.type, 'output_text', where);
      assert.equal(typeof part.text, 'string', where);
      // The AI SDK's schema requires annotations on every output_text part.
      assert.deepEqual(part.annotations, [], where);
    }
  } else if (item.type === 'function_call') {
    assert.match(item.id, /^fc_/, where);
    assert.match(item.call_id, /^call_/, where);
    assert.equal(typeof item.name, 'string', where);
    assert.equal(typeof item.arguments, 'string', where);
  } else {
    assert.fail(`unexpected output item (the demo does not think): ${where}`);
  }
}

// The fields every finished response has. A response cut by max_output_tokens is
// 'incomplete' and says why; its last item may be too.
function checkResponse(r) {
  const where = JSON.stringify(r);
  assert.match(r.id, /^resp_/);
  assert.equal(r.object, 'response');
  assert.ok(Number.isInteger(r.created_at) && Math.abs(r.created_at - Date.now() / 1000) < 600, where);
  assert.equal(r.model, MODEL);
  assert.equal(r.error, null, where);
  if (r.status === 'incomplete') {
    assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  } else {
    assert.equal(r.status, 'completed', where);
    assert.equal(r.incomplete_details, null);
  }
  const u = r.usage;
  assert.ok(u.input_tokens > 0 && u.output_tokens >= 0, where);
  assert.equal(u.total_tokens, u.input_tokens + u.output_tokens);
  assert.ok(Number.isInteger(u.input_tokens_details.cached_tokens), where);
  assert.ok(u.input_tokens_details.cached_tokens <= u.input_tokens, where);
  assert.equal(u.output_tokens_details.reasoning_tokens, 0);
  if (r.max_output_tokens != null) assert.ok(u.output_tokens <= r.max_output_tokens, where);
  for (const item of r.output) checkItem(item, r.status === 'incomplete' ? ['completed', 'incomplete'] : ['completed']);
}

// Walks a stream's events in the contract's order: response.created, response.in_progress;
// per output item, output_item.added, then for a message its parts (content_part.added,
// output_text.delta..., output_text.done, content_part.done), for a call its
// function_call_arguments.delta... and .done, then output_item.done; last one terminal
// event. Every event is numbered 0, 1, 2, ... Returns the terminal event's response, which
// must hold the items the events built.
function checkStream(events) {
  const where = (i) => `event ${i} of ${events.length}: ${JSON.stringify(events[i])}`;
  events.forEach((e, i) => assert.equal(e.sequence_number, i, where(i)));
  let i = 0;
  const next = (type) => {
    assert.equal(events[i]?.type, type, where(i));
    return events[i++];
  };
  const created = next('response.created');
  // The openai client's stream helper builds its snapshot from this object's output.
  assert.deepEqual(created.response.output, []);
  assert.equal(created.response.status, 'in_progress');
  assert.equal(next('response.in_progress').response.id, created.response.id);
  const items = [];
  while (i < events.length - 1) {
    const index = items.length;
    const { item, output_index } = next('response.output_item.added');
    assert.equal(output_index, index);
    assert.equal(item.status, 'in_progress');
    const at = (e) => {
      assert.equal(e.output_index, index, where(i - 1));
      assert.equal(e.item_id, item.id, where(i - 1));
    };
    if (item.type === 'message') {
      assert.deepEqual(item.content, []);
      const parts = [];
      while (events[i]?.type === 'response.content_part.added') {
        const added = next('response.content_part.added');
        at(added);
        assert.equal(added.content_index, parts.length);
        assert.equal(added.part.type, 'output_text');
        assert.equal(added.part.text, '');
        let text = '';
        while (events[i]?.type === 'response.output_text.delta') {
          const delta = next('response.output_text.delta');
          at(delta);
          assert.equal(delta.content_index, parts.length);
          assert.equal(typeof delta.delta, 'string');
          text += delta.delta;
        }
        const done = next('response.output_text.done');
        at(done);
        assert.equal(done.text, text);
        const partDone = next('response.content_part.done');
        at(partDone);
        assert.equal(partDone.part.text, text);
        parts.push(partDone.part);
      }
      const { item: finished } = next('response.output_item.done');
      assert.deepEqual(finished.content, parts);
      items.push(finished);
    } else if (item.type === 'function_call') {
      assert.equal(item.arguments, '');
      let args = '';
      while (events[i]?.type === 'response.function_call_arguments.delta') {
        const delta = next('response.function_call_arguments.delta');
        at(delta);
        args += delta.delta;
      }
      const done = next('response.function_call_arguments.done');
      at(done);
      assert.equal(done.arguments, args);
      const { item: finished } = next('response.output_item.done');
      assert.equal(finished.arguments, args);
      assert.equal(finished.call_id, item.call_id);
      assert.equal(finished.name, item.name);
      items.push(finished);
    } else {
      assert.fail(`unexpected item: ${where(i - 1)}`);
    }
    assert.equal(events[i - 1].output_index, index);
    assert.equal(items.at(-1).id, item.id);
  }
  const terminal = events.at(-1);
  assert.ok(['response.completed', 'response.incomplete'].includes(terminal.type), where(events.length - 1));
  assert.equal(terminal.response.status, terminal.type === 'response.completed' ? 'completed' : 'incomplete');
  assert.equal(terminal.response.id, created.response.id);
  assert.deepEqual(terminal.response.output, items);
  checkResponse(terminal.response);
  return terminal.response;
}

async function collect(stream) {
  const events = [];
  for await (const e of stream) events.push(e);
  return events;
}

test('a response: the object, its message, usage, and the request echoed', async () => {
  const r = await client.responses.create({ model: MODEL, instructions: 'You are terse.', input: 'Hello',
                                            max_output_tokens: 16, temperature: 0.5, top_p: 0.9 });
  checkResponse(r);
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].content.length, 1);
  // The client adds output_text only to an object whose `object` is 'response'.
  assert.equal(r.output_text, r.output[0].content[0].text);
  assert.ok(r.output_text.length > 0);
  assert.ok(r.usage.input_tokens > 10, 'the instructions and the chat template add their tokens');
  assert.equal(r.instructions, 'You are terse.');
  assert.equal(r.max_output_tokens, 16);
  assert.equal(r.temperature, 0.5);
  assert.equal(r.top_p, 0.9);
  assert.equal(r.tool_choice, 'auto');
  assert.deepEqual(r.tools, []);
  assert.equal(r.parallel_tool_calls, true);
  assert.equal(r.previous_response_id, null);
  assert.equal(r.store, true);
  assert.equal(r.text.format.type, 'text');
  assert.ok('metadata' in r);
});

test('the same text as chat completions for the same seed, whatever form the input takes', async () => {
  const settings = { temperature: 0.8, seed: 7 };
  const chat = await client.chat.completions.create({
    model: MODEL, messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello there' }],
    max_tokens: 12, ...settings });
  const inputs = [
    'Hello there',
    [{ role: 'user', content: 'Hello there' }],
    [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello there' }] }],
  ];
  for (const input of inputs) {
    const r = await client.responses.create({ model: MODEL, instructions: 'You are terse.', input,
                                              max_output_tokens: 12, ...settings });
    const where = JSON.stringify(input);
    checkResponse(r);
    assert.equal(r.output_text, chat.choices[0].message.content, where);
    assert.equal(r.usage.input_tokens, chat.usage.prompt_tokens, where);
    assert.equal(r.usage.output_tokens, chat.usage.completion_tokens, where);
    assert.equal(r.status === 'incomplete', chat.choices[0].finish_reason === 'length', where);
  }
  // The instructions are the system message: a system message in the input is the same.
  const system = await client.responses.create({
    model: MODEL, input: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello there' }],
    max_output_tokens: 12, ...settings });
  assert.equal(system.output_text, chat.choices[0].message.content);
  assert.equal(system.usage.input_tokens, chat.usage.prompt_tokens);
});

test('streamed: the events in order, numbered, adding up to the whole response', async () => {
  const params = { model: MODEL, instructions: 'You are terse.', input: 'Stream please', max_output_tokens: 24,
                   temperature: 0.8, seed: 11 };
  const whole = await client.responses.create(params);
  const events = await collect(await client.responses.create({ ...params, stream: true }));
  const final = checkStream(events);
  assert.ok(events.some((e) => e.type === 'response.output_text.delta'));
  assert.notEqual(final.id, whole.id);
  assert.equal(textOf(final), whole.output_text);
  assert.equal(final.status, whole.status);
  assert.equal(final.usage.input_tokens, whole.usage.input_tokens);
  assert.equal(final.usage.output_tokens, whole.usage.output_tokens);

  // The client's stream helper: its events, its text deltas, its final response.
  const stream = client.responses.stream(params);
  let text = '';
  stream.on('response.output_text.delta', (e) => { text += e.delta; });
  const helperEvents = await collect(stream);
  const response = await stream.finalResponse();
  assert.deepEqual(helperEvents.map((e) => e.type), events.map((e) => e.type));
  assert.equal(text, whole.output_text);
  assert.equal(textOf(response), whole.output_text);
});

test('streamed, read raw: event: lines name each data line\'s type, and there is no [DONE]', async () => {
  const res = await postJSON(`${glass.baseURL}/v1/responses`, { model: MODEL, input: 'Raw', max_output_tokens: 8,
                                                                temperature: 0, stream: true });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const { raw, events } = await readSSE(res);
  assert.ok(!raw.includes('[DONE]'), 'the Responses API ends with its terminal event, not [DONE]');
  const data = events.map((e) => JSON.parse(e.data));
  for (const [i, e] of events.entries()) assert.equal(e.event, data[i].type, `event ${i}`);
  checkStream(data);
});

test('max_output_tokens cuts the response: incomplete, with the reason, whole and streamed', async () => {
  const params = { model: MODEL, input: 'Say something long', max_output_tokens: 3, temperature: 0 };
  const r = await client.responses.create(params);
  checkResponse(r);
  assert.equal(r.status, 'incomplete', JSON.stringify(r));
  assert.deepEqual(r.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(r.usage.output_tokens, 3);
  assert.ok(r.output_text.length > 0);
  const events = await collect(await client.responses.create({ ...params, stream: true }));
  const final = checkStream(events);
  assert.equal(events.at(-1).type, 'response.incomplete');
  assert.deepEqual(final.incomplete_details, { reason: 'max_output_tokens' });
  assert.equal(textOf(final), r.output_text);
});

test('previous_response_id continues the conversation, as if its items were sent again', async () => {
  const first = await client.responses.create({ model: MODEL, instructions: 'You are terse.',
                                                input: 'My name is Ada.', max_output_tokens: 8, temperature: 0 });
  const second = await client.responses.create({ model: MODEL, previous_response_id: first.id,
                                                 input: 'What is my name?', max_output_tokens: 8, temperature: 0 });
  checkResponse(second);
  assert.equal(second.previous_response_id, first.id);
  assert.ok(second.usage.input_tokens >= first.usage.input_tokens + first.usage.output_tokens,
            `${second.usage.input_tokens} vs ${first.usage.input_tokens} + ${first.usage.output_tokens}`);
  // OpenAI: the earlier response's instructions are not carried over; its input and
  // output items are. Its output items go back as input as they are (id, status and all).
  const explicit = await client.responses.create({
    model: MODEL, max_output_tokens: 8, temperature: 0,
    input: [{ role: 'user', content: 'My name is Ada.' }, ...first.output, { role: 'user', content: 'What is my name?' }],
  });
  assert.equal(second.instructions, null);
  assert.equal(second.usage.input_tokens, explicit.usage.input_tokens);
  assert.equal(second.output_text, explicit.output_text);

  // A chain of three: the third sees both turns.
  const third = await client.responses.create({ model: MODEL, previous_response_id: second.id, input: 'Again?',
                                                max_output_tokens: 4, temperature: 0 });
  assert.ok(third.usage.input_tokens >= second.usage.input_tokens + second.usage.output_tokens);
});

test('stored responses: GET returns them, DELETE removes them, store false keeps nothing', async () => {
  const r = await client.responses.create({ model: MODEL, input: 'Keep this', max_output_tokens: 6, temperature: 0 });
  assert.deepEqual(await client.responses.retrieve(r.id), r);

  // A streamed response is stored as its terminal event gave it.
  const events = await collect(await client.responses.create({ model: MODEL, input: 'Keep this too',
                                                               max_output_tokens: 6, temperature: 0, stream: true }));
  const streamed = events.at(-1).response;
  const got = await client.responses.retrieve(streamed.id);
  const { output_text, ...stored } = got;
  assert.deepEqual(stored, streamed);
  assert.equal(output_text, textOf(streamed));

  const url = `${glass.baseURL}/v1/responses/${r.id}`;
  const del = await fetch(url, { method: 'DELETE' });
  assert.equal(del.status, 200);
  assert.deepEqual(await del.json(), { id: r.id, object: 'response.deleted', deleted: true });
  await assert.rejects(client.responses.retrieve(r.id), (e) => e instanceof OpenAI.NotFoundError && e.message.length > 0);
  const again = await fetch(url, { method: 'DELETE' });
  assert.equal(again.status, 404);
  assert.equal(typeof (await again.json()).error.message, 'string');
  await assert.rejects(client.responses.create({ model: MODEL, previous_response_id: r.id, input: 'hi',
                                                 max_output_tokens: 2 }),
                       (e) => e instanceof OpenAI.NotFoundError && e.param === 'previous_response_id');
  // Through the client too (it resolves to the parsed body).
  assert.deepEqual({ ...(await client.responses.delete(streamed.id)) },
                   { id: streamed.id, object: 'response.deleted', deleted: true });

  const unstored = await client.responses.create({ model: MODEL, input: 'Forget this', max_output_tokens: 2,
                                                   store: false });
  assert.equal(unstored.store, false);
  await assert.rejects(client.responses.retrieve(unstored.id), (e) => e instanceof OpenAI.NotFoundError);
});

test('errors are OpenAI errors naming the field', async () => {
  const base = { model: MODEL, input: 'x', max_output_tokens: 4 };
  const bad = [
    [{ input: [{ type: 'telepathy', content: 'hi' }] }, 'input'],
    [{ input: [{ role: 'user', content: 'hi' }, { type: 'function_call_output', call_id: 'call_nobody', output: '{}' }] },
     'input'],
    [{ tools: [{ type: 'web_search' }] }, 'tools'],
    [{ tools, tool_choice: { type: 'function', name: 'get_stock_price' } }, 'tool_choice'],
    // Named as the Responses API spells the tool (no `function` level, unlike chat's).
    [{ tools: [{ type: 'function', name: 'f', parameters: { type: 'object', properties: {
      x: { type: 'string', contentEncoding: 'base64' } } } }], tool_choice: 'required' }, 'tools[0].parameters'],
    [{ text: { format: { type: 'json_schema', name: 'x', schema: { type: 5 } } } }, 'text'],
    [{ temperature: 'hot' }, 'temperature'],
  ];
  for (const [fields, param] of bad) {
    const check = (e) => e instanceof OpenAI.BadRequestError && typeof e.param === 'string' &&
                         e.param.startsWith(param) && e.message.length > 0;
    await assert.rejects(client.responses.create({ ...base, ...fields }), check, `${JSON.stringify(fields)}: 400 on ${param}`);
    // Refused before the stream starts: a plain 400, not an event.
    await assert.rejects(client.responses.create({ ...base, ...fields, stream: true }), check,
                         `streamed ${JSON.stringify(fields)}`);
  }
  await assert.rejects(client.responses.create({ ...base, previous_response_id: 'resp_never_was' }),
                       (e) => e instanceof OpenAI.NotFoundError && e.param === 'previous_response_id');
  await assert.rejects(client.responses.retrieve('resp_never_was'), (e) => e instanceof OpenAI.NotFoundError);
  await assert.rejects(client.responses.create({ ...base, model: 'gpt-4o' }),
                       (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found');
  checkResponse(await client.responses.create(base));
});

// A call to an allowed function (`only` when named), its arguments a JSON object string
// valid against that function's parameters.
function checkCall(item, only) {
  assert.equal(item.type, 'function_call', JSON.stringify(item));
  checkItem(item);
  assert.ok(item.name in parametersOf, `call of an unknown function: ${JSON.stringify(item)}`);
  if (only) assert.equal(item.name, only);
  const args = JSON.parse(item.arguments);
  assertValid(parametersOf[item.name], args, `${item.name} arguments`);
  return args;
}

// The first of `candidates` whose response finished (most do; a few run out of
// max_output_tokens inside the arguments).
async function firstFinished(params, candidates) {
  for (const seed of candidates) {
    const r = await client.responses.create({ ...params, seed });
    if (r.status === 'completed') return { r, seed };
    assert.equal(r.status, 'incomplete', JSON.stringify(r));
  }
  assert.fail(`no seed of ${candidates} finished`);
}

const forced = { model: MODEL, input: ask, tools, max_output_tokens: 300, temperature: 1 };

test('function call round trip: the forced call, the output back, the answer; by value and by previous_response_id',
     async () => {
  const { r } = await firstFinished({ ...forced, tool_choice: 'required' }, seeds(5));
  assert.equal(r.tool_choice, 'required');
  assert.ok(r.output.length >= 1);
  for (const item of r.output) checkCall(item);
  assert.equal(new Set(r.output.map((c) => c.call_id)).size, r.output.length, 'call ids are distinct');
  const results = r.output.map((call) => ({ type: 'function_call_output', call_id: call.call_id,
                                            output: JSON.stringify(runTool[call.name](JSON.parse(call.arguments))) }));
  const answer = { tools, tool_choice: 'none', max_output_tokens: 24, temperature: 0 };
  // The calls go back as the response gave them, followed by their outputs.
  const byValue = await client.responses.create({
    model: MODEL, input: [{ role: 'user', content: ask }, ...r.output, ...results], ...answer });
  checkResponse(byValue);
  assert.deepEqual(byValue.output.map((i) => i.type), ['message']);
  assert.ok(byValue.usage.input_tokens > r.usage.input_tokens + 10,
            `the calls and outputs are in the prompt: ${byValue.usage.input_tokens} vs ${r.usage.input_tokens}`);
  // Only the outputs, the calls found through the stored response.
  const chained = await client.responses.create({ model: MODEL, previous_response_id: r.id, input: results, ...answer });
  assert.equal(chained.usage.input_tokens, byValue.usage.input_tokens);
  assert.equal(chained.output_text, byValue.output_text);
  // A longer output is a longer prompt: the output is read, not dropped.
  const longer = results.map((o) => ({ ...o, output: o.output + ' extra'.repeat(20) }));
  const more = await client.responses.create({ model: MODEL, previous_response_id: r.id, input: longer, ...answer,
                                               max_output_tokens: 1 });
  assert.ok(more.usage.input_tokens - chained.usage.input_tokens >= 20 * results.length);
});

test('forced calls over many seeds: always valid calls of an allowed function', async () => {
  const modes = {
    required: { tool_choice: 'required' },
    named: { tool_choice: { type: 'function', name: 'get_weather' } },
    named_no_parameters: { tool_choice: { type: 'function', name: 'get_time' } },
    single: { tool_choice: 'required', parallel_tool_calls: false },
  };
  const n = 8;
  const runs = Object.entries(modes).flatMap(([mode, fields]) => seeds(n).map((seed) => ({ mode, fields, seed })));
  const replies = await Promise.all(runs.map(({ fields, seed }) => client.responses.create({ ...forced, ...fields, seed })));
  const finished = {};
  for (const [i, r] of replies.entries()) {
    const { mode, fields, seed } = runs[i];
    const where = `${mode} seed ${seed}: ${JSON.stringify(r.output)}`;
    checkResponse(r);
    if (r.status !== 'completed') continue;
    finished[mode] = (finished[mode] ?? 0) + 1;
    assert.ok(r.output.length >= 1, where);
    const only = fields.tool_choice.name;
    if (only || fields.parallel_tool_calls === false) assert.equal(r.output.length, 1, where);
    for (const item of r.output) checkCall(item, only);
    assert.deepEqual(r.tool_choice, fields.tool_choice);
    assert.equal(r.parallel_tool_calls, fields.parallel_tool_calls ?? true);
  }
  for (const mode of Object.keys(modes))
    assert.ok((finished[mode] ?? 0) >= 0.75 * n, `${mode}: ${finished[mode] ?? 0} of ${n} finished`);
});

test('a streamed forced call: the arguments in pieces, the same call as the whole response', async () => {
  const params = { ...forced, tool_choice: { type: 'function', name: 'get_weather' } };
  const { r, seed } = await firstFinished(params, seeds(5, 20));
  const events = await collect(await client.responses.create({ ...params, seed, stream: true }));
  const final = checkStream(events);
  assert.equal(final.status, 'completed');
  assert.equal(final.output.length, 1);
  checkCall(final.output[0], 'get_weather');
  const strip = (items) => items.map(({ name, arguments: args }) => ({ name, args }));
  assert.deepEqual(strip(final.output), strip(r.output));
  // Forced calls are constrained, so they stream as they are generated.
  const pieces = events.filter((e) => e.type === 'response.function_call_arguments.delta').length;
  assert.ok(pieces > 1, `the arguments ${final.output[0].arguments} came in ${pieces} piece(s)`);
});

// A schema with what structured outputs document: required and optional properties,
// enum, bounded integer, array with maxItems, additionalProperties false.
const itemSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    count: { type: 'integer', minimum: 0, maximum: 9 },
    kind: { enum: ['tool', 'food', 'toy'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 6 }, maxItems: 2 },
    note: { anyOf: [{ type: 'string', maxLength: 8 }, { type: 'null' }] },
  },
  required: ['name', 'count', 'kind'],
  additionalProperties: false,
};

test('text.format json_schema: every response that completes validates, streamed too', async () => {
  const format = { type: 'json_schema', name: 'item', strict: true, schema: itemSchema };
  const params = { model: MODEL, input: 'Describe an item.', max_output_tokens: 200, temperature: 1,
                   text: { format } };
  const n = 10;
  const replies = await Promise.all(seeds(n).map((seed) => client.responses.create({ ...params, seed })));
  let completed = 0;
  for (const [i, r] of replies.entries()) {
    checkResponse(r);
    assert.equal(r.text.format.type, 'json_schema');
    assert.equal(r.text.format.name, 'item');
    if (r.status !== 'completed') continue;
    completed++;
    assertValid(itemSchema, JSON.parse(r.output_text), `seed ${i + 1}`);
  }
  assert.ok(completed >= 0.8 * n, `${completed} of ${n} completed`);
  const events = await collect(await client.responses.create({ ...params, seed: 1, stream: true }));
  assert.equal(textOf(checkStream(events)), replies[0].output_text);
});

test('responses.parse with zodTextFormat returns the parsed object', async () => {
  const Item = z.object({ name: z.string().regex(/^[A-Za-z]{1,12}$/), count: z.number().int().min(0).max(9),
                          kind: z.enum(['tool', 'food', 'toy']) });
  const format = zodTextFormat(Item, 'item');
  let parsed = 0;
  await Promise.all(seeds(6).map(async (seed) => {
    const params = { model: MODEL, input: 'An item?', text: { format }, max_output_tokens: 100, temperature: 1, seed };
    const r = await client.responses.parse(params).catch(async (e) => {
      // The client parses whatever text came back; only a response cut short may fail to.
      const plain = await client.responses.create(params);
      assert.equal(plain.status, 'incomplete', `seed ${seed}: ${e}`);
      return null;
    });
    if (!r) return;
    assert.equal(r.status, 'completed');
    assert.ok(Item.safeParse(r.output_parsed).success, JSON.stringify(r.output_parsed));
    assertValid(format.schema, r.output_parsed, `seed ${seed}`);
    parsed++;
  }));
  assert.ok(parsed >= 4, `${parsed} of 6 parsed`);
});
