#!/usr/bin/env python3
"""fio job files converted by `ioscope import fio`, run by both tools on the same files.

For each job file in bench/fio-jobs/ (or those named with --jobs): `ioscope import fio JOB -o
JOB.toml` (with BENCH_DIR set to a directory of the job's own), `ioscope run JOB.toml --json`,
which lays out the working set (ioscope.N.dat), then fio on a copy of the same job file whose
`directory=` is replaced by `filename=` naming ioscope's files, so both tools read and write the
SAME files with the same direct/buffered mode, engine depth and block size. Both start with the
files' pages out of the page cache: fio's default invalidate=1 drops them, and the import turns it
into ioscope's `cache = "cold"`; with --drop-caches (root) the whole page cache is dropped too.

Prints one row per job and operation (a mixed job has a read and a write row): IOPS, MB/s and p99
latency of each tool and the ratio ioscope / fio, and writes the table to
bench/results/YYYY-MM-DD-<hostname>-fio-jobs.md. Latency: ioscope's `latency_ns` (from each
I/O's intended start), fio's `lat_ns` (submission to completion; the copy sets lat_percentiles=1
so fio reports its percentiles); also ioscope's service time and fio's clat for reference.

Usage: bench/fio_jobs.py [--bin target/release/ioscope] [--fio fio] [--dir /var/tmp/X]
                         [--jobs a.fio,b.fio] [--rounds N] [--drop-caches] [--keep]
Python 3 standard library only. See bench/README.md.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(argv, env=None, timeout=600):
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def first_json(text):
    """fio may print notes before its JSON; start at the first '{'."""
    i = text.find("{")
    return json.loads(text[i:]) if i >= 0 else None


def drop_caches():
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def run_ioscope(binary, job, data_dir, work, env, tag):
    stem = os.path.splitext(os.path.basename(job))[0]
    toml = os.path.join(work, f"{stem}.toml")
    if os.path.exists(toml):
        os.remove(toml)
    code, _, err = sh([binary, "import", "fio", job, "-o", toml], env=env)
    if code != 0:
        return {"problems": [f"import failed ({code}): {err.strip()[-400:]}"]}, None
    out = os.path.join(work, f"{stem}-{tag}.db")
    argv = [binary, "run", toml, "--out", out, "--json", "--quiet"]
    code, stdout, err = sh(argv, env=env)
    rec = {"argv": argv, "problems": [], "ops": {}}
    if code != 0:
        rec["problems"].append(f"ioscope exited {code}: {err.strip()[-400:]}")
    try:
        data = json.loads(stdout)
    except ValueError:
        rec["problems"].append("ioscope printed no JSON summary")
        return rec, toml
    if data.get("status") != "completed":
        rec["problems"].append(f"ioscope status {data.get('status')!r}")
    for op, d in (data.get("ops") or {}).items():
        if not d or not d.get("ops"):
            continue
        lat = d.get("latency_ns") or {}
        svc = d.get("service_time_ns") or {}
        rec["ops"][op] = {"iops": d["iops"], "bps": d["bytes_per_sec"], "p99": lat.get("p99"),
                          "svc_p99": svc.get("p99"), "errors": d.get("errors", 0)}
        if d.get("errors"):
            rec["problems"].append(f"ioscope {op} errors: {d['errors']}")
    plan = (data.get("workload") or {}).get("plan") or {}
    rec["engine"] = plan.get("engine")
    rec["direct"] = plan.get("direct")
    cache = data.get("cache")
    rec["cache"] = json.dumps(cache)[:200] if cache else None
    rec["verdicts"] = ", ".join(v.get("id", "?") for v in data.get("verdicts") or [] if isinstance(v, dict))
    return rec, toml


def fio_copy(job, files, path):
    """The job file with its directory= lines removed and a [global] naming ioscope's files."""
    with open(job) as f:
        lines = [ln for ln in f.read().splitlines() if not ln.strip().startswith("directory=")]
    head = ["[global]", "filename=" + ":".join(files), "lat_percentiles=1", ""]
    with open(path, "w") as f:
        f.write("\n".join(head + lines) + "\n")


