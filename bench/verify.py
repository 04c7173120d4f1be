#!/usr/bin/env python3
"""The cost of data validation: the same ioscope run without --verify, with --verify, and
with --verify --journal FILE, side by side.

Cases: posix 4 KiB random writes into the page cache (a working set that fits in memory,
no fsync), and nfs 4 KiB random writes against an NFSv3 server (a local nfs-ganesha:
scripts/nfs-ganesha.sh start-loop, or --nfs-url). Each round runs every variant of a
case once, one after the other (off, verify, verify+journal, off, ...), for --rounds
rounds; the table shows the median IOPS of each variant and its cost against the run
without (1 - IOPS / IOPS without). Writes the table and the raw per-round figures to
bench/results/YYYY-MM-DD-<hostname>-verify.md.

Python 3 standard library only. See bench/README.md, "verify.py".
"""

import argparse
import datetime
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)

VARIANTS = [("off", []), ("verify", ["--verify"]), ("verify+journal", ["--verify", "--journal"])]


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def run_once(binary, target_args, extra, duration, tmp, journal_dir):
    """One ioscope run; returns its total IOPS."""
    out = os.path.join(tmp, "r.db")
    if os.path.exists(out):
        os.remove(out)
    args = [binary, "run", *target_args, "--rw", "randwrite", "--bs", "4k", "--duration", f"{duration}s",
            "--quiet", "--json", "--out", out]
    for a in extra:
        args.append(a)
        if a == "--journal":
            journal = os.path.join(journal_dir, "bench.journal")
            if os.path.exists(journal):
                os.remove(journal)
            args.append(journal)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(args, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        die(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    summary = json.loads(p.stdout)
    iops = float(summary["total"]["iops"])
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # The whole process's CPU (start-up included) per I/O: less swayed than IOPS by other
    # work on the machine's CPUs.
    return iops, cpu_s / max(iops * duration, 1) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO_DIR, "target")),
                                                  "release", "ioscope"), help="the ioscope binary (a release build)")
    ap.add_argument("--dir", help="directory for the posix working set (default: a temporary one)")
    ap.add_argument("--size", default="256m", help="posix working set (fits in the page cache)")
    ap.add_argument("--nfs-url", default=os.environ.get("IOSCOPE_NFS_URL"),
                    help="NFSv3 target (default $IOSCOPE_NFS_URL); without one the nfs case is left out")
    ap.add_argument("--nfs-size", default="64m")
    ap.add_argument("--nfs-iodepth", type=int, default=8)
    ap.add_argument("--journal-dir", help="where the journal goes (default: beside the results, in a temporary directory)")
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--label", default="verify")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        die(f"{args.bin} is not an executable (cargo build --release)")
    if args.rounds < 3:
        die("--rounds must be at least 3 (the median of fewer says little)")

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="ioscope-bench-verify-") as tmp:
        journal_dir = args.journal_dir or tmp
        data = args.dir or os.path.join(tmp, "data")
        cases = [("posix 4k randwrite, page cache, 1 thread", ["--dir", data, "--size", args.size])]
        if args.nfs_url:
            url = args.nfs_url.rstrip("/") + f"/bench-verify-{os.getpid()}"
            cases.append((f"nfs 4k randwrite UNSTABLE, QD{args.nfs_iodepth}",
                          ["--engine", "nfs", "--target", url, "--size", args.nfs_size,
                           "--iodepth", str(args.nfs_iodepth)]))
        else:
            log("no --nfs-url and no $IOSCOPE_NFS_URL: the nfs case is left out")
        raw = {name: {v: [] for v, _ in VARIANTS} for name, _ in cases}
        cpu = {name: {v: [] for v, _ in VARIANTS} for name, _ in cases}
        for name, target in cases:
            log(f"{name}: preparing the working set")
            run_once(args.bin, target, [], 1, tmp, journal_dir)
            for r in range(args.rounds):
                for v, extra in VARIANTS:
                    iops, us = run_once(args.bin, target, extra, args.duration, tmp, journal_dir)
                    raw[name][v].append(iops)
                    cpu[name][v].append(us)
                    log(f"{name} round {r + 1} {v}: {iops:,.0f} IOPS, {us:.2f} us CPU per I/O")

    def cost(name, v):
        off = statistics.median(raw[name]["off"])
        return (1 - statistics.median(raw[name][v]) / off) * 100 if off > 0 else float("nan")

    host = socket.gethostname().split(".")[0]
    today = datetime.date.today().isoformat()
    lines = [f"# cost of --verify and --journal ({today}, {host}, {os.cpu_count()} CPUs, {platform.platform()})", "",
             f"`bench/verify.py --bin {args.bin} --rounds {args.rounds} --duration {args.duration}`"
             f"{' --nfs-url ' + args.nfs_url if args.nfs_url else ''}; median of {args.rounds} runs of "
             f"{args.duration} s per variant, the variants alternating in each round. Journal in "
             f"{'--journal-dir ' + args.journal_dir if args.journal_dir else 'a temporary directory (/tmp)'}.", "",
             "| case | without (IOPS) | --verify (IOPS) | cost | --verify --journal (IOPS) | cost |",
             "|---|---|---|---|---|---|"]
    for name, _ in cases:
        med = {v: statistics.median(raw[name][v]) for v, _ in VARIANTS}
        lines.append(f"| {name} | {med['off']:,.0f} | {med['verify']:,.0f} | {cost(name, 'verify'):.1f} % "
                     f"| {med['verify+journal']:,.0f} | {cost(name, 'verify+journal'):.1f} % |")
    lines += ["", "Paired per round: the median over rounds of (1 - IOPS / IOPS without, in the same round);",
              "a burst of other work on the machine weighs on both sides of each ratio.", "",
              "| case | --verify | --verify --journal |", "|---|---|---|"]
    for name, _ in cases:
        paired = {v: (1 - statistics.median([a / b for a, b in zip(raw[name][v], raw[name]["off"]) if b > 0])) * 100
                  for v in ("verify", "verify+journal")}
        lines.append(f"| {name} | {paired['verify']:.1f} % | {paired['verify+journal']:.1f} % |")
    lines += ["", "CPU time of the ioscope process (user + system, start-up included) per I/O, median:", "",
              "| case | without (us/IO) | --verify (us/IO) | cost | --verify --journal (us/IO) | cost |",
              "|---|---|---|---|---|---|"]
    for name, _ in cases:
        med = {v: statistics.median(cpu[name][v]) for v, _ in VARIANTS}
        c = {v: (med[v] / med["off"] - 1) * 100 if med["off"] > 0 else float("nan") for v in med}
        lines.append(f"| {name} | {med['off']:.2f} | {med['verify']:.2f} | {c['verify']:.1f} % "
                     f"| {med['verify+journal']:.2f} | {c['verify+journal']:.1f} % |")
    lines += ["", "Targets: --verify at most 15 %, --verify --journal at most 25 % at page-cache speed.",
              f"Load average (1 min) before and after: {load_before:.1f}, {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} CPUs: a higher load than the CPUs makes the rounds spread.", "",
              "## Raw IOPS per round", ""]
    for name, _ in cases:
        for v, _ in VARIANTS:
            lines.append(f"- {name}, {v}: " + ", ".join(f"{x:,.0f}" for x in raw[name][v])
                         + " IOPS; " + ", ".join(f"{x:.2f}" for x in cpu[name][v]) + " us CPU per I/O")
    text = "\n".join(lines) + "\n"
    print(text)
    path = os.path.join(BENCH_DIR, "results", f"{today}-{host}-{args.label}.md")
    with open(path, "w") as f:
        f.write(text)
    log(f"written to {path}")


if __name__ == "__main__":
    main()
