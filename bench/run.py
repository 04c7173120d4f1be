#!/usr/bin/env python3
"""ioscope vs fio, side by side, with a bare pread loop as the ceiling on the psync read cases.

Read cases use one shared 1 GiB file created by ioscope; the buffered-write case gives each
tool a 1 GiB file of its own (ioscope's in its own directory, fio's created by fio).
Runs each case alternately with fio, ioscope and, on the page-cache psync read cases, a
bare C pread loop (bench/preadloop.c, compiled at start with cc): fio, ioscope, bare,
fio, ... for --rounds rounds, warms the page cache right before every page-cache
measurement, prints a markdown table of median IOPS and the ratios ioscope/fio and
ioscope/bare, and writes it with the raw per-round numbers to
bench/results/YYYY-MM-DD-<hostname>-<label>.md.

Python 3 standard library only. See bench/README.md.
"""

import argparse
import ctypes
import ctypes.util
import datetime
import hashlib
import json
import mmap
import os
import platform
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
GIB = 1 << 30
FILE_SIZE = GIB  # the whole working set: ONE 1 GiB file
WARM_CHUNK = 1 << 20
PREADLOOP_SRC = os.path.join(BENCH_DIR, "preadloop.c")

WRITE_SUBDIR = "ioscope-write"  # ioscope's own directory (under --dir) for the write case
FIO_WRITE_FILE = "fio-write.dat"  # fio's own file (under --dir) for the write case


def _case(name, engine="psync", rw="randread", bs="4k", threads=1, iodepth=1, direct=False, mbps=False):
    """One row of the table.

    engine: psync (ioscope posix, fio psync), uring (ioscope uring, fio io_uring) or null.
    warm:   page-cache read case: the target file is read whole right before every measurement
            and its residency checked afterwards (not for O_DIRECT, writes or the null engine).
    evict:  write case: the tool's own file is fsynced and dropped from the page cache right
            before every measurement, so every run starts from the same page-cache state.
    bare:   the bare pread loop runs too (psync read cases in the page cache).
    mbps:   show MB/s next to IOPS in the table.
    """
    null = engine == "null"
    write = rw in ("write", "randwrite")
    page_cache = not null and not direct
    return {"name": name, "engine": engine, "rw": rw, "bs": bs, "threads": threads, "iodepth": iodepth,
            "direct": direct, "null": null, "write": write, "warm": page_cache and not write,
            "evict": page_cache and write, "bare": engine == "psync" and not write and page_cache, "mbps": mbps}


CASES = [
    _case("psync 4k randread, 1 thread"),
    _case("psync 4k randread, 2 threads", threads=2),
    _case("psync 1B randread, 1 thread", bs="1"),
    _case("uring 4k randread QD32, buffered", engine="uring", iodepth=32),
    _case("uring 4k randread QD32, O_DIRECT", engine="uring", iodepth=32, direct=True),
    _case("psync 1M sequential read, 1 thread", rw="read", bs="1m", mbps=True),
    _case("psync 4k randwrite buffered, 1 thread", rw="randwrite"),
    _case("null engine, 1 thread", engine="null"),
]


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(f"error: {msg}")
    sys.exit(1)


def fmt_iops(v):
    if v is None:
        return "-"
    return f"{v:,.0f}"


def run_capture(argv, timeout, cwd=None):
    """Runs argv; returns (exit code, stdout, stderr). Never raises on a non-zero exit."""
    try:
        p = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err + f"\n(timed out after {timeout} s)"


# ---------------------------------------------------------------- page cache

_libc = None


def _load_libc():
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        _libc = lib
    return _libc


def resident_fraction(path):
    """Share of the file's pages in the page cache (mincore), or None if it cannot tell."""
    try:
        lib = _load_libc()
        size = os.path.getsize(path)
        if size == 0:
            return 1.0
        fd = os.open(path, os.O_RDONLY)
        try:
            addr = lib.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                return None
            try:
                page = mmap.PAGESIZE
                pages = (size + page - 1) // page
                vec = (ctypes.c_ubyte * pages)()
                if lib.mincore(addr, size, vec) != 0:
                    return None
                resident = sum(1 for b in bytes(vec) if b & 1)
                return resident / pages
            finally:
                lib.munmap(addr, size)
        finally:
            os.close(fd)
    except Exception:
        return None


def warm(path):
    """Reads the whole file (1 MiB reads) so it is in the page cache; returns a record."""
    for attempt in range(1, 4):
        started = time.monotonic()
        buf = bytearray(WARM_CHUNK)
        view = memoryview(buf)
        total = 0
        with open(path, "rb", buffering=0) as f:
            while True:
                n = f.readinto(view)
                if not n:
                    break
                total += n
        secs = time.monotonic() - started
        res = resident_fraction(path)
        rec = {"seconds": secs, "mb_per_s": total / 1e6 / max(secs, 1e-9), "resident": res, "attempts": attempt}
        if res is None or res >= 0.999:
            return rec
        log(f"  warm-up left only {res:.1%} of the file resident; reading again")
    return rec