def run_fio(fio, job, data_dir, work, env, tag):
    stem = os.path.splitext(os.path.basename(job))[0]
    files = sorted(glob.glob(os.path.join(data_dir, "ioscope.*.dat")))
    rec = {"problems": [], "ops": {}, "files": [os.path.basename(f) for f in files]}
    if not files:
        rec["problems"].append(f"no ioscope.N.dat in {data_dir}: nothing for fio to use")
        return rec
    copy = os.path.join(work, f"{stem}-fio.fio")
    fio_copy(job, files, copy)
    rec["argv"] = [fio, "--output-format=json", copy]
    code, stdout, err = sh(rec["argv"], env=env)
    if code != 0:
        rec["problems"].append(f"fio exited {code}: {err.strip()[-400:]}")
    try:
        data = first_json(stdout)
    except ValueError:
        data = None
    if not data:
        rec["problems"].append("fio printed no JSON")
        return rec
    rec["version"] = data.get("fio version")
    jobs = data.get("jobs") or []
    for op in ("read", "write"):
        ds = [j[op] for j in jobs if j.get(op, {}).get("total_ios")]
        if not ds:
            continue
        lat = [d.get("lat_ns", {}).get("percentile", {}).get("99.000000") for d in ds]
        clat = [d.get("clat_ns", {}).get("percentile", {}).get("99.000000") for d in ds]
        rec["ops"][op] = {"iops": sum(d["iops"] for d in ds), "bps": sum(d["bw_bytes"] for d in ds),
                          # several jobs (no group_reporting): the worst job's p99
                          "p99": max((x for x in lat if x is not None), default=None),
                          "clat_p99": max((x for x in clat if x is not None), default=None)}
    for j in jobs:
        if j.get("error"):
            rec["problems"].append(f"fio job {j.get('jobname')} error {j['error']}")
    return rec


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"


def us(ns):
    return f"{ns / 1000:.1f}" if ns is not None else "-"


def machine():
    model = "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for ln in out.splitlines():
            if ln.startswith("Model name:"):
                model = ln.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        mem = float("nan")
    return (f"{socket.gethostname()}, {os.cpu_count()} CPUs, {model}, {mem:.0f} GiB RAM, "
            f"Linux {platform.release()}")


