#!/usr/bin/env python3
"""Resident memory and CPU per call of `toolhost serve` (stdio), for two or
more builds side by side, in alternating rounds.

    python3 host/cli/benches/scripts/memory_ab.py ROUNDS PLUGIN_DIR CACHE_DIR BINARY...

Each round starts each binary on PLUGIN_DIR (which must serve `calc_eval`,
e.g. a copy of target/plugins/calc.{wasm,toml}), makes 5,200 calls over
stdio, and reads the server's VmRSS, VmHWM and CPU time from /proc.
"""
import json, subprocess, sys, os, time
def run(binary, plugins, cache, n):
    p = subprocess.Popen([binary, "serve", "-p", plugins, "--cache-dir", cache, "-q", "--wait-for-plugins"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    def send(m): p.stdin.write((json.dumps(m)+"\n").encode()); p.stdin.flush()
    def recv():
        while True:
            l = json.loads(p.stdout.readline())
            if "id" in l: return l
    send({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"0"}}})
    recv()
    send({"jsonrpc":"2.0","method":"notifications/initialized"})
    def cpu():
        f = open(f"/proc/{p.pid}/stat").read().rsplit(")",1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    c0 = cpu()
    for i in range(1, n+1):
        send({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"calc_eval","arguments":{"expression":"6*7"}}})
        assert "result" in recv()
    c1 = cpu()
    rss = hwm = 0
    for l in open(f"/proc/{p.pid}/status"):
        if l.startswith("VmRSS"): rss = int(l.split()[1])
        if l.startswith("VmHWM"): hwm = int(l.split()[1])
    p.stdin.close(); p.wait()
    return rss/1024, hwm/1024, (c1-c0)/n*1e6
rounds, plugins, cache, binaries = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
res = {b: [] for b in binaries}
for r in range(rounds):
    for b in binaries:
        res[b].append(run(b, plugins, cache, 5200))
for b, rows in res.items():
    rows.sort(key=lambda x: x[2])
    med = rows[len(rows)//2]
    print(f"{os.path.basename(b)}: rss {[round(r[0],1) for r in rows]} MiB, peak {[round(r[1],1) for r in rows]}, cpu/call µs {[round(r[2]) for r in rows]}")
