// Pagoda's decode and prefill speed next to llama.cpp's (node-llama-cpp's
// prebuilt CPU binary, the best variant for this CPU) on the same GGUF files,
// on the same machine, in one run: the issue's goals quote what "a well-tuned
// CPU engine" reaches, and this measures it instead of assuming it.
// The two engines run in turns, round after round, so a noisy neighbour on a
// shared machine slows both alike; the table gives each figure's median.
//
// Usage (after `npm ci --prefix tests/quant/oracle --omit=optional`):
//   node tests/quant/oracle/compare_speed.mjs PAGODA_BINARY CACHE_DIR [ROUNDS] [TYPES...]
// CACHE_DIR is a `pagoda bench-model --cache` folder (the 1B models are
// written there on first use). Threads: 2 for both (set PAGODA_THREADS).
import {execFileSync} from "node:child_process";
import {existsSync} from "node:fs";
import {join} from "node:path";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [pagoda, cacheDir, roundsArg, ...typesArg] = process.argv.slice(2);
if (!pagoda || !cacheDir) {
  console.error("usage: node compare_speed.mjs PAGODA_BINARY CACHE_DIR [ROUNDS] [TYPES...]");
  process.exit(2);
}
const rounds = Number(roundsArg ?? 3);
const types = typesArg.length ? typesArg : ["q8_0", "q4_k"];
const threads = Number(process.env.PAGODA_THREADS ?? 2);
const kPrompt = 512, kSteps = 12;

function pagodaRun(type) {
  const out = execFileSync(pagoda, ["bench-model", "--cache", cacheDir, "--models", "1b", "--types", type, "--batches", "1",
    "--steps", String(kSteps), "--prompt", String(kPrompt), "--context", String(kPrompt), "--threads", String(threads),
    "--json"], {encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], maxBuffer: 1 << 24});
  const r = JSON.parse(out).results[0];
  const at = (ctx) => r.decode.find((d) => d.context === ctx).tokens_per_s;
  return {prefill: r.prefill_tokens_per_s, decode0: at(0), decode512: at(kPrompt)};
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// Median seconds of kSteps one-token evaluations after `context` tokens.
async function llamaDecode(sequence, steps) {
  const times = [];
  for (let i = 0; i < steps; ++i) {
    const t = performance.now();
    await sequence.controlledEvaluate([[1000 + i, {generateNext: {token: true}}]]);
    times.push((performance.now() - t) / 1000);
  }
  return 1 / median(times);
}

async function llamaRun(llama, path) {
  const model = await llama.loadModel({modelPath: path, gpuLayers: 0, useMmap: false});
  const context = await model.createContext({contextSize: 2 * kPrompt, sequences: 1, threads, batchSize: kPrompt});
  const sequence = context.getSequence();
  await sequence.controlledEvaluate([1]);
  const decode0 = await llamaDecode(sequence, kSteps);
  await sequence.clearHistory();
  const prompt = Array.from({length: kPrompt}, (_, i) => 100 + ((i * 7919) % 30000));
  const t = performance.now();
  await sequence.controlledEvaluate(prompt);
  const prefill = kPrompt / ((performance.now() - t) / 1000);
  const decode512 = await llamaDecode(sequence, kSteps);
  await context.dispose();
  await model.dispose();
  return {prefill, decode0, decode512};
}

const llama = await getLlama({gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
                              progressLogs: false, logLevel: LlamaLogLevel.error});
const samples = {};
for (let round = 0; round < rounds; ++round) {
  for (const type of types) {
    const p = pagodaRun(type);  // writes the model into the cache on first use
    const path = join(cacheDir, `1b-${type}.gguf`);
    if (!existsSync(path)) throw new Error(`no ${path} after pagoda bench-model`);
    const l = await llamaRun(llama, path);
    for (const [engine, r] of [["pagoda", p], ["llama.cpp", l]]) {
      const key = `${type} ${engine}`;
      samples[key] ??= {prefill: [], decode0: [], decode512: []};
      for (const k of Object.keys(r)) samples[key][k].push(r[k]);
    }
    console.error(`round ${round + 1}/${rounds} ${type}: pagoda ${JSON.stringify(p)} llama.cpp ${JSON.stringify(l)}`);
  }
}
await llama.dispose();

console.log(`1B models, ${threads} threads, median of ${rounds} rounds (tokens/s)`);
console.log("type  engine      prefill 512  decode ctx 0  decode ctx 512");
for (const [key, s] of Object.entries(samples)) {
  const [type, engine] = key.split(" ");
  console.log(`${type.padEnd(5)} ${engine.padEnd(10)} ${median(s.prefill).toFixed(1).padStart(12)} ` +
              `${median(s.decode0).toFixed(1).padStart(13)} ${median(s.decode512).toFixed(1).padStart(15)}`);
}
