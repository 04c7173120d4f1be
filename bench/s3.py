#!/usr/bin/env python3
"""ioscope's s3 engine against warp, side by side on the same MinIO.

Starts MinIO with scripts/s3-server.sh (its own state directory), builds warp with
`scripts/s3-server.sh tools warp`, then runs, alternating for --rounds rounds, GETs and
PUTs of whole objects of 4 KiB and 1 MiB, each tool with the same number of requests in
flight (--depth) for --seconds:
  - ioscope run --engine s3 (one worker thread, --iodepth DEPTH), --bs = the object size,
    over --objects objects (written once before the rounds, reused);
  - warp get / warp put (--concurrent DEPTH, --obj.size the same, --objects the same for
    get), its data file analysed with `warp analyze`.
For every case it measures the client's CPU (user+system of the client process and its
threads, from getrusage of children) and MinIO's (from /proc/PID/stat) over the same
interval. Both clients' CPU includes their setup: ioscope's check of its working set,
warp's upload of its objects (get) and its cleanup, a few hundred requests against
thousands; the results say how many requests each case made.
Prints a markdown table and writes it to bench/results/DATE-HOST-s3.md.

Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

import cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "s3-server.sh")
STATE = "/tmp/ioscope-s3-bench"


def measured(cmd, env):
    """Runs cmd; returns (stdout, wall s, client CPU s, MinIO's CPU s)."""
    return cpu.measured(cmd, lambda: cpu.process_cpu_s(os.path.join(STATE, "minio.pid")), env)


def load_env():
    env = dict(os.environ)
    with open(os.path.join(STATE, "env")) as f:
        for line in f:
            m = re.match(r"export (\w+)=(.*)", line.strip())
            if m:
                env[m.group(1)] = m.group(2)
    return env


def size_name(n):
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def ioscope_case(binary, env, op, size, objects, depth, seconds):
    endpoint = env["IOSCOPE_S3_ENDPOINT"]
    target = f"s3://{env['IOSCOPE_S3_BUCKET']}/bench-{size}?endpoint={endpoint}"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, "run", "--engine", "s3", "--target", target,
               "--rw", "randread" if op == "GET" else "randwrite", "--bs", str(size),
               "--size", str(size * objects), "--files", str(objects), "--iodepth", str(depth),
               "--duration", f"{seconds}s", "--quiet", "--json", "--out", os.path.join(tmp, "r.db")]
        out, wall, cpu, server = measured(cmd, env)
    v = json.loads(out)
    o = v["ops"]["read" if op == "GET" else "write"]
    lat = o["latency_ns"]
    return {
        "requests": o["ops"], "errors": o["errors"], "rps": o["iops"],
        "p50_ms": lat["p50"] / 1e6, "p99_ms": lat["p99"] / 1e6,
        "cpu_us": cpu / max(o["ops"], 1) * 1e6, "server_us": server / max(o["ops"], 1) * 1e6,
    }


