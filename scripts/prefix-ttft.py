#!/usr/bin/env python3
"""Time to first token of a repeated prefix, with prefix caching and without:
the hybrid-model table of docs/performance.md ("Prefix caching of hybrid
models"), or any model.

  scripts/prefix-ttft.py --pagoda build/pagoda --model M.gguf [--prefix 1024]
      [--rounds 2] [--threads 2] [--off "--state-checkpoints 0"]

Per round, alternating the two settings (the default, and the --off flags),
a fresh server each: request A (a prefix of --prefix random token ids and a
16-token suffix), then B (the same prefix, another suffix), then A again, each
with max_tokens 1, so its latency is its time to first token. Prints each
round's figures and the medians of B/A and A-again/A. Traffic stays on
127.0.0.1.
"""
import argparse
import json
import random
import shlex
import statistics
import subprocess
import tempfile
import time
import urllib.request

from servelib import free_port, wait_healthy


def ttft(port, prompt):
    body = json.dumps({"prompt": prompt, "max_tokens": 1, "temperature": 0}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=1800) as r:
        reply = json.load(r)
    return time.perf_counter() - t0, reply["usage"]["prompt_tokens_details"]["cached_tokens"]


def run(args, extra, prompts):
    port = free_port()
    log = tempfile.NamedTemporaryFile(suffix=".log", delete=False).name
    proc = subprocess.Popen([args.pagoda, "serve", "-m", args.model, "--port", str(port), "--log-interval", "0",
                             "--threads", str(args.threads)] + extra,
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        wait_healthy(port, proc, log)
        ttft(port, [7, 8, 9])  # warm-up: the first pass pays for page faults
        return [ttft(port, p) for p in prompts]
    finally:
        proc.terminate()
        proc.wait(60)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pagoda", default="build/pagoda")
    ap.add_argument("--model", required=True)
    ap.add_argument("--prefix", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--off", default="--state-checkpoints 0", help="the flags of the setting without caching")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    ids = lambda n: [rng.randrange(100, 1000) for _ in range(n)]  # noqa: E731
    settings = {"cached": [], "off": shlex.split(args.off)}
    ratios = {name: {"B/A": [], "A2/A": []} for name in settings}
    for r in range(args.rounds):
        prefix = ids(args.prefix)
        a, b = prefix + ids(16), prefix + ids(16)
        names = list(settings) if r % 2 == 0 else list(reversed(settings))
        for name in names:
            (ta, ca), (tb, cb), (ta2, ca2) = run(args, settings[name], [a, b, a])
            ratios[name]["B/A"].append(tb / ta)
            ratios[name]["A2/A"].append(ta2 / ta)
            print(f"round {r + 1} {name:6}: A {ta:.3f} s, B {tb:.3f} s ({cb} cached), A again {ta2:.3f} s "
                  f"({ca2} cached); B/A {tb / ta:.3f}, A2/A {ta2 / ta:.3f}", flush=True)
    for name, rs in ratios.items():
        print(f"{name:6} medians: B/A {statistics.median(rs['B/A']):.3f}, A2/A {statistics.median(rs['A2/A']):.3f}")


if __name__ == "__main__":
    main()
