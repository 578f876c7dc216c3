#!/usr/bin/env python3
"""Pagoda's server against llama.cpp's `llama-server` on one GGUF file, under
the same `pagoda loadgen` closed loop, in turns (never in CI).

  scripts/serve-vs-llama-server.py --model FILE [--streams 8,16,32] [--rounds 1]
      [--pagoda build/pagoda] [--llama-server /tmp/llama.cpp-v0.5.0/build/bin/llama-server]
      [--threads 2] [--prompt-tokens 90:110] [--output-tokens 64] [--per-stream 2]
      [--llama-np N] [--slot-context 1024] [--pagoda-arg ARG]... [--llama-arg ARG]...
      [--json-out FILE]

llama-server is built outside the repository from the source bundle of
node-llama-cpp@3.22.1 (scripts/bench_vs_llama_cpp.sh builds llama-bench the
same way; add the llama-server target). For each stream count C and round:
Pagoda with its defaults (after the weights moved into memory), then
llama-server with `-np C` (or --llama-np) and 1,024 context tokens per slot (the prompt-size probe asks ~600 on a byte-level vocabulary); each gets 2 warm-up
requests, then C clients send C x --per-stream requests (distinct word
prompts, --output-tokens each with ignore_eos). Prints a Markdown table of
output tokens/s, TTFT p50 and ITL p50/p99, and each server's completed
requests. Traffic stays on 127.0.0.1.

On the GPU machine (scripts/device-check.sh, phase 5) the same loop runs both
servers on the device: --pagoda-arg=--device --pagoda-arg=cuda, --llama-arg=-ngl
--llama-arg=99, llama-server from scripts/build-llama-cuda.sh's folder (its
libraries beside it, put first on LD_LIBRARY_PATH).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from servelib import free_port, wait_healthy


def wait_for(log, text, limit_s=900):
    end = time.time() + limit_s
    while time.time() < end:
        if text in open(log).read():
            return
        time.sleep(0.2)
    sys.exit(f"'{text}' did not appear within {limit_s} s; the log:\n{open(log).read()[-4000:]}")


def start(cmd, log_path, env=None):
    log = open(log_path, "w")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def load(args, port, clients, requests, output):
    base = [args.pagoda, "loadgen", "--port", str(port), "--ignore-eos", "--json", "--request-timeout", "1800",
            "--duration", "3600", "--seed", "7", "--prompt-tokens", args.prompt_tokens]
    run = subprocess.run(base + ["-c", str(clients), "-n", str(requests), "--output-tokens", f"{output}:{output}"],
                         check=True, capture_output=True, text=True)
    return json.loads(run.stdout)


def one_server(args, name, streams, tmp):
    port = free_port()
    log = os.path.join(tmp, f"{name}-{streams}.log")
    on_device = "cuda" in args.pagoda_arg
    if name == "pagoda":
        proc = start([args.pagoda, "serve", "-m", args.model, "--port", str(port), "-t", str(args.threads)] +
                     args.pagoda_arg, log)
    else:
        slots = args.llama_np or streams
        libs = [os.path.dirname(args.llama_server)] + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
        env = dict(os.environ, LD_LIBRARY_PATH=":".join(libs))
        proc = start([args.llama_server, "-m", args.model, "--host", "127.0.0.1", "--port", str(port),
                      "-t", str(args.threads), "-np", str(slots), "-c", str(args.slot_context * slots), "--no-webui"] +
                     args.llama_arg, log, env)
    try:
        t0 = time.time()
        wait_healthy(port, proc, log, limit_s=900)
        if name == "pagoda" and not on_device:  # on a GPU the weights are on the device before /health
            wait_for(log, "weights moved into memory")
        ready_s = time.time() - t0
        load(args, port, 1, 2, 8)  # warm-up
        r = load(args, port, streams, streams * args.per_stream, args.output_tokens)
        r["ready_s"] = ready_s
        return r
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--streams", default="8,16,32")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--pagoda", default="build/pagoda")
    ap.add_argument("--llama-server", default="/tmp/llama.cpp-v0.5.0/build/bin/llama-server")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", default="90:110")
    ap.add_argument("--output-tokens", type=int, default=64)
    ap.add_argument("--per-stream", type=int, default=2)
    ap.add_argument("--llama-np", type=int, default=0, help="llama-server's slots (-np); 0: one a stream")
    ap.add_argument("--slot-context", type=int, default=1024, help="llama-server's context tokens per slot")
    ap.add_argument("--pagoda-arg", action="append", default=[], help="one more argument to `pagoda serve`")
    ap.add_argument("--llama-arg", action="append", default=[], help="one more argument to llama-server")
    ap.add_argument("--json-out", help="also write the rows here (they always go to the logs' folder)")
    args = ap.parse_args()
    args.pagoda = os.path.realpath(args.pagoda)
    tmp = tempfile.mkdtemp(prefix="serve-vs-llama.")
    print(f"logs in {tmp}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for r in range(args.rounds):
        for c in [int(x) for x in args.streams.split(",")]:
            order = ["pagoda", "llama-server"] if r % 2 == 0 else ["llama-server", "pagoda"]
            for name in order:
                res = one_server(args, name, c, tmp)
                rows.append((c, name, res))
                print(f"round {r + 1}, {c} streams, {name}: {res['tokens_per_s']:.1f} tok/s, ok {res['ok']} of "
                      f"{res['requests']}, TTFT p50 {res['ttft_ms']['p50'] / 1e3:.2f} s, ITL p50 "
                      f"{res['itl_ms']['p50']:.0f} ms p99 {res['itl_ms']['p99']:.0f} ms (load "
                      f"{os.getloadavg()[0]:.2f})", flush=True)
    print("\n| streams | server | ok | output tok/s | TTFT p50 | ITL p50 | ITL p99 | resent |")
    print("|---|---|---|---|---|---|---|---|")
    for c, name, res in rows:
        print(f"| {c} | {name} | {res['ok']} of {res['requests']} | {res['tokens_per_s']:.1f} | "
              f"{res['ttft_ms']['p50'] / 1e3:.2f} s | {res['itl_ms']['p50']:.0f} ms | {res['itl_ms']['p99']:.0f} ms | "
              f"{res.get('resent', 0)} |")
    results = [{"streams": c, "server": n, **res} for c, n, res in rows]
    for path in [os.path.join(tmp, "results.json")] + ([args.json_out] if args.json_out else []):
        with open(path, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main()
