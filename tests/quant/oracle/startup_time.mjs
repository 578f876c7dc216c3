// llama.cpp's start-up on a GGUF file, for docs/performance.md's start-up
// table: node-llama-cpp's prebuilt CPU build (no llama-server binary ships
// here) loads the model and makes a context as llama-server does before its
// /health says 200. Prints one JSON line: seconds from this process's start
// (node and the addon included) to a context ready, and the load alone.
//
// Usage: node tests/quant/oracle/startup_time.mjs MODEL.gguf [--no-mmap] [CONTEXT]
// (llama-server's defaults: mmap on, a 4096-token context.)
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const args = process.argv.slice(2);
const path = args.find((a) => a.endsWith(".gguf"));
const useMmap = !args.includes("--no-mmap");
const contextSize = Number(args.find((a) => /^\d+$/.test(a)) ?? 4096);
if (!path) {
  console.error("usage: node startup_time.mjs MODEL.gguf [--no-mmap] [CONTEXT]");
  process.exit(2);
}
const llama = await getLlama({gpu: false, logLevel: LlamaLogLevel.error});
const t = performance.now();
const model = await llama.loadModel({modelPath: path, gpuLayers: 0, useMmap});
const loaded = performance.now();
await model.createContext({contextSize, sequences: 1, threads: 2});
const ready = performance.now();
console.log(JSON.stringify({
  model: path, mmap: useMmap, context: contextSize,
  load_s: (loaded - t) / 1000, context_s: (ready - loaded) / 1000, process_to_ready_s: ready / 1000,
}));
process.exit(0);
