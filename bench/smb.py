#!/usr/bin/env python3
"""ioscope's smb engine against the SMB clients a user would pick, side by side on one Samba.

Starts Samba with scripts/smb-server.sh (its own state directory), builds the reference
client bench/smbclient-choice (libsmbclient, Samba's own client library, one request at a
time), and runs, alternating for --rounds rounds, for --seconds each:
  - 4 KiB random reads and writes on a 64 MiB file: ioscope run --engine smb (one worker
    thread) at --iodepth 1 and at --iodepth DEPTH, against libsmbclient (smbc_lseek +
    smbc_read/smbc_write, which can only have one request in flight);
  - 1 MiB sequential reads and writes of a 256 MiB file: ioscope (--iodepth DEPTH) against
    smbclient, Samba's command-line client, copying the same amount with `get` to
    /dev/null and `put` from a local file, repeated within one connection.
Each tool works on its own files of the same size (ioscope does not write into files it did
not make), every file in the server's page cache before each case (the share is local).
For every case it measures the client's CPU (user+system of the client process and its
threads, from getrusage of children) and smbd's (every process of its process group, from
/proc) over the same interval. Latency percentiles: ioscope's from its histograms (from
each request's intended start); libsmbclient's from every request's own time (exact order
statistics); smbclient prints none.
Prints a markdown table and writes it to bench/results/DATE-HOST-smb.md.

Python 3 standard library only. Needs root (scripts/smb-server.sh installs and runs smbd).
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
SCRIPT = os.path.join(ROOT, "scripts", "smb-server.sh")
STATE = "/tmp/ioscope-smb-bench"
CHOICE = os.path.join(ROOT, "bench", "smbclient-choice")
CHOICE_TARGET = "/root/.cache/ioscope/target-smbchoice"
SMALL_FILE = 64 << 20
SEQ_FILE = 256 << 20


def measured(cmd, env):
    """Runs cmd; returns (stdout, wall s, client CPU s, smbd's CPU s: its whole process
    group, a connection's own smbd included after it ended)."""
    return cpu.measured(cmd, lambda: cpu.group_cpu_s(os.path.join(STATE, "smbd.pid")), env)


def load_env():
    env = dict(os.environ)
    with open(os.path.join(STATE, "env")) as f:
        for line in f:
            for m in re.finditer(r"(\w+)=(\S+)", line.replace("export ", "")):
                env[m.group(1)] = m.group(2)
    return env


def warm(path):
    """Reads the server's copy of the files under path into the page cache."""
    for dirpath, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                while f.read(1 << 20):
                    pass


SIGN = False  # --sign: every client signs; else none does


def ioscope_case(binary, env, rw, bs, size, depth, seconds, dir_name):
    target = env["IOSCOPE_SMB_URL"] + "/" + dir_name + ("?sign=required" if SIGN else "")
    warm(os.path.join(STATE, "share", dir_name))
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, "run", "--engine", "smb", "--target", target, "--rw", rw, "--bs", str(bs),
               "--size", str(size), "--files", "1", "--iodepth", str(depth),
               "--duration", f"{seconds}s", "--quiet", "--json", "--out", os.path.join(tmp, "r.db")]
        out, wall, cpu, server = measured(cmd, env)
    v = json.loads(out)
    o = v["ops"]["read" if "read" in rw else "write"]
    lat = o["latency_ns"]
    return {
        "requests": o["ops"], "errors": o["errors"], "rps": o["iops"], "mib_s": o["iops"] * bs / (1 << 20),
        "p50_ms": lat["p50"] / 1e6, "p99_ms": lat["p99"] / 1e6,
        "cpu_us": cpu / max(o["ops"], 1) * 1e6, "server_us": server / max(o["ops"], 1) * 1e6,
    }


def libsmbclient_case(choice, env, op, seconds):
    warm(os.path.join(STATE, "share", "ref-4k.dat"))
    cmd = [choice, "--client", "libsmbclient", "--op", op, "--file", "ref-4k.dat", "--size", str(SMALL_FILE),
           "--secs", str(seconds)] + (["--sign"] if SIGN else [])
    out, wall, cpu, server = measured(cmd, env)
    v = json.loads(out.strip().splitlines()[-1])
    n = max(v["requests"], 1)
    # Its setup (connecting, opening) is in both CPU figures, as ioscope's is in its own.
    return {
        "requests": v["requests"], "errors": v["errors"], "rps": v["requests_per_s"],
        "mib_s": v["requests_per_s"] * 4096 / (1 << 20), "p50_ms": v["p50_ms"], "p99_ms": v["p99_ms"],
        "cpu_us": cpu / n * 1e6, "server_us": server / n * 1e6,
    }


