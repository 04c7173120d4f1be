#!/usr/bin/env python3
"""Filebench's personalities run by Filebench and by ioscope, same parameters, same file system.

For each personality of examples/filebench/ (fileserver, webserver, varmail, webproxy and oltp
by default): a copy of the .f with $dir, $nfiles, $nthreads (oltp: $nshadows) and the run time
set from the flags is
run by Filebench (built from its source: --filebench names the binary, or --src a checkout that is
built, or it is cloned from github.com/filebench/filebench; not in CI), then imported with
`ioscope import filebench` and run by ioscope in the same directory. Filebench's per-flowop
counts are summed by thread and by the operation each flowop is in ioscope (readfile* is read,
wrtfile*, appendfilerand* and aiowrite are write, ...), ioscope's by flow (its summary's `flows`
when a personality has several thread types, as oltp has) and operation, and each one's ops/s
and its share of all operations (the op mix) are printed for both, with the ratio ioscope /
Filebench. An operation ioscope adds (oltp's dsync writes are a write and an fsync) is not in
the mix. ioscope counts each transfer of
a whole-file read or write as its own read or write: with iosize 1m and files of 16-128 KiB mean
that is one per flowop, as Filebench counts it (the table shows it as it is measured).

Filebench needs address-space randomisation off (it maps shared memory at a fixed address): the
bench sets /proc/sys/kernel/randomize_va_space to 0 for its run and puts the old value back.

Writes the table to bench/results/YYYY-MM-DD-<hostname>-filebench.md.

Usage: bench/filebench.py [--bin target/release/ioscope] [--filebench PATH | --src DIR]
                          [--dir /var/tmp/X] [--seconds 30] [--threads 8] [--nfiles 1000]
                          [--personalities fileserver,webserver,varmail,webproxy,oltp]
Python 3 standard library only. See bench/README.md.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Filebench flowop kind -> the operation ioscope records for it.
KIND_OP = {
    "createfile": "create",
    "openfile": "open",
    "closefile": "close",
    "deletefile": "delete",
    "statfile": "getattr",
    "fsync": "fsync",
    "readwholefile": "read",
    "read": "read",
    "writewholefile": "write",
    "appendfile": "write",
    "appendfilerand": "write",
    "write": "write",
    "aiowrite": "write",
}


def sh(argv, cwd=None, timeout=1800):
    p = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def build_filebench(src):
    if not os.path.isdir(src):
        code, _, err = sh(["git", "clone", "-q", "https://github.com/filebench/filebench", src])
        if code:
            sys.exit(f"cannot fetch Filebench: {err}")
    binary = os.path.join(src, "filebench")
    if not os.path.exists(binary):
        steps = "libtoolize && aclocal && autoheader && automake --add-missing && autoconf && ./configure -q && make -s"
        code, _, err = sh(["bash", "-c", steps], cwd=src)
        if code:
            sys.exit(f"building Filebench failed (needs autoconf, automake, libtool, bison, flex): {err[-2000:]}")
    # Its cvar libraries (cvar-gamma) are loaded from the install prefix.
    code, _, err = sh(["make", "-s", "install"], cwd=src)
    if code:
        sys.exit(f"installing Filebench failed: {err[-2000:]}")
    return "/usr/local/bin/filebench"


def personality(name, dir_, nfiles, threads, seconds):
    text = open(os.path.join(ROOT, "examples", "filebench", f"{name}.f")).read()
    text = re.sub(r"set \$dir=\S+", f"set $dir={dir_}", text)
    text = re.sub(r"set \$nfiles=\S+", f"set $nfiles={nfiles}", text)
    text = re.sub(r"set \$nthreads=\S+", f"set $nthreads={threads}", text)
    text = re.sub(r"set \$nshadows=\S+", f"set $nshadows={threads}", text)
    text = re.sub(r"^run.*$", f"run {seconds}", text, flags=re.M)
    if not re.search(r"^run", text, flags=re.M):
        # Some personalities leave `run` to the command line (webproxy, videoserver).
        text += f"\nrun {seconds}\n"
    # Each flowop's thread and kind: flowop name -> (thread, kind).
    kinds, thread = {}, ""
    for line in text.splitlines():
        m = re.search(r"\bthread\s+name=([\w-]+)", line)
        if m:
            thread = m.group(1)
        m = re.search(r"flowop\s+(\w+)\s+name=([\w-]+)", line)
        if m:
            kinds[m.group(2)] = (thread, m.group(1))
    return text, kinds


def run_filebench(binary, text, kinds, work):
    f = os.path.join(work, "fb.f")
    open(f, "w").write(text)
    code, out, err = sh([binary, "-f", f], cwd=work)
    if code:
        sys.exit(f"filebench failed: {out[-2000:]}{err[-2000:]}")
    by_op, secs = {}, None
    for line in out.splitlines():
        m = re.match(r"^(\S+)\s+(\d+)ops\s+([\d.]+)ops/s\s+([\d.]+)mb/s\s+([\d.]+)ms/op", line)
        if m and m.group(1) in kinds:
            thread, kind = kinds[m.group(1)]
            op = KIND_OP.get(kind)
            if op:
                d = by_op.setdefault((thread, op), {"ops": 0, "ops_s": 0.0, "mb_s": 0.0})
                d["ops"] += int(m.group(2))
                d["ops_s"] += float(m.group(3))
                d["mb_s"] += float(m.group(4))
        m = re.search(r"Run took (\d+) seconds", line)
        if m:
            secs = int(m.group(1))
    if not by_op:
        # Said, never dropped: a personality without Filebench's breakdown has no rows.
        print(f"Filebench printed no per-flowop lines; its output ended:\n{out[-1500:]}{err[-1500:]}", file=sys.stderr)
    return by_op, secs


def run_ioscope(binary, text, work, name):
    f = os.path.join(work, f"{name}.f")
    open(f, "w").write(text)
    toml = os.path.join(work, f"{name}.toml")
    code, _, err = sh([binary, "import", "filebench", f, "-o", toml])
    if code:
        sys.exit(f"ioscope import failed: {err}")
    code, out, err = sh([binary, "run", toml, "--json", "--quiet", "--out", os.path.join(work, f"{name}.ioscope")])
    if code not in (0, 1):
        sys.exit(f"ioscope run failed: {err}")
    s = json.loads(out)
    # One flow: its ops are the run's; several: each flow's own (named as its thread).
    flows = s.get("flows") or {s["workload"]["plan"]["workloads"][0]["name"]: s["ops"]}
    return {
        (flow, op): {"ops": v["ops"], "ops_s": v["iops"], "mb_s": v["bytes_per_sec"] / 1e6}
        for flow, ops in flows.items()
        for op, v in ops.items()
    }, s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "ioscope"))
    ap.add_argument("--filebench")
    ap.add_argument("--src", default="/tmp/filebench-src")
    ap.add_argument("--dir", default="/var/tmp/ioscope-filebench-bench")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--nfiles", type=int, default=1000)
    ap.add_argument("--personalities", default="fileserver,webserver,varmail,webproxy,oltp")
    a = ap.parse_args()
    fb = a.filebench or build_filebench(a.src)
    aslr = open("/proc/sys/kernel/randomize_va_space").read().strip()
    rows = []
    try:
        open("/proc/sys/kernel/randomize_va_space", "w").write("0\n")
        for name in a.personalities.split(","):
            shutil.rmtree(a.dir, ignore_errors=True)
            os.makedirs(a.dir)
            text, kinds = personality(name, a.dir, a.nfiles, a.threads, a.seconds)
            with tempfile.TemporaryDirectory() as work:
                fb_ops, _ = run_filebench(fb, text, kinds, work)
                shutil.rmtree(a.dir, ignore_errors=True)
                os.makedirs(a.dir)
                io_ops, _ = run_ioscope(a.bin, text, work, name)
            fb_total = sum(v["ops"] for v in fb_ops.values()) or 1
            io_total = sum(v["ops"] for op, v in io_ops.items() if op in fb_ops) or 1
            for key in sorted(fb_ops):
                f, i = fb_ops[key], io_ops.get(key, {"ops": 0, "ops_s": 0.0, "mb_s": 0.0})
                fmix, imix = 100.0 * f["ops"] / fb_total, 100.0 * i["ops"] / io_total
                ratio = i["ops_s"] / f["ops_s"] if f["ops_s"] else float("nan")
                rows.append((name, "/".join(key), f["ops_s"], i["ops_s"], ratio, f["mb_s"], i["mb_s"], fmix, imix))
    finally:
        open("/proc/sys/kernel/randomize_va_space", "w").write(aslr + "\n")
        shutil.rmtree(a.dir, ignore_errors=True)
    head = "| personality | thread/op | Filebench ops/s | ioscope ops/s | ratio | Filebench MB/s | ioscope MB/s | Filebench mix % | ioscope mix % | mix diff (points) |"
    lines = [head, "|" + "---|" * 10]
    for (name, op, fs, is_, r, fm, im, fx, ix) in rows:
        lines.append(f"| {name} | {op} | {fs:,.0f} | {is_:,.0f} | {r:.2f} | {fm:.1f} | {im:.1f} | {fx:.2f} | {ix:.2f} | {ix - fx:+.2f} |")
    table = "\n".join(lines)
    print(table)
    date = datetime.date.today().isoformat()
    host = socket.gethostname()
    out = os.path.join(HERE, "results", f"{date}-{host}-filebench.md")
    with open(out, "w") as f:
        f.write(f"# Filebench personalities: Filebench and ioscope, {date}, {host}\n\n")
        f.write(f"Machine: {platform.platform()}, {os.cpu_count()} CPUs. Directory {a.dir} "
                f"(the same file system for both), {a.nfiles} files, {a.threads} threads, {a.seconds} s each.\n")
        f.write(f"Command: bench/filebench.py --seconds {a.seconds} --threads {a.threads} --nfiles {a.nfiles} "
                f"--personalities {a.personalities}\n\n{table}\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
