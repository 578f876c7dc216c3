"""Helpers the serving scripts share: a free loopback port, and waiting for a
started `pagoda serve` to answer /health (exiting with its log if it dies)."""
import socket
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, proc, log, limit_s=300):
    end = time.time() + limit_s
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit(f"the server exited; its log:\n{open(log).read()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.05)
    sys.exit(f"the server was not healthy within {limit_s} s; its log:\n{open(log).read()}")
