// Drives `pagoda serve`'s /v1/messages with the official @anthropic-ai/sdk,
// unmodified (tests/server/messages_test.cpp starts the servers).
//   node anthropic.mjs BASE_URL MODEL API_KEY text   stories260K: create, stream, count_tokens, errors
//   node anthropic.mjs BASE_URL MODEL API_KEY tools  a hermes model: a tool_use round trip, streamed and not
import Anthropic from "@anthropic-ai/sdk";
import assert from "node:assert/strict";

const [baseURL, model, apiKey, mode] = process.argv.slice(2);
if (!baseURL || !model || !apiKey || !mode) {
  console.error("usage: node anthropic.mjs BASE_URL MODEL API_KEY text|tools");
  process.exit(2);
}
const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
const user = [{ role: "user", content: "Once upon a time" }];

async function text() {
  const msg = await client.messages.create({ model, max_tokens: 16, temperature: 0, system: "Tell a story.", messages: user });
  assert.equal(msg.type, "message");
  assert.equal(msg.role, "assistant");
  assert.match(msg.id, /^msg_/);
  assert.equal(msg.content[0].type, "text");
  assert.ok(msg.content[0].text.length > 0);
  assert.ok(["end_turn", "max_tokens"].includes(msg.stop_reason));
  assert.ok(msg.usage.output_tokens > 0 && msg.usage.output_tokens <= 16);

  // Streamed with the SDK's helper: its text events and final message match the whole response.
  const stream = client.messages.stream({ model, max_tokens: 16, temperature: 0, system: "Tell a story.", messages: user });
  let streamed = "";
  stream.on("text", (t) => (streamed += t));
  const final = await stream.finalMessage();
  assert.equal(streamed, msg.content[0].text);
  assert.deepEqual(final.content, msg.content);
  assert.equal(final.stop_reason, msg.stop_reason);
  assert.equal(final.usage.output_tokens, msg.usage.output_tokens);

  // The raw event sequence.
  const raw = await client.messages.create({ model, max_tokens: 4, messages: user, stream: true });
  const types = [];
  for await (const ev of raw) if (types.at(-1) !== ev.type) types.push(ev.type);
  assert.deepEqual(types, ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop"]);

  const count = await client.messages.countTokens({ model, system: "Tell a story.", messages: user });
  assert.equal(count.input_tokens, msg.usage.input_tokens);

  // Errors come back as the SDK's typed errors.
  await assert.rejects(client.messages.create({ model, messages: user }), (e) => {
    assert.ok(e instanceof Anthropic.BadRequestError, String(e));
    assert.equal(e.error.error.type, "invalid_request_error");
    assert.match(e.error.error.message, /max_tokens/);
    return true;
  });
  await assert.rejects(client.messages.create({ model: "claude-nope", max_tokens: 4, messages: user }),
    (e) => e instanceof Anthropic.NotFoundError);
  const wrong = new Anthropic({ baseURL, apiKey: "wrong", maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model, max_tokens: 4, messages: user }),
    (e) => e instanceof Anthropic.AuthenticationError);
}

async function tools() {
  const tool = {
    name: "get_weather",
    description: "The weather in a city",
    input_schema: { type: "object", properties: { city: { type: "string", enum: ["Oslo", "Rome"] } },
      required: ["city"], additionalProperties: false },
  };
  const ask = [{ role: "user", content: "What is the weather in Oslo?" }];
  const body = { model, max_tokens: 200, tools: [tool], tool_choice: { type: "tool", name: "get_weather" },
    thinking: { type: "disabled" }, messages: ask };
  const msg = await client.messages.create(body);
  assert.equal(msg.stop_reason, "tool_use", JSON.stringify(msg));
  const use = msg.content.find((b) => b.type === "tool_use");
  assert.ok(use, JSON.stringify(msg));
  assert.match(use.id, /^toolu_/);
  assert.equal(use.name, "get_weather");
  assert.ok(["Oslo", "Rome"].includes(use.input.city));

  // Streamed: the SDK assembles the input from input_json_delta pieces.
  const final = await client.messages.stream(body).finalMessage();
  const streamedUse = final.content.find((b) => b.type === "tool_use");
  assert.ok(streamedUse, JSON.stringify(final));
  assert.ok(["Oslo", "Rome"].includes(streamedUse.input.city));
  assert.equal(final.stop_reason, "tool_use");

  // The round trip: the assistant's blocks and a tool_result go back in.
  const next = [...ask, { role: "assistant", content: msg.content },
    { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "Sunny, 21 C" }] }];
  const reply = await client.messages.create({ model, max_tokens: 8, tools: [tool], thinking: { type: "disabled" },
    messages: next });
  assert.equal(reply.type, "message");
  const count = await client.messages.countTokens({ model, tools: [tool], thinking: { type: "disabled" },
    messages: next });
  assert.equal(count.input_tokens, reply.usage.input_tokens);
  const shorter = await client.messages.countTokens({ model, messages: next });
  assert.ok(shorter.input_tokens < count.input_tokens);  // the tools are part of the prompt
}

await (mode === "tools" ? tools() : text());
console.log(`anthropic ${mode} checks passed`);
