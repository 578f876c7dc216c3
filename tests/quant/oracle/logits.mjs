// Pagoda's second, independent reader of quantized GGUF files: llama.cpp as
// bundled by node-llama-cpp (its prebuilt CPU binary from npm; this never
// builds or downloads anything).
// Usage: node logits.mjs JOBS.json, JOBS = [{"model": PATH, "tokens": [ids], "top": K}, ...]
// Prints a JSON array, one {"top": [{"id", "logprob"}, ...]} per job: the K
// most likely tokens after the prompt ids, from llama.cpp's logits (its
// default F16 KV cache, CPU only).
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const jobs = JSON.parse(readFileSync(process.argv[2], "utf8"));
const llama = await getLlama({gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
                              progressLogs: false, logLevel: LlamaLogLevel.error});
const results = [];
for (const job of jobs) {
  const model = await llama.loadModel({modelPath: job.model, gpuLayers: 0});
  // One thread: these test models are tiny, and spinning up a thread per core
  // costs ~0.5 s per evaluation on a busy machine.
  const context = await model.createContext({contextSize: 256, sequences: 1, threads: 1});
  // With no sampling options, the probabilities are the softmax of the raw logits.
  const ids = job.tokens;
  const input = ids.map((t, i) => i + 1 === ids.length ? [t, {generateNext: {probabilities: true}}] : t);
  const out = await context.getSequence().controlledEvaluate(input);
  const probs = out[out.length - 1].next.probabilities;
  results.push({top: [...probs.entries()].slice(0, job.top ?? 10).map(([id, p]) => ({id, logprob: Math.log(p)}))});
  await context.dispose();
  await model.dispose();
}
await llama.dispose();
console.log(JSON.stringify(results));