def fs_of(path):
    code, out, _ = sh(["df", "-T", path])
    parts = out.splitlines()[-1].split() if code == 0 and out else []
    return f"{parts[1]} on {parts[0]}" if len(parts) > 1 else "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_bin = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "..", "target")),
                               "release", "ioscope")
    ap.add_argument("--bin", default=default_bin, help="ioscope binary (default: the release build)")
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--dir", help="where the jobs' files go (default: a new directory under /var/tmp, "
                    "removed at the end unless --keep)")
    ap.add_argument("--jobs", help="comma-separated job files (default: bench/fio-jobs/*.fio)")
    ap.add_argument("--rounds", type=int, default=1, help="ioscope then fio, N times per job")
    ap.add_argument("--drop-caches", action="store_true", help="drop the whole page cache before each run (root)")
    ap.add_argument("--keep", action="store_true", help="keep the files and results")
    ap.add_argument("--no-write", action="store_true", help="print only, do not write bench/results/")
    args = ap.parse_args()
    jobs = args.jobs.split(",") if args.jobs else sorted(glob.glob(os.path.join(HERE, "fio-jobs", "*.fio")))
    jobs = [os.path.abspath(j) for j in jobs]
    own_dir = args.dir is None
    base = args.dir or tempfile.mkdtemp(prefix="ioscope-fio-jobs-", dir="/var/tmp")
    os.makedirs(base, exist_ok=True)
    work = tempfile.mkdtemp(prefix="ioscope-fio-jobs-work-")
    _, version, _ = sh([args.bin, "--version"])
    _, src, _ = sh(["git", "-C", HERE, "rev-parse", "--short", "HEAD"])
    # The binary may be older than the script: say when it was built.
    binary_built = datetime.datetime.fromtimestamp(os.path.getmtime(args.bin), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    start = datetime.datetime.now(datetime.timezone.utc)
    load0 = os.getloadavg()
    fs = fs_of(base)
    rows, notes, fio_version = [], [], "?"
    try:
        for rnd in range(1, args.rounds + 1):
            for job in jobs:
                stem = os.path.splitext(os.path.basename(job))[0]
                data_dir = os.path.join(base, stem)
                os.makedirs(data_dir, exist_ok=True)
                env = dict(os.environ, BENCH_DIR=data_dir)
                print(f"[{rnd}] {stem}: ioscope ...", file=sys.stderr, flush=True)
                if args.drop_caches:
                    drop_caches()
                io, _ = run_ioscope(args.bin, job, data_dir, work, env, f"r{rnd}")
                print(f"[{rnd}] {stem}: fio ...", file=sys.stderr, flush=True)
                if args.drop_caches:
                    drop_caches()
                fr = run_fio(args.fio, job, data_dir, work, env, f"r{rnd}")
                fio_version = fr.get("version") or fio_version
                for op in ("read", "write"):
                    a, b = io.get("ops", {}).get(op), fr["ops"].get(op)
                    if a or b:
                        rows.append((stem, rnd, op, a or {}, b or {}))
                for p in io.get("problems", []) + fr["problems"]:
                    notes.append(f"{stem} (round {rnd}): {p}")
                if rnd == 1:
                    notes.append(f"{stem}: ioscope engine {io.get('engine')}, direct {io.get('direct')}, "
                                 f"files {', '.join(fr.get('files', [])) or '-'}; "
                                 f"ioscope verdicts: {io.get('verdicts') or '-'}")
    finally:
        if args.keep:
            print(f"kept: files in {base}, imports, copies and results in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
            if own_dir:
                shutil.rmtree(base, ignore_errors=True)
    end = datetime.datetime.now(datetime.timezone.utc)
    load1 = os.getloadavg()
    lines = [
        f"# fio job files: ioscope (imported) and fio on the same files "
        f"({start:%Y-%m-%d %H:%M} UTC)",
        "",
        f"- machine: {machine()}, {fs}",
        f"- load average (1, 5, 15 min) at the start: {' '.join(f'{x:.2f}' for x in load0)}; at the end: "
        f"{' '.join(f'{x:.2f}' for x in load1)} (the machine's CPUs are shared with other work)",
        f"- ioscope: {version.strip()} ({args.bin}, built {binary_built}); this script at commit {src.strip()}; fio: {fio_version}",
        f"- command: `{' '.join(['python3', 'bench/fio_jobs.py'] + sys.argv[1:])}`; "
        f"{args.rounds} round(s), ioscope then fio on each job; ended {end:%H:%M} UTC",
        f"- page cache: each tool drops the files' pages first (fio invalidate=1, ioscope cache=cold)"
        + ("; and the whole page cache was dropped before each run" if args.drop_caches else ""),
        "- p99: ioscope `latency_ns` (from the intended start), fio `lat_ns` (submission to completion, "
        "lat_percentiles=1); svc/clat: ioscope's service time and fio's clat, for reference",
        "- ratio: ioscope / fio",
        "",
        "| job | round | op | ioscope IOPS | fio IOPS | ratio | ioscope MB/s | fio MB/s | ratio | "
        "ioscope p99 µs | fio p99 (lat) µs | ratio | ioscope svc p99 µs | fio clat p99 µs |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for stem, rnd, op, a, b in rows:
        lines.append(
            f"| {stem} | {rnd} | {op} | {a.get('iops', 0):.0f} | {b.get('iops', 0):.0f} | "
            f"{ratio(a.get('iops'), b.get('iops'))} | {a.get('bps', 0) / 1e6:.1f} | {b.get('bps', 0) / 1e6:.1f} | "
            f"{ratio(a.get('bps'), b.get('bps'))} | {us(a.get('p99'))} | {us(b.get('p99'))} | "
            f"{ratio(a.get('p99'), b.get('p99'))} | {us(a.get('svc_p99'))} | {us(b.get('clat_p99'))} |")
    lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        out = os.path.join(HERE, "results", f"{start:%Y-%m-%d}-{socket.gethostname()}-fio-jobs.md")
        with open(out, "w") as f:
            f.write(text)
        print(f"written to {out}")


if __name__ == "__main__":
    main()
