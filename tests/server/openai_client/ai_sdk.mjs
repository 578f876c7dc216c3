// Drives `pagoda serve`'s /v1/responses with the Vercel AI SDK (`ai` and
// `@ai-sdk/openai`, whose default `openai(model)` posts to the Responses API),
// unmodified (tests/server/responses_test.cpp starts the server):
// generateText, streamText (the same text, greedy), generateObject (a zod
// schema through text.format json_schema) and a forced tool call (the
// server's template is tests/server/templates/tiny_tools.jinja).
//   node ai_sdk.mjs BASE_URL MODEL
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject, generateText, streamText, tool } from "ai";
import assert from "node:assert/strict";
import { z } from "zod";

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error("usage: node ai_sdk.mjs BASE_URL MODEL");
  process.exit(2);
}
const openai = createOpenAI({ baseURL, apiKey: "unused" });
const ask = { model: openai(model), system: "Tell a story.", prompt: "Once upon a time", maxOutputTokens: 16,
  temperature: 0, maxRetries: 0 };

const text = await generateText(ask);
assert.ok(text.text.length > 0, JSON.stringify(text.response));
assert.ok(["stop", "length"].includes(text.finishReason), text.finishReason);
assert.ok(text.usage.outputTokens > 0 && text.usage.outputTokens <= 16, JSON.stringify(text.usage));
assert.match(text.response.id, /^resp_/);

const stream = streamText(ask);
let streamed = "";
for await (const piece of stream.textStream) streamed += piece;
assert.equal(streamed, text.text);
assert.equal(await stream.finishReason, text.finishReason);
assert.equal((await stream.usage).outputTokens, text.usage.outputTokens);

const pet = await generateObject({ model: openai(model), prompt: "A pet", maxOutputTokens: 60, maxRetries: 0,
  schema: z.object({ name: z.enum(["Rex", "Tom"]), age: z.number().int().min(1).max(9) }) });
assert.ok(["Rex", "Tom"].includes(pet.object.name), JSON.stringify(pet.object));
assert.ok(Number.isInteger(pet.object.age), JSON.stringify(pet.object));

// A tool the model must call (the AI SDK's toolChoice "required"; no execute: the call is the result).
const weather = tool({ description: "Weather of a city", inputSchema: z.object({ city: z.enum(["Paris", "Oslo"]) }) });
// One call (parallelToolCalls false: the grammar ends after it); else this tiny model calls until cut off.
const forced = { model: openai(model), prompt: "What is the weather?", maxOutputTokens: 160, temperature: 0,
  maxRetries: 0, tools: { get_weather: weather }, toolChoice: "required",
  providerOptions: { openai: { parallelToolCalls: false } } };
const called = await generateText(forced);
assert.equal(called.finishReason, "tool-calls", JSON.stringify(called.response.body ?? called.response));
assert.equal(called.toolCalls.length >= 1, true);
assert.equal(called.toolCalls[0].toolName, "get_weather");
assert.ok(["Paris", "Oslo"].includes(called.toolCalls[0].input.city), JSON.stringify(called.toolCalls[0]));
const streamedCalls = await streamText(forced).toolCalls;
assert.deepEqual(streamedCalls.map((c) => c.input), called.toolCalls.map((c) => c.input));

console.log("ai sdk checks passed");
