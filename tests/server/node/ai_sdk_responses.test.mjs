// glass serve's /v1/responses through the Vercel AI SDK's default OpenAI provider
// (`@ai-sdk/openai` 2 with `ai` 5: createOpenAI(...)(modelId) is a Responses API model), on
// the demo model: the request bodies the provider sends, the same text as chat completions
// for a seed, streamed and not; forced tool calls run by execute and the loop back to a
// text answer, with the calls sent back by reference (the provider's default, store
// true) and by value (store false); previousResponseId; generateObject; errors.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateObject, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { MODEL, assertStreamedCalls, assertValid, makeTools, postJSON, readToolStream, runTool, seeds, startGlass, weatherParameters } from './serve_helper.mjs';

let glass;

before(async () => {
  glass = await startGlass();
});
after(async () => glass?.stop());

// A Responses model of the provider, and the requests it sent ({ url, body }). The
// provider's Responses model does not send the `seed` setting (it warns,
// unsupported-setting), so the fetch adds glass's seed extension to the body.
function glassModel({ seed } = {}) {
  const requests = [];
  const provider = createOpenAI({
    baseURL: `${glass.baseURL}/v1`,
    apiKey: 'not-checked',
    fetch: async (url, init) => {
      const body = JSON.parse(init.body);
      if (seed !== undefined) body.seed = seed;
      requests.push({ url: String(url), body });
      return fetch(url, { ...init, body: JSON.stringify(body) });
    },
  });
  return { model: provider(MODEL), provider, requests };
}

async function chatCompletion(body) {
  const res = await postJSON(`${glass.baseURL}/v1/chat/completions`, { model: MODEL, ...body });
  assert.equal(res.status, 200);
  return res.json();
}

const terse = { system: 'You are terse.', prompt: 'Hello there', maxOutputTokens: 12, temperature: 0.8, maxRetries: 0 };
const terseChat = { messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Hello there' }],
                    max_tokens: 12, temperature: 0.8, seed: 7 };
const finishOf = (chat) => (chat.choices[0].finish_reason === 'length' ? 'length' : 'stop');

test('generateText: the request sent, and the text chat completions gives for the seed', async () => {
  const chat = await chatCompletion(terseChat);
  const { model, requests } = glassModel({ seed: 7 });
  const r = await generateText({ ...terse, model, seed: 7 });
  assert.ok(r.warnings.some((w) => w.type === 'unsupported-setting' && w.setting === 'seed'),
            'the provider drops the seed setting, hence the fetch that adds it');
  assert.equal(requests.length, 1);
  assert.equal(requests[0].url, `${glass.baseURL}/v1/responses`);
  assert.deepEqual(requests[0].body, {
    model: MODEL,
    input: [{ role: 'system', content: 'You are terse.' },
            { role: 'user', content: [{ type: 'input_text', text: 'Hello there' }] }],
    temperature: 0.8,
    max_output_tokens: 12,
    seed: 7,
  });
  assert.equal(r.text, chat.choices[0].message.content);
  assert.ok(r.text.length > 0);
  assert.equal(r.finishReason, finishOf(chat));
  assert.equal(r.usage.inputTokens, chat.usage.prompt_tokens);
  assert.equal(r.usage.outputTokens, chat.usage.completion_tokens);
  assert.equal(r.usage.totalTokens, chat.usage.total_tokens);
  assert.equal(typeof r.usage.cachedInputTokens, 'number');
  assert.match(r.response.id, /^resp_/);
  assert.equal(r.response.modelId, MODEL);
  assert.ok(Math.abs(r.response.timestamp.getTime() - Date.now()) < 600000, String(r.response.timestamp));
  assert.equal(r.providerMetadata.openai.responseId, r.response.id);
  // The text part carries its message item's id, for the next request to refer to it.
  assert.match(r.content[0].providerMetadata.openai.itemId, /^msg_/);
});

