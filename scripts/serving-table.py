#!/usr/bin/env python3
"""The serving table of docs/performance.md ("Serving under load"): time-budgeted
steps (--max-step-ms auto) against the token budget alone (0), closed loop and
Poisson arrivals, on bench-model's synthetic models, in one run.

  scripts/serving-table.py --pagoda build/pagoda --cache /tmp/m1b [--size 1b]
      [--types q8_0 q4_k] [--clients 32] [--requests 96] [--rounds 1]

Per type: bench-model's decode-only step of a 32-sequence batch (the ITL
goal's yardstick, at context 192); then, alternating the settings (and their order each
round), a fresh server per run, 8 warm-up requests, and `pagoda loadgen`
(prompts 100-160 tokens, 64 output tokens with --ignore-eos). The Poisson rate
is 80% of the closed loop's mean request rate. Goodput counts requests with
TTFT <= --slo-ttft-ms and every ITL <= 3x the decode-only step. Prints a
Markdown table and the issue's goals. Traffic stays on 127.0.0.1.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from servelib import free_port, wait_healthy


def wait_moved(log, limit_s=600):
    """Serve answers at once from the mapped file and moves the weights into
    memory behind it; the table measures the server after that move."""
    end = time.time() + limit_s
    while time.time() < end:
        if "weights moved into memory" in open(log).read():
            return
        time.sleep(0.2)
    sys.exit(f"the weights were not moved into memory within {limit_s} s; the log:\n{open(log).read()}")


def decode_step_ms(args, wtype):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([args.pagoda, "bench-model", "--cache", args.cache, "--models", args.size, "--types", wtype,
                        "--batches", "32", "--context", "192", "--steps", "3", "--threads", str(args.threads), "--json-file", out.name],
                       check=True, stdout=subprocess.DEVNULL)
        figures = json.load(open(out.name))
    for m in figures["results"]:
        for d in m.get("decode", []):
            if d["batch"] == 32 and d["context"] == 192:  # about the runs' mean context (130 + 32)
                return 1000.0 * d["step_s"]
    sys.exit(f"bench-model printed no batch-32 decode figure: {figures}")


def over_target(port):
    """The step_time_over_target histogram's cumulative bucket counts, by bound."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    counts = {}
    for line in text.splitlines():
        if line.startswith('pagoda_engine_step_time_over_target_bucket{le="'):
            bound, value = line[len('pagoda_engine_step_time_over_target_bucket{le="'):].split('"} ')
            counts[bound] = float(value)
    return counts