def warp_case(warp, env, op, size, objects, depth, seconds):
    host = env["IOSCOPE_S3_ENDPOINT"].split("://", 1)[1]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "warp")
        cmd = [warp, op.lower(), "--host", host, "--access-key", env["AWS_ACCESS_KEY_ID"],
               "--secret-key", env["AWS_SECRET_ACCESS_KEY"], "--bucket", "warp-bench",
               "--obj.size", str(size), "--concurrent", str(depth), "--duration", f"{seconds}s",
               "--noclear", "--benchdata", data]
        if op == "GET":
            cmd += ["--objects", str(objects)]
        _, wall, cpu, server = measured(cmd, env)
        analysed = subprocess.run([warp, "analyze", "--analyze.v", "--analyze.op", op, data + ".csv.zst"],
                                  check=True, capture_output=True, text=True, env=env).stdout
    n = int(re.search(r"Requests considered: (\d+)", analysed).group(1))
    rps = float(re.search(r"Average: [\d.]+ \w+/s, ([\d.]+) obj/s", analysed).group(1))
    line = re.search(r"\* Avg: .*", analysed).group(0)

    def ms(label):
        m = re.search(label + r": ([\d.]+)(µs|ms|s)", line)
        if not m:
            return float("nan")
        return float(m.group(1)) * {"µs": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]

    # Its setup and cleanup requests (the objects of a get, their removal) are in both CPU
    # figures; its count is of the benchmark's requests only.
    return {
        "requests": n, "errors": 0, "rps": rps, "p50_ms": ms("50%"), "p99_ms": ms("99%"),
        "cpu_us": cpu / max(n, 1) * 1e6, "server_us": server / max(n, 1) * 1e6,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "ioscope"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--objects", type=int, default=100)
    ap.add_argument("--sizes", default="4096,1048576")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    subprocess.run([SCRIPT, "start", STATE], check=True, stdout=subprocess.DEVNULL)
    warp = subprocess.run([SCRIPT, "tools", "warp"], check=True, capture_output=True, text=True).stdout.strip()
    env = load_env()
    sizes = [int(s) for s in a.sizes.split(",")]
    # The working sets, written once (a short read run prepares them).
    for size in sizes:
        ioscope_case(a.binary, env, "GET", size, a.objects, 1, 1)
    results = {}
    for r in range(a.rounds):
        for size in sizes:
            for op in ("GET", "PUT"):
                tools = [("ioscope", ioscope_case, a.binary), ("warp", warp_case, warp)]
                if r % 2:
                    tools.reverse()
                for name, case, binary in tools:
                    res = case(binary, env, op, size, a.objects, a.depth, a.seconds)
                    results.setdefault((size, op, name), []).append(res)
                    print(f"round {r + 1} {size_name(size)} {op} {name}: {res['rps']:.0f} req/s, "
                          f"{res['cpu_us']:.1f} µs client CPU/req, {res['server_us']:.0f} µs server CPU/req",
                          file=sys.stderr)
    subprocess.run([SCRIPT, "stop", STATE], check=True)

    def med(rs, k):
        return statistics.median(x[k] for x in rs)

    lines = [
        f"# ioscope s3 engine vs warp on the same MinIO ({datetime.date.today()}, {platform.node()})",
        "",
        f"Command: `bench/s3.py --rounds {a.rounds} --seconds {a.seconds} --depth {a.depth} --objects {a.objects}`; "
        f"{os.cpu_count()} CPUs, Linux {platform.release()}; MinIO, ioscope and warp on this one machine (127.0.0.1).",
        f"Whole-object GETs and PUTs, {a.depth} in flight (ioscope: one thread, --iodepth {a.depth}; warp: --concurrent {a.depth}), "
        f"{a.seconds} s per case, medians of {a.rounds} rounds (order alternating). CPU per request: the client process's "
        "user+system time over the case (setup included: ioscope's working-set check, warp's object upload and cleanup) "
        "divided by the requests it timed; the server's the same for MinIO.",
        "",
        "| size | op | tool | req/s | p50 ms | p99 ms | client CPU µs/req | server CPU µs/req | client/server CPU | req/s per client core | ioscope/warp per core |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        for op in ("GET", "PUT"):
            per_core = {}
            for name in ("ioscope", "warp"):
                rs = results[(size, op, name)]
                per_core[name] = 1e6 / med(rs, "cpu_us")
            for name in ("ioscope", "warp"):
                rs = results[(size, op, name)]
                ratio = per_core["ioscope"] / per_core["warp"] if name == "ioscope" else None
                lines.append(
                    f"| {size_name(size)} | {op} | {name} | {med(rs, 'rps'):.0f} | {med(rs, 'p50_ms'):.2f} | {med(rs, 'p99_ms'):.2f} | "
                    f"{med(rs, 'cpu_us'):.1f} | {med(rs, 'server_us'):.0f} | {med(rs, 'cpu_us') / med(rs, 'server_us'):.2f} | "
                    f"{per_core[name]:.0f} | {'' if ratio is None else f'{ratio:.2f}x'} |"
                )
    lines += ["", "Per round (req/s, client CPU µs/req):", ""]
    for (size, op, name), rs in sorted(results.items()):
        lines.append(f"- {size_name(size)} {op} {name}: " + ", ".join(f"{x['rps']:.0f} ({x['cpu_us']:.1f})" for x in rs))
    text = "\n".join(lines) + "\n"
    print(text)
    out = a.out or os.path.join(ROOT, "bench", "results", f"{datetime.date.today()}-{platform.node()}-s3.md")
    with open(out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
