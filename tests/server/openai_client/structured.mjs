// Structured outputs through the official openai npm client against a
// running `pagoda serve` (stories260K, a model that never writes JSON by
// itself): every output that finishes with `stop` must parse and validate
// against its JSON Schema (ajv), full-match its regex, be one of its
// choices, or parse under its grammar (a small reference parser here).
// Covers response_format json_schema / json_object on chat and completions,
// streaming and not, n > 1, logprobs, vLLM's and llama.cpp's spellings, and
// bad constraints (400 naming the problem, the server still serving after).
//
//   node structured.mjs BASE_URL
import OpenAI from 'openai';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const [baseURL] = process.argv.slice(2);
if (!baseURL) {
  console.error('usage: node structured.mjs BASE_URL');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
// multipleOfPrecision: ajv divides in floating point (12.3456 / 0.0001 is not an integer there).
const ajv = new Ajv({ strict: false, allErrors: true, multipleOfPrecision: 9 });
addFormats(ajv);

function check(cond, what, got) {
  if (!cond) {
    console.error(`MISMATCH: ${what}; got ${JSON.stringify(got)}`);
    process.exit(1);
  }
}

const int = (minimum, maximum) => ({ type: 'integer', minimum, maximum });
const schemas = [
  { type: 'object', properties: { name: { type: 'string', maxLength: 10 }, age: int(0, 120) }, required: ['name', 'age'] },
  { type: 'string', enum: ['red', 'green', 'blue'] },
  { type: 'array', items: int(0, 9), minItems: 1, maxItems: 4 },
  { type: 'boolean' },
  {
    type: 'object',
    properties: { id: int(1, 999), tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 3 }, ok: { type: 'boolean' } },
    required: ['id', 'ok'],
  },
  { type: 'object', properties: { kind: { const: 'point' }, x: int(-9, 9), y: int(-9, 9) }, required: ['kind', 'x', 'y'] },
  { anyOf: [int(0, 100), { type: 'string', maxLength: 4 }, { type: 'null' }] },
  { type: 'object', properties: { d: { type: 'string', format: 'date' } }, required: ['d'] },
  { type: 'string', format: 'uuid' },
  { type: 'string', pattern: '^[A-Z]{2}-[0-9]{3}$' },
  {
    $defs: { node: { type: 'object', properties: { v: int(0, 9), next: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } }, required: ['v', 'next'] } },
    $ref: '#/$defs/node',
  },
  { type: 'array', prefixItems: [{ type: 'string', maxLength: 3 }, int(0, 9)], minItems: 2, maxItems: 2 },
  { type: 'string', format: 'ipv4' },
  {
    allOf: [
      { type: 'object', properties: { a: int(0, 5) }, required: ['a'] },
      { type: 'object', properties: { b: { type: 'boolean' } }, required: ['b'] },
    ],
  },
  { type: ['string', 'null'], maxLength: 6 },
  { type: 'object', properties: { p: { type: 'string', enum: ['x', 'y'] }, q: { type: 'array', items: { const: 1 }, maxItems: 2 } }, required: ['p', 'q'] },
  // Number bounds and multipleOf (issue 37): zod's .min(1).max(5), .positive(), cents.
  {
    type: 'object',
    properties: {
      rating: { type: 'number', minimum: 1, maximum: 5 },
      score: { type: 'number', exclusiveMinimum: -0.5, exclusiveMaximum: 0.75 },
      price: { type: 'number', exclusiveMinimum: 0, maximum: 100, multipleOf: 0.01 },
      n: { type: 'integer', minimum: -20, exclusiveMaximum: 40, multipleOf: 3 },
    },
    required: ['rating', 'score', 'price', 'n'],
  },
  // String formats, and zod 4's hostname with its lookahead pattern.
  {
    type: 'object',
    properties: {
      host: { type: 'string', format: 'hostname', pattern: '^(?=.{1,253}\\.?$)[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\\.[a-zA-Z0-9](?:[-0-9a-zA-Z]{0,61}[0-9a-zA-Z])?)*\\.?$' },
      dur: { type: 'string', format: 'duration' },
      ip6: { type: 'string', format: 'ipv6' },
      at: { type: 'string', format: 'date-time' },
      mail: { type: 'string', format: 'email' },
    },
    required: ['host', 'dur', 'ip6', 'at', 'mail'],
  },
];

