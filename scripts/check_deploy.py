#!/usr/bin/env python3
"""Checks deploy/: every Kubernetes manifest parses (python3-yaml), every
`pagoda` flag its containers pass and the HAProxy example uses exists in
`pagoda serve --help`, the ports agree (probes and the Service name a port
the container serves with --port), and --kv-events-config is valid JSON.

    check_deploy.py PAGODA_BINARY SOURCE_DIR
"""
import json
import pathlib
import re
import subprocess
import sys

import yaml


def main() -> int:
    binary, source = sys.argv[1], pathlib.Path(sys.argv[2])
    help_text = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True, check=True).stdout
    flags = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
    errors = []
    docs = []
    for path in sorted((source / "deploy" / "kubernetes").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc is None:
                continue
            if "kind" not in doc or "apiVersion" not in doc:
                errors.append(f"{path.name}: a document without kind/apiVersion")
            docs.append((path.name, doc))
            if doc.get("kind") == "ConfigMap":
                for key, text in doc.get("data", {}).items():
                    if key.endswith(".yaml"):
                        yaml.safe_load(text)  # the embedded EPP config parses too
    serve_ports = set()
    for name, doc in docs:
        if doc.get("kind") != "Deployment":
            continue
        for c in doc["spec"]["template"]["spec"]["containers"]:
            args = c.get("args", [])
            if args[:1] != ["serve"]:
                errors.append(f"{name}: container {c['name']} does not run `pagoda serve`")
            for i, a in enumerate(args):
                if a.startswith("--") and a not in flags:
                    errors.append(f"{name}: {a} is not a flag of `pagoda serve`")
                if a == "--port":
                    serve_ports.add(int(args[i + 1]))
                if a == "--kv-events-config":
                    cfg = json.loads(args[i + 1])
                    if not cfg.get("enable_kv_cache_events"):
                        errors.append(f"{name}: KV events are not enabled")
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                p = c.get(probe, {}).get("httpGet")
                if p and (p["port"] not in serve_ports or p["path"] not in ("/health", "/health/live")):
                    errors.append(f"{name}: {probe} checks {p['path']} on {p['port']}")
            if c.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/health":
                errors.append(f"{name}: readiness is not /health")
    for name, doc in docs:
        if doc.get("kind") == "Service":
            for p in doc["spec"]["ports"]:
                if p["targetPort"] not in serve_ports:
                    errors.append(f"{name}: Service targets port {p['targetPort']}, not one pagoda serves")
        if doc.get("kind") == "InferencePool":
            for p in doc["spec"]["targetPorts"]:
                if p["number"] not in serve_ports:
                    errors.append(f"{name}: InferencePool targets port {p['number']}, not one pagoda serves")
    haproxy = (source / "deploy" / "haproxy" / "haproxy.cfg").read_text()
    if "option httpchk GET /health" not in haproxy:
        errors.append("haproxy.cfg: no /health check")
    for flag in re.findall(r"pagoda serve [^\n]*", haproxy):
        for f in re.findall(r"(--[a-z][a-z0-9-]*)", flag):
            if f not in flags:
                errors.append(f"haproxy.cfg: {f} is not a flag of `pagoda serve`")
    kinds = {d.get("kind") for _, d in docs}
    for want in ("Deployment", "Service", "InferencePool", "InferenceObjective", "ConfigMap"):
        if want not in kinds:
            errors.append(f"deploy/kubernetes has no {want}")
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
