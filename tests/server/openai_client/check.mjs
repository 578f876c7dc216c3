// Drives a running `pagoda serve` with the official openai npm client and
// checks what the client parsed: a completion, a chat completion, a streamed
// chat completion (greedy, against llama.cpp's reference text for
// stories260K), and an error. Exits non-zero on the first mismatch.
//
//   node check.mjs BASE_URL REFERENCE_JSON     (BASE_URL like http://127.0.0.1:8000/v1)
import OpenAI from 'openai';
import { readFileSync } from 'node:fs';

const [baseURL, referencePath] = process.argv.slice(2);
if (!baseURL || !referencePath) {
  console.error('usage: node check.mjs BASE_URL REFERENCE_JSON');
  process.exit(2);
}
const ref = JSON.parse(readFileSync(referencePath, 'utf8')).results[0];
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });

function check(cond, what, got) {
  if (!cond) {
    console.error(`MISMATCH: ${what}; got ${JSON.stringify(got)}`);
    process.exit(1);
  }
}

const models = [];
for await (const m of await client.models.list()) models.push(m.id);
check(models.length === 1, 'one served model', models);
const model = models[0];

const completion = await client.completions.create({ model, prompt: ref.prompt, max_tokens: 64, temperature: 0 });
check(completion.object === 'text_completion', 'completion object', completion.object);
check(completion.model === model, 'completion model', completion.model);
check(completion.choices[0].text === ref.output_text, 'completion text', completion.choices[0].text);
check(completion.choices[0].finish_reason === 'length', 'completion finish_reason', completion.choices[0].finish_reason);
check(completion.usage.prompt_tokens === ref.prompt_token_ids.length, 'completion prompt_tokens', completion.usage);
check(completion.usage.completion_tokens === 64, 'completion completion_tokens', completion.usage);

const messages = [{ role: 'user', content: ref.prompt }];
const chat = await client.chat.completions.create({ model, messages, max_completion_tokens: 64, temperature: 0 });
check(chat.object === 'chat.completion', 'chat object', chat.object);
check(chat.choices[0].message.role === 'assistant', 'chat role', chat.choices[0].message);
check(chat.choices[0].message.content === ref.output_text, 'chat content', chat.choices[0].message.content);
check(chat.choices[0].finish_reason === 'length', 'chat finish_reason', chat.choices[0].finish_reason);
check(chat.usage.completion_tokens === 64, 'chat completion_tokens', chat.usage);

const stream = await client.chat.completions.create({
  model, messages, max_tokens: 64, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let text = '', role = null, finish = null, usage = null, chunks = 0;
for await (const chunk of stream) {
  ++chunks;
  check(chunk.object === 'chat.completion.chunk', 'chunk object', chunk.object);
  if (chunk.usage) usage = chunk.usage;
  for (const choice of chunk.choices) {
    if (choice.delta.role) role ??= choice.delta.role;
    if (choice.delta.content) text += choice.delta.content;
    if (choice.finish_reason) finish = choice.finish_reason;
  }
}
check(chunks > 3, 'several chunks', chunks);
check(role === 'assistant', 'streamed role', role);
check(text === ref.output_text, 'streamed content', text);
check(finish === 'length', 'streamed finish_reason', finish);
check(usage && usage.completion_tokens === 64, 'streamed usage', usage);

try {
  await client.completions.create({ model, prompt: 'x', temperature: 'hot' });
  check(false, 'a bad request must throw', null);
} catch (e) {
  check(e instanceof OpenAI.BadRequestError, 'BadRequestError', String(e));
  check(e.status === 400, 'error status', e.status);
  check(e.param === 'temperature', 'error param', e.param);
}
console.log('openai client checks passed');