def fmt_res(r):
    return "?" if r is None else f"{r:.1%}"


def evict(path):
    """fsyncs the file and drops it from the page cache (POSIX_FADV_DONTNEED, this file only).

    Used before every write measurement. How fast a buffered 4 KiB write is depends on the
    folios the page cache holds for the file: measured here, writes into the large folios
    that a sequential warm-up read leaves (readahead) ran at ~40K IOPS, writes into 4 KiB
    folios at ~500K, and a file's cached state depends on its history (which run wrote it,
    what DAMON evicted). With the file dropped, every write run starts the same way: each
    4 KiB write is a whole-page overwrite, so it needs no read from disk and creates a 4 KiB
    page-cache folio. Opening read-only to fsync and fadvise does not write the file.
    Returns the share still resident afterwards (None if unknown)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return resident_fraction(path)


def dirty_mb():
    """Dirty + Writeback from /proc/meminfo in MB (10^6 bytes), or None."""
    try:
        kb = 0
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Dirty", "Writeback"):
                    kb += int(rest.split()[0])
        return kb * 1024 / 1e6
    except (OSError, ValueError, IndexError):
        return None


def mtime_ns(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


# ---------------------------------------------------------------- tools


def cargo_target_dir():
    """The target directory cargo uses (honours CARGO_TARGET_DIR and cargo config)."""
    code, out, _ = run_capture(["cargo", "metadata", "--format-version", "1", "--no-deps"], 120, cwd=REPO_DIR)
    if code == 0:
        try:
            return json.loads(out)["target_directory"]
        except (ValueError, KeyError):
            pass
    env = os.environ.get("CARGO_TARGET_DIR")
    if env:
        return env if os.path.isabs(env) else os.path.join(REPO_DIR, env)
    return os.path.join(REPO_DIR, "target")


def build_ioscope():
    log(f"building ioscope: cargo build --release (in {REPO_DIR})")
    p = subprocess.run(["cargo", "build", "--release"], cwd=REPO_DIR, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr)
    if p.returncode != 0:
        die("cargo build --release failed; pass --ioscope PATH to use a prebuilt binary")
    path = os.path.join(cargo_target_dir(), "release", "ioscope")
    if not os.access(path, os.X_OK):
        die(f"build succeeded but {path} is not an executable")
    return path


def build_preadloop(scratch):
    """Compiles bench/preadloop.c into scratch; returns (binary path, compile argv)."""
    if not shutil.which("cc"):
        die("cc (a C compiler) is not on PATH; it is needed to build the bare pread loop "
            "bench/preadloop.c (install gcc or clang, or put a 'cc' on PATH)")
    exe = os.path.join(scratch, "preadloop")
    argv = ["cc", "-O2", "-pthread", "-o", exe, PREADLOOP_SRC]
    log("building the bare pread loop: " + shell(argv))
    code, out, err = run_capture(argv, 120, cwd=BENCH_DIR)
    if code != 0 or not os.access(exe, os.X_OK):
        die(f"compiling {PREADLOOP_SRC} failed (exit {code}): {(err or out).strip()[-1000:]}")
    return exe, argv


def bs_bytes(bs):
    """'4k' -> 4096, '1m' -> 1048576, '1' -> 1 (the block sizes used in CASES)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    b = bs.lower()
    return int(b[:-1]) * units[b[-1]] if b[-1] in units else int(b)


def bare_argv(preadloop, case, filename, duration):
    mode = "seq" if case["rw"] == "read" else "rand"
    return [preadloop, filename, str(bs_bytes(case["bs"])), str(case["threads"]), str(duration), mode]


def run_json(tool, argv, timeout, scratch):
    """Runs a tool that prints JSON; returns (record with argv and problems, parsed JSON or None)."""
    code, out, err = run_capture(argv, timeout, cwd=scratch)
    rec = {"argv": argv, "iops": None, "problems": []}
    if code != 0:
        rec["problems"].append(f"{tool} exited {code}: {err.strip()[-500:]}")
        return rec, None
    data, problem = parse_json_stdout(out)
    if problem:
        rec["problems"].append(problem)
    return rec, data


def run_bare(preadloop, case, filename, duration, scratch):
    rec, data = run_json("preadloop", bare_argv(preadloop, case, filename, duration), duration + 60, scratch)
    if data is None:
        return rec
    try:
        rec["iops"] = float(data["iops"])
        rec["ops"] = data.get("ops")
        rec["runtime_s"] = data.get("seconds")
    except (KeyError, TypeError, ValueError) as e:
        rec["problems"].append(f"unexpected preadloop JSON: {e!r}")
        return rec
    rt = rec.get("runtime_s")
    if isinstance(rt, (int, float)) and abs(rt - duration) > max(0.5, 0.1 * duration):
        rec["problems"].append(f"measured {rt:.2f} s for a {duration} s run")
    return rec


