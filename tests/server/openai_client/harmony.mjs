// gpt-oss's harmony output through the official openai client, against
// `pagoda serve` on a synthetic gpt-oss model that carries the real gpt-oss
// chat template (tests/server/gpt_oss_test.cpp). Random weights write no
// harmony by themselves, so each request forces its output text with a GBNF
// grammar (structured_outputs.grammar): the markers are control tokens the
// grammar spells out with ordinary ones, and the text reads the same. Checked
// whole and streamed (greedy: the same text):
//   - analysis then final: reasoning_content (and `reasoning`) and content,
//     finish_reason "stop"; streamed, reasoning comes in deltas of its own
//     before the content;
//   - analysis then a tool call: tool_calls with the parsed arguments,
//     content null, finish_reason "tool_calls"; streamed, the call's id, type
//     and name first, then its arguments in pieces;
//   - the tool's result sent back (with the turn's reasoning_content) and a
//     final answer;
//   - cut off by max_tokens inside the analysis: the reasoning so far, no
//     content, finish_reason "length".
//
//   node harmony.mjs BASE_URL
import OpenAI from 'openai';

const [baseURL] = process.argv.slice(2);
if (!baseURL) {
  console.error('usage: node harmony.mjs BASE_URL');
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

// A GBNF grammar whose only sentence is `text`.
const exactly = (text) => ({
  structured_outputs: { grammar: `root ::= "${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"` },
});

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer' } },
        required: ['city'],
      },
    },
  },
];

async function whole(params) {
  const r = await client.chat.completions.create({ model, temperature: 0, ...params });
  check(r.object === 'chat.completion' && r.choices.length === 1, 'a chat completion', r);
  return r.choices[0];
}

// A stream folded as a client folds it, with the order of the fields' first deltas.
async function streamed(params) {
  const stream = await client.chat.completions.create({ model, temperature: 0, ...params, stream: true });
  const out = { reasoning: '', content: '', calls: [], pieces: [], finish: null, order: [] };
  const first = (field) => out.order.includes(field) || out.order.push(field);
  for await (const chunk of stream) {
    const ch = chunk.choices[0];
    if (!ch) continue;
    const d = ch.delta;
    if (d.reasoning_content !== undefined) {
      check(d.reasoning === d.reasoning_content, 'reasoning beside reasoning_content', d);
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
      if (!out.calls[t.index]) {
        check(t.id && t.type === 'function' && t.function?.name && t.function.arguments === '',
              'a call starts with id, type, name and empty arguments', t);
        out.calls[t.index] = { id: t.id, type: t.type, function: { name: t.function.name, arguments: '' } };
        out.pieces[t.index] = 0;
      } else {
        check(!t.id && !t.function?.name && typeof t.function?.arguments === 'string', 'later pieces: arguments', t);
        out.calls[t.index].function.arguments += t.function.arguments;
        out.pieces[t.index] += 1;
      }
    }
    if (ch.finish_reason) out.finish = ch.finish_reason;
  }
  return out;
}

const ask = [{ role: 'user', content: 'Hello! What is the weather in Paris?' }];

// Analysis, then the final answer.
const thought = 'The user greets me and asks about the weather.';
const answer = 'Hello! I cannot see the sky from here.';
const final = exactly(`<|channel|>analysis<|message|>${thought}<|end|><|start|>assistant<|channel|>final<|message|>${answer}`);
const a = await whole({ messages: ask, max_tokens: 400, ...final });
check(a.message.reasoning_content === thought && a.message.reasoning === thought, 'analysis: reasoning_content', a.message);
check(a.message.content === answer, 'final: content', a.message);
check(!a.message.tool_calls?.length && a.finish_reason === 'stop', 'no calls, finish stop', a);
const as = await streamed({ messages: ask, max_tokens: 400, ...final });
check(as.reasoning === thought && as.content === answer && as.finish === 'stop', 'streamed: the same fields', as);
check(JSON.stringify(as.order) === '["reasoning","content"]', 'streamed: reasoning first, then content', as.order);

// Analysis, then a tool call (with tools, tool_choice auto).
const why = 'Need the weather: call get_weather.';
const args = { city: 'Paris', days: 2 };
const callText = exactly(
  `<|channel|>analysis<|message|>${why}<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather ` +
    `<|constrain|>json<|message|>${JSON.stringify(args)}`,
);
const c = await whole({ messages: ask, tools, max_tokens: 400, ...callText });
check(c.finish_reason === 'tool_calls', 'call: finish_reason', c);
check(c.message.content === null && c.message.reasoning_content === why, 'call: no content, the reasoning', c.message);
const calls = c.message.tool_calls;
check(calls?.length === 1 && calls[0].type === 'function' && calls[0].id.startsWith('call_'), 'call: one call', calls);
check(calls[0].function.name === 'get_weather', 'call: name', calls[0]);
check(JSON.stringify(JSON.parse(calls[0].function.arguments)) === JSON.stringify(args), 'call: arguments', calls[0]);
const cs = await streamed({ messages: ask, tools, max_tokens: 400, ...callText });
check(cs.finish === 'tool_calls' && cs.content === '' && cs.reasoning === why, 'streamed call: finish, fields', cs);
check(cs.calls.length === 1 && cs.calls[0].function.name === 'get_weather', 'streamed call: name', cs.calls);
check(cs.calls[0].function.arguments === calls[0].function.arguments, 'streamed call: the same arguments', cs.calls);
check(cs.pieces[0] > 1, 'streamed call: arguments in pieces', cs.pieces);
check(JSON.stringify(cs.order) === '["reasoning","tool_calls"]', 'streamed call: reasoning, then the call', cs.order);

// The result goes back with the turn's reasoning; the model answers.
const history = [
  ...ask,
  { role: 'assistant', content: null, reasoning_content: why, tool_calls: calls },
  { role: 'tool', tool_call_id: calls[0].id, content: '{"sky": "clear", "high": 21}' },
];
const done = 'Clear skies in Paris, up to 21 degrees.';
const f = await whole({ messages: history, tools, reasoning_effort: 'high', max_tokens: 400, ...exactly(`<|channel|>final<|message|>${done}`) });
check(f.message.content === done && f.message.reasoning_content === null, 'after the result: the answer', f.message);
check(f.finish_reason === 'stop' && !f.message.tool_calls?.length, 'after the result: finish stop', f);

// Cut off by max_tokens inside the analysis: what was thought so far.
const long = 'I am thinking about the weather in Paris and what a good answer is. '.repeat(4);
const cut = exactly(`<|channel|>analysis<|message|>${long}<|end|><|start|>assistant<|channel|>final<|message|>ok`);
const t = await whole({ messages: ask, max_tokens: 60, ...cut });
check(t.finish_reason === 'length', 'cut off: finish length', t);
check(t.message.content === null && !t.message.tool_calls?.length, 'cut off: no content', t.message);
const sofar = t.message.reasoning_content;
check(typeof sofar === 'string' && sofar.length > 0 && long.startsWith(sofar), 'cut off: the reasoning so far', sofar);
const ts = await streamed({ messages: ask, max_tokens: 60, ...cut });
check(ts.finish === 'length' && ts.reasoning === sofar && ts.content === '', 'cut off, streamed: the same', ts);

console.log('harmony checks passed');
