#!/usr/bin/env python3
"""ioscope's NFS engine against the same nfs-ganesha as libnfs' nfs-cat / nfs-cp.

Starts ganesha with scripts/nfs-ganesha.sh (rpcbind and ganesha in a network namespace on
this machine), then runs, alternating for --rounds rounds:
  - ioscope --engine nfs, once per NFS version of --versions (default 3 and 4.1; the URL
    gets ?version=4.1): 4 KiB random reads at QD1 and QD32, 1 MiB sequential reads at QD1
    (the depth nfs-cat keeps: one 1 MiB READ at a time) and QD4, 1 MiB sequential writes
    at QD4. A version the binary refuses (exit 2 before any I/O) is shown as "not
    supported by this build";
  - libnfs-utils: nfs-cat of a 256 MiB file (sequential read) and nfs-cp of a 256 MiB
    local file to the server (sequential write), NFSv3. (fio here has no nfs engine.)
  - the round-trip floor: a minimal Python client sending NFSv3 NULL calls one at a time.
For every case it measures the client's CPU (user+system of the client process) and
ganesha's CPU (from /proc/PID/stat) over the same interval, and prints per-operation CPU
for both. Prints a markdown table (the versions side by side) and writes it to
bench/results/DATE-HOST-nfs.md.

Python 3 standard library only. Needs root (network namespace).
"""

import argparse
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "nfs-ganesha.sh")
STATE = "/tmp/ioscope-nfs"


def measured(cmd):
    """Runs cmd; returns (stdout, wall s, client CPU s, ganesha's CPU s)."""
    return cpu.measured(cmd, lambda: cpu.process_cpu_s(os.path.join(STATE, "ganesha.pid")))


class Unsupported(Exception):
    """The binary refused the run before any I/O (exit 2): this NFS version is not in it."""


def version_url(url, version):
    return url if version == "3" else f"{url}?version={version}"


def ioscope_case(binary, url, args, seconds, op):
    cmd = [binary, "run", "--engine", "nfs", "--target", url, "--duration", f"{seconds}s", "--quiet", "--json",
           "--out", os.path.join(tempfile.mkdtemp(), "r.db")] + args
    try:
        out, wall, client, server = measured(cmd)
    except subprocess.CalledProcessError as e:
        if e.returncode == 2:
            raise Unsupported((e.stderr or "").strip().splitlines()[0] if (e.stderr or "").strip() else "exit 2")
        raise
    s = json.loads(out)
    o = s["ops"][op]
    # CPU over the whole process (setup included) is charged to the measured operations.
    return {"ops": o["ops"], "iops": o["iops"], "mbps": o["bytes_per_sec"] / 1e6, "errors": s["total"]["errors"],
            "client_us_per_op": client / o["ops"] * 1e6, "server_us_per_op": server / o["ops"] * 1e6}


# The floor of a QD1 round trip here: a minimal client (no file system work on either side)
# sending NFSv3 NULL calls one at a time on one blocking TCP connection. Whatever CPU it
# costs per call, any client pays at QD1 on this machine.
PING = r"""
import socket, struct, sys, time
s = socket.create_connection((sys.argv[1], 2049))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def exact(n):
    b = b""
    while len(b) < n:
        b += s.recv(n - len(b))
    return b
end, n = time.monotonic() + float(sys.argv[2]), 0
while time.monotonic() < end:
    body = struct.pack(">10I", n + 1, 0, 2, 100003, 3, 0, 0, 0, 0, 0)  # CALL NFS3 NULL, AUTH_NONE
    s.sendall(struct.pack(">I", 0x80000000 | len(body)) + body)
    exact(struct.unpack(">I", exact(4))[0] & 0x7FFFFFFF)
    n += 1
print(n)
"""


def ping_case(host, seconds):
    out, wall, client, server = measured([sys.executable, "-c", PING, host, str(seconds)])
    ops = int(out)
    return {"ops": ops, "iops": ops / wall, "mbps": 0.0, "errors": 0,
            "client_us_per_op": client / ops * 1e6, "server_us_per_op": server / ops * 1e6}


def libnfs_case(cmd, nbytes, io_size):
    _, wall, client, server = measured(cmd)
    ops = nbytes / io_size
    return {"ops": ops, "iops": ops / wall, "mbps": nbytes / wall / 1e6, "errors": 0,
            "client_us_per_op": client / ops * 1e6, "server_us_per_op": server / ops * 1e6}