BASELINE = False  # set by --baseline: an older ioscope binary runs right after ioscope on every case


def tools_for(case):
    """Tools run on a case, in order; the bare loop only on page-cache psync read cases."""
    tools = ["fio", "ioscope"] + (["baseline"] if BASELINE else []) + (["bare"] if case["bare"] else [])
    return tuple(tools)


def target_file(case, tool, paths):
    """The file a tool reads or writes in a case (None for the null engine).

    Reads share ioscope's file; for writes each tool has its own file: ioscope never writes
    into fio's file and fio never writes into ioscope's."""
    if case["null"]:
        return None
    if case["write"]:
        return paths["fio write file"] if tool == "fio" else paths["ioscope write file"]
    return paths["data file"]


def fio_argv(fio, case, filename, duration):
    if case["null"]:
        return [fio, "--name=b", "--ioengine=null", "--rw=randread", "--bs=4k", "--size=1g",
                "--time_based", f"--runtime={duration}", "--output-format=json"]
    engine = "io_uring" if case["engine"] == "uring" else "psync"
    argv = [fio, "--name=b", f"--filename={filename}", f"--rw={case['rw']}", f"--bs={case['bs']}",
            f"--ioengine={engine}"]
    if case["engine"] == "uring":
        # fio at its best: registered buffers and files, as ioscope's uring engine uses.
        argv += [f"--iodepth={case['iodepth']}", "--fixedbufs", "--registerfiles"]
    if case["direct"]:
        argv.append("--direct=1")
    argv += [f"--numjobs={case['threads']}", "--group_reporting", "--time_based",
             f"--runtime={duration}", "--size=1g"]
    if case["rw"].startswith("rand"):
        argv += ["--norandommap", "--randrepeat=0"]
    if case["bs"] == "1":
        argv.append("--blockalign=1")
    # fio's default invalidate=1 drops the file from the page cache (POSIX_FADV_DONTNEED)
    # before the job starts, so without this a "page-cache" fio run reads from disk
    # (measured here: ~10K instead of ~550K IOPS, 11% of the file resident afterwards).
    argv.append("--invalidate=0")
    if case["write"]:
        # fio's own file; no fsync at the end of the job (ioscope does none either).
        argv.append("--end_fsync=0")
    else:
        # Safety: fio refuses to write anything (this is ioscope's file).
        argv.append("--readonly")
    argv.append("--output-format=json")
    return argv


def ioscope_argv(ioscope, case, data_dir, duration, out):
    """data_dir: ioscope's directory for this case (its write directory for the write case)."""
    if case["null"]:
        return [ioscope, "run", "--engine", "null", "--rw", "randread", "--bs", "4k",
                "--threads", str(case["threads"]), "--duration", f"{duration}s",
                "--out", out, "--json", "--quiet"]
    engine = "uring" if case["engine"] == "uring" else "posix"
    argv = [ioscope, "run", "--engine", engine]
    if case["engine"] == "uring":
        argv += ["--iodepth", str(case["iodepth"])]
    if case["direct"]:
        argv.append("--direct")
    # This script sets the page cache itself (warm() before reads, evict() before writes),
    # as it does for fio (--invalidate=0): ioscope must leave it as it is.
    return argv + ["--cache", "as-is", "--rw", case["rw"], "--bs", case["bs"], "--size", "1g", "--files", "1",
                   "--threads", str(case["threads"]), "--duration", f"{duration}s",
                   "--dir", data_dir, "--out", out, "--json", "--quiet"]


def parse_json_stdout(text):
    """Parses a JSON document printed on stdout, tolerating stray lines before it."""
    text = text.strip()
    try:
        return json.loads(text), None
    except ValueError:
        pass
    i = text.find("{")
    if i < 0:
        return None, "no JSON on stdout"
    try:
        return json.loads(text[i:]), f"stdout had {i} byte(s) of non-JSON text before the JSON"
    except ValueError as e:
        return None, f"stdout is not JSON: {e}"


def remove_results(path):
    for p in (path, path + "-wal", path + "-shm", path + "-journal"):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def run_fio(fio, case, filename, duration, scratch):
    rec, data = run_json("fio", fio_argv(fio, case, filename, duration), duration + 120, scratch)
    if data is None:
        return rec
    try:
        job = data["jobs"][0]
        d = job["write" if case["write"] else "read"]
        rec["iops"] = float(d["iops"])
        rec["runtime_s"] = d.get("runtime", 0) / 1000.0
        rec["errors"] = job.get("error", 0)
        lat = d.get("clat_ns", {}).get("percentile", {})
        rec["p50_ns"] = lat.get("50.000000")
        rec["p99_ns"] = lat.get("99.000000")
    except (KeyError, IndexError, TypeError, ValueError) as e:
        rec["problems"].append(f"unexpected fio JSON: {e!r}")
    if rec.get("errors"):
        rec["problems"].append(f"fio reported error {rec['errors']}")
    rt = rec.get("runtime_s")
    if isinstance(rt, (int, float)) and abs(rt - duration) > max(0.5, 0.1 * duration):
        rec["problems"].append(f"measured {rt:.2f} s for a {duration} s run")
    return rec