const models = [];
for await (const m of await client.models.list()) models.push(m.id);
const model = models[0];
const prompt = 'Once upon a time';
const messages = [{ role: 'user', content: prompt }];
let stops = 0, lengths = 0;

// Collects each choice's text and finish_reason, streamed or not.
async function run(api, params) {
  if (!params.stream) {
    const r = api === 'chat' ? await client.chat.completions.create({ model, messages, ...params })
                             : await client.completions.create({ model, prompt, ...params });
    return r.choices.map((c) => ({ text: api === 'chat' ? c.message.content : c.text, finish: c.finish_reason, c }));
  }
  const stream = api === 'chat' ? await client.chat.completions.create({ model, messages, ...params })
                                : await client.completions.create({ model, prompt, ...params });
  const out = [];
  for await (const chunk of stream)
    for (const c of chunk.choices) {
      out[c.index] ??= { text: '', finish: null };
      out[c.index].text += (api === 'chat' ? c.delta.content : c.text) ?? '';
      if (c.finish_reason) out[c.index].finish = c.finish_reason;
    }
  return out;
}

function expectValid(outs, what, valid) {
  for (const o of outs) {
    check(o.finish === 'stop' || o.finish === 'length', `${what}: finish_reason`, o);
    if (o.finish === 'length') { ++lengths; continue; }
    ++stops;
    check(valid(o.text), `${what}: a 'stop' output in the language`, o.text);
  }
}
const jsonValid = (schema) => (text) => {
  let v;
  try { v = JSON.parse(text); } catch { return false; }
  return ajv.validate(schema, v);
};

// response_format json_schema over both APIs, streamed and not, n > 1.
for (let i = 0; i < schemas.length; ++i) {
  const api = i % 2 ? 'completions' : 'chat';
  const params = {
    max_tokens: 120, temperature: i % 3 === 0 ? 0 : 1, seed: i, n: i % 4 === 1 ? 2 : 1, stream: i % 4 >= 2,
    response_format: { type: 'json_schema', json_schema: { name: `s${i}`, schema: schemas[i], strict: true } },
  };
  expectValid(await run(api, params), `schema ${i} (${api})`, jsonValid(schemas[i]));
}

// Property order as the schema gives it (compact output, no spaces).
{
  const schema = { type: 'object', properties: { zeta: int(0, 9), alpha: int(0, 9) }, required: ['zeta', 'alpha'] };
  const [o] = await run('chat', { max_tokens: 40, temperature: 0, response_format: { type: 'json_schema', json_schema: { name: 'o', schema } } });
  check(o.finish === 'stop' && /^\{"zeta":\d,"alpha":\d\}$/.test(o.text), 'property order and compact whitespace', o.text);
}

// json_object, with logprobs of the masked distribution.
{
  const [o] = await run('chat', { max_tokens: 60, temperature: 1, seed: 7, logprobs: true, top_logprobs: 3, response_format: { type: 'json_object' } });
  if (o.finish === 'stop') check(typeof JSON.parse(o.text) === 'object', 'json_object output', o.text);
  // Bounded whitespace: a gap is one space, or one newline and at most 20 spaces / tabs.
  const gaps = o.text.replace(/"(?:[^"\\]|\\.)*"/g, '""').match(/[ \t\n\r]+/g) ?? [];
  if (o.finish === 'stop') check(gaps.every((g) => /^( |\n[ \t]{0,20})$/.test(g)), 'json_object whitespace gaps', o.text);
  const lps = o.c.logprobs.content;
  check(lps.length > 0 && lps.every((t) => Number.isFinite(t.logprob) && t.top_logprobs.every((x) => Number.isFinite(x.logprob))), 'finite logprobs', lps);
}

