#!/usr/bin/env python3
"""What the target-side probe (`ioscope probe`, `ioscope run --probe local`) costs.

Part A, the probe's own CPU at about 100K block I/Os per second: a loop device backed by
a file in /dev/shm takes 4 KiB O_DIRECT random reads from fio (io_uring, QD32,
--rate_iops), while `ioscope probe --out` records with all its samplers. Over a window
in the middle of each round it reads:
  - the block I/Os the loop device completed per second (/sys/block/loopN/stat);
  - the probe process's CPU (user+system, /proc/PID/stat) in % of one core;
  - its eBPF programs' run time in the kernel (the programs behind the bpf_link fds the
    probe holds, /proc/PID/fdinfo; their run_time_ns from `bpftool prog show`, counted
    with kernel.bpf_stats_enabled=1 during this part only), in % of one core.
  Target: the sum <= 1% of one core.
Part B, fio on the same device at full speed, alternating three probe modes: off; procfs
  (`ioscope probe` as an unprivileged user, which cannot load eBPF, says so and samples
  procfs alone); all (`ioscope probe` as root: procfs and eBPF). fio's IOPS ratios to off
  are what each costs the device's throughput.
Part C, nfs-ganesha's IOPS in the same three modes, alternating in one run: ganesha
  (scripts/nfs-ganesha.sh start-loop) serves ioscope's nfs engine (4 KiB random reads of
  a cached file and 4 KiB random writes, QD16); all = the run with
  `--probe local --probe-process ganesha.nfsd`. Target: all/off >= 0.98. A fourth mode,
  tracepoint, runs no probe but enables a system-call tracepoint filtered to record
  nothing: the kernel's own price for the tracepoints the system-call sampler needs.

Prints markdown and writes bench/results/DATE-HOST-probe.md. Needs root (loop device,
eBPF, network namespace). Python 3 standard library only; fio from Debian.
"""

import argparse
import datetime
import glob
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NFS = os.path.join(ROOT, "scripts", "nfs-ganesha.sh")
TICK = os.sysconf("SC_CLK_TCK")
IMAGE = "/dev/shm/ioscope-bench-probe.img"
STATS = "/proc/sys/kernel/bpf_stats_enabled"


