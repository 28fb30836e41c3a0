// glass serve through the Vercel AI SDK (`ai` 5 with `@ai-sdk/openai-compatible`), on the
// demo model: tool calls forced by toolChoice, run by the SDK through each tool's
// execute, the multi-step loop back to a text answer, streamed and not; generateObject
// with a JSON Schema (response_format json_schema); errors as APICallErrors.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateObject, generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { MODEL, assertStreamedCalls, assertValid, makeTools, readToolStream, runTool, seeds, startGlass } from './serve_helper.mjs';

let glass;
let settings;  // the model and the call settings every test shares

before(async () => {
  glass = await startGlass();
  // supportsStructuredOutputs: generateObject sends response_format json_schema (without
  // it the provider sends json_object and drops the schema).
  const provider = createOpenAICompatible({ name: 'glass', baseURL: `${glass.baseURL}/v1`,
                                            supportsStructuredOutputs: true });
  settings = { model: provider(MODEL), prompt, maxOutputTokens: 300, temperature: 1, maxRetries: 0 };
});
after(async () => glass?.stop());

const prompt = 'What is the weather in Paris, and what time is it?';

// No step of the run had a tool error or an invalid call.
function assertNoToolErrors(steps) {
  for (const step of steps) {
    for (const part of step.content) assert.notEqual(part.type, 'tool-error', JSON.stringify(part));
    for (const call of step.toolCalls) assert.ok(!call.invalid, JSON.stringify(call));
  }
}

test('generateText: a forced call, run by execute, then the answer (two steps)', async () => {
  let done = 0;
  await Promise.all(seeds(4).map(async (seed) => {
    const { tools, seen } = makeTools();
    const r = await generateText({
      ...settings, seed, tools, toolChoice: 'required', stopWhen: stepCountIs(2),
      // The second step answers in text.
      prepareStep: ({ stepNumber }) => (stepNumber > 0 ? { toolChoice: 'none', maxOutputTokens: 24 } : undefined),
    });
    if (r.steps[0].finishReason === 'length') return;
    done++;
    assertNoToolErrors(r.steps);
    assert.equal(r.steps.length, 2, JSON.stringify(r.steps.map((s) => s.finishReason)));
    const [call, answer] = r.steps;
    assert.equal(call.finishReason, 'tool-calls');
    assert.ok(call.toolCalls.length >= 1);
    assert.equal(call.toolResults.length, call.toolCalls.length);
    assert.deepEqual(seen.map((s) => s.name).sort(), call.toolCalls.map((c) => c.toolName).sort());
    for (const [i, result] of call.toolResults.entries()) {
      assert.equal(result.toolCallId, call.toolCalls[i].toolCallId);
      assert.deepEqual(result.output, runTool[result.toolName](result.input));
    }
    assert.deepEqual(answer.toolCalls, []);
    assert.ok(['stop', 'length'].includes(answer.finishReason), answer.finishReason);
    assert.equal(r.text, answer.text);
    assert.equal(typeof r.text, 'string');
    // The second request carried the call and its results: a longer prompt.
    assert.ok(answer.usage.inputTokens > call.usage.inputTokens + 10);
  }));
  assert.ok(done >= 3, `${done} of 4 calls finished`);
});

test('generateText: a named tool over many seeds is always a valid call of it', async () => {
  const n = 12;
  const runs = seeds(n).flatMap((seed) => ['get_weather', 'get_time'].map((toolName) => ({ seed, toolName })));
  const finished = { get_weather: 0, get_time: 0 };
  await Promise.all(runs.map(async ({ seed, toolName }) => {
    const { tools, seen } = makeTools();
    const r = await generateText({ ...settings, seed, tools, toolChoice: { type: 'tool', toolName } });
    if (r.finishReason === 'length') return;
    finished[toolName]++;
    assert.equal(r.finishReason, 'tool-calls', `${toolName} seed ${seed}`);
    assertNoToolErrors(r.steps);
    assert.equal(r.toolCalls.length, 1);
    assert.equal(r.toolCalls[0].toolName, toolName);
    assert.deepEqual(seen, [{ name: toolName, input: r.toolCalls[0].input }]);
  }));
  for (const [name, count] of Object.entries(finished)) assert.ok(count >= 0.8 * n, `${name}: ${count} of ${n}`);
});

