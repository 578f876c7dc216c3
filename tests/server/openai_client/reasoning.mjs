// A <think> reasoning model through the official openai client, against
// `pagoda serve` on a synthetic model carrying the real Qwen3.5 chat template
// (tests/server/reasoning_test.cpp), whose generation prompt opens
// "<think>\n". Random weights never close the reasoning by themselves, so a
// logit_bias on the </think> token (a control token here) decides where the
// thinking ends: the first bias found that lets the model think a while
// before it closes is used throughout (seeded sampling: the same output each time).
// The grammar (structured_outputs.grammar, response_format, a forced tool)
// applies only after </think>, so the reasoning is the model's own and the
// content is forced. Checked whole and streamed:
//   - cut off by max_tokens inside the reasoning: reasoning only (and
//     `reasoning` beside reasoning_content), content null, finish "length";
//   - reasoning then a grammar's sentence as content; streamed, reasoning
//     deltas of their own first, then content;
//   - response_format json_schema and a forced (named) tool call after the
//     reasoning: the JSON parses and keeps the schema;
//   - chat_template_kwargs {"enable_thinking": false}: no reasoning, and the
//     grammar applies from the first token.
//
//   node reasoning.mjs BASE_URL THINK_END_TOKEN_ID
import OpenAI from 'openai';

const [baseURL, thinkEnd] = process.argv.slice(2);
if (!baseURL || !thinkEnd) {
  console.error('usage: node reasoning.mjs BASE_URL THINK_END_TOKEN_ID');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });

function check(cond, what, got) {
  if (!cond) {
    console.error(`MISMATCH: ${what}; got ${JSON.stringify(got)}`);
    process.exit(1);
  }
}

const models = [];
for await (const m of await client.models.list()) models.push(m.id);
const model = models[0];

const exactly = (text) => ({ structured_outputs: { grammar: `root ::= "${text}"` } });
const bias = (b) => ({ logit_bias: { [thinkEnd]: b } });
const ask = [{ role: 'user', content: 'What is six times seven?' }];

async function whole(params) {
  const r = await client.chat.completions.create({ model, temperature: 1, seed: 11, ...params });
  check(r.object === 'chat.completion' && r.choices.length === 1, 'a chat completion', r);
  const m = r.choices[0].message;
  check(m.reasoning === m.reasoning_content, 'reasoning beside reasoning_content', m);
  return r.choices[0];
}

async function streamed(params) {
  const stream = await client.chat.completions.create({ model, temperature: 1, seed: 11, ...params, stream: true });
  const out = { reasoning: '', content: '', calls: [], finish: null, order: [] };
  const first = (field) => out.order.includes(field) || out.order.push(field);
  for await (const chunk of stream) {
    const ch = chunk.choices[0];
    if (!ch) continue;
    const d = ch.delta;
    if (d.reasoning_content !== undefined) {
      check(d.reasoning === d.reasoning_content, 'streamed: reasoning beside reasoning_content', d);
      check(d.content === undefined && d.tool_calls === undefined, 'reasoning in deltas of its own', d);
      out.reasoning += d.reasoning_content;
      first('reasoning');
    }
    if (d.content) {
      out.content += d.content;
      first('content');
    }
    for (const t of d.tool_calls ?? []) {
      first('tool_calls');
      if (!out.calls[t.index]) out.calls[t.index] = { name: t.function.name, arguments: '' };
      out.calls[t.index].arguments += t.function?.arguments ?? '';
    }
    if (ch.finish_reason) out.finish = ch.finish_reason;
  }
  return out;
}

// Cut off by max_tokens inside the reasoning.
const cut = await whole({ messages: ask, max_tokens: 12 });
check(cut.finish_reason === 'length', 'cut off: finish length', cut);
check(cut.message.content === null, 'cut off: no content', cut.message);
check(typeof cut.message.reasoning_content === 'string' && cut.message.reasoning_content.length > 0,
      'cut off: the reasoning so far', cut.message);
const cutS = await streamed({ messages: ask, max_tokens: 12 });
check(cutS.finish === 'length' && cutS.content === '' && cutS.reasoning === cut.message.reasoning_content,
      'cut off, streamed: the same', cutS);