def serve_and_load(args, model, setting, rate, slo_itl_ms):
    port = free_port()
    log = tempfile.NamedTemporaryFile(suffix=".log", delete=False).name
    proc = subprocess.Popen([args.pagoda, "serve", "-m", model, "--port", str(port), "--log-interval", "0",
                             "--threads", str(args.threads), "--max-step-ms", setting],
                            stdout=open(log, "w"), stderr=subprocess.STDOUT)
    try:
        wait_healthy(port, proc, log)
        wait_moved(log)
        base = [args.pagoda, "loadgen", "--port", str(port), "--ignore-eos", "--json"]
        subprocess.run(base + ["-c", "4", "-n", "8", "--prompt-tokens", "100:160", "--output-tokens", "8:8"],
                       check=True, stdout=subprocess.DEVNULL)
        before = over_target(port)
        run = subprocess.run(base + ["-c", str(args.clients), "-n", str(args.requests), "--duration", "3600",
                                     "--prompt-tokens", "100:160", "--output-tokens", "64:64",
                                     "--request-rate", rate, "--seed", "7", "--slo-ttft-ms", str(args.slo_ttft_ms),
                                     "--slo-itl-ms", f"{slo_itl_ms:.1f}", "--request-timeout", "1800"],
                             check=True, capture_output=True, text=True)
        result = json.loads(run.stdout)
        # The run's time-capped steps (warm-up excluded): how many overshot their target.
        after = over_target(port)
        steps = after["+Inf"] - before["+Inf"]
        if steps > 0:
            share = lambda b: 1 - (after[b] - before[b]) / steps  # noqa: E731
            result["steps_over_target"] = {"steps": steps, "over_1x": share("1"), "over_1.5x": share("1.5"),
                                           "over_2x": share("2")}
        return result
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        os.unlink(log)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pagoda", default="build/pagoda")
    ap.add_argument("--cache", required=True, help="bench-model --cache folder (models made there if missing)")
    ap.add_argument("--size", default="1b")
    ap.add_argument("--types", nargs="+", default=["q8_0", "q4_k"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=96)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--slo-ttft-ms", type=float, default=10000)
    args = ap.parse_args()

    rows, goals = [], []
    print(f"load average at start: {os.getloadavg()}", file=sys.stderr)
    for wtype in args.types:
        model = os.path.join(args.cache, f"{args.size}-{wtype}.gguf")
        step_ms = decode_step_ms(args, wtype)
        slo_itl = 3 * step_ms
        print(f"{wtype}: decode-only step of 32 sequences {step_ms:.0f} ms", file=sys.stderr)
        results = {}
        for mode in ("closed", "poisson"):
            rate = "inf"
            if mode == "poisson":
                closed = [r for (m, _), rs in results.items() if m == "closed" for r in rs]
                rate = f"{0.8 * sum(r['requests_per_s'] for r in closed) / len(closed):.4f}"
            for rnd in range(args.rounds):
                for setting in (("auto", "0") if rnd % 2 == 0 else ("0", "auto")):
                    r = serve_and_load(args, model, setting, rate, slo_itl)
                    results.setdefault((mode, setting), []).append(r)
                    over = r.get("steps_over_target")
                    print(f"  {mode} {setting}: {r['tokens_per_s']:.1f} tok/s, ITL p50/p99 "
                          f"{r['itl_ms']['p50']:.0f}/{r['itl_ms']['p99']:.0f} ms"
                          + (f"; of {over['steps']:.0f} time-capped steps {100 * over['over_1x']:.0f}% ran past "
                             f"their target, {100 * over['over_1.5x']:.1f}% past 1.5x, "
                             f"{100 * over['over_2x']:.1f}% past 2x" if over else ""), file=sys.stderr)
            for setting in ("auto", "0"):
                rs = results[(mode, setting)]
                mean = lambda f: sum(f(r) for r in rs) / len(rs)  # noqa: E731
                row = {
                    "type": wtype, "mode": mode if mode == "closed" else f"Poisson {rate}/s", "setting": setting,
                    "tok_s": mean(lambda r: r["tokens_per_s"]),
                    "ttft50": mean(lambda r: r["ttft_ms"]["p50"]), "ttft99": mean(lambda r: r["ttft_ms"]["p99"]),
                    "itl50": mean(lambda r: r["itl_ms"]["p50"]), "itl99": mean(lambda r: r["itl_ms"]["p99"]),
                    "goodput": mean(lambda r: r["goodput_requests_per_s"]), "step_ms": step_ms,
                }
                rows.append(row)
            a, z = rows[-2], rows[-1]
            goals.append((wtype, mode, f"ITL p99 <= 3x p50: {a['itl99'] / a['itl50']:.2f}x"))
            if mode == "closed":
                goals.append((wtype, mode, f"ITL p99 <= 3x decode step: {a['itl99'] / step_ms:.2f}x"))
                goals.append((wtype, mode, f"tok/s >= 0.9x of 0: {a['tok_s'] / z['tok_s']:.2f}x"))
            else:
                goals.append((wtype, mode, f"TTFT p99 better than 0: {a['ttft99']:.0f} vs {z['ttft99']:.0f} ms"))
                goals.append((wtype, mode, f"ITL p99 better than 0: {a['itl99']:.0f} vs {z['itl99']:.0f} ms"))
                goals.append((wtype, mode, f"goodput higher than 0: {a['goodput']:.3f} vs {z['goodput']:.3f} req/s"))

    print("| type | arrivals | --max-step-ms | output tok/s | TTFT p50 / p99 ms | ITL p50 / p99 ms "
          "| ITL p99/p50 | ITL p99 / decode step | goodput req/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['type']} | {r['mode']} | {r['setting']} | {r['tok_s']:.1f} | {r['ttft50']:.0f} / "
              f"{r['ttft99']:.0f} | {r['itl50']:.0f} / {r['itl99']:.0f} | {r['itl99'] / r['itl50']:.2f} | "
              f"{r['itl99'] / r['step_ms']:.2f} ({r['step_ms']:.0f} ms) | {r['goodput']:.3f} |")
    print()
    for wtype, mode, text in goals:
        print(f"- {wtype} {mode}: {text}")
    print(f"\nload average at end: {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main()