# ioscope's rows: (arguments, the operation whose IOPS counts). The 1 MiB sequential read
# runs at QD1, the depth nfs-cat keeps (libnfs' nfs_pread of 1 MiB is one READ when the
# server's rtmax is 1 MiB or more), and at QD4.
IOSCOPE_CASES = {
    "4 KiB random read, QD1": (["--rw", "randread", "--bs", "4k", "--size", "256m", "--iodepth", "1"], "read"),
    "4 KiB random read, QD32": (["--rw", "randread", "--bs", "4k", "--size", "256m", "--iodepth", "32"], "read"),
    "1 MiB sequential read, QD1": (["--rw", "read", "--bs", "1m", "--size", "256m", "--iodepth", "1"], "read"),
    "1 MiB sequential read, QD4": (["--rw", "read", "--bs", "1m", "--size", "256m", "--iodepth", "4"], "read"),
    "1 MiB sequential write, QD4": (["--rw", "write", "--bs", "1m", "--size", "256m", "--iodepth", "4"], "write"),
}
NFS_CAT = "256 MiB sequential read (nfs-cat: 1 MiB READs, QD1)"
NFS_CP = "256 MiB sequential write (nfs-cp: 1 MiB WRITEs, QD1)"


def row(name, version):
    return f"{name} [NFSv{version}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ioscope", default=None, help="binary (default: cargo build --release)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--label", default="nfs")
    ap.add_argument("--versions", default="3,4.1",
                    help="NFS versions to run every ioscope row with, comma-separated (default 3,4.1)")
    ap.add_argument("--baseline", default=None,
                    help="an older ioscope binary: each ioscope case runs with it too, right after this one, "
                         "and the table adds its rows and the ratio")
    a = ap.parse_args()
    versions = [v.strip() for v in a.versions.split(",") if v.strip()]
    if not versions or any(v not in ("3", "4.1") for v in versions):
        sys.exit(f"--versions {a.versions!r}: expected a comma-separated list of 3 and 4.1")
    binary = a.ioscope
    if binary is None:
        target = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/ioscope/target"))
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True,
                       env=dict(os.environ, CARGO_TARGET_DIR=target))
        binary = os.path.join(target, "release", "ioscope")

    url = subprocess.run([SCRIPT, "start"], check=True, capture_output=True, text=True).stdout.split()[-1]
    try:
        ws = f"{url}/bench"
        size = 256 << 20
        # The working set once (ioscope.0.dat, 256 MiB); a local file for nfs-cp.
        subprocess.run([binary, "run", "--engine", "nfs", "--target", ws, "--size", "256m", "--rw", "read",
                        "--duration", "1s", "--quiet", "--out", os.path.join(tempfile.mkdtemp(), "p.db")],
                       check=True, capture_output=True)
        local = os.path.join(tempfile.mkdtemp(), "src.bin")
        with open(local, "wb") as f:
            f.write(os.urandom(size))
        host = url.split("/")[2]
        # Each version's support, asked once: a 1-second run of the smallest case.
        unsupported = {}
        for v in versions:
            try:
                ioscope_case(binary, version_url(ws, v), ["--rw", "randread", "--bs", "4k", "--size", "256m"], 1,
                             "read")
            except Unsupported as e:
                unsupported[v] = str(e)
                print(f"NFS version {v}: not supported by this build ({e})", file=sys.stderr)
        io = lambda b, name, v: (lambda: ioscope_case(b, version_url(ws, v), IOSCOPE_CASES[name][0], a.seconds,
                                                      IOSCOPE_CASES[name][1]))
        cases = {"NULL call, QD1, minimal client (Python; the round-trip floor)": lambda: ping_case(host, a.seconds)}
        for name in IOSCOPE_CASES:
            for v in versions:
                if v not in unsupported:
                    cases[row(name, v)] = io(binary, name, v)
                    if a.baseline:
                        cases[row(name, v) + " [baseline]"] = io(a.baseline, name, v)
        cases[NFS_CAT] = lambda: libnfs_case(
            ["sh", "-c", f"nfs-cat '{ws}/ioscope.0.dat' > /dev/null"], size, 1 << 20)
        cases[NFS_CP] = lambda: libnfs_case(
            ["nfs-cp", local, f"{ws}/nfs-cp-{time.monotonic_ns()}.bin"], size, 1 << 20)
        results = {name: [] for name in cases}
        for _ in range(a.rounds):
            for name, run in cases.items():
                results[name].append(run())
    finally:
        subprocess.run([SCRIPT, "stop"], capture_output=True)

    med = lambda rs, k: statistics.median(r[k] for r in rs)
    lines = [
        f"# ioscope NFS engine vs libnfs on nfs-ganesha ({datetime.date.today()}, {socket.gethostname()}, "
        f"{os.cpu_count()} CPUs, {platform.release()})",
        "",
        f"Server: nfs-ganesha (VFS) in a network namespace on the same machine; {a.rounds} rounds of "
        f"{a.seconds} s per ioscope case, alternating, medians. Binary: {binary}. "
        "CPU per operation: user+system time of the client process and of ganesha over the same interval, "
        "divided by the operations (1 MiB for the libnfs copies). client/server: the two divided.",
        "",
    ]
    for v in versions:
        if v in unsupported:
            lines.append(f"NFSv{v}: not supported by this build ({unsupported[v]}).")
    head = "| case |" + "".join(f" NFSv{v} IOPS | NFSv{v} MB/s | NFSv{v} client µs/op | NFSv{v} ganesha µs/op | "
                                 f"NFSv{v} client/server |" for v in versions)
    lines += ["", head, "|---|" + "---|" * (5 * len(versions))]

    def cells(rs):
        c, s = med(rs, "client_us_per_op"), med(rs, "server_us_per_op")
        return (f" {med(rs, 'iops'):,.0f} | {med(rs, 'mbps'):,.1f} | {c:,.1f} | {s:,.1f} | {c / s:.2f} |")

    unsupported_cells = " not supported by this build | | | | |"
    over = []
    for name in IOSCOPE_CASES:
        for suffix in [""] + ([" [baseline]"] if a.baseline else []):
            line = f"| {name}{suffix} (ioscope) |"
            for v in versions:
                rs = results.get(row(name, v) + suffix)
                line += cells(rs) if rs else unsupported_cells
                if rs and not suffix:
                    ratio = med(rs, "client_us_per_op") / med(rs, "server_us_per_op")
                    if ratio > 0.5:
                        over.append(f"{name} NFSv{v}: {ratio:.2f}")
            lines.append(line)
    lines += ["", "Reference rows (not ioscope; NFSv3):", "",
              "| case | IOPS | MB/s | client µs/op | ganesha µs/op | client/server |", "|---|---|---|---|---|---|"]
    for name in [n for n in results if not any(n.startswith(k) for k in IOSCOPE_CASES)]:
        rs = results[name]
        lines.append(f"| {name} |" + cells(rs))
    cat, cp = results[NFS_CAT], results[NFS_CP]
    lines += [""]
    for v in [v for v in versions if v not in unsupported]:
        r = lambda name, ref: med(results[row(name, v)], "mbps") / med(ref, "mbps")
        lines.append(f"NFSv{v}, ioscope/libnfs MB/s (medians): 1 MiB sequential read {r('1 MiB sequential read, QD1', cat):.2f}x "
                     f"at QD1 (nfs-cat's depth), {r('1 MiB sequential read, QD4', cat):.2f}x at QD4; "
                     f"1 MiB sequential write {r('1 MiB sequential write, QD4', cp):.2f}x (QD4 against nfs-cp's QD1).")
    errs = [f"{name}: {sum(r['errors'] for r in rs)}" for name, rs in results.items() if any(r["errors"] for r in rs)]
    lines += ["", "Rows with I/O errors: " + (", ".join(errs) if errs else "none") + "."]
    lines += ["", "ioscope rows over 0.5 client/server CPU: " + (", ".join(over) if over else "none") + "."]
    if a.baseline:
        lines += ["", f"Baseline: {a.baseline} (rows marked [baseline], run right after this binary's row in "
                  "every round). This binary / baseline, IOPS (medians): " + ", ".join(
                      f"{row(name, v)}: {med(results[row(name, v)], 'iops') / med(results[row(name, v) + ' [baseline]'], 'iops'):.2f}"
                      for name in IOSCOPE_CASES for v in versions if v not in unsupported)]
    lines += ["",
              "Raw rounds:", "", "```", json.dumps(results, indent=1), "```"]
    text = "\n".join(lines) + "\n"
    print(text)
    out = os.path.join(ROOT, "bench", "results", f"{datetime.date.today()}-{socket.gethostname()}-{a.label}.md")
    n = 2
    while os.path.exists(out):  # never overwrite a result
        out = os.path.join(ROOT, "bench", "results", f"{datetime.date.today()}-{socket.gethostname()}-{a.label}-{n}.md")
        n += 1
    with open(out, "w") as f:
        f.write(text)
    print(f"written: {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