// The bias at which the model thinks a while, then closes: reasoning and the forced sentence.
const sentence = 'Six times seven is 42.';
let found = null;
for (const b of [1, 2, 4, 6, 8, 9, 10, 11, 12, 13, 14]) {
  const c = await whole({ messages: ask, max_tokens: 160, ...bias(b), ...exactly(sentence) });
  if (c.finish_reason === 'stop' && c.message.reasoning_content && c.message.content === sentence) {
    found = { b, reasoning: c.message.reasoning_content };
    break;
  }
}
check(found !== null, 'some bias lets the model think, then close (the grammar waits for </think>)', found);
check(!found.reasoning.includes('</think>'), 'the tag is not in the reasoning', found);
const s = await streamed({ messages: ask, max_tokens: 160, ...bias(found.b), ...exactly(sentence) });
check(s.finish === 'stop' && s.reasoning === found.reasoning && s.content === sentence, 'streamed: the same fields', s);
check(JSON.stringify(s.order) === '["reasoning","content"]', 'streamed: reasoning first, then content', s.order);
// Closed at once: no reasoning (null), the sentence.
const now = await whole({ messages: ask, max_tokens: 160, ...bias(100), ...exactly(sentence) });
check(now.message.reasoning_content === null && now.message.content === sentence, 'empty reasoning: null', now.message);

// Structured outputs after the reasoning.
// The answer's only value is 42: the JSON closes (random weights would write digits forever).
const forty2 = { type: 'object', properties: { answer: { enum: [42] } }, required: ['answer'], additionalProperties: false };
const js = await whole({
  messages: ask,
  max_tokens: 200,
  ...bias(found.b),
  response_format: { type: 'json_schema', json_schema: { name: 'answer', schema: forty2, strict: true } },
});
check(js.message.reasoning_content === found.reasoning, 'json_schema: the same reasoning', js.message);
check(js.finish_reason === 'stop', 'json_schema: finish stop', js);
check(JSON.parse(js.message.content).answer === 42, 'json_schema: the schema holds', js.message);

// A forced tool call after the reasoning: the call parser reads the content only.
const tools = [{ type: 'function', function: { name: 'multiply', parameters: forty2 } }];
const named = { type: 'function', function: { name: 'multiply' } };
// The tools change the prompt, so the bias is looked for again.
let call = null;
let callBias = null;
for (let b = 8; b <= 16; b += 0.5) {
  const c = await whole({ messages: ask, tools, tool_choice: named, max_tokens: 200, ...bias(b) });
  if (c.finish_reason === 'stop' && c.message.reasoning_content && c.message.tool_calls?.length) {
    [call, callBias] = [c, b];
    break;
  }
}
check(call !== null, 'forced call: some bias lets the model think, then call', call);
check(call.message.tool_calls.length === 1 && call.message.tool_calls[0].function.name === 'multiply',
      'forced call: one call', call.message);
check(call.message.content === null, 'forced call: no content', call.message);
const args = JSON.parse(call.message.tool_calls[0].function.arguments);
check(args.answer === 42, 'forced call: arguments keep the schema', args);
const callS = await streamed({ messages: ask, tools, tool_choice: named, max_tokens: 200, ...bias(callBias) });
check(callS.reasoning === call.message.reasoning_content && callS.calls[0]?.name === 'multiply',
      'forced call, streamed', callS);
check(callS.calls[0].arguments === call.message.tool_calls[0].function.arguments, 'streamed: the same arguments', callS);
check(JSON.stringify(callS.order) === '["reasoning","tool_calls"]', 'streamed: reasoning, then the call', callS.order);

// Thinking off: no reasoning, and the grammar holds from the first token.
const off = { chat_template_kwargs: { enable_thinking: false } };
const o = await whole({ messages: ask, max_tokens: 160, ...off, ...exactly(sentence) });
check(o.finish_reason === 'stop' && o.message.content === sentence && o.message.reasoning_content === null,
      'thinking off: the sentence, no reasoning', o);
const os = await streamed({ messages: ask, max_tokens: 160, ...off, ...exactly(sentence) });
check(os.content === sentence && os.reasoning === '' && os.finish === 'stop', 'thinking off, streamed', os);
const free = await whole({ messages: ask, max_tokens: 8, ...off });
check(free.message.reasoning_content === null && typeof free.message.content === 'string', 'thinking off, free', free);

console.log('reasoning checks passed');
