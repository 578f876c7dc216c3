// Tool calling through the official openai npm client against a running
// `pagoda serve` (stories260K with tests/server/templates/tiny_tools.jinja,
// whose <tool_call> marker selects the hermes parser): forced calls (a named
// function, and `required`, written in hermes markup by the grammar) come
// back as parsed tool_calls whose arguments validate against the tool's
// schema (ajv), streamed and not, the streamed pieces assembling to the same
// call: per call the name first, then the arguments in more than one piece;
// a tool result sent back is rendered (the prompt grows); tool_choice none
// and auto answer with content; bad tools / tool_choice / template fields
// are 400s naming the field.
//
// FORM `plain`: a server whose template names no tool-call format; only the
// forced checks run (vLLM's plain JSON form, streamed the same way).
//
//   node tools.mjs BASE_URL [hermes|plain]
import OpenAI from 'openai';
import Ajv from 'ajv';

const [baseURL, form = 'hermes'] = process.argv.slice(2);
if (!baseURL || !['hermes', 'plain'].includes(form)) {
  console.error('usage: node tools.mjs BASE_URL [hermes|plain]');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
const ajv = new Ajv({ strict: false, allErrors: true });
const model = 'stories260K';

function check(cond, what, got) {
  if (!cond) {
    console.error(`MISMATCH: ${what}; got ${JSON.stringify(got)}`);
    process.exit(1);
  }
}

const weather = {
  type: 'object',
  properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] }, days: { type: 'integer', minimum: 1, maximum: 7 } },
  required: ['city', 'days'],
  additionalProperties: false,
};
const time = { type: 'object', properties: { utc: { type: 'boolean' } }, required: ['utc'], additionalProperties: false };
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: weather } },
  { type: 'function', function: { name: 'get_time', parameters: time } },
];
const schemaOf = { get_weather: weather, get_time: time };
const messages = [{ role: 'user', content: 'What is the weather?' }];
// Room for hermes markup around a call: stories260K spells it a few characters a token.
const base = { model, messages, tools, temperature: 0, max_tokens: 160 };
// Enough for one call and the head of a second (measured with greedy decoding).
const PARALLEL_TOKENS = 200;

function validCalls(calls, what, onlyName) {
  check(Array.isArray(calls) && calls.length >= 1, `${what}: tool_calls`, calls);
  for (const c of calls) {
    check(typeof c.id === 'string' && c.id.startsWith('call_') && c.type === 'function', `${what}: id and type`, c);
    check(c.function.name in schemaOf && (!onlyName || c.function.name === onlyName), `${what}: name`, c);
    const args = JSON.parse(c.function.arguments);
    check(ajv.validate(schemaOf[c.function.name], args), `${what}: arguments match the schema`, args);
  }
}

async function whole(params) {
  const r = await client.chat.completions.create({ ...base, ...params });
  return r;
}

