// Tool calls and structured outputs through the official openai npm client, on the demo
// model: its random weights never write a tool call or JSON by themselves, so every valid
// call and every valid JSON reply here is the work of constrained decoding
// (tool_choice required / named, response_format). Arguments and replies are checked
// with ajv against the schemas the request gave.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { LengthFinishReasonError } from 'openai/error';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { MODEL, assertValid, openaiTools, parametersOf, runTool, seeds, startGlass } from './serve_helper.mjs';

let glass;
let client;

before(async () => {
  glass = await startGlass();
  client = new OpenAI({ baseURL: `${glass.baseURL}/v1`, apiKey: 'not-checked', maxRetries: 0, timeout: 120000 });
});
after(async () => glass?.stop());

const ask = [{ role: 'system', content: 'You are a helpful assistant.' },
             { role: 'user', content: 'What is the weather in Paris, and what time is it?' }];
const forced = { model: MODEL, messages: ask, tools: openaiTools, max_tokens: 300, temperature: 1 };

// A call is to an allowed function (`only` when named), its id and type as OpenAI's, its
// arguments a JSON object string valid against that function's parameters.
function checkCall(call, only) {
  assert.equal(call.type, 'function', JSON.stringify(call));
  assert.ok(typeof call.id === 'string' && call.id.length > 0, JSON.stringify(call));
  const { name } = call.function;
  assert.ok(name in parametersOf, `call of an unknown function: ${JSON.stringify(call)}`);
  if (only) assert.equal(name, only);
  assert.equal(typeof call.function.arguments, 'string');
  const args = JSON.parse(call.function.arguments);
  assertValid(parametersOf[name], args, `${name} arguments`);
  return args;
}

// The conversation after the assistant's calls: the assistant message as the client got
// it, then one `tool` message per call with the tool's result.
function withResults(messages, assistant) {
  const results = assistant.tool_calls.map((call) => ({
    role: 'tool', tool_call_id: call.id,
    content: JSON.stringify(runTool[call.function.name](JSON.parse(call.function.arguments))),
  }));
  return [...messages, assistant, ...results];
}

// The first of `candidates` whose reply is a finished tool call (most are; a few run out
// of max_tokens inside the arguments).
async function firstCall(params, candidates) {
  for (const seed of candidates) {
    const r = await client.chat.completions.create({ ...params, seed });
    if (r.choices[0].finish_reason === 'tool_calls') return { r, seed };
    assert.equal(r.choices[0].finish_reason, 'length', JSON.stringify(r));
  }
  assert.fail(`no seed of ${candidates} gave a finished call`);
}

test('tool round trip: the call, the tool run by the client, the result back, the answer', async () => {
  const { r } = await firstCall({ ...forced, tool_choice: 'required' }, seeds(5));
  const choice = r.choices[0];
  assert.equal(choice.message.role, 'assistant');
  assert.ok(choice.message.content === null || choice.message.content === '', JSON.stringify(choice.message));
  assert.ok(choice.message.tool_calls.length >= 1);
  for (const call of choice.message.tool_calls) checkCall(call);
  assert.equal(new Set(choice.message.tool_calls.map((c) => c.id)).size, choice.message.tool_calls.length,
               'call ids are distinct');

  const conversation = withResults(ask, choice.message);
  for (const tool_choice of ['none', 'auto']) {
    const answer = await client.chat.completions.create({ model: MODEL, messages: conversation, tools: openaiTools,
                                                          tool_choice, max_tokens: 24, temperature: 0 });
    const c = answer.choices[0];
    assert.equal(c.message.role, 'assistant');
    assert.equal(typeof c.message.content, 'string');
    assert.ok(c.message.tool_calls === undefined || c.message.tool_calls.length === 0, JSON.stringify(c.message));
    assert.ok(['stop', 'length'].includes(c.finish_reason), c.finish_reason);
    // The calls and their results went through the chat template into the prompt.
    assert.ok(answer.usage.prompt_tokens > r.usage.prompt_tokens + 10,
              `${answer.usage.prompt_tokens} vs ${r.usage.prompt_tokens}`);
  }
  // A longer tool result is a longer prompt: the tool message is read, not dropped.
  const longer = conversation.map((m) => (m.role === 'tool' ? { ...m, content: m.content + ' extra'.repeat(20) } : m));
  const [a, b] = await Promise.all([conversation, longer].map((messages) => client.chat.completions.create(
    { model: MODEL, messages, tools: openaiTools, max_tokens: 1 })));
  const added = b.usage.prompt_tokens - a.usage.prompt_tokens;
  assert.ok(added >= 20 * conversation.filter((m) => m.role === 'tool').length, `${added} tokens added`);
});