test('streamText: the tool input streams, the call runs, the answer streams', async () => {
  let done = 0;
  for (const seed of seeds(4, 20)) {
    const { tools, seen } = makeTools();
    const toolChoice = seed % 2 ? 'required' : { type: 'tool', toolName: 'get_weather' };
    const r = streamText({
      ...settings, seed, tools, toolChoice, stopWhen: stepCountIs(2),
      prepareStep: ({ stepNumber }) => (stepNumber > 0 ? { toolChoice: 'none', maxOutputTokens: 24 } : undefined),
    });
    const { calls, inputs, text } = await readToolStream(r);
    const steps = await r.steps;
    if (steps[0].finishReason === 'length') continue;
    done++;
    assert.equal(steps.length, 2);
    assert.equal(steps[0].finishReason, 'tool-calls');
    assert.ok(calls.length >= 1);
    assertStreamedCalls(calls, inputs);
    // Each call's input comes in one delta: glass releases a call whole when its block
    // closes (the todo test in openai_tools.test.mjs).
    if (toolChoice.toolName) assert.ok(calls.every((c) => c.toolName === 'get_weather'));
    assert.deepEqual(seen.map((s) => s.input), calls.map((c) => c.input));
    assert.equal(text, await r.text);
    assert.ok(['stop', 'length'].includes(steps[1].finishReason));
  }
  assert.ok(done >= 3, `${done} of 4 finished`);
});

const recipeSchema = {
  type: 'object',
  properties: {
    title: { type: 'string', maxLength: 20 },
    servings: { type: 'integer', minimum: 1, maximum: 12 },
    difficulty: { enum: ['easy', 'medium', 'hard'] },
    steps: { type: 'array', items: { $ref: '#/$defs/step' }, minItems: 1, maxItems: 3 },
    vegetarian: { type: 'boolean' },
  },
  required: ['title', 'servings', 'difficulty', 'steps'],
  additionalProperties: false,
  $defs: {
    step: {
      type: 'object',
      properties: { text: { type: 'string', maxLength: 16 }, minutes: { type: 'integer', minimum: 0, maximum: 90 } },
      required: ['text'],
      additionalProperties: false,
    },
  },
};

test('generateObject: a JSON Schema object, validated', async () => {
  let valid = 0;
  const n = 8;
  await Promise.all(seeds(n).map(async (seed) => {
    try {
      const r = await generateObject({ ...settings, prompt: 'A recipe.', seed, schema: jsonSchema(recipeSchema),
                                       schemaName: 'recipe' });
      assert.equal(r.finishReason, 'stop');
      assertValid(recipeSchema, r.object, `seed ${seed}`);
      valid++;
    } catch (e) {
      // The SDK refuses a reply cut short by maxOutputTokens; nothing else may fail.
      assert.equal(e.finishReason, 'length', String(e));
    }
  }));
  assert.ok(valid >= 0.75 * n, `${valid} of ${n} valid`);
});

test('generateObject with a zod schema', async () => {
  // A pattern rather than .max(): zod counts UTF-16 code units, JSON Schema characters.
  const Item = z.object({ name: z.string().regex(/^[a-z]{1,10}$/), count: z.number().int().min(0).max(9),
                          tags: z.array(z.enum(['x', 'y'])).max(2), note: z.string().regex(/^[a-z ]{0,12}$/).optional() });
  let valid = 0;
  await Promise.all(seeds(4).map(async (seed) => {
    try {
      const r = await generateObject({ ...settings, prompt: 'An item.', seed, schema: Item });
      assert.ok(Item.safeParse(r.object).success, JSON.stringify(r.object));
      valid++;
    } catch (e) {
      assert.equal(e.finishReason, 'length', String(e));
    }
  }));
  assert.ok(valid >= 3, `${valid} of 4 valid`);
});

test('errors come back as APICallErrors naming the parameter', async () => {
  const param = (e) => JSON.parse(e.responseBody).error.param;
  await assert.rejects(generateObject({ ...settings, schema: jsonSchema({ type: 5 }) }),
                       (e) => APICallError.isInstance(e) && e.statusCode === 400 &&
                              param(e) === 'response_format.json_schema.schema');
  const { tools } = makeTools();
  const bad = { ...tools, broken: tool({ inputSchema: jsonSchema({ type: 'object', properties: {
    x: { type: 'string', contentEncoding: 'base64' } } }), execute: async () => 'no' }) };
  await assert.rejects(generateText({ ...settings, tools: bad, toolChoice: { type: 'tool', toolName: 'broken' } }),
                       (e) => APICallError.isInstance(e) && e.statusCode === 400 &&
                              /^tools\[\d\]\.function\.parameters$/.test(param(e)));
});
