#!/usr/bin/env python3
"""The long run of the property tests: the same properties CI runs, with many more cases.

Every property (docs/robustness.md) runs through `ioscope_props::check`, which reads
PROPTEST_CASES and PROPTEST_RNG_SEED and prints one line per property:
`property NAME: N cases in S s (seed X)`. This script builds the test binaries, runs each
crate's property tests with those variables set, one test at a time, and prints a table of
the cases run and the time taken per property; it writes it to
bench/results/YYYY-MM-DD-<hostname>-fuzz.md (never overwriting one). A failing property
prints its smallest failing input and the seed that repeats it; the script then exits 1.

Usage: bench/fuzz.py [--cases 200000] [--seed N] [--only workload,store,nfs,web] [--release]
Python 3 standard library only. See bench/README.md.
"""

import argparse
import datetime
import os
import platform
import re
import socket
import subprocess
import sys
import time

# (short name, cargo package, test filter): where the properties live.
GROUPS = [
    ("workload", "ioscope-workload", "fuzz_tests"),
    ("store", "ioscope-store", "damage_tests"),
    ("nfs", "ioscope-engine-nfs", "decode_tests"),
    ("web", "ioscope-web", "tests_props"),
]
LINE = re.compile(r"^property (.+): (\d+) cases in ([0-9.]+) s \(seed (\d+)\)$")
FAILED = re.compile(r"property (.+) failed after (\d+) cases")


def cargo_test(package, test_filter, release, env, no_run=False):
    cmd = ["cargo", "test", "-p", package, "--lib"]
    if release:
        cmd.append("--release")
    if no_run:
        cmd.append("--no-run")
        return subprocess.run(cmd, env=env)
    cmd += [test_filter, "--", "--nocapture", "--test-threads", "1"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200_000, help="cases per property (PROPTEST_CASES)")
    ap.add_argument("--seed", type=int, default=None,
                    help="PROPTEST_RNG_SEED (default: a new one from the clock, printed)")
    ap.add_argument("--only", default=",".join(g[0] for g in GROUPS),
                    help="groups to run, comma-separated: " + ", ".join(g[0] for g in GROUPS))
    ap.add_argument("--release", action="store_true", help="optimized test binaries (a long build)")
    ap.add_argument("--no-save", action="store_true", help="print the table only")
    args = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    seed = args.seed if args.seed is not None else int(time.time())
    wanted = args.only.split(",")
    unknown = [w for w in wanted if w not in [g[0] for g in GROUPS]]
    if unknown:
        ap.error(f"unknown group(s) {', '.join(unknown)}")
    env = dict(os.environ, PROPTEST_CASES=str(args.cases), PROPTEST_RNG_SEED=str(seed),
               RUST_BACKTRACE="0")
    groups = [g for g in GROUPS if g[0] in wanted]
    for _, package, _ in groups:
        print(f"== building {package}", file=sys.stderr)
        if cargo_test(package, "", args.release, env, no_run=True).returncode != 0:
            sys.exit("build failed")
    rows, failed = [], []
    start = time.monotonic()
    for name, package, test_filter in groups:
        print(f"== {name}: {args.cases:,} cases per property, seed {seed}", file=sys.stderr)
        t0 = time.monotonic()
        out = cargo_test(package, test_filter, args.release, env)
        wall = time.monotonic() - t0
        for line in out.stderr.splitlines() + out.stdout.splitlines():
            m = LINE.match(line.strip())
            if m:
                rows.append((m.group(1), int(m.group(2)), float(m.group(3))))
                print(f"   {line.strip()}", file=sys.stderr)
            f = FAILED.search(line)
            if f and (f.group(1), int(f.group(2)), None) not in rows:
                rows.append((f.group(1), int(f.group(2)), None))
        if out.returncode != 0:
            failed.append(name)
            print(out.stdout[-20000:], out.stderr[-20000:], sep="\n", file=sys.stderr)
        print(f"   {name}: {wall:.0f} s with the plain tests beside them", file=sys.stderr)
    total = time.monotonic() - start
    mode = "release" if args.release else "debug"
    lines = [
        f"# property tests, long run ({datetime.date.today()}, {socket.gethostname()}, "
        f"{os.cpu_count()} CPUs, {platform.platform()})",
        "",
        f"`{' '.join(sys.argv)}`: PROPTEST_CASES={args.cases}, PROPTEST_RNG_SEED={seed}, {mode} build, "
        "one test at a time.",
        "",
        "| property | cases | seconds | cases/s |",
        "|---|---|---|---|",
    ]
    for prop, cases, secs in rows:
        if secs is None:
            lines.append(f"| {prop} | FAILED after {cases:,} | | |")
        else:
            lines.append(f"| {prop} | {cases:,} | {secs:.2f} | {cases / secs if secs else float('inf'):,.0f} |")
    lines += [
        "",
        f"{sum(r[1] for r in rows):,} cases in {len(rows)} properties, {total:.0f} s in all; "
        + (f"FAILED: {', '.join(failed)} (see the output above)." if failed else "no failure."),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        base = os.path.join(here, "results", f"{datetime.date.today()}-{socket.gethostname()}-fuzz")
        out, n = base + ".md", 2
        while os.path.exists(out):
            out, n = f"{base}-{n}.md", n + 1
        with open(out, "w") as f:
            f.write(text)
        print(f"written to {out}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