def cpu_s(pid):
    """user+system seconds of PID (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def bpf_run_ns(pid):
    """(programs, total run_time_ns) of the BPF programs PID has attached: the prog_id of
    each bpf-prog or bpf_link fd it holds (/proc/PID/fdinfo), their run time from
    `bpftool prog show` (counted while kernel.bpf_stats_enabled=1)."""
    ids = set()
    for fd in glob.glob(f"/proc/{pid}/fd/*"):
        try:
            if os.readlink(fd) not in ("anon_inode:bpf-prog", "anon_inode:bpf_link"):
                continue
            with open(fd.replace("/fd/", "/fdinfo/")) as f:
                info = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue
        if info.get("prog_id", "").strip().isdigit():
            ids.add(int(info["prog_id"]))
    if not ids:
        return 0, 0, {}
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], check=True, capture_output=True,
                                      text=True).stdout)
    ours = {p.get("name", str(p["id"])): (p.get("run_cnt", 0), p.get("run_time_ns", 0))
            for p in progs if p.get("id") in ids}
    return len(ids), sum(ns for _, ns in ours.values()), ours


def disk_ios(dev):
    """Completed I/Os of /dev/DEV so far: reads, writes, discards, flushes."""
    with open(f"/sys/block/{dev}/stat") as f:
        v = [int(x) for x in f.read().split()]
    return v[0] + v[4] + (v[11] if len(v) > 11 else 0) + (v[15] if len(v) > 15 else 0)


def fio(dev, seconds, rate_iops=None):
    cmd = ["fio", "--name=probe-bench", f"--filename=/dev/{dev}", "--rw=randread", "--bs=4k", "--direct=1",
           "--ioengine=io_uring", "--iodepth=32", "--time_based", f"--runtime={seconds}", "--output-format=json"]
    if rate_iops:
        cmd.append(f"--rate_iops={rate_iops}")
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def fio_iops(p):
    out, _ = p.communicate()
    return json.loads(out)["jobs"][0]["read"]["iops"]


# Probe modes of parts B and C: none; the procfs samplers alone (`ioscope probe` as an
# unprivileged user cannot load eBPF programs, says so and samples procfs); all samplers
# (as root: procfs and eBPF).
MODES = ("off", "procfs", "all")
# Part C also measures what the kernel charges for a system-call tracepoint by itself:
# one enabled through tracefs, filtered so it records nothing, and no probe at all.
C_MODES = MODES + ("tracepoint",)
SYSCALL_EVENTS = "/sys/kernel/tracing/events/syscalls"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def rounds_order(i, modes=MODES):
    """The modes in round i: rotated each round, so a drift of the machine favours none."""
    k = i % len(modes)
    return modes[k:] + modes[:k]


def syscall_tracepoint(on):
    """Enables (or disables) sys_enter/sys_exit_pread64 in tracefs, filtered to a pid that
    makes no calls: every system call of the machine then takes the kernel's slow path
    (syscall tracepoints are switched on for all threads at once), and nothing is recorded."""
    for event in ("sys_enter_pread64", "sys_exit_pread64"):
        d = os.path.join(SYSCALL_EVENTS, event)
        if on:
            with open(os.path.join(d, "filter"), "w") as f:
                f.write("common_pid == 1")
        with open(os.path.join(d, "enable"), "w") as f:
            f.write("1" if on else "0")


def start_probe(binary, out_dir, extra=(), unprivileged=False):
    d = tempfile.mkdtemp(dir=out_dir)
    os.chmod(d, 0o777)
    db = os.path.join(d, "probe.db")
    p = subprocess.Popen([*(NOBODY if unprivileged else []), binary, "probe", "--out", db, *extra],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    p.db = db
    time.sleep(1.5)  # loaded and sampling
    if p.poll() is not None:
        sys.exit(f"ioscope probe exited: {p.stderr.read()}")
    return p


def stop_probe(p):
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        sys.exit("ioscope probe did not stop within 20 s of SIGINT")
    if p.returncode != 0:
        sys.exit(f"ioscope probe: exit {p.returncode}: {err}")
    return err, p.db


def sampling_thread_pct(db):
    """The probe's own record of its sampling thread's CPU (probe.cpu), % of one core."""
    q = ("SELECT avg(x.value) FROM sample x JOIN series s ON s.id = x.series_id "
         "WHERE s.side = 'target' AND s.stat = 'probe.cpu'")
    with sqlite3.connect(db) as c:
        v = c.execute(q).fetchone()[0]
    return (v or 0) / 1e7


def part_a(binary, dev, a, tmp):
    """The probe's CPU at ~a.rate block I/Os per second."""
    rounds = []
    for _ in range(a.rounds):
        load = fio(dev, a.seconds + 4, a.rate)
        time.sleep(1)
        probe = start_probe(binary, tmp)
        # The window: whole seconds in the middle of the load.
        c0, (n, b0, p0), d0, t0 = cpu_s(probe.pid), bpf_run_ns(probe.pid), disk_ios(dev), time.monotonic()
        time.sleep(a.seconds)
        c1, (_, b1, p1), d1, t1 = cpu_s(probe.pid), bpf_run_ns(probe.pid), disk_ios(dev), time.monotonic()
        err, db = stop_probe(probe)
        fio_iops(load)
        w = t1 - t0
        rounds.append({"block_iops": (d1 - d0) / w, "probe_cpu_pct": (c1 - c0) / w * 100,
                       "bpf_pct": (b1 - b0) / 1e9 / w * 100, "bpf_programs": n,
                       "sampling_thread_pct": sampling_thread_pct(db), "probe_stderr": err.strip(),
                       # Per program: runs per second and ns per run.
                       "programs": {k: {"runs_per_s": round((v[0] - p0.get(k, (0, 0))[0]) / (t1 - t0)),
                                        "ns_per_run": round((v[1] - p0.get(k, (0, 0))[1])
                                                            / max(1, v[0] - p0.get(k, (0, 0))[0]))}
                                    for k, v in p1.items()}})
    return rounds


def part_b(binary, dev, a, tmp):
    """fio's full-speed IOPS on the device in each probe mode, alternating."""
    res = {m: [] for m in MODES}
    for i in range(a.rounds):
        for mode in rounds_order(i):
            probe = start_probe(binary, tmp, unprivileged=mode == "procfs") if mode != "off" else None
            res[mode].append(fio_iops(fio(dev, a.seconds)))
            if probe:
                stop_probe(probe)
    return res