// Assembles a stream as a client would: per call the first delta brings id,
// type and name (arguments ""), then arguments arrive in pieces (counted).
async function streamed(params) {
  const stream = await client.chat.completions.create({ ...base, ...params, stream: true });
  const calls = [];
  const pieces = [];
  let content = '';
  let finish = null;
  for await (const chunk of stream) {
    const ch = chunk.choices[0];
    if (!ch) continue;
    if (ch.delta.content) content += ch.delta.content;
    for (const d of ch.delta.tool_calls ?? []) {
      if (!calls[d.index]) {
        check(d.id && d.type === 'function' && d.function?.name && d.function.arguments === '',
              'a call starts with id, type, name and empty arguments', d);
        calls[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: '' } };
        pieces[d.index] = 0;
      } else {
        check(!d.id && !d.type && !d.function?.name && typeof d.function?.arguments === 'string',
              'later pieces carry only arguments', d);
        calls[d.index].function.arguments += d.function.arguments;
        pieces[d.index] += 1;
      }
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  return { calls, pieces, content, finish };
}

// A named function: exactly that call.
const named = { tool_choice: { type: 'function', function: { name: 'get_weather' } }, seed: 7 };
const n1 = await whole(named);
// OpenAI ends a named choice with 'stop' (required and auto: 'tool_calls').
check(n1.choices[0].finish_reason === 'stop', 'named: finish_reason', n1.choices[0]);
check(n1.choices[0].message.content === null, 'named: no content', n1.choices[0].message);
validCalls(n1.choices[0].message.tool_calls, 'named', 'get_weather');
check(n1.choices[0].message.tool_calls.length === 1, 'named: one call', n1.choices[0].message.tool_calls);
const n2 = await streamed(named);
check(n2.finish === 'stop' && n2.content === '', 'named stream: finish and no content', n2);
validCalls(n2.calls, 'named stream', 'get_weather');
check(n2.calls.length === 1 && n2.pieces[0] > 1, 'named stream: the name first, then arguments in pieces', n2);
check(n2.calls[0].function.arguments === n1.choices[0].message.tool_calls[0].function.arguments,
      'named: streamed arguments equal the whole ones (greedy)', [n2.calls, n1.choices[0].message.tool_calls]);

// required, one call (parallel_tool_calls false): any tool, whole and streamed alike.
const fn = (calls) => JSON.stringify(calls.map((c) => [c.function.name, c.function.arguments]));
const r1 = await whole({ tool_choice: 'required', parallel_tool_calls: false });
check(r1.choices[0].finish_reason === 'tool_calls', 'required: finish_reason', r1.choices[0]);
validCalls(r1.choices[0].message.tool_calls, 'required');
check(r1.choices[0].message.tool_calls.length === 1, 'required, not parallel: one call', r1.choices[0]);
const s1 = await streamed({ tool_choice: 'required', parallel_tool_calls: false });
validCalls(s1.calls, 'required stream');
check(s1.finish === 'tool_calls' && s1.content === '', 'required stream: finish and no content', s1);
check(s1.calls.length === 1 && s1.pieces[0] > 1, 'required stream: the name first, then arguments in pieces', s1);
check(fn(s1.calls) === fn(r1.choices[0].message.tool_calls), 'required: streamed calls equal the whole ones (greedy)',
      [s1.calls, r1.choices[0].message.tool_calls]);
// Parallel: the grammar lets the model go on to a second call (this one does,
// until max_tokens); a call cut off after its name stays a call, one cut off
// before it is content.
const r2 = await whole({ tool_choice: 'required', max_tokens: PARALLEL_TOKENS });
const calls2 = r2.choices[0].message.tool_calls ?? [];
check(r2.choices[0].finish_reason === 'length' && calls2.length >= 2,
      'required, parallel: a second call begins', r2.choices[0]);
validCalls(calls2.slice(0, 1), 'required, parallel: the first call');
const s2 = await streamed({ tool_choice: 'required', max_tokens: PARALLEL_TOKENS });
check(fn(s2.calls) === fn(calls2), 'required, parallel: streamed calls equal the whole ones', [s2.calls, calls2]);
if (form === 'plain') {
  console.log('tool calling checks passed (plain form)');
  process.exit(0);
}

// none and auto: the tiny model writes no call, so the answer is content.
for (const tool_choice of ['none', 'auto']) {
  const r = await whole({ tool_choice, max_tokens: 8 });
  check(typeof r.choices[0].message.content === 'string' && !r.choices[0].message.tool_calls, `${tool_choice}: content`, r.choices[0]);
}

// A tool result sent back is rendered: the prompt grows by it.
const call = n1.choices[0].message.tool_calls[0];
const history = [...messages, { role: 'assistant', content: null, tool_calls: [call] }];
const before = await client.chat.completions.create({ model, messages: history, tools, max_tokens: 2 });
const after = await client.chat.completions.create({
  model, tools, max_tokens: 2,
  messages: [...history, { role: 'tool', tool_call_id: call.id, content: '{"temperature": 21}' }],
});
check(after.usage.prompt_tokens > before.usage.prompt_tokens + 5, 'the tool result is in the prompt',
      [before.usage, after.usage]);

async function expect400(params, param, words) {
  try {
    await client.chat.completions.create({ ...base, max_tokens: 5, ...params });
    check(false, `a 400 for ${param}`, params);
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400, `BadRequestError for ${param}`, String(e));
    check(e.param === param, `error param for ${param}`, e.param);
    for (const w of words) check(e.message.includes(w), `error message for ${param} names '${w}'`, e.message);
  }
}
await expect400({ tools: [{ type: 'function', function: { description: 'no name' } }] }, 'tools', ['name']);
await expect400({ tools: [{ type: 'retrieval' }] }, 'tools', ['function']);
await expect400({ tools: [{ type: 'function', function: { name: 'f', parameters: 'x' } }] }, 'tools', ['parameters']);
await expect400({ tool_choice: 'sometimes' }, 'tool_choice', ['required']);
await expect400({ tool_choice: { type: 'function', function: { name: 'nope' } } }, 'tool_choice', ['nope']);
await expect400({ tools: undefined, tool_choice: 'required' }, 'tool_choice', ['tools']);
await expect400({ tool_choice: 'required', response_format: { type: 'json_object' } }, 'tool_choice', ['constraint']);
await expect400({ parallel_tool_calls: 'yes' }, 'parallel_tool_calls', ['boolean']);
await expect400({ continue_final_message: true, add_generation_prompt: true }, 'continue_final_message', ['add_generation_prompt']);
await expect400({ chat_template: '{% if %}' }, 'chat_template', []);
await expect400({ chat_template_kwargs: [1] }, 'chat_template_kwargs', ['object']);

// The server still serves after the refusals.
const last = await whole({ tool_choice: 'required', parallel_tool_calls: false });
validCalls(last.choices[0].message.tool_calls, 'after the 400s');
console.log('tool calling checks passed');
