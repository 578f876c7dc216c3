// Drives `pagoda serve`'s /v1/embeddings with the official openai SDK,
// unmodified (tests/server/embeddings_test.cpp starts the server with a
// synthetic embedding model).
//   node embeddings.mjs BASE_URL MODEL WIDTH
import OpenAI from "openai";
import assert from "node:assert/strict";

const [baseURL, model, width] = process.argv.slice(2);
if (!baseURL || !model || !width) {
  console.error("usage: node embeddings.mjs BASE_URL MODEL WIDTH");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: "none", maxRetries: 0 });
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

// The SDK asks for base64 by default and decodes it; floats when asked.
const one = await client.embeddings.create({ model, input: "The quick brown fox" });
assert.equal(one.object, "list");
assert.equal(one.data.length, 1);
assert.equal(one.data[0].object, "embedding");
assert.equal(one.data[0].index, 0);
assert.equal(one.data[0].embedding.length, Number(width));
assert.ok(Math.abs(norm(one.data[0].embedding) - 1) < 1e-5, "vectors are unit length");
assert.ok(one.usage.prompt_tokens > 0);
assert.equal(one.usage.total_tokens, one.usage.prompt_tokens);

const floats = await client.embeddings.create({ model, input: "The quick brown fox", encoding_format: "float" });
floats.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - one.data[0].embedding[i]) < 1e-5));

// A list comes back in order; the same text is the same vector wherever it sits.
const inputs = ["a cat", "The quick brown fox", "a dog", "The quick brown fox"];
const many = await client.embeddings.create({ model, input: inputs, encoding_format: "float" });
assert.deepEqual(many.data.map((d) => d.index), [0, 1, 2, 3]);
many.data[1].embedding.forEach((x, i) => assert.ok(Math.abs(x - one.data[0].embedding[i]) < 1e-5));
assert.deepEqual(many.data[1].embedding, many.data[3].embedding);
assert.notDeepEqual(many.data[0].embedding, many.data[2].embedding);

// Refusals are the API's 400s naming the field.
await assert.rejects(client.embeddings.create({ model, input: "x", dimensions: 3 }), (e) => {
  assert.equal(e.status, 400);
  assert.equal(e.param, "dimensions");
  return true;
});
await assert.rejects(client.embeddings.create({ model, input: [] }), (e) => e.status === 400 && e.param === "input");
console.log("embeddings checks passed");