// Reassembles streamed tool-call deltas by index, checking OpenAI's order: the first
// delta of a call has its id, type and name; the arguments follow in pieces.
function reassemble(chunks) {
  const calls = [];
  let finish = null;
  let pieces = 0;
  let content = '';
  for (const chunk of chunks) {
    const c = chunk.choices[0];
    if (!c) continue;
    if (c.finish_reason) finish = c.finish_reason;
    content += c.delta.content ?? '';
    for (const d of c.delta.tool_calls ?? []) {
      if (!calls[d.index]) {
        assert.equal(d.index, calls.length, 'calls are streamed in index order');
        assert.ok(d.id && d.type === 'function' && d.function?.name, `first delta of a call: ${JSON.stringify(d)}`);
        calls[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: '' } };
      } else {
        assert.equal(d.id, undefined, 'the id comes once');
        assert.equal(d.function?.name, undefined, 'the name comes once');
      }
      if (d.function?.arguments) {
        calls[d.index].function.arguments += d.function.arguments;
        pieces++;
      }
    }
  }
  return { calls, finish, pieces, content };
}

test('streamed tool round trip: deltas reassemble into the whole response\'s calls', async () => {
  const params = { ...forced, tool_choice: 'required' };
  const { r, seed } = await firstCall(params, seeds(5, 11));
  const stream = client.chat.completions.stream({ ...params, seed });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const final = await stream.finalChatCompletion();
  const { calls, finish, content } = reassemble(chunks);
  assert.equal(finish, 'tool_calls');
  assert.equal(content, '');
  for (const call of calls) checkCall(call);
  // The same seed gives the same calls, streamed or not; the client's own reassembly agrees.
  const strip = (cs) => cs.map((c) => ({ name: c.function.name, arguments: c.function.arguments }));
  assert.deepEqual(strip(calls), strip(r.choices[0].message.tool_calls));
  assert.deepEqual(strip(final.choices[0].message.tool_calls), strip(calls));
  assert.deepEqual(final.choices[0].message.tool_calls.map((c) => c.id), calls.map((c) => c.id));
  assert.equal(final.choices[0].finish_reason, 'tool_calls');

  // The results go back and the answer streams as text.
  const messages = withResults(ask, final.choices[0].message);
  const answer = await client.chat.completions.create({ model: MODEL, messages, tools: openaiTools, tool_choice: 'none',
                                                        max_tokens: 24, temperature: 0, stream: true });
  const rest = [];
  for await (const chunk of answer) rest.push(chunk);
  const text = reassemble(rest);
  assert.deepEqual(text.calls, []);
  assert.ok(['stop', 'length'].includes(text.finish), text.finish);
  assert.ok(text.content.length > 0);
});

