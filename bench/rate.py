#!/usr/bin/env python3
"""Per-second precision of a fixed rate: how close each second comes to --rate-iops.

The integration tests assert only whole-run invariants (the scheduled I/Os are done, every
second has I/Os); this measures what they no longer assert: for each engine and rate, each
full second's IOPS against the rate (worst second, median and the share of seconds within
2 %). Prints a markdown table and writes it to bench/results/YYYY-MM-DD-<hostname>-rate.md.

Usage: bench/rate.py [--bin target/release/ioscope] [--duration 10s] [--rates 2000,20000]
Python 3 standard library only. See bench/README.md.
"""

import argparse
import csv
import datetime
import io
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile


def seconds(binary, results):
    text = subprocess.run([binary, "export", results, "--format", "csv"], check=True,
                          capture_output=True, text=True).stdout
    return [r for r in csv.DictReader(io.StringIO(text)) if float(r["interval_s"]) > 0.99]


def measure(binary, engine, rate, duration, work):
    results = os.path.join(work, f"{engine}-{rate}.db")
    cmd = [binary, "run", "--engine", engine, "--rate-iops", str(rate), "--duration", duration,
           "--size", "64m", "--dir", os.path.join(work, "data"), "--quiet", "-o", results]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    rows = seconds(binary, results)
    dev = [abs(float(r["iops"]) - rate) / rate * 100 for r in rows]
    return {
        "seconds": len(rows),
        "worst": max(dev) if dev else float("nan"),
        "median": statistics.median(dev) if dev else float("nan"),
        "within2": sum(d <= 2 for d in dev) / len(dev) * 100 if dev else float("nan"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    default_bin = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(here, "..", "target")),
                               "release", "ioscope")
    ap.add_argument("--bin", default=default_bin)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--rates", default="2000,20000")
    ap.add_argument("--engines", default="null,posix")
    args = ap.parse_args()
    rates = [int(r) for r in args.rates.split(",")]
    lines = [
        f"# fixed-rate precision per second ({datetime.date.today()}, {socket.gethostname()}, "
        f"{os.cpu_count()} CPUs, {platform.platform()})",
        "",
        f"`{' '.join(sys.argv)}`; each run {args.duration}, full seconds only.",
        "",
        "| engine | rate (IOPS) | seconds | worst second off by | median off by | seconds within 2 % |",
        "|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory(prefix="ioscope-rate-") as work:
        for engine in args.engines.split(","):
            for rate in rates:
                m = measure(args.bin, engine, rate, args.duration, work)
                lines.append(f"| {engine} | {rate:,} | {m['seconds']} | {m['worst']:.2f} % | "
                             f"{m['median']:.2f} % | {m['within2']:.0f} % |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = os.path.join(here, "results", f"{datetime.date.today()}-{socket.gethostname()}-rate.md")
    with open(out, "w") as f:
        f.write(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
