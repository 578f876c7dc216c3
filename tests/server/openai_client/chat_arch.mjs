// Drives `pagoda serve` on a synthetic model of some architecture, whose GGUF
// carries the real model's chat template, with the official openai client: a
// chat completion and the same one streamed (greedy: the same text), a system
// message, and a second turn. Exits non-zero on the first mismatch.
//
//   node chat_arch.mjs BASE_URL
import OpenAI from 'openai';

const [baseURL] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0, timeout: 60_000 });

function check(cond, what, got) {
  if (!cond) {
    console.error(`MISMATCH: ${what}; got ${JSON.stringify(got)}`);
    process.exit(1);
  }
}

const models = [];
for await (const m of await client.models.list()) models.push(m.id);
const model = models[0];
const messages = [
  { role: 'system', content: 'You answer in one word.' },
  { role: 'user', content: 'What colour is the sky?' },
  { role: 'assistant', content: 'Blue.' },
  { role: 'user', content: 'And the grass?' },
];
const chat = await client.chat.completions.create({ model, messages, max_completion_tokens: 12, temperature: 0 });
check(chat.object === 'chat.completion', 'chat object', chat.object);
check(chat.choices[0].message.role === 'assistant', 'role', chat.choices[0].message);
check(['length', 'stop'].includes(chat.choices[0].finish_reason), 'finish_reason', chat.choices[0].finish_reason);
check(chat.usage.prompt_tokens > 20, 'the template adds its markers to the prompt', chat.usage);
check(chat.usage.completion_tokens >= 1 && chat.usage.completion_tokens <= 12, 'completion_tokens', chat.usage);

const stream = await client.chat.completions.create({ model, messages, max_completion_tokens: 12, temperature: 0, stream: true });
let text = '';
let finish = null;
for await (const chunk of stream) {
  for (const c of chunk.choices) {
    text += c.delta?.content ?? '';
    if (c.finish_reason) finish = c.finish_reason;
  }
}
check(text === chat.choices[0].message.content, 'streamed text equals the greedy completion', [text, chat.choices[0].message.content]);
check(finish === chat.choices[0].finish_reason, 'streamed finish_reason', finish);
console.log('architecture chat checks passed');