// OpenAI's streaming of calls: the name first, then the arguments in pieces as they are
// generated. A forced call (constrained by its grammar, so always a call) streams so; a
// free-form one is released whole when its block closes, since until then it may turn out
// not to be a call (src/runtime/tool_calls.h).
test('streamed tool-call arguments come in pieces as they are generated', async () => {
  const stream = await client.chat.completions.create({
    ...forced, tool_choice: { type: 'function', function: { name: 'get_weather' } }, seed: 2, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  const { calls, finish, pieces } = reassemble(chunks);
  assert.equal(finish, 'tool_calls');
  checkCall(calls[0], 'get_weather');
  assert.ok(pieces > 1, `the arguments ${calls[0].function.arguments} came in ${pieces} piece(s)`);
});

test('forced calls over many seeds: always a valid call to an allowed function', async () => {
  const modes = {
    required: { tool_choice: 'required' },
    named: { tool_choice: { type: 'function', function: { name: 'get_weather' } } },
    named_no_parameters: { tool_choice: { type: 'function', function: { name: 'get_time' } } },
    single: { tool_choice: 'required', parallel_tool_calls: false },
  };
  const n = 15;
  const runs = Object.entries(modes).flatMap(([mode, fields]) => seeds(n).map((seed) => ({ mode, fields, seed })));
  const replies = await Promise.all(runs.map(({ fields, seed }) => client.chat.completions.create(
    { ...forced, ...fields, seed })));
  const finished = {};
  for (const [i, r] of replies.entries()) {
    const { mode, fields, seed } = runs[i];
    const c = r.choices[0];
    const where = `${mode} seed ${seed}: ${JSON.stringify(c)}`;
    if (c.finish_reason === 'length') continue;
    finished[mode] = (finished[mode] ?? 0) + 1;
    assert.equal(c.finish_reason, 'tool_calls', where);
    assert.ok(c.message.content === null || c.message.content === '', where);
    assert.ok(Array.isArray(c.message.tool_calls) && c.message.tool_calls.length >= 1, where);
    const only = fields.tool_choice.function?.name;
    if (only || fields.parallel_tool_calls === false) assert.equal(c.message.tool_calls.length, 1, where);
    for (const call of c.message.tool_calls) checkCall(call, only);
  }
  for (const mode of Object.keys(modes))
    assert.ok((finished[mode] ?? 0) >= 0.8 * n, `${mode}: ${finished[mode] ?? 0} of ${n} finished`);
});

test('zodFunction tools: the client parses the forced call\'s arguments', async () => {
  // zod's .max() counts UTF-16 code units, JSON Schema's maxLength (and glass) characters:
  // a reply with a character outside the BMP can be valid JSON Schema and fail zod. So the
  // strings of the zod schemas here are bounded by patterns, which both read the same way.
  const weather = zodFunction({
    name: 'get_weather',
    parameters: z.object({ city: z.string().regex(/^[A-Za-z ]{1,20}$/), unit: z.enum(['celsius', 'fahrenheit']) }),
  });
  let parsed = 0;
  await Promise.all(seeds(6).map(async (seed) => {
    const r = await client.chat.completions.parse({ model: MODEL, messages: ask, tools: [weather], max_tokens: 300,
                                                   tool_choice: { type: 'function', function: { name: 'get_weather' } },
                                                   temperature: 1, seed }).catch((e) => {
      if (e instanceof LengthFinishReasonError) return null;
      throw e;
    });
    if (!r) return;
    const call = r.choices[0].message.tool_calls[0];
    assertValid(weather.function.parameters, call.function.parsed_arguments, 'parsed_arguments');
    assert.deepEqual(call.function.parsed_arguments, JSON.parse(call.function.arguments));
    parsed++;
  }));
  assert.ok(parsed >= 4, `${parsed} of 6 parsed`);
});

// A schema with what OpenAI's structured outputs document: required and optional
// properties, additionalProperties false, enum, bounded integer, array with maxItems,
// nested object, $defs / $ref, anyOf with null.
const personSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    role: { enum: ['admin', 'user', 'guest'] },
    tags: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 3 },
    address: { $ref: '#/$defs/address' },
    nickname: { anyOf: [{ type: 'string', maxLength: 8 }, { type: 'null' }] },
  },
  required: ['name', 'age', 'role', 'address'],
  additionalProperties: false,
  $defs: {
    address: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 16 }, zip: { type: 'integer', minimum: 1000, maximum: 99999 } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};