def smbclient_case(env, op, seconds, local_file):
    """smbclient get/put of the 256 MiB file, repeated in one connection for about --seconds."""
    port = env["IOSCOPE_SMB_URL"].rsplit(":", 1)[1].split("/", 1)[0]
    warm(os.path.join(STATE, "share", "ref-seq.dat"))
    # One copy first, to size the repeat count to the case's duration.
    one = "get ref-seq.dat /dev/null" if op == "read" else f"put {local_file} ref-seq-put.dat"
    base = ["smbclient", "//127.0.0.1/ioscope", "-p", port, "-A", os.path.join(STATE, "smbclient.auth"),
            "-m", "SMB3_11", "--client-protection=" + ("sign" if SIGN else "off"), "-E"]
    _, wall, _, _ = measured(base + ["-c", one], env)
    copies = max(1, round(seconds / max(wall, 0.05)))
    out, wall, cpu, server = measured(base + ["-c", "; ".join([one] * copies)], env)
    requests = copies * SEQ_FILE // (1 << 20)  # in 1 MiB units, to compare with ioscope's
    return {
        "requests": requests, "errors": 0, "rps": requests / wall, "mib_s": requests / wall,
        "p50_ms": None, "p99_ms": None,
        "cpu_us": cpu / requests * 1e6, "server_us": server / requests * 1e6,
    }