def run_ioscope(ioscope, case, data_dir, duration, scratch, tag):
    out = os.path.join(scratch, f"ioscope-{tag}.db")
    remove_results(out)  # must not exist beforehand
    argv = ioscope_argv(ioscope, case, data_dir, duration, out)
    code, stdout, err = run_capture(argv, duration + 300, cwd=scratch)
    remove_results(out)
    rec = {"argv": argv, "iops": None, "problems": []}
    if code != 0:
        rec["problems"].append(f"ioscope exited {code}: {err.strip()[-500:]}")
    if err.strip() and code == 0:
        rec["problems"].append(f"ioscope printed on stderr despite --quiet: {err.strip()[:300]}")
    data, problem = parse_json_stdout(stdout)
    if problem:
        rec["problems"].append(problem)
    if data is None:
        return rec
    try:
        total = data["total"]
        rec["iops"] = float(total["iops"])
        rec["errors"] = total.get("errors", 0)
        rec["ops"] = total.get("ops")
        rec["runtime_s"] = data.get("duration_s")
        rec["status"] = data.get("status")
        d = data.get("ops", {}).get("write" if case["write"] else "read") or {}
        lat = d.get("service_time_ns") or d.get("latency_ns") or {}
        rec["p50_ns"] = lat.get("p50")
        rec["p99_ns"] = lat.get("p99")
        systems = data.get("system") or {}
        rec["engine_setup"] = "; ".join(sorted({str(v.get("engine")) for v in systems.values()
                                                if isinstance(v, dict) and v.get("engine")})) or None
        plan = (data.get("workload") or {}).get("plan") or {}
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        rec["problems"].append(f"unexpected ioscope JSON: {e!r}")
        return rec
    if rec.get("status") != "completed":
        rec["problems"].append(f"status {rec.get('status')!r}")
    if not case["null"] and plan.get("direct") is not None and bool(plan.get("direct")) != case["direct"]:
        rec["problems"].append(f"ioscope's plan has direct={plan.get('direct')}, expected {case['direct']}")
    if case["engine"] == "uring":
        setup = rec.get("engine_setup") or ""
        # ioscope falls back to plain fds/buffers if registration is refused; fio has both registered.
        if "registered files" not in setup or "registered buffers" not in setup:
            rec["problems"].append(f"ioscope's io_uring setup is not fully registered: {setup or 'not reported'}")
    if rec.get("errors"):
        rec["problems"].append(f"{rec['errors']} I/O errors")
    rt = rec.get("runtime_s")
    if isinstance(rt, (int, float)) and abs(rt - duration) > max(0.5, 0.1 * duration):
        rec["problems"].append(f"measured {rt:.2f} s for a {duration} s run")
    return rec


def tool_version(argv):
    code, out, err = run_capture(argv, 30)
    text = (out or err).strip().splitlines()
    return text[0] if code == 0 and text else f"unknown (exit {code})"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_describe():
    code, out, _ = run_capture(["git", "-C", REPO_DIR, "rev-parse", "--short", "HEAD"], 10)
    rev = out.strip() if code == 0 else "no commit"
    code, out, _ = run_capture(["git", "-C", REPO_DIR, "status", "--porcelain"], 10)
    dirty = code == 0 and out.strip() != ""
    return rev + (" (work tree has uncommitted changes)" if dirty else "")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fs_of(path):
    code, out, _ = run_capture(["findmnt", "-n", "-o", "FSTYPE,SOURCE,TARGET", "--target", path], 10)
    return out.strip() if code == 0 else "unknown"


# ---------------------------------------------------------------- report


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def table_cell(case, iops):
    """Median IOPS for the table: per thread on the null row, with MB/s (10^6 B/s) on MB/s rows."""
    if iops is None:
        return "-"
    if case["null"]:
        return fmt_iops(iops / case["threads"])
    if case["mbps"]:
        return f"{fmt_iops(iops)} ({iops * bs_bytes(case['bs']) / 1e6:,.0f} MB/s)"
    return fmt_iops(iops)


