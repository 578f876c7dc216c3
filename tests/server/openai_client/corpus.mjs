// A corpus of JSON Schemas end to end against a running `pagoda serve`
// (stories260K): developers' own schemas plus every schema of the JSON
// Schema Test Suite (npm json-schema-test-suite, draft 4) for the keywords
// the server supports or refuses. For each, strict response_format:
//   - 200: every output that finishes with `stop` parses and validates (ajv);
//   - 400: the error names a keyword of the schema (an unsupported one).
// Plus more regexes (outputs full-match) and choice lists (outputs are one of
// them). Requests run a few at a time; max_tokens is small.
//
//   node corpus.mjs BASE_URL
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';

const [baseURL] = process.argv.slice(2);
if (!baseURL) {
  console.error('usage: node corpus.mjs BASE_URL');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
// multipleOfPrecision: ajv divides in floating point (12.3456 / 0.0001 is not an integer there).
const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, multipleOfPrecision: 9 });
addFormats(ajv);
const failures = [];
const fail = (what, got) => failures.push(`${what}; got ${JSON.stringify(got)}`);

const int = (minimum, maximum) => ({ type: 'integer', minimum, maximum });
const str = (maxLength) => ({ type: 'string', maxLength });
const obj = (properties, required = Object.keys(properties)) => ({ type: 'object', properties, required });
const own = [
  obj({ name: str(12), age: int(0, 120) }),
  obj({ street: str(20), city: str(12), zip: { type: 'string', pattern: '^[0-9]{5}$' } }, ['city', 'zip']),
  obj({ sku: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{4}$' }, qty: int(1, 99), price: { type: 'number' } }, ['sku', 'qty']),
  obj({ when: { type: 'string', format: 'date-time' }, where: str(10) }, ['when']),
  obj({ at: { type: 'string', format: 'time' } }),
  obj({ email: { type: 'string', format: 'email' } }),
  obj({ id: { type: 'string', format: 'uuid' }, ok: { type: 'boolean' } }),
  obj({ ip: { type: 'string', format: 'ipv4' } }),
  { type: 'array', items: obj({ k: str(4), v: int(-50, 50) }), maxItems: 3 },
  { type: 'array', items: { enum: ['a', 'b', 'c'] }, minItems: 2, maxItems: 5 },
  { type: 'array', prefixItems: [int(0, 9), { type: 'boolean' }, { type: 'null' }], minItems: 3, maxItems: 3 },
  { enum: [1, 'two', null, true, { three: 3 }, [4]] },
  { const: { fixed: [1, 2, 3] } },
  { anyOf: [obj({ cat: str(5) }), obj({ dog: int(0, 9) })] },
  { oneOf: [{ type: 'null' }, obj({ only: { const: 'x' } })] },
  { allOf: [obj({ a: int(0, 9) }), obj({ b: str(3) }), obj({ c: { type: 'boolean' } }, [])] },
  { type: ['integer', 'string', 'null'], maxLength: 3, minimum: -5, maximum: 5 },
  { type: 'string', minLength: 3, maxLength: 3 },
  { type: 'integer', exclusiveMinimum: 10, exclusiveMaximum: 20 },
  { type: 'integer', minimum: -1000 },
  { type: 'number' },
  obj({ tags: { type: 'array', items: str(6), maxItems: 4 }, meta: { type: 'object', additionalProperties: { type: 'integer' } } }, ['tags']),
  obj({ x: { type: 'string', nullable: true, maxLength: 4 } }),
  { $defs: { leaf: int(0, 3), tree: { anyOf: [{ $ref: '#/$defs/leaf' }, { type: 'array', items: { $ref: '#/$defs/tree' }, maxItems: 2 }] } }, $ref: '#/$defs/tree' },
  { definitions: { pt: obj({ x: int(0, 9), y: int(0, 9) }) }, type: 'array', items: { $ref: '#/definitions/pt' }, maxItems: 2 },
  obj({ title: { type: 'string', title: 'A title', description: 'ignored annotations', default: 'x', examples: ['y'], maxLength: 8 } }),
  true,
  { type: 'object', additionalProperties: true, properties: { k: str(3) }, required: ['k'] },
  obj({ deep: obj({ deeper: obj({ deepest: { type: 'array', items: int(0, 1), maxItems: 2 } }) }) }),
  obj({ unicode: { type: 'string', pattern: '^[α-ω]{1,4}$' } }),
];

// The test suite's schemas for supported keywords (validated) and unsupported
// ones (refused). oneOf is left out: it is matched as anyOf (json_schema.cpp),
// so an output may match two branches. Draft 4's boolean exclusiveMaximum and
// remote refs are skipped (ajv 8 reads the newer drafts).
const suiteFiles = ['type', 'enum', 'properties', 'required', 'items', 'minItems', 'maxItems', 'minLength', 'maxLength',
  'minimum', 'maximum', 'allOf', 'anyOf', 'definitions', 'ref', 'pattern', 'additionalProperties', 'default',
  'not', 'multipleOf', 'uniqueItems', 'minProperties', 'maxProperties', 'patternProperties', 'dependencies'];
const require = createRequire(import.meta.url);
const suiteDir = require.resolve('json-schema-test-suite/package.json').replace(/package\.json$/, 'tests/draft4/');
const suite = [];
for (const f of suiteFiles)
  for (const group of require(`${suiteDir}${f}.json`)) {
    const text = JSON.stringify(group.schema);
    if (/"exclusiveM(in|ax)imum":(true|false)/.test(text) || /"(\$ref|id)":"http/.test(text)) continue;
    suite.push({ name: `${f}: ${group.description}`, schema: group.schema });
  }

const keysOf = (s, out = new Set()) => {
  if (Array.isArray(s)) s.forEach((x) => keysOf(x, out));
  else if (s && typeof s === 'object') for (const [k, v] of Object.entries(s)) out.add(k), keysOf(v, out);
  return out;
};

const models = [];
for await (const m of await client.models.list()) models.push(m.id);
const model = models[0];
let stops = 0, lengths = 0, refused = 0, accepted = 0;

async function completeOne(i, { name, schema }) {
  let validate;
  try { validate = ajv.compile(schema); } catch (e) { return fail(`${name}: ajv cannot compile the schema (${e.message})`, schema); }
  const params = {
    model, messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 48, temperature: 1, seed: i, n: 2,
    response_format: { type: 'json_schema', json_schema: { name: `c${i}`, schema, strict: true } },
  };
  let r;
  try {
    r = await client.chat.completions.create(params);
  } catch (e) {
    if (!(e instanceof OpenAI.BadRequestError)) return fail(`${name}: not a 400`, String(e));
    ++refused;
    if (process.env.CORPUS_VERBOSE) console.log(`refused ${name}: ${e.message}`);
    // "unsupported keyword 'K'", or a schema location ending in K ("JSON schema at '/items'").
    const named = [...keysOf(schema)].some((k) => e.message.includes(`'${k}'`) || e.message.includes(`/${k}'`));
    if (!named || e.param !== 'response_format.json_schema.schema') fail(`${name}: the 400 names no keyword of the schema`, e.message);
    return;
  }
  ++accepted;
  for (const c of r.choices) {
    if (c.finish_reason === 'length') { ++lengths; continue; }
    if (c.finish_reason !== 'stop') { fail(`${name}: finish_reason`, c.finish_reason); continue; }
    ++stops;
    let v;
    try { v = JSON.parse(c.message.content); } catch { fail(`${name}: output is not JSON`, c.message.content); continue; }
    if (!validate(v)) fail(`${name}: output fails the schema (${ajv.errorsText(validate.errors)})`, c.message.content);
  }
}

async function pool(items, width, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => { while (next < items.length) { const i = next++; await fn(i, items[i]); } }));
}

const corpus = [...own.map((schema, i) => ({ name: `own ${i}`, schema })), ...suite];
await pool(corpus, 6, completeOne);

// Regexes full-match; choices are one of the list.
const regexes = ['[a-z]{2,6}', '\\d{3}-\\d{4}', '(yes|no)!?', '[A-Z][a-z]+ [A-Z][a-z]+', '0x[0-9a-f]{1,8}', '(ab)*c', '\\w+@\\w+\\.com'];
const choices = [['alpha', 'beta', 'gamma'], ['1', '10', '100'], ['Once', 'Once upon', 'Once upon a time']];
const extra = [
  ...regexes.map((re) => [`regex ${re}`, { structured_outputs: { regex: re } }, (t) => new RegExp(`^(?:${re})$`).test(t)]),
  ...choices.map((cs) => [`choice ${cs}`, { structured_outputs: { choice: cs } }, (t) => cs.includes(t)]),
];
await pool(extra, 6, async (i, [name, body, ok]) => {
  const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 24, temperature: 1, seed: i, n: 3, ...body });
  for (const c of r.choices) {
    if (c.finish_reason === 'length') { ++lengths; continue; }
    ++stops;
    if (c.finish_reason !== 'stop' || !ok(c.text)) fail(`${name}: output`, c.text);
  }
});

if (corpus.length < 50) fail('a corpus of at least 50 schemas', corpus.length);
if (accepted < 40 || refused < 5) fail('enough schemas served and refused', { accepted, refused });
if (stops < 60) fail("enough 'stop' outputs to check", { stops, lengths });
if (failures.length) {
  for (const f of failures) console.error(`MISMATCH: ${f}`);
  process.exit(1);
}
console.log(`corpus checks passed (${corpus.length} schemas: ${accepted} served, ${refused} refused; ` +
  `${stops} stop outputs validated, ${lengths} ended by length)`);