def fmt_ms(x):
    return "—" if x is None else f"{x:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "ioscope"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--depth", type=int, default=16)
    ap.add_argument("--out", default=None)
    ap.add_argument("--sign", action="store_true", help="every client signs (default: none does, as none must)")
    a = ap.parse_args()
    global SIGN
    SIGN = a.sign
    subprocess.run([SCRIPT, "start", STATE], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cargo", "build", "--release", "--locked", "--quiet"], check=True, cwd=CHOICE,
                   env=dict(os.environ, CARGO_TARGET_DIR=CHOICE_TARGET))
    choice = os.path.join(CHOICE_TARGET, "release", "smbclient-choice")
    env = load_env()
    port = env["IOSCOPE_SMB_URL"].rsplit(":", 1)[1].split("/", 1)[0]
    auth = os.path.join(STATE, "smbclient.auth")
    with tempfile.TemporaryDirectory() as tmp:
        # The peers' files, random bytes put through smbclient (owned by the SMB user).
        local = os.path.join(tmp, "seq.dat")
        with open(local, "wb") as f:
            f.write(os.urandom(SEQ_FILE))
        small = os.path.join(tmp, "small.dat")
        with open(small, "wb") as f:
            f.write(os.urandom(SMALL_FILE))
        subprocess.run(["smbclient", "//127.0.0.1/ioscope", "-p", port, "-A", auth, "-c",
                        f"put {small} ref-4k.dat; put {local} ref-seq.dat"], check=True, capture_output=True)
        # ioscope's working sets, written once (a short read run prepares them).
        ioscope_case(a.binary, env, "randread", 4096, SMALL_FILE, 1, 1, "bench-4k")
        ioscope_case(a.binary, env, "read", 1 << 20, SEQ_FILE, 1, 1, "bench-seq")
        cases = [
            ("4 KiB random", "read", [
                ("ioscope QD1", lambda s: ioscope_case(a.binary, env, "randread", 4096, SMALL_FILE, 1, s, "bench-4k")),
                (f"ioscope QD{a.depth}",
                 lambda s: ioscope_case(a.binary, env, "randread", 4096, SMALL_FILE, a.depth, s, "bench-4k")),
                ("libsmbclient QD1", lambda s: libsmbclient_case(choice, env, "read", s)),
            ]),
            ("4 KiB random", "write", [
                ("ioscope QD1", lambda s: ioscope_case(a.binary, env, "randwrite", 4096, SMALL_FILE, 1, s, "bench-4k")),
                (f"ioscope QD{a.depth}",
                 lambda s: ioscope_case(a.binary, env, "randwrite", 4096, SMALL_FILE, a.depth, s, "bench-4k")),
                ("libsmbclient QD1", lambda s: libsmbclient_case(choice, env, "write", s)),
            ]),
            ("1 MiB sequential", "read", [
                (f"ioscope QD{a.depth // 4 or 1}",
                 lambda s: ioscope_case(a.binary, env, "read", 1 << 20, SEQ_FILE, a.depth // 4 or 1, s, "bench-seq")),
                ("smbclient get", lambda s: smbclient_case(env, "read", s, local)),
            ]),
            ("1 MiB sequential", "write", [
                (f"ioscope QD{a.depth // 4 or 1}",
                 lambda s: ioscope_case(a.binary, env, "write", 1 << 20, SEQ_FILE, a.depth // 4 or 1, s, "bench-seq")),
                ("smbclient put", lambda s: smbclient_case(env, "write", s, local)),
            ]),
        ]
        results = {}
        for r in range(a.rounds):
            for kind, op, tools in cases:
                order = tools if r % 2 == 0 else list(reversed(tools))
                for name, run in order:
                    res = run(a.seconds)
                    results.setdefault((kind, op, name), []).append(res)
                    print(f"round {r + 1} {kind} {op} {name}: {res['rps']:.0f} req/s, {res['mib_s']:.1f} MiB/s, "
                          f"{res['cpu_us']:.1f} µs client CPU/req, {res['server_us']:.0f} µs smbd CPU/req",
                          file=sys.stderr)
    subprocess.run([SCRIPT, "stop", STATE], check=True)

    def med(rs, k):
        vals = [x[k] for x in rs if x[k] is not None]
        return statistics.median(vals) if vals else None

    version = subprocess.run(["smbd", "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"# ioscope smb engine vs libsmbclient and smbclient on the same Samba ({datetime.date.today()}, {platform.node()})",
        "",
        f"Command: `bench/smb.py --rounds {a.rounds} --seconds {a.seconds} --depth {a.depth}"
        f"{' --sign' if SIGN else ''}` (as root); "
        f"{os.cpu_count()} CPUs, Linux {platform.release()}; smbd ({version}), ioscope and the peers on this one "
        "machine (127.0.0.1), SMB 3.1.1, "
        + ("every client signing (ioscope with `?sign=required`, libsmbclient with `client signing = required`, "
           "smbclient with `--client-protection=sign`)." if SIGN else
           "no client signing (the server does not require it; ioscope's default, libsmbclient's "
           "`client signing = default`, smbclient with `--client-protection=off`)."),
        f"{a.seconds} s per case, medians of {a.rounds} rounds (order alternating). A request is 4 KiB (random rows) "
        "or 1 MiB (sequential rows; smbclient's copies are counted in MiB, whatever its own request size). CPU per "
        "request: the client process's user+system time over the case, setup included, divided by its requests; "
        "smbd's the same for its whole process group. Latency: ioscope's from its histograms, libsmbclient's from "
        "every request, smbclient none.",
        "",
        "| workload | op | client | req/s | MiB/s | p50 ms | p99 ms | client CPU µs/req | smbd CPU µs/req "
        "| client/server CPU | req/s per client core | vs peer per core |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, op, tools in cases:
        names = [n for n, _ in tools]
        peer = names[-1]
        peer_core = 1e6 / med(results[(kind, op, peer)], "cpu_us")
        for name in names:
            rs = results[(kind, op, name)]
            core = 1e6 / med(rs, "cpu_us")
            ratio = "" if name == peer else f"{core / peer_core:.2f}x"
            lines.append(
                f"| {kind} | {op} | {name} | {med(rs, 'rps'):.0f} | {med(rs, 'mib_s'):.1f} | {fmt_ms(med(rs, 'p50_ms'))} | "
                f"{fmt_ms(med(rs, 'p99_ms'))} | {med(rs, 'cpu_us'):.1f} | {med(rs, 'server_us'):.1f} | "
                f"{med(rs, 'cpu_us') / med(rs, 'server_us'):.2f} | {core:.0f} | {ratio} |")
    errors = sum(x["errors"] for rs in results.values() for x in rs)
    lines += ["", f"Errors over every run: {errors}.", "", "Per round (req/s, client CPU µs/req, errors):", ""]
    for (kind, op, name), rs in results.items():
        lines.append(f"- {kind} {op} {name}: "
                     + ", ".join(f"{x['rps']:.0f} ({x['cpu_us']:.1f}, {x['errors']})" for x in rs))
    text = "\n".join(lines) + "\n"
    print(text)
    out = a.out or os.path.join(ROOT, "bench", "results",
                                f"{datetime.date.today()}-{platform.node()}-smb{'-signed' if SIGN else ''}.md")
    with open(out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