def table(results, rounds):
    if BASELINE:
        return table_with_baseline(results)
    lines = [
        "| case | fio IOPS (median) | ioscope IOPS (median) | bare loop IOPS (median) | ioscope/fio | ioscope/bare |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case in CASES:
        r = results[case["name"]]
        f = median(x["iops"] for x in r["fio"])
        i = median(x["iops"] for x in r["ioscope"])
        b = median(x["iops"] for x in r.get("bare", []))
        ratio = f"{i / f:.2f}" if f and i is not None else "-"
        ratio_bare = f"{i / b:.2f}" if b and i is not None else "-"
        per = " (per thread)" if case["null"] else ""
        lines.append(f"| {case['name']}{per} | {table_cell(case, f)} | {table_cell(case, i)} "
                     f"| {'-' if not case['bare'] else table_cell(case, b)} | {ratio} | {ratio_bare} |")
    return "\n".join(lines)


def spread(xs):
    """(max - min) / median of a tool's rounds: the noise one tool shows against itself."""
    xs = [x for x in xs if x is not None]
    m = median(xs)
    return (max(xs) - min(xs)) / m if xs and m else None


def table_with_baseline(results):
    """The table when an older ioscope ran too: this ioscope against it, round by round."""
    lines = [
        "| case | fio IOPS (median) | ioscope IOPS (median) | baseline IOPS (median) | ioscope/fio | ioscope/baseline "
        "| spread ioscope | spread baseline |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in CASES:
        r = results[case["name"]]
        f = median(x["iops"] for x in r["fio"])
        i = median(x["iops"] for x in r["ioscope"])
        b = median(x["iops"] for x in r["baseline"])
        si = spread(x["iops"] for x in r["ioscope"])
        sb = spread(x["iops"] for x in r["baseline"])
        ratio = f"{i / f:.2f}" if f and i is not None else "-"
        ratio_base = f"{i / b:.2f}" if b and i is not None else "-"
        per = " (per thread)" if case["null"] else ""
        pct = lambda v: "-" if v is None else f"{v:.0%}"
        lines.append(f"| {case['name']}{per} | {table_cell(case, f)} | {table_cell(case, i)} | {table_cell(case, b)} "
                     f"| {ratio} | {ratio_base} | {pct(si)} | {pct(sb)} |")
    return "\n".join(lines)


def shell(argv):
    return " ".join(shlex.quote(a) for a in argv)


def report(args, env, results, first_argv, prep_cmds, started, finished):
    out = []
    out.append(f"# ioscope vs fio: {args.label}")
    out.append("")
    out.append(f"- date (UTC): {started.strftime('%Y-%m-%d %H:%M:%S')} to {finished.strftime('%H:%M:%S')}")
    for k in ("hostname", "cpu", "cores", "kernel", "fio", "ioscope", "ioscope binary", "baseline", "ioscope uring setup",
              "bare loop", "source", "data file", "write files", "filesystem"):
        if k in env:
            out.append(f"- {k}: {env[k]}")
    out.append(f"- rounds: {args.rounds}, {args.duration} s per measurement, order per case and round: fio, ioscope, "
               + ("the baseline ioscope, " if BASELINE else "") +
               "then the bare pread loop (page-cache psync read cases only); "
               "page cache warmed (whole file read) right before every page-cache read measurement, bare loop "
               "included (all read cases but O_DIRECT); on the write case each tool's own file is instead fsynced "
               "and dropped from the page cache right before each measurement (see below)")
    out.append("- fio flags added for a fair page-cache comparison: `--invalidate=0` (fio's default `invalidate=1` "
               "drops the file from the page cache before each job, so fio would read from disk) and, on the read "
               "cases, `--readonly` (safety: fio never writes ioscope's file); fio keeps its default latency "
               "percentile recording")
    out.append("- uring cases: fio runs at its best, with `--fixedbufs --registerfiles` (registered buffers and files, "
               "what ioscope's uring engine uses too; ioscope's setup as its JSON reports it is under "
               "\"ioscope uring setup\" above); both keep 32 I/Os in flight on one thread. The O_DIRECT case reads "
               "from the disk, not the page cache (no warm-up): it is disk-bound, so ioscope/fio ≈ 1 is the expected "
               "result and the point is that ioscope does not fall below fio")
    out.append("- write case: buffered 4 KiB random writes into the page cache. Each tool writes ONLY its own 1 GiB file "
               "(ioscope the file it created in its own directory, fio the file fio created); no fsync during or "
               "at the end of the run (fio `--end_fsync=0`). Right before each write measurement the script fsyncs "
               "the tool's file and drops it from the page cache (`posix_fadvise(POSIX_FADV_DONTNEED)` on that file "
               "only), so both tools start from the same state: every write is a whole-page overwrite (no read from "
               "disk) that lands in a 4 KiB page-cache folio. Without this the result depends on the file's cache "
               "history: writes into the large folios a sequential warm-up read leaves behind measured ~40K IOPS "
               "here, into 4 KiB folios ~500K, for either tool. The kernel's writeback of dirty pages can overlap a "
               "measurement and affects both tools; the alternation spreads that over both. After every write "
               "measurement the script calls sync() (not timed) so that its dirty pages are not written back during "
               "the next measurement; \"dirty MB before\" in the raw table is Dirty + Writeback from /proc/meminfo "
               "when each measurement started")
    out.append("")
    out.append(table(results, args.rounds))
    out.append("")
    out.append("IOPS are medians over the rounds; ioscope/fio is the ratio of the medians (above 1: ioscope is faster). "
               "On the 1M sequential row MB/s (10^6 bytes/s = IOPS × 1 MiB) is shown next to IOPS; the ratio of IOPS "
               "is the ratio of MB/s. "
               "The null-engine row is IOPS per thread (1 thread) and measures each tool's own per-I/O cost without any I/O.")
    out.append("")
    out.append("The bare loop (`bench/preadloop.c`: pread at random offsets, sequential on the 1M sequential row, no "
               "per-I/O timing or recording) is the ceiling, "
               "the kernel's cost of pread alone; ioscope/bare shows how close ioscope's fully timed and recorded loop "
               "gets to it, and bare/fio (bare loop IOPS ÷ fio IOPS) shows how much room there is over fio.")
    out.append("")
    out.append("## Commands")
    out.append("")
    out.append("Working sets prepared at start (each tool creates its own file if it is missing and reuses it otherwise; "
               "a command that was not needed is not run and is shown as skipped):")
    out.append("")
    out.append("```")
    for argv, note in prep_cmds:
        out.append(("# " + note + "\n" if note else "") + shell(argv))
    out.append("```")
    out.append("")
    out.append("Per case (round 1 shown; later rounds differ only in the `--out` file name, which is fresh and deleted after each run). "
               "On the read cases fio, ioscope and the bare loop all read `" + env["data file"] + "`; on the write case "
               "each tool writes its own file (" + env["write files"] + "). "
               "The bare loop was compiled at start, into the temporary scratch directory (deleted at the end), with `"
               + shell(env["bare loop argv"]) + "`.")
    out.append("")
    for case in CASES:
        out.append(f"{case['name']}:")
        out.append("")
        out.append("```")
        for tool in tools_for(case):
            out.append(shell(first_argv[case["name"]][tool]))
        out.append("```")
        out.append("")
    out.append("## Raw per-round numbers")
    out.append("")
    out.append("resident = share of the tool's file in the page cache (mincore) right after the measurement "
               "(on the write case, where the file is dropped from the cache before the run, the share of it the run "
               "wrote); warm = throughput of the warm-up read before it (a few GB/s means it came from cache). "
               "p50/p99 = completion latency (fio clat, ioscope service time). "
               "dirty MB before = Dirty + Writeback in /proc/meminfo when the measurement started; "
               "sync s = time of the sync() after a write measurement.")
    out.append("")
    out.append("| case | round | tool | IOPS | runtime s | p50 ns | p99 ns | warm MB/s | resident after "
               "| dirty MB before | sync s | problems |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for case in CASES:
        r = results[case["name"]]
        for rnd in range(args.rounds):
            for tool in tools_for(case):
                x = r[tool][rnd]
                rt = x.get("runtime_s")
                warm_rec = x.get("warm") or {}
                dirty = x.get("dirty_mb_before")
                sync_s = x.get("sync_s")
                out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                    case["name"], rnd + 1, tool, fmt_iops(x["iops"]),
                    f"{rt:.2f}" if isinstance(rt, (int, float)) else "-",
                    x.get("p50_ns") if x.get("p50_ns") is not None else "-",
                    x.get("p99_ns") if x.get("p99_ns") is not None else "-",
                    f"{warm_rec['mb_per_s']:,.0f}" if warm_rec else "-",
                    fmt_res(x.get("resident_after")) if case["warm"] or case["evict"] else "-",
                    f"{dirty:,.0f}" if dirty is not None else "-",
                    f"{sync_s:.2f}" if sync_s is not None else "-",
                    "; ".join(p.replace("|", "\\|").replace("\n", " ") for p in x["problems"]) or "",
                ))
    problems = [(c["name"], rnd + 1, tool, p) for c in CASES for tool in tools_for(c)
                for rnd, x in enumerate(results[c["name"]][tool]) for p in x["problems"]]
    out.append("")
    if problems:
        out.append("## Problems seen")
        out.append("")
        for name, rnd, tool, p in problems:
            out.append(f"- {name}, round {rnd}, {tool}: {p}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def result_path(label, hostname, when):
    base = os.path.join(BENCH_DIR, "results", f"{when.strftime('%Y-%m-%d')}-{hostname}-{label}")
    path = base + ".md"
    n = 2
    while os.path.exists(path):  # never overwrite an earlier result of the same day
        path = f"{base}-{n}.md"
        n += 1
    return path


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description="Run ioscope and fio side by side, with a bare C pread loop as the ceiling, "
                                             "and compare median IOPS.")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds per case, each runs fio, ioscope, then the bare loop (min 3, default 3)")
    ap.add_argument("--duration", type=int, default=5, help="seconds per measurement (default 5)")
    ap.add_argument("--dir", default="/var/tmp/ioscope-bench", help="data directory: ioscope's files and fio's own write file (default /var/tmp/ioscope-bench)")
    ap.add_argument("--label", default="psync", help="label in the result file name (default psync)")
    ap.add_argument("--ioscope", help="ioscope binary (default: cargo build --release and use target/release/ioscope)")
    ap.add_argument("--fio", default=shutil.which("fio") or "/usr/bin/fio", help="fio binary (default: fio on PATH)")
    ap.add_argument("--baseline", help="an older ioscope binary, run right after ioscope on every case and round, "
                                       "to show that a change made no row slower (ioscope/baseline column)")
    ap.add_argument("--no-save", action="store_true", help="print the table only; write no file under bench/results/")
    args = ap.parse_args()
    if args.rounds < 3:
        ap.error("--rounds must be at least 3")
    if args.duration < 1:
        ap.error("--duration must be at least 1")
    if not args.label.replace("-", "").replace("_", "").replace(".", "").isalnum():
        ap.error("--label: use letters, digits, '-', '_', '.'")
    if not os.access(args.fio, os.X_OK):
        ap.error(f"fio not found: {args.fio}")

    global BASELINE
    ioscope = os.path.abspath(args.ioscope) if args.ioscope else build_ioscope()
    baseline = os.path.abspath(args.baseline) if args.baseline else None
    if baseline and not os.access(baseline, os.X_OK):
        die(f"not an executable: {baseline}")
    BASELINE = baseline is not None
    if not os.access(ioscope, os.X_OK):
        die(f"not an executable: {ioscope}")
    data_dir = os.path.abspath(args.dir)
    data_file = os.path.join(data_dir, "ioscope.0.dat")
    started = datetime.datetime.now(datetime.timezone.utc)
    hostname = socket.gethostname()

    env = {
        "hostname": hostname,
        "cpu": cpu_model(),
        "cores": f"{os.cpu_count()} online ({len(os.sched_getaffinity(0))} usable by this process)",
        "kernel": f"{platform.system()} {platform.release()} {platform.machine()}",
        "fio": tool_version([args.fio, "--version"]),
        "ioscope": tool_version([ioscope, "--version"]),
        "ioscope binary": f"{ioscope} (sha256 {sha256_of(ioscope)[:16]}), source {git_describe()}",
        "source": REPO_DIR,
        **({"baseline": f"{tool_version([baseline, '--version'])}, {baseline} (sha256 {sha256_of(baseline)[:16]})"}
           if baseline else {}),
        "data file": data_file,
    }
    paths = {
        "data file": data_file,
        "ioscope write dir": os.path.join(data_dir, WRITE_SUBDIR),
        "ioscope write file": os.path.join(data_dir, WRITE_SUBDIR, "ioscope.0.dat"),
        "fio write file": os.path.join(data_dir, FIO_WRITE_FILE),
    }
    env["write files"] = (f"ioscope writes {paths['ioscope write file']} (created by ioscope), "
                          f"fio writes {paths['fio write file']} (created by fio)")
    log(f"{env['fio']} vs {env['ioscope']} on {hostname}; {args.rounds} rounds x {args.duration} s; data {data_file}")

    scratch = tempfile.mkdtemp(prefix="ioscope-bench-")
    try:
        # 0. Build the bare pread loop (the ceiling) into the scratch directory.
        preadloop, cc_argv = build_preadloop(scratch)
        env["bare loop"] = f"bench/preadloop.c, {tool_version(['cc', '--version'])}"
        env["bare loop argv"] = cc_argv

        # 1. Let ioscope create (or reuse) its own 1 GiB files: the shared read file in
        #    data_dir and, in its own subdirectory, the file it writes in the write case.
        #    A 1-second randread creates a missing file (random data) and reuses an existing one.
        os.makedirs(os.path.dirname(data_dir), exist_ok=True)
        prep_cmds = []
        for i, (pdir, pfile) in enumerate(((data_dir, data_file),
                                           (paths["ioscope write dir"], paths["ioscope write file"]))):
            prep_out = os.path.join(scratch, f"prepare-{i}.db")
            prep_argv = [ioscope, "run", "--engine", "posix", "--rw", "randread", "--bs", "4k", "--size", "1g",
                         "--files", "1", "--threads", "1", "--duration", "1s", "--dir", pdir,
                         "--out", prep_out, "--json", "--quiet"]
            log("preparing ioscope's working set: " + shell(prep_argv))
            code, _, err = run_capture(prep_argv, 900, cwd=scratch)
            remove_results(prep_out)
            if code != 0:
                die(f"ioscope could not prepare {pfile} (exit {code}): {err.strip()}")
            if not os.path.isfile(pfile):
                die(f"ioscope ran but {pfile} does not exist (file naming changed?)")
            size = os.path.getsize(pfile)
            if size != FILE_SIZE:
                die(f"{pfile} is {size} bytes, expected {FILE_SIZE}; fio would extend it")
            prep_cmds.append((prep_argv, "ioscope: " + ("shared read file" if i == 0 else "ioscope's own write file")))

        # 2. fio's own file for the write case, created (written sequentially, then fsynced)
        #    by fio if it is missing. fio never writes ioscope's files and ioscope never writes this one.
        fio_file = paths["fio write file"]
        fio_prep = [args.fio, "--name=prep", f"--filename={fio_file}", "--rw=write", "--bs=1m", "--ioengine=psync",
                    "--size=1g", "--end_fsync=1", "--output-format=json"]
        if os.path.exists(fio_file) and os.path.getsize(fio_file) == FILE_SIZE:
            log(f"reusing fio's write file {fio_file}")
            prep_cmds.append((fio_prep, f"fio: its own write file (skipped this time: {fio_file} already exists, 1 GiB)"))
        else:
            log("preparing fio's write file: " + shell(fio_prep))
            code, _, err = run_capture(fio_prep, 900, cwd=scratch)
            if code != 0:
                die(f"fio could not create {fio_file} (exit {code}): {err.strip()[-1000:]}")
            prep_cmds.append((fio_prep, "fio: its own write file (created in this run)"))
        if not os.path.isfile(fio_file) or os.path.getsize(fio_file) != FILE_SIZE:
            die(f"{fio_file} should be a {FILE_SIZE}-byte file made by fio; remove it and run again")
        env["filesystem"] = fs_of(data_dir)

        results = {c["name"]: {t: [] for t in tools_for(c)} for c in CASES}
        first_argv = {}
        total = args.rounds * sum(len(tools_for(c)) for c in CASES)
        n = 0
        for rnd in range(args.rounds):
            for case in CASES:
                for tool in tools_for(case):
                    n += 1
                    target = target_file(case, tool, paths)
                    w = None
                    left = None
                    if case["warm"]:
                        w = warm(target)
                        log(f"  warmed {target}: {w['mb_per_s']:,.0f} MB/s, {fmt_res(w['resident'])} resident")
                    if case["evict"]:
                        left = evict(target)
                        log(f"  dropped {target} from the page cache: {fmt_res(left)} still resident")
                    # Files this tool must not touch in a write case: the other tool's.
                    guarded = ([f for f in (paths["ioscope write file"], paths["fio write file"]) if f != target]
                               if case["write"] else [])
                    before = {f: mtime_ns(f) for f in guarded}
                    dirty = dirty_mb()
                    log(f"[{n}/{total}] round {rnd + 1}: {case['name']}: {tool}")
                    if tool == "fio":
                        rec = run_fio(args.fio, case, target, args.duration, scratch)
                    elif tool == "bare":
                        rec = run_bare(preadloop, case, target, args.duration, scratch)
                    else:
                        io_dir = paths["ioscope write dir"] if case["write"] else data_dir
                        binary = baseline if tool == "baseline" else ioscope
                        rec = run_ioscope(binary, case, io_dir, args.duration, scratch, f"r{rnd + 1}-{n}")
                    rec["warm"] = w
                    rec["dirty_mb_before"] = dirty
                    rec["resident_before"] = left
                    if left is not None and left > 0.01:
                        rec["problems"].append(f"{left:.1%} of the file was still in the page cache after dropping it")
                    for f in guarded:
                        if mtime_ns(f) != before[f]:
                            rec["problems"].append(f"{f} (not this tool's file) was modified during the run")
                    if case["warm"] or case["evict"]:
                        rec["resident_after"] = resident_fraction(target)
                    if case["warm"]:
                        if rec["resident_after"] is not None and rec["resident_after"] < 0.95:
                            rec["problems"].append(f"only {rec['resident_after']:.1%} of the file resident after the run: "
                                                   "it may have read from disk")
                    results[case["name"]][tool].append(rec)
                    first_argv.setdefault(case["name"], {}).setdefault(tool, rec["argv"])
                    log(f"    {fmt_iops(rec['iops'])} IOPS" + (f"  PROBLEMS: {'; '.join(rec['problems'])}" if rec["problems"] else ""))
                    if case["write"]:
                        # Write the dirty pages back now, untimed, rather than during a later measurement.
                        t0 = time.monotonic()
                        os.sync()
                        rec["sync_s"] = time.monotonic() - t0
                        log(f"    sync() after the write run: {rec['sync_s']:.2f} s")
        finished = datetime.datetime.now(datetime.timezone.utc)
        setups = sorted({x.get("engine_setup") or "not reported" for c in CASES if c["engine"] == "uring"
                         for x in results[c["name"]]["ioscope"] if x.get("iops") is not None})
        env["ioscope uring setup"] = "; ".join(setups) if setups else "no successful uring run"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    text = report(args, env, results, first_argv, prep_cmds, started, finished)
    print(table(results, args.rounds))
    if not args.no_save:
        path = result_path(args.label, hostname, started)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        log(f"wrote {path}")
    if any(x["iops"] is None for r in results.values() for t in r.values() for x in t):
        log("some measurements failed; see the Problems section")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
