// Shared by the node tests: starts `glass serve` on the demo model (GLASS_BINARY and
// GLASS_MODEL come from CTest) on a free loopback port, stops it and checks it stopped
// cleanly; the tools and the JSON Schema validator the tool-call and structured-output
// tests share.
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import { jsonSchema, tool } from 'ai';
import { z } from 'zod';

export const MODEL = 'demo';

// Starts the server; resolves to { baseURL, stop, log }. stop() sends SIGTERM and asserts
// exit code 0.
export async function startGlass() {
  const binary = process.env.GLASS_BINARY;
  const modelDir = process.env.GLASS_MODEL;
  assert.ok(binary && modelDir, 'GLASS_BINARY and GLASS_MODEL must be set');
  const server = spawn(binary, ['serve', '-m', modelDir, '--model-name', MODEL, '--port', '0', '--parallel', '16',
                                '--threads', '2', '--quiet'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`glass serve did not start:\n${log}`)), 30000);
    server.stderr.on('data', (d) => {
      log += d;
      const m = log.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    server.on('exit', (code) => reject(new Error(`glass serve exited with ${code}:\n${log}`)));
  });
  const stop = async () => {
    if (server.exitCode !== null) return;
    const exited = new Promise((resolve) => server.on('exit', (code, signal) => resolve({ code, signal })));
    server.kill('SIGTERM');
    const { code } = await exited;
    assert.equal(code, 0, `glass serve should stop cleanly on SIGTERM:\n${log}`);
  };
  return { baseURL: `http://127.0.0.1:${port}`, stop, log: () => log };
}

// ajv in strict mode refuses unknown keywords, so a typo in a test schema is an error
// rather than a constraint nobody checks.
export const ajv = new Ajv({ strict: true, allErrors: true });

// Asserts that `value` validates against `schema` (compiled once per schema object).
const compiled = new WeakMap();
export function assertValid(schema, value, what) {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(schema, validate);
  }
  assert.ok(validate(value), `${what}: ${JSON.stringify(value)} does not validate: ${ajv.errorsText(validate.errors)}`);
}

// Two tools as applications describe them: one with constrained parameters, one without.
export const weatherParameters = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 20 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['city'],
  additionalProperties: false,
};
// A function without parameters takes {}.
export const timeParameters = { type: 'object', properties: {}, additionalProperties: false };

export const openaiTools = [
  { type: 'function', function: { name: 'get_weather', description: 'The weather in a city',
                                   parameters: weatherParameters } },
  { type: 'function', function: { name: 'get_time', description: 'The time now' } },
];
export const parametersOf = { get_weather: weatherParameters, get_time: timeParameters };

// The tools, "run" by the test.
export const runTool = {
  get_weather: ({ city, unit = 'celsius' }) => ({ city, unit, temperature: unit === 'celsius' ? 21 : 70 }),
  get_time: () => ({ time: '12:00' }),
};

// Reads a whole text/event-stream body: its events as { event, data } (`event` null when
// the block had no event: line; `data` the joined data: lines, not parsed) and `raw`, the
// body, for what a parser would hide (a [DONE] line).
export async function readSSE(response) {
  const raw = await response.text();
  const events = [];
  for (const block of raw.split(/\r?\n\r?\n/)) {
    let event = null;
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (event !== null || data.length > 0) events.push({ event, data: data.join('\n') });
  }
  return { raw, events };
}

// POSTs a JSON body; resolves to the fetch Response.
export function postJSON(url, body) {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

// 1, 2, ... n (from `from`): the seeds a test runs over.
export const seeds = (n, from = 1) => Array.from({ length: n }, (_, i) => from + i);

// The tools for the AI SDK, with the inputs their execute saw (checked against the schemas with ajv).
export function makeTools() {
  const seen = [];
  const tools = {
    get_weather: tool({
      description: 'The weather in a city',
      inputSchema: jsonSchema(weatherParameters),
      execute: async (input) => {
        assertValid(weatherParameters, input, 'get_weather input');
        seen.push({ name: 'get_weather', input });
        return runTool.get_weather(input);
      },
    }),
    // A zod schema: the SDK sends its JSON Schema.
    get_time: tool({
      description: 'The time now',
      inputSchema: z.object({}).strict(),
      execute: async (input) => {
        assertValid(timeParameters, input, 'get_time input');
        seen.push({ name: 'get_time', input });
        return runTool.get_time(input);
      },
    }),
  };
  return { tools, seen };
}

// The parts of an AI SDK streamText result with tools: the calls, each call's streamed
// input (by call id: the tool's name and the joined deltas) and the text; asserts that no
// error part came.
export async function readToolStream(result) {
  const inputs = new Map();
  const calls = [];
  const errors = [];
  let text = '';
  for await (const part of result.fullStream) {
    if (part.type === 'tool-input-start') inputs.set(part.id, { name: part.toolName, text: '' });
    if (part.type === 'tool-input-delta') inputs.get(part.id).text += part.delta;
    if (part.type === 'tool-call') calls.push(part);
    if (part.type === 'text-delta') text += part.text;
    if (part.type === 'error' || part.type === 'tool-error') errors.push(part);
  }
  assert.deepEqual(errors, []);
  return { calls, inputs, text };
}

// Each call is valid, and its streamed input deltas join to its input.
export function assertStreamedCalls(calls, inputs) {
  for (const call of calls) {
    assert.ok(!call.invalid, JSON.stringify(call));
    const input = inputs.get(call.toolCallId);
    assert.ok(input, `the input of ${call.toolCallId} streamed`);
    assert.equal(input.name, call.toolName);
    assert.deepEqual(JSON.parse(input.text), call.input);
  }
}