// vLLM's and llama.cpp's spellings.
const regexValid = (re) => (t) => new RegExp(`^(?:${re})$`).test(t);
const choiceValid = (cs) => (t) => cs.includes(t);
// llama.cpp-style arithmetic grammar and its reference parser (a recursive descent).
const gbnf = 'root ::= expr\nexpr ::= term (("+" | "-") term)*\nterm ::= num | "(" expr ")"\nnum ::= [0-9]{1,3}\n';
const arith = (t) => {
  let i = 0;
  const term = () => {
    if (t[i] === '(') { ++i; if (!expr() || t[i] !== ')') return false; ++i; return true; }
    const m = /^[0-9]{1,3}/.exec(t.slice(i));
    if (!m) return false;
    i += m[0].length;
    return !/^[0-9]/.test(t.slice(i));
  };
  const expr = () => { if (!term()) return false; while (t[i] === '+' || t[i] === '-') { ++i; if (!term()) return false; } return true; };
  return expr() && i === t.length;
};
const objSchema = schemas[0];
const spellings = [
  ['structured_outputs.json', { structured_outputs: { json: objSchema } }, jsonValid(objSchema)],
  ['structured_outputs.regex', { structured_outputs: { regex: '[0-9]{3}-[a-z]{2,4}' } }, regexValid('[0-9]{3}-[a-z]{2,4}')],
  ['structured_outputs.choice', { structured_outputs: { choice: ['yes', 'no', 'maybe'] } }, choiceValid(['yes', 'no', 'maybe'])],
  ['structured_outputs.grammar', { structured_outputs: { grammar: gbnf } }, arith],
  ['structured_outputs.json_object', { structured_outputs: { json_object: true } }, (t) => typeof JSON.parse(t) === 'object'],
  ['guided_json', { guided_json: schemas[4] }, jsonValid(schemas[4])],
  ['guided_regex', { guided_regex: '(ab|cd)+!' }, regexValid('(ab|cd)+!')],
  ['guided_choice', { guided_choice: ['cat', 'dog'] }, choiceValid(['cat', 'dog'])],
  ['guided_grammar', { guided_grammar: gbnf }, arith],
  ['grammar (llama.cpp)', { grammar: gbnf }, arith],
  ['json_schema (llama.cpp)', { json_schema: schemas[5] }, jsonValid(schemas[5])],
];
for (const [i, [what, extra, valid]] of spellings.entries()) {
  const api = i % 2 ? 'completions' : 'chat';
  expectValid(await run(api, { max_tokens: 60, temperature: 1, seed: i, n: 2, stream: i % 3 === 0, ...extra }), what, valid);
}

// Bad constraints: a 400 naming the field and the problem.
async function expect400(params, param, words) {
  try {
    await client.chat.completions.create({ model, messages, max_tokens: 5, ...params });
    check(false, `a 400 for ${param}`, params);
  } catch (e) {
    check(e instanceof OpenAI.BadRequestError && e.status === 400, `BadRequestError for ${param}`, String(e));
    check(e.param === param, `error param for ${param}`, e.param);
    for (const w of words) check(e.message.includes(w), `error message for ${param} names '${w}'`, e.message);
  }
}
await expect400({ response_format: { type: 'json_schema', json_schema: { name: 'x', strict: true, schema: { type: 'string', contentEncoding: 'base64' } } } },
  'response_format.json_schema.schema', ['contentEncoding']);
await expect400({ guided_regex: '(ab' }, 'guided_regex', ['guided_regex']);
// 150 x 150 ways to place the next 'a': refused before any step, not a stalled engine.
await expect400({ guided_regex: '((a?){150}){150}b' }, 'guided_regex', ['too ambiguous']);
await expect400({ guided_grammar: 'root ::= missing' }, 'guided_grammar', ['missing']);
await expect400({ structured_outputs: { json: { type: 'integer', minimum: 'x' } } }, 'structured_outputs.json', ['minimum']);
await expect400({ response_format: { type: 'json_object' }, guided_regex: 'a+' }, 'guided_regex', ['response_format', 'guided_regex']);
await expect400({ response_format: { type: 'yaml' } }, 'response_format', ['yaml']);

// The engine is untouched: a plain request still works.
const after = await client.chat.completions.create({ model, messages, max_tokens: 8, temperature: 0 });
check(after.choices[0].finish_reason === 'length' && after.choices[0].message.content.length > 0, 'serving after bad requests', after);
check(stops >= 20, "enough 'stop' outputs to check", { stops, lengths });
console.log(`structured output checks passed (${stops} stop outputs validated, ${lengths} ended by length)`);
