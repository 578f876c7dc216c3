// Drives `pagoda serve`'s /v1/responses with the official openai npm client,
// unmodified (tests/server/responses_test.cpp starts the server: stories260K
// with tests/server/templates/tiny_tools.jinja, whose <tool_call> marker
// selects the hermes parser): create streamed and not (output_text, the
// stream helper's events and final response), a forced function call and its
// function_call_output round trip (explicit and by previous_response_id, the
// same prompt), a json_schema text.format that parses, retrieve and delete,
// store: false, and typed errors.
//   node responses.mjs BASE_URL MODEL
import OpenAI from "openai";
import assert from "node:assert/strict";

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: node responses.mjs BASE_URL MODEL");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 60_000 });
const story = { model, input: "Once upon a time", instructions: "Tell a story.", max_output_tokens: 16, temperature: 0 };

// Text: the object, output_text, and the stream that says the same.
const r = await client.responses.create(story);
assert.equal(r.object, "response");
assert.match(r.id, /^resp_/);
assert.ok(["completed", "incomplete"].includes(r.status), r.status);
assert.equal(r.model, model);
assert.equal(r.instructions, "Tell a story.");
assert.equal(r.max_output_tokens, 16);
assert.equal(r.output[0].type, "message");
assert.match(r.output[0].id, /^msg_/);
assert.ok(r.output_text.length > 0);
assert.equal(r.output_text, r.output[0].content[0].text);
assert.ok(r.usage.output_tokens > 0 && r.usage.output_tokens <= 16);
assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
if (r.status === "incomplete") assert.equal(r.incomplete_details.reason, "max_output_tokens");

// The stream helper: its deltas and final output are the response's, and the last event carries the whole response.
const textOf = (res) => res.output.filter((o) => o.type === "message").flatMap((o) => o.content).map((c) => c.text).join("");
const stream = client.responses.stream(story);
let deltas = "";
let last;
stream.on("response.output_text.delta", (e) => (deltas += e.delta));
stream.on("event", (e) => (last = e));
const final = await stream.finalResponse();
assert.equal(deltas, r.output_text);
assert.equal(textOf(final), r.output_text);
assert.equal(last.type, r.status === "completed" ? "response.completed" : "response.incomplete");
assert.equal(last.response.usage.input_tokens, r.usage.input_tokens);  // cached_tokens may differ: the prefix cache
assert.equal(last.response.usage.output_tokens, r.usage.output_tokens);
assert.equal(textOf(last.response), r.output_text);

// The raw events: OpenAI's order, sequence numbers from 0.
const raw = await client.responses.create({ ...story, max_output_tokens: 4, stream: true });
const types = [];
let seq = 0;
for await (const ev of raw) {
  assert.equal(ev.sequence_number, seq++);
  if (types.at(-1) !== ev.type) types.push(ev.type);
}
assert.deepEqual(types, ["response.created", "response.in_progress", "response.output_item.added",
  "response.content_part.added", "response.output_text.delta", "response.output_text.done",
  "response.content_part.done", "response.output_item.done", r.status === "completed" ? "response.completed" : "response.incomplete"]);

// previous_response_id continues the stored conversation; retrieve, input items and delete.
const next = await client.responses.create({ model, previous_response_id: r.id, input: "And then?", max_output_tokens: 4 });
assert.equal(next.previous_response_id, r.id);
assert.ok(next.usage.input_tokens > r.usage.input_tokens + 2, JSON.stringify([next.usage, r.usage]));
const got = await client.responses.retrieve(r.id);
assert.equal(got.id, r.id);
assert.equal(got.output_text, r.output_text);
const inputs = [];
for await (const item of client.responses.inputItems.list(r.id, { order: "asc", limit: 1 })) inputs.push(item);
assert.equal(inputs.length, 1);
assert.equal(inputs[0].role, "user");
assert.equal(inputs[0].content[0].text, "Once upon a time");
await client.responses.delete(r.id);
await assert.rejects(client.responses.retrieve(r.id), (e) => e instanceof OpenAI.NotFoundError);
await assert.rejects(client.responses.delete(r.id), (e) => e instanceof OpenAI.NotFoundError);
const unstored = await client.responses.create({ ...story, max_output_tokens: 2, store: false });
assert.equal(unstored.store, false);
await assert.rejects(client.responses.retrieve(unstored.id), (e) => e instanceof OpenAI.NotFoundError);
await assert.rejects(client.responses.create({ model, previous_response_id: unstored.id, input: "x" }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "previous_response_id");

// A forced function call, streamed and not, and its output sent back.
const weather = {
  type: "function", name: "get_weather", description: "Weather",
  parameters: { type: "object", properties: { city: { type: "string", enum: ["Paris", "Oslo"] } },
    required: ["city"], additionalProperties: false },
};
const ask = [{ role: "user", content: "What is the weather?" }];
const forced = { model, input: ask, tools: [weather], tool_choice: { type: "function", name: "get_weather" },
  temperature: 0, max_output_tokens: 160 };
const called = await client.responses.create(forced);
const call = called.output.find((o) => o.type === "function_call");
assert.ok(call, JSON.stringify(called.output));
assert.match(call.id, /^fc_/);
assert.equal(call.name, "get_weather");
assert.equal(call.status, "completed");
assert.ok(["Paris", "Oslo"].includes(JSON.parse(call.arguments).city), call.arguments);
assert.equal(called.tools[0].name, "get_weather");
const streamedCall = (await client.responses.stream(forced).finalResponse()).output.find(
  (o) => o.type === "function_call");
assert.ok(streamedCall);
assert.equal(streamedCall.arguments, call.arguments);

const result = { type: "function_call_output", call_id: call.call_id, output: "Sunny" };
const explicit = await client.responses.create({ model, input: [...ask, ...called.output, result], tools: [weather],
  max_output_tokens: 4, store: false });
const chained = await client.responses.create({ model, previous_response_id: called.id, input: [result],
  tools: [weather], max_output_tokens: 4 });
assert.equal(chained.usage.input_tokens, explicit.usage.input_tokens);
assert.ok(explicit.usage.input_tokens > called.usage.input_tokens);

// A json_schema text.format: the SDK parses output_text.
const pet = { type: "object", properties: { name: { type: "string", enum: ["Rex", "Tom"] } }, required: ["name"],
  additionalProperties: false };
const parsed = await client.responses.parse({ model, input: "A pet", max_output_tokens: 60,
  text: { format: { type: "json_schema", name: "pet", schema: pet, strict: true } } });
assert.ok(["Rex", "Tom"].includes(parsed.output_parsed.name), parsed.output_text);
assert.equal(parsed.text.format.type, "json_schema");

// Errors name the field.
await assert.rejects(client.responses.create({ model, input: "x", tools: [{ type: "web_search" }] }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "tools.0.type");
await assert.rejects(client.responses.create({ model, input: "x", max_output_tokens: 1 << 20 }),
  (e) => e instanceof OpenAI.BadRequestError && e.param === "max_output_tokens");
await assert.rejects(client.responses.create({ model: "gpt-nope", input: "x" }), (e) => e instanceof OpenAI.NotFoundError);

console.log("responses checks passed");
