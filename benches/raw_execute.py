#!/usr/bin/env python3
"""Trivial `execute` latency of quickforge binaries, driven by raw JSON-RPC
lines over stdio: no client library, so what is measured is the gateway's
own time (a client library adds ~0.5 ms per request here, which dilutes a
gateway difference of tens of microseconds).

Each binary serves with an empty configuration (no downstream server).
Blocks of BLOCK executes alternate between the binaries (the order flips
every block), so load that comes and goes weighs on each alike; the first
block is warm-up. Reports per binary the median latency, its ratio to the
first binary (the baseline, measured in the same run), and the gateway's
CPU time per execute (utime + stime of the process, all threads).

    python3 benches/raw_execute.py [--blocks 30] [--block 100] [--protocol 2025-06-18] \\
        base=/path/to/baseline/quickforge this=target/release/quickforge
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


class Gateway:
    def __init__(self, label, binary, protocol, config):
        self.label = label
        self.proc = subprocess.Popen(
            [binary, "--config", config, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next = 0
        self.samples = []
        self.cpu = 0.0
        self.ask("initialize", {"protocolVersion": protocol, "capabilities": {},
                                "clientInfo": {"name": "raw_execute", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def ask(self, method, params):
        self.next += 1
        start = time.perf_counter()
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit(f"{self.label}: the gateway closed its output")
            message = json.loads(line)
            if message.get("id") == self.next:
                if "error" in message:
                    sys.exit(f"{self.label}: {message['error']}")
                return time.perf_counter() - start

    def cpu_seconds(self):
        fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def block(self, n, keep):
        before = self.cpu_seconds()
        for _ in range(n):
            d = self.ask("tools/call", {"name": "execute", "arguments": {"code": "async () => 1"}})
            if keep:
                self.samples.append(d)
        if keep:
            self.cpu += self.cpu_seconds() - before


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--block", type=int, default=100)
    parser.add_argument("--protocol", default="2025-06-18")
    parser.add_argument("binaries", nargs="+", help="label=path; the first is the baseline")
    args = parser.parse_args()
    config = tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False)
    config.close()
    gateways = [Gateway(*b.split("=", 1), args.protocol, config.name) for b in args.binaries]
    try:
        for i in range(args.blocks + 1):
            for g in gateways if i % 2 == 0 else gateways[::-1]:
                g.block(args.block, keep=i > 0)
        base = statistics.median(gateways[0].samples)
        print("| build | median | ratio | gateway CPU per execute |")
        print("| --- | --- | --- | --- |")
        for g in gateways:
            m = statistics.median(g.samples)
            print(f"| {g.label} | {m * 1e6:.1f} µs | {m / base:.2f}× | {g.cpu / len(g.samples) * 1e6:.0f} µs |")
    finally:
        for g in gateways:
            g.proc.kill()
        os.unlink(config.name)


if __name__ == "__main__":
    main()