test('response_format json_schema: every reply that stops validates', async () => {
  const n = 15;
  const replies = await Promise.all(seeds(n).map((seed) => client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Describe a person.' }], max_tokens: 300, temperature: 1, seed,
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: personSchema } },
  })));
  let stopped = 0;
  for (const [i, r] of replies.entries()) {
    const c = r.choices[0];
    if (c.finish_reason !== 'stop') {
      assert.equal(c.finish_reason, 'length', JSON.stringify(c));
      continue;
    }
    stopped++;
    assertValid(personSchema, JSON.parse(c.message.content), `seed ${i + 1}`);
  }
  assert.ok(stopped >= 0.8 * n, `${stopped} of ${n} stopped`);
});

test('response_format json_object: every reply that stops is a JSON object, streamed too', async () => {
  const params = { model: MODEL, messages: [{ role: 'user', content: 'JSON please' }], max_tokens: 200, temperature: 1,
                   response_format: { type: 'json_object' } };
  const n = 10;
  const replies = await Promise.all(seeds(n).map((seed) => client.chat.completions.create({ ...params, seed })));
  let stopped = 0;
  for (const r of replies) {
    const c = r.choices[0];
    if (c.finish_reason !== 'stop') continue;
    stopped++;
    const value = JSON.parse(c.message.content);
    assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), c.message.content);
  }
  // Unbounded strings let the random weights ramble until max_tokens; what stops is checked.
  assert.ok(stopped >= 3, `${stopped} of ${n} stopped`);
  const stream = await client.chat.completions.create({ ...params, seed: 1, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, replies[0].choices[0].message.content);
});

test('zodResponseFormat: chat.completions.parse returns the parsed object', async () => {
  const Person = z.object({
    name: z.string().regex(/^[A-Za-z]{1,12}$/),  // not .max(): see the zodFunction test
    age: z.number().int().min(0).max(150),
    role: z.enum(['admin', 'user', 'guest']),
    nickname: z.string().regex(/^[a-z]{0,8}$/).nullable(),
  });
  const format = zodResponseFormat(Person, 'person');
  let parsed = 0;
  await Promise.all(seeds(8).map(async (seed) => {
    const r = await client.chat.completions.parse({ model: MODEL, messages: [{ role: 'user', content: 'A person?' }],
                                                   response_format: format, max_tokens: 200, temperature: 1, seed })
      .catch((e) => {
        if (e instanceof LengthFinishReasonError) return null;
        throw e;
      });
    if (!r) return;
    const { parsed: value } = r.choices[0].message;
    assert.ok(Person.safeParse(value).success, JSON.stringify(value));
    assertValid(format.json_schema.schema, value, `seed ${seed}`);
    parsed++;
  }));
  assert.ok(parsed >= 6, `${parsed} of 8 parsed`);
});

test('bad schemas and tool choices are BadRequestErrors naming the parameter', async () => {
  const base = { model: MODEL, messages: ask, max_tokens: 4 };
  const cases = [
    [{ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 5 } } } },
     'response_format.json_schema.schema'],
    [{ tools: openaiTools, tool_choice: { type: 'function', function: { name: 'get_stock_price' } } }, 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {
      x: { type: 'string', contentEncoding: 'base64' } } } } }], tool_choice: 'required' },
     'tools[0].function.parameters'],
    [{ tools: [{ type: 'function', function: { description: 'no name' } }] }, 'tools[0].function.name'],
    [{ grammar: 'root ::= [a-z' }, 'grammar'],
  ];
  for (const [fields, param] of cases) {
    await assert.rejects(client.chat.completions.create({ ...base, ...fields }),
                         (e) => e instanceof OpenAI.BadRequestError && e.param === param && e.message.length > 0,
                         `${JSON.stringify(fields)} should be a 400 on ${param}`);
  }
});
