#!/usr/bin/env python3
"""ioscope vs fio on the same block device: 4 KiB random reads, O_DIRECT, 32 in flight.

The device is a loop device the script makes over a file on the disk (not tmpfs), attached
with `losetup --direct-io=on`: the loop driver reads its backing file with O_DIRECT, so every
read goes through the loop driver to the disk, never to the page cache. The file is filled
with data first (a sparse file's holes would be read as zeros without any disk I/O) and is
kept for the next run unless --remove-backing; the loop device is always detached.

Two cases, each run by both tools on the whole device (no size given to either):
  psync QD32:    32 threads, each one synchronous pread at a time.
                 ioscope --engine posix --threads 32; fio --ioengine=psync --numjobs=32 --thread
  io_uring QD32: one thread, 32 reads in flight.
                 ioscope --engine uring --iodepth 32; fio --ioengine=io_uring --iodepth=32
                 --fixedbufs --registerfiles (ioscope's uring engine registers both too)
Rounds alternate the order (fio first, then ioscope first, ...). For each run it records the
tool's IOPS from its JSON, the client CPU (user+system of the tool's process and its
children, from wait4) per I/O, and the reads the device itself counted (/sys/block/NAME/stat)
as a check that the I/Os reached it. The table has medians over the rounds; the results file
bench/results/YYYY-MM-DD-<hostname>-<label>.md adds every round and the exact commands.

Root needed (losetup). Python 3 standard library only. See bench/README.md.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
MIB = 1 << 20

CASES = [
    {"name": "psync 4k randread O_DIRECT, QD32 (32 threads × QD1)", "key": "psync"},
    {"name": "io_uring 4k randread O_DIRECT, QD32 (1 thread)", "key": "uring"},
]


def log(msg):
    print(f"[blockdev {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def check_output(argv):
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()


def fill_backing(path, size):
    """A file of `size` bytes, every block allocated and holding data; reused if it is one."""
    try:
        st = os.stat(path)
        if st.st_size == size and st.st_blocks * 512 >= size:
            log(f"reusing {path} ({size // MIB} MiB, allocated)")
            return "reused"
    except FileNotFoundError:
        pass
    log(f"filling {path} with {size // MIB} MiB of data (once; kept for the next run)")
    chunk = os.urandom(MIB)
    started = time.monotonic()
    with open(path, "wb") as f:
        for i in range(size // MIB):
            f.write(i.to_bytes(8, "little") + chunk[8:])
        f.flush()
        os.fsync(f.fileno())
    return f"written in {time.monotonic() - started:.1f} s"


def drop_cache(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def device_reads(name):
    """Reads completed by the device so far (/sys/block/NAME/stat, first field)."""
    with open(f"/sys/block/{name}/stat") as f:
        return int(f.read().split()[0])


def sys_read(name, rel):
    try:
        with open(f"/sys/block/{name}/{rel}") as f:
            return f.read().strip()
    except OSError:
        return "?"


def fio_argv(fio, case, dev, duration):
    argv = [fio, "--name=b", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1", "--readonly",
            "--time_based", f"--runtime={duration}", "--norandommap", "--randrepeat=0", "--group_reporting",
            "--output-format=json"]
    if case["key"] == "psync":
        return argv + ["--ioengine=psync", "--numjobs=32", "--thread"]
    return argv + ["--ioengine=io_uring", "--iodepth=32", "--fixedbufs", "--registerfiles"]


def ioscope_argv(ioscope, case, dev, duration, out):
    argv = [ioscope, "run", "--dir", dev, "--force", "--direct", "--rw", "randread", "--bs", "4k",
            "--duration", f"{duration}s", "--out", out, "--json", "--quiet"]
    if case["key"] == "psync":
        return argv + ["--engine", "posix", "--threads", "32"]
    return argv + ["--engine", "uring", "--iodepth", "32"]


def measure(argv, dev_name, timeout):
    """Runs argv; returns (exit code, stdout, stderr, wall s, CPU s of it and its children, device reads)."""
    reads0 = device_reads(dev_name)
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.05)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    return p.returncode, stdout, stderr, wall, ru.ru_utime + ru.ru_stime, device_reads(dev_name) - reads0


def run_fio(fio, case, dev, dev_name, duration):
    argv = fio_argv(fio, case, dev, duration)
    code, stdout, stderr, wall, cpu, dev_reads = measure(argv, dev_name, duration + 120)
    rec = {"tool": "fio", "argv": argv, "wall_s": wall, "cpu_s": cpu, "dev_reads": dev_reads, "problems": []}
    if code != 0:
        rec["problems"].append(f"fio exited {code}: {stderr.strip()[-300:]}")
    try:
        data = json.loads(stdout[stdout.find("{"):])
        job = data["jobs"][0]
        rec["iops"] = float(job["read"]["iops"])
        rec["ops"] = int(job["read"]["total_ios"])
        rec["runtime_s"] = job["read"]["runtime"] / 1000.0
        rec["p50_ns"] = job["read"]["clat_ns"]["percentile"].get("50.000000")
        rec["p99_ns"] = job["read"]["clat_ns"]["percentile"].get("99.000000")
        if job.get("error"):
            rec["problems"].append(f"fio error {job['error']}")
    except (ValueError, KeyError, IndexError, TypeError) as e:
        rec["problems"].append(f"fio JSON: {e!r}")
    return rec


def run_ioscope(ioscope, case, dev, dev_name, duration, scratch, tag):
    out = os.path.join(scratch, f"ioscope-{tag}.db")
    argv = ioscope_argv(ioscope, case, dev, duration, out)
    code, stdout, stderr, wall, cpu, dev_reads = measure(argv, dev_name, duration + 120)
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(out + suffix)
        except FileNotFoundError:
            pass
    rec = {"tool": "ioscope", "argv": argv, "wall_s": wall, "cpu_s": cpu, "dev_reads": dev_reads, "problems": []}
    if code != 0:
        rec["problems"].append(f"ioscope exited {code}: {stderr.strip()[-300:]}")
    try:
        data = json.loads(stdout[stdout.find("{"):])
        total = data["total"]
        rec["iops"] = float(total["iops"])
        rec["ops"] = int(total["ops"])
        rec["runtime_s"] = data.get("duration_s")
        d = (data.get("ops") or {}).get("read") or {}
        lat = d.get("service_time_ns") or d.get("latency_ns") or {}
        rec["p50_ns"], rec["p99_ns"] = lat.get("p50"), lat.get("p99")
        plan = data["workload"]["plan"]
        rec["size_bytes"] = plan.get("size_bytes")
        rec["engine_setup"] = "; ".join(sorted({str(v.get("engine")) for v in (data.get("system") or {}).values()
                                                if isinstance(v, dict) and v.get("engine")}))
        if total.get("errors"):
            rec["problems"].append(f"{total['errors']} I/O errors")
        if data.get("status") != "completed":
            rec["problems"].append(f"status {data.get('status')!r}")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
        rec["problems"].append(f"ioscope JSON: {e!r}")
    return rec


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values):
    values = [v for v in values if v is not None]
    if len(values) < 2 or not statistics.median(values):
        return None
    return (max(values) - min(values)) / statistics.median(values)


def us_per_op(rec):
    return rec["cpu_s"] * 1e6 / rec["ops"] if rec.get("ops") else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    ap.add_argument("--size-mib", type=int, default=2048, help="the device's (backing file's) size")
    ap.add_argument("--backing", default="/var/tmp/ioscope-bench-blockdev.img",
                    help="the loop device's backing file (on the disk, not tmpfs)")
    ap.add_argument("--remove-backing", action="store_true", help="remove the backing file at the end")
    ap.add_argument("--ioscope", required=True, help="ioscope binary (a release build)")
    ap.add_argument("--fio", default="fio")
    ap.add_argument("--label", default="blockdev")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        die("root is needed (losetup)")
    if args.rounds < 3:
        die("--rounds must be at least 3")
    fs = check_output(["findmnt", "-n", "-o", "FSTYPE", "--target", os.path.dirname(os.path.abspath(args.backing))])
    if fs in ("tmpfs", "ramfs"):
        die(f"{args.backing} is on {fs}: the reads would never reach a disk")
    fill = fill_backing(args.backing, args.size_mib * MIB)
    drop_cache(args.backing)
    dev = check_output(["losetup", "-f", "--show", "--direct-io=on", args.backing])
    name = os.path.basename(dev)
    log(f"{dev} over {args.backing} ({fs}), direct I/O {sys_read(name, 'loop/dio')}")
    rows = {c["key"]: {"fio": [], "ioscope": []} for c in CASES}
    load = [os.getloadavg()]
    started = time.time()
    try:
        backing_dev = check_output(["df", "--output=source", args.backing]).splitlines()[-1]
        device = {
            "loop": dev, "backing": f"{args.backing} on {fs} ({backing_dev})", "fill": fill,
            "dio": sys_read(name, "loop/dio"), "logical": sys_read(name, "queue/logical_block_size"),
            "scheduler": sys_read(name, "queue/scheduler"), "nr_requests": sys_read(name, "queue/nr_requests"),
        }
        fio_version = check_output([args.fio, "--version"])
        ioscope_version = check_output([args.ioscope, "--version"])
        with tempfile.TemporaryDirectory(prefix="ioscope-bench-blockdev-") as scratch:
            for r in range(args.rounds):
                for case in CASES:
                    order = ["fio", "ioscope"] if r % 2 == 0 else ["ioscope", "fio"]
                    for tool in order:
                        if tool == "fio":
                            rec = run_fio(args.fio, case, dev, name, args.duration)
                        else:
                            rec = run_ioscope(args.ioscope, case, dev, name, args.duration, scratch,
                                              f"{case['key']}-{r}")
                        rows[case["key"]][tool].append(rec)
                        log(f"round {r + 1}/{args.rounds} {case['key']:5} {tool:7} "
                            f"{rec.get('iops') or 0:>10,.0f} IOPS  {us_per_op(rec) or 0:6.2f} µs CPU/op"
                            f"  device reads/ops {rec['dev_reads'] / rec['ops'] if rec.get('ops') else 0:.3f}"
                            + (f"  PROBLEMS: {rec['problems']}" if rec["problems"] else ""))
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        log(f"detached {dev}")
        if args.remove_backing:
            os.unlink(args.backing)
    load.append(os.getloadavg())
    report = render(args, rows, device, fio_version, ioscope_version, load, time.time() - started)
    print(report)
    if not args.no_save:
        host = socket.gethostname().split(".")[0]
        path = os.path.join(BENCH_DIR, "results", f"{datetime.date.today().isoformat()}-{host}-{args.label}.md")
        with open(path, "w") as f:
            f.write(report)
        log(f"wrote {path}")


def render(args, rows, device, fio_version, ioscope_version, load, elapsed):
    lines = [
        f"# ioscope vs fio on a block device ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Host {socket.gethostname()}: {os.cpu_count()} CPUs, Linux {platform.release()}; "
        f"load average {load[0][0]:.2f} before, {load[1][0]:.2f} after; {elapsed / 60:.1f} min.",
        f"{ioscope_version}; {fio_version}.",
        f"Device: {device['loop']}, a loop device over {device['backing']}, attached with "
        f"`losetup --direct-io=on` (loop/dio = {device['dio']}: the loop driver reads the file with "
        f"O_DIRECT, so every read reaches the disk); backing file {device['fill']}; {args.size_mib} MiB; "
        f"logical block {device['logical']} bytes, scheduler {device['scheduler']}, nr_requests "
        f"{device['nr_requests']}.",
        f"Command: `bench/blockdev.py --ioscope IOSCOPE --rounds {args.rounds} --duration {args.duration} "
        f"--size-mib {args.size_mib}`; {args.rounds} rounds of {args.duration} s per tool and case, the order "
        "alternating (fio first in odd rounds, ioscope first in even ones). Both read the whole device.",
        "",
        "| case | fio IOPS | ioscope IOPS | ioscope/fio | ioscope/fio, median of rounds | fio CPU µs/op | ioscope CPU µs/op | CPU ioscope/fio | spread fio / ioscope |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in CASES:
        f, i = rows[case["key"]]["fio"], rows[case["key"]]["ioscope"]
        fi, ii = med([x.get("iops") for x in f]), med([x.get("iops") for x in i])
        fc, ic = med([us_per_op(x) for x in f]), med([us_per_op(x) for x in i])
        sf, si = spread([x.get("iops") for x in f]), spread([x.get("iops") for x in i])
        ratio = f"{ii / fi:.2f}×" if fi and ii else "-"
        cpu_ratio = f"{ic / fc:.2f}" if fc and ic else "-"
        sp = f"{sf:.0%} / {si:.0%}" if sf is not None and si is not None else "-"
        paired = med([b["iops"] / a["iops"] if a.get("iops") and b.get("iops") else None for a, b in zip(f, i)])
        paired = f"{paired:.2f}×" if paired else "-"
        lines.append(f"| {case['name']} | {fi or 0:,.0f} | {ii or 0:,.0f} | {ratio} | {paired} | {fc or 0:.2f} | "
                     f"{ic or 0:.2f} | {cpu_ratio} | {sp} |")
    lines += [
        "",
        "Medians over the rounds. IOPS: each tool's own figure (fio `jobs[0].read.iops` with "
        "group_reporting; ioscope `total.iops`). CPU per op: user+system time of the tool's whole "
        "process (start-up and, for ioscope, writing its results file and the block device's "
        "per-second diskstats sampler included) from wait4, divided by the I/Os the tool counted. "
        "Spread: (max − min) / median of the rounds' IOPS. The median of rounds is the median of "
        "each round's ioscope/fio, whose two runs were back to back: less swayed by other work on "
        "the machine (the disk and CPUs are shared) than the ratio of the two medians.",
        "",
        "What each side ran (DEV is the loop device):",
        "",
    ]
    for case in CASES:
        f, i = rows[case["key"]]["fio"][0], rows[case["key"]]["ioscope"][0]
        lines.append(f"- {case['name']}:")
        lines.append(f"  - fio: `{shlex.join(['fio'] + f['argv'][1:])}`".replace(device["loop"], "DEV"))
        lines.append(f"  - ioscope: `{shlex.join(['ioscope'] + i['argv'][1:])}`".replace(device["loop"], "DEV")
                     .replace(i["argv"][i["argv"].index("--out") + 1], "R.db"))
    lines += ["", "## Every round", "",
              "| round | case | tool | IOPS | ops | CPU s | CPU µs/op | device reads / ops | p50 µs | p99 µs | problems |",
              "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    problems = 0
    for r in range(args.rounds):
        for case in CASES:
            for tool in ("fio", "ioscope"):
                x = rows[case["key"]][tool][r]
                problems += len(x["problems"])
                dr = f"{x['dev_reads'] / x['ops']:.3f}" if x.get("ops") else "-"
                p50 = f"{x['p50_ns'] / 1000:.0f}" if x.get("p50_ns") else "-"
                p99 = f"{x['p99_ns'] / 1000:.0f}" if x.get("p99_ns") else "-"
                lines.append(f"| {r + 1} | {case['key']} | {tool} | {x.get('iops') or 0:,.0f} | {x.get('ops') or 0:,} | "
                             f"{x['cpu_s']:.2f} | {us_per_op(x) or 0:.2f} | {dr} | {p50} | {p99} | "
                             f"{'; '.join(x['problems']) or ''} |")
    sizes = {x.get("size_bytes") for c in CASES for x in rows[c["key"]]["ioscope"]}
    lines += ["", f"ioscope's recorded working set (no --size given): {', '.join(str(s) for s in sizes)} bytes; "
              f"ioscope's uring setup: {rows['uring']['ioscope'][0].get('engine_setup') or 'not reported'}.",
              f"Problems: {problems}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