test('streamText: the same text, one text part with its item id, and the finish', async () => {
  const chat = await chatCompletion(terseChat);
  const { model, requests } = glassModel({ seed: 7 });
  const r = streamText({ ...terse, model });
  const parts = [];
  for await (const part of r.fullStream) parts.push(part);
  assert.deepEqual(parts.filter((p) => p.type === 'error'), []);
  assert.equal(requests[0].body.stream, true);
  const starts = parts.filter((p) => p.type === 'text-start');
  assert.equal(starts.length, 1);
  assert.match(starts[0].id, /^msg_/);
  const deltas = parts.filter((p) => p.type === 'text-delta');
  assert.ok(deltas.length >= 1);
  assert.ok(deltas.every((p) => p.id === starts[0].id));
  assert.equal(deltas.map((p) => p.text).join(''), chat.choices[0].message.content);
  assert.deepEqual(parts.filter((p) => p.type === 'text-end').map((p) => p.id), [starts[0].id]);
  assert.equal(await r.text, chat.choices[0].message.content);
  // From response.completed: the finish reason and the usage; from response.created: the id.
  assert.equal(await r.finishReason, finishOf(chat));
  const usage = await r.usage;
  assert.equal(usage.inputTokens, chat.usage.prompt_tokens);
  assert.equal(usage.outputTokens, chat.usage.completion_tokens);
  const response = await r.response;
  assert.match(response.id, /^resp_/);
  assert.equal(response.modelId, MODEL);
  assert.equal((await r.providerMetadata).openai.responseId, response.id);
});

test('maxOutputTokens cuts the text: finishReason length, whole and streamed', async () => {
  const settings = { model: glassModel().model, prompt: 'Say something long', maxOutputTokens: 3, temperature: 0,
                     maxRetries: 0 };
  const r = await generateText(settings);
  assert.equal(r.finishReason, 'length');
  assert.equal(r.usage.outputTokens, 3);
  const s = streamText(settings);
  assert.equal(await s.text, r.text);
  assert.equal(await s.finishReason, 'length');
  assert.equal((await s.usage).outputTokens, 3);
});

const prompt = 'What is the weather in Paris, and what time is it?';

// The first step calls (forced), the second answers in text.
const twoSteps = {
  prompt, maxOutputTokens: 300, temperature: 1, maxRetries: 0, toolChoice: 'required', stopWhen: stepCountIs(2),
  prepareStep: ({ stepNumber }) => (stepNumber > 0 ? { toolChoice: 'none', maxOutputTokens: 24 } : undefined),
};

function assertNoToolErrors(steps) {
  for (const step of steps) {
    for (const part of step.content) assert.notEqual(part.type, 'tool-error', JSON.stringify(part));
    for (const call of step.toolCalls) assert.ok(!call.invalid, JSON.stringify(call));
  }
}

// The first request: the tools as the Responses API spells them, the forced choice.
function checkToolsSent(body) {
  assert.deepEqual(body.tools.map((t) => [t.type, t.name, t.description]),
                   [['function', 'get_weather', 'The weather in a city'], ['function', 'get_time', 'The time now']]);
  assert.deepEqual(body.tools[0].parameters, weatherParameters);
  assert.equal(body.tools[1].parameters.type, 'object');
  assert.equal(body.tool_choice, 'required');
}

// The second request sends each call's output, the tool's result as a JSON string.
function checkOutputsSent(body, calls) {
  assert.equal(body.tool_choice, 'none');
  for (const call of calls) {
    assert.ok(body.input.some((item) => item.type === 'function_call_output' && item.call_id === call.toolCallId &&
                                        item.output === JSON.stringify(runTool[call.toolName](call.input))),
              `the output of ${call.toolCallId} in ${JSON.stringify(body.input)}`);
  }
}