def nfs_run(binary, url, args, seconds, mode, tmp):
    """One run of the load; the probe beside it: all samplers through `--probe local` (the
    run's own process, as a user runs it), procfs alone as an unprivileged `ioscope probe`."""
    db = os.path.join(tempfile.mkdtemp(dir=tmp), "r.db")
    cmd = [binary, "run", "--engine", "nfs", "--target", url, "--duration", f"{seconds}s", "--quiet", "--json",
           "--out", db, *args]
    if mode == "all":
        cmd += ["--probe", "local", "--probe-process", "ganesha.nfsd"]
    probe = start_probe(binary, tmp, ["--process", "ganesha.nfsd"], unprivileged=True) if mode == "procfs" else None
    if mode == "tracepoint":
        syscall_tracepoint(True)
    try:
        s = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    finally:
        if mode == "tracepoint":
            syscall_tracepoint(False)
    if probe:
        stop_probe(probe)
    assert s["total"]["errors"] == 0, s["total"]
    return s["total"]["iops"]


def part_c(binary, a, tmp):
    """ganesha's IOPS in each probe mode, alternating."""
    url = subprocess.run([NFS, "start-loop"], check=True, capture_output=True, text=True).stdout.split()[-1]
    cases = {
        "4 KiB random read, QD16 (cached)": ["--rw", "randread", "--bs", "4k", "--size", "64m", "--iodepth", "16"],
        "4 KiB random write, QD16": ["--rw", "randwrite", "--bs", "4k", "--size", "64m", "--iodepth", "16"],
    }
    # The tracepoint mode needs tracefs (mount -t tracefs nodev /sys/kernel/tracing).
    modes = C_MODES if os.path.isdir(SYSCALL_EVENTS) else MODES
    res = {name: {m: [] for m in modes} for name in cases}
    try:
        ws = f"{url}/bench"
        # The working set once, then every run reuses it.
        subprocess.run([binary, "run", "--engine", "nfs", "--target", ws, "--size", "64m", "--rw", "write",
                        "--bs", "1m", "--duration", "1s", "--quiet", "--out", os.path.join(tmp, "layout.db")],
                       check=True, capture_output=True)
        for i in range(a.rounds):
            for name, args in cases.items():
                for mode in rounds_order(i, modes):
                    res[name][mode].append(nfs_run(binary, ws, args, a.seconds, mode, tmp))
    finally:
        subprocess.run([NFS, "stop"], capture_output=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ioscope", default=None, help="binary (default: cargo build --release --features ebpf)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rate", type=int, default=100_000, help="part A: fio's --rate_iops")
    ap.add_argument("--parts", default="abc")
    ap.add_argument("--label", default="probe")
    a = ap.parse_args()
    binary = a.ioscope
    if binary is None:
        target = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/ioscope/target"))
        subprocess.run(["cargo", "build", "--release", "--quiet", "--features", "ebpf"], cwd=ROOT, check=True,
                       env=dict(os.environ, CARGO_TARGET_DIR=target))
        binary = os.path.join(target, "release", "ioscope")

    with open(STATS) as f:
        stats_before = f.read().strip()
    tmp = tempfile.mkdtemp(prefix="ioscope-bench-probe-")
    # Every mode runs one copy of the binary, where the unprivileged user can run it too.
    os.chmod(tmp, 0o755)
    shutil.copy(binary, os.path.join(tmp, "ioscope"))
    binary_name, binary = binary, os.path.join(tmp, "ioscope")
    dev = None
    out = {}
    try:
        if "a" in a.parts or "b" in a.parts:
            subprocess.run(["truncate", "-s", "1g", IMAGE], check=True)
            dev = subprocess.run(["losetup", "--find", "--show", IMAGE], check=True, capture_output=True,
                                 text=True).stdout.strip().removeprefix("/dev/")
            # Written once, so reads come from the image's (tmpfs) pages, not holes.
            subprocess.run(["dd", "if=/dev/zero", f"of=/dev/{dev}", "bs=1M", "count=1024", "oflag=direct",
                            "status=none"], check=True)
        if "a" in a.parts:
            # Run-time statistics cost a clock read per program run: on for part A only.
            with open(STATS, "w") as f:
                f.write("1")
            out["a"] = part_a(binary, dev, a, tmp)
            with open(STATS, "w") as f:
                f.write(stats_before)
        if "b" in a.parts:
            out["b"] = part_b(binary, dev, a, tmp)
        if "c" in a.parts:
            out["c"] = part_c(binary, a, tmp)
    finally:
        with open(STATS, "w") as f:
            f.write(stats_before)
        if dev:
            subprocess.run(["losetup", "-d", f"/dev/{dev}"])
        if os.path.exists(IMAGE):
            os.unlink(IMAGE)
        shutil.rmtree(tmp, ignore_errors=True)

    med = statistics.median
    fio_version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"# The target-side probe's overhead ({datetime.date.today()}, {socket.gethostname()}, "
        f"{os.cpu_count()} CPUs, {platform.release()})",
        "",
        f"`bench/probe.py --rounds {a.rounds} --seconds {a.seconds} --rate {a.rate}`; ioscope {binary_name}; {fio_version}. "
        "Medians over the rounds (each mode's spread over the rounds is in the raw rounds below).",
    ]
    if "a" in out:
        r = out["a"]
        lines += [
            "", "## A. The probe's own CPU at ~100K block I/Os per second", "",
            f"fio: 4 KiB O_DIRECT random reads, io_uring QD32, `--rate_iops={a.rate}`, on a loop device backed by "
            f"a file in /dev/shm; `ioscope probe --out` with all samplers; a {a.seconds} s window in the middle of "
            "the load. eBPF run time from the programs' run_time_ns (kernel.bpf_stats_enabled=1).", "",
            "| block I/Os/s (diskstats) | eBPF programs | probe process CPU | of which sampling thread (probe.cpu) "
            "| eBPF programs' CPU | total (process + eBPF, % of one core) |",
            "|---|---|---|---|---|---|",
            f"| {med(x['block_iops'] for x in r):,.0f} | {r[0]['bpf_programs']} | "
            f"{med(x['probe_cpu_pct'] for x in r):.2f}% | {med(x['sampling_thread_pct'] for x in r):.2f}% | "
            f"{med(x['bpf_pct'] for x in r):.2f}% | "
            f"{med(x['probe_cpu_pct'] for x in r) + med(x['bpf_pct'] for x in r):.2f}% |",
            "", "eBPF programs (median over the rounds; run time includes bpf_stats' own clock reads):", "",
            "| program | runs/s | ns per run | % of one core |", "|---|---|---|---|",
        ]
        for name in sorted(r[0]["programs"]):
            runs = med(x["programs"][name]["runs_per_s"] for x in r)
            ns = med(x["programs"][name]["ns_per_run"] for x in r)
            lines.append(f"| {name} | {runs:,.0f} | {ns:,.0f} | {runs * ns / 1e7:.2f}% |")
    ratio = lambda r, m: med(r[m]) / med(r["off"])
    if "b" in out:
        b = out["b"]
        lines += [
            "", "## B. fio at full speed on the same device, by probe mode (alternating)", "",
            "off: no probe; procfs: `ioscope probe --out` as an unprivileged user (procfs samplers only); "
            "all: `ioscope probe --out` as root (procfs and eBPF).", "",
            "| fio IOPS, off | procfs | all | procfs/off | all/off |", "|---|---|---|---|---|",
            f"| {med(b['off']):,.0f} | {med(b['procfs']):,.0f} | {med(b['all']):,.0f} | "
            f"{ratio(b, 'procfs'):.3f} | {ratio(b, 'all'):.3f} |",
        ]
    if "c" in out:
        lines += [
            "", "## C. nfs-ganesha's IOPS by probe mode (alternating, one run)", "",
            "ganesha (VFS) exporting an ext4 on a loop device (scripts/nfs-ganesha.sh start-loop), driven by "
            "ioscope's nfs engine on the same machine. off: no probe; procfs: an unprivileged "
            "`ioscope probe --out --process ganesha.nfsd` beside the run (procfs samplers only); all: the run "
            "with `--probe local --probe-process ganesha.nfsd` as root (procfs and eBPF, in the run's process); "
            "tracepoint: no probe, but a system-call tracepoint enabled through tracefs and filtered to record "
            "nothing (`syscalls:sys_enter/exit_pread64`, `common_pid == 1`): what the kernel charges every system "
            "call of the machine once any system-call tracepoint is on, which the system-call sampler needs here.",
            "",
            "| case | IOPS, off | procfs | all | tracepoint | procfs/off | all/off | tracepoint/off |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, r in out["c"].items():
            # The tracepoint mode is absent without tracefs.
            tp, tp_ratio = ("no tracefs", "-")
            if "tracepoint" in r:
                tp, tp_ratio = f"{med(r['tracepoint']):,.0f}", f"{ratio(r, 'tracepoint'):.3f}"
            lines.append(f"| {name} | {med(r['off']):,.0f} | {med(r['procfs']):,.0f} | {med(r['all']):,.0f} | "
                         f"{tp} | {ratio(r, 'procfs'):.3f} | {ratio(r, 'all'):.3f} | {tp_ratio} |")
    lines += ["", "Raw rounds:", "", "```", json.dumps(out, indent=1), "```"]
    text = "\n".join(lines) + "\n"
    print(text)
    path = os.path.join(ROOT, "bench", "results", f"{datetime.date.today()}-{socket.gethostname()}-{a.label}.md")
    with open(path, "w") as f:
        f.write(text)
    print(f"written: {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