test('generateText: a forced call, run by execute, sent back by reference (store), then the answer', async () => {
  let done = 0;
  await Promise.all(seeds(4).map(async (seed) => {
    const { model, requests } = glassModel({ seed });
    const { tools, seen } = makeTools();
    const r = await generateText({ ...twoSteps, model, tools });
    if (r.steps[0].finishReason === 'length') return;
    done++;
    assertNoToolErrors(r.steps);
    assert.equal(r.steps.length, 2, JSON.stringify(r.steps.map((s) => s.finishReason)));
    const [call, answer] = r.steps;
    assert.equal(call.finishReason, 'tool-calls');
    assert.ok(call.toolCalls.length >= 1);
    assert.deepEqual(seen.map((s) => s.name).sort(), call.toolCalls.map((c) => c.toolName).sort());
    for (const [i, result] of call.toolResults.entries()) {
      assert.equal(result.toolCallId, call.toolCalls[i].toolCallId);
      assert.match(result.toolCallId, /^call_/);
      assert.deepEqual(result.output, runTool[result.toolName](result.input));
    }
    checkToolsSent(requests[0].body);
    // By default (store true) the provider sends a call of the earlier response as an
    // item_reference to its function_call item's id, not the call itself.
    const { input } = requests[1].body;
    for (const c of call.toolCalls) {
      const itemId = c.providerMetadata.openai.itemId;
      assert.match(itemId, /^fc_/);
      assert.ok(input.some((item) => item.type === 'item_reference' && item.id === itemId), JSON.stringify(input));
    }
    assert.ok(!input.some((item) => item.type === 'function_call'), JSON.stringify(input));
    checkOutputsSent(requests[1].body, call.toolCalls);
    assert.deepEqual(answer.toolCalls, []);
    assert.ok(['stop', 'length'].includes(answer.finishReason), answer.finishReason);
    assert.equal(r.text, answer.text);
    // The referenced calls and their outputs are in the prompt.
    assert.ok(answer.usage.inputTokens > call.usage.inputTokens + 10,
              `${answer.usage.inputTokens} vs ${call.usage.inputTokens}`);
  }));
  assert.ok(done >= 3, `${done} of 4 calls finished`);
});

test('streamText with store false: the input streams, the call is sent back by value, the answer streams', async () => {
  let done = 0;
  for (const seed of seeds(4, 20)) {
    const { model, requests } = glassModel({ seed });
    const { tools, seen } = makeTools();
    const r = streamText({ ...twoSteps, model, tools, providerOptions: { openai: { store: false } } });
    const { calls, inputs, text } = await readToolStream(r);
    const steps = await r.steps;
    if (steps[0].finishReason === 'length') continue;
    done++;
    assert.equal(steps.length, 2);
    assert.equal(steps[0].finishReason, 'tool-calls');
    assert.ok(calls.length >= 1);
    assertStreamedCalls(calls, inputs);
    assert.deepEqual(seen.map((s) => s.input), calls.map((c) => c.input));
    assert.equal(requests[0].body.store, false);
    checkToolsSent(requests[0].body);
    // With store false each call goes back whole, with its item id.
    const { input } = requests[1].body;
    assert.equal(requests[1].body.store, false);
    assert.ok(!input.some((item) => item.type === 'item_reference'), JSON.stringify(input));
    for (const call of calls) {
      const sent = input.find((item) => item.type === 'function_call' && item.call_id === call.toolCallId);
      assert.ok(sent, JSON.stringify(input));
      assert.equal(sent.name, call.toolName);
      assert.deepEqual(JSON.parse(sent.arguments), call.input);
      assert.match(sent.id, /^fc_/);
    }
    checkOutputsSent(requests[1].body, calls);
    assert.equal(text, await r.text);
    assert.ok(['stop', 'length'].includes(steps[1].finishReason));
    assert.ok(steps[1].usage.inputTokens > steps[0].usage.inputTokens + 10);
  }
  assert.ok(done >= 3, `${done} of 4 finished`);
});

test('a follow-up with the earlier messages refers to their items (store) or sends them (store false)', async () => {
  const answers = [];
  for (const store of [undefined, false]) {
    const { model, requests } = glassModel();
    const settings = { model, system: 'You are terse.', maxOutputTokens: 8, temperature: 0, maxRetries: 0,
                       ...(store === false && { providerOptions: { openai: { store } } }) };
    const first = await generateText({ ...settings, prompt: 'My name is Ada.' });
    assert.ok(first.text.length > 0);
    const itemId = first.content[0].providerMetadata.openai.itemId;
    const messages = [{ role: 'user', content: 'My name is Ada.' }, ...first.response.messages,
                      { role: 'user', content: 'What is my name?' }];
    const second = await generateText({ ...settings, messages });
    const { input } = requests[1].body;
    if (store === undefined) {
      assert.ok(input.some((i) => i.type === 'item_reference' && i.id === itemId), JSON.stringify(input));
    } else {
      // An assistant message with an output_text part (not input_text), and its item id.
      assert.ok(input.some((i) => i.role === 'assistant' && i.id === itemId &&
                                  JSON.stringify(i.content) === JSON.stringify([{ type: 'output_text', text: first.text }])),
                JSON.stringify(input));
    }
    assert.ok(second.usage.inputTokens >= first.usage.inputTokens + first.usage.outputTokens,
              `${second.usage.inputTokens} vs ${first.usage.inputTokens} + ${first.usage.outputTokens}`);
    answers.push(second);
  }
  // By reference or by value: the same prompt, the same answer.
  assert.equal(answers[0].usage.inputTokens, answers[1].usage.inputTokens);
  assert.equal(answers[0].text, answers[1].text);
});

test('previousResponseId continues the conversation', async () => {
  const { model, requests } = glassModel();
  const first = await generateText({ model, prompt: 'My name is Ada.', maxOutputTokens: 8, temperature: 0,
                                     maxRetries: 0 });
  const previousResponseId = first.providerMetadata.openai.responseId;
  const second = await generateText({ model, prompt: 'What is my name?', maxOutputTokens: 8, temperature: 0,
                                      maxRetries: 0, providerOptions: { openai: { previousResponseId } } });
  assert.equal(requests[1].body.previous_response_id, previousResponseId);
  assert.ok(second.usage.inputTokens >= first.usage.inputTokens + first.usage.outputTokens,
            `${second.usage.inputTokens} vs ${first.usage.inputTokens} + ${first.usage.outputTokens}`);
});

const itemSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    count: { type: 'integer', minimum: 0, maximum: 9 },
    kind: { enum: ['tool', 'food', 'toy'] },
  },
  required: ['name', 'count', 'kind'],
  additionalProperties: false,
};

test('generateObject: text.format json_schema, the object validated', async () => {
  let valid = 0;
  const n = 6;
  await Promise.all(seeds(n).map(async (seed) => {
    const { model, requests } = glassModel({ seed });
    try {
      const r = await generateObject({ model, prompt: 'An item.', schema: jsonSchema(itemSchema), schemaName: 'item',
                                       maxOutputTokens: 200, temperature: 1, maxRetries: 0 });
      assert.equal(r.finishReason, 'stop');
      assertValid(itemSchema, r.object, `seed ${seed}`);
      valid++;
    } catch (e) {
      // The SDK refuses a reply cut short by maxOutputTokens; nothing else may fail.
      assert.equal(e.finishReason, 'length', String(e));
    }
    assert.deepEqual(requests[0].body.text,
                     { format: { type: 'json_schema', strict: false, name: 'item', schema: itemSchema } });
  }));
  assert.ok(valid >= 0.75 * n, `${valid} of ${n} valid`);
});

test('errors come back as APICallErrors naming the field', async () => {
  const { model, provider } = glassModel();
  const param = (e) => JSON.parse(e.responseBody).error.param;
  // A provider-defined tool glass does not have: sent as {type: 'web_search', ...}.
  await assert.rejects(generateText({ model, prompt: 'x', maxRetries: 0,
                                      tools: { web_search: provider.tools.webSearch({}) } }),
                       (e) => APICallError.isInstance(e) && e.statusCode === 400 && param(e).startsWith('tools'));
  await assert.rejects(generateText({ model, prompt: 'x', maxRetries: 0,
                                      providerOptions: { openai: { previousResponseId: 'resp_never_was' } } }),
                       (e) => APICallError.isInstance(e) && e.statusCode === 404 &&
                              param(e) === 'previous_response_id');
  // streamText puts the refused request in the stream as an error part.
  const errors = [];
  const stream = streamText({ model, prompt: 'x', maxRetries: 0, temperature: 7, onError: () => {} });
  for await (const part of stream.fullStream) {
    if (part.type === 'error') errors.push(part.error);
  }
  assert.equal(errors.length, 1);
  assert.ok(APICallError.isInstance(errors[0]) && errors[0].statusCode === 400 && param(errors[0]) === 'temperature',
            String(errors[0]));
});
