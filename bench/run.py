#!/usr/bin/env python3
"""ioscope vs fio, side by side, on one shared 1 GiB file, with a bare pread loop as the ceiling.

Runs each case alternately with fio, ioscope and, on the page-cache psync cases, a bare C
pread loop (bench/preadloop.c, compiled at start with cc): fio, ioscope, bare, fio, ...
for --rounds rounds, warms the page cache right before every page-cache measurement,
prints a markdown table of median IOPS and the ratios ioscope/fio and ioscope/bare, and
writes it with the raw per-round numbers to bench/results/YYYY-MM-DD-<hostname>-<label>.md.

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

# name, block size (fio spelling, ioscope spelling), threads, page-cache case?
CASES = [
    {"name": "psync 4k randread, 1 thread", "bs": "4k", "threads": 1, "null": False},
    {"name": "psync 4k randread, 2 threads", "bs": "4k", "threads": 2, "null": False},
    {"name": "psync 1B randread, 1 thread", "bs": "1", "threads": 1, "null": False},
    {"name": "null engine, 1 thread", "bs": "4k", "threads": 1, "null": True},
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
    """'4k' -> 4096, '1' -> 1 (the block sizes used in CASES)."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    b = bs.lower()
    return int(b[:-1]) * units[b[-1]] if b[-1] in units else int(b)


def bare_argv(preadloop, case, filename, duration):
    return [preadloop, filename, str(bs_bytes(case["bs"])), str(case["threads"]), str(duration)]


def run_bare(preadloop, case, filename, duration, scratch):
    argv = bare_argv(preadloop, case, filename, duration)
    code, out, err = run_capture(argv, duration + 60, cwd=scratch)
    rec = {"argv": argv, "iops": None, "problems": []}
    if code != 0:
        rec["problems"].append(f"preadloop exited {code}: {err.strip()[-500:]}")
        return rec
    data, problem = parse_json_stdout(out)
    if problem:
        rec["problems"].append(problem)
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


def tools_for(case):
    """Tools run on a case, in order; the bare loop only on page-cache psync cases."""
    return ("fio", "ioscope") if case["null"] else ("fio", "ioscope", "bare")


def fio_argv(fio, case, filename, duration):
    if case["null"]:
        return [fio, "--name=b", "--ioengine=null", "--rw=randread", "--bs=4k", "--size=1g",
                "--time_based", f"--runtime={duration}", "--output-format=json"]
    argv = [fio, "--name=b", f"--filename={filename}", "--rw=randread", f"--bs={case['bs']}",
            "--ioengine=psync", f"--numjobs={case['threads']}", "--group_reporting", "--time_based",
            f"--runtime={duration}", "--size=1g", "--norandommap", "--randrepeat=0",
            "--output-format=json"]
    if case["bs"] == "1":
        argv.append("--blockalign=1")
    # fio's default invalidate=1 drops the file from the page cache (POSIX_FADV_DONTNEED)
    # before the job starts, so without this a "page-cache" fio run reads from disk
    # (measured here: ~10K instead of ~550K IOPS, 11% of the file resident afterwards).
    argv.append("--invalidate=0")
    # Safety: fio refuses to write anything (this is ioscope's file).
    argv.append("--readonly")
    return argv


def ioscope_argv(ioscope, case, data_dir, duration, out):
    if case["null"]:
        return [ioscope, "run", "--engine", "null", "--rw", "randread", "--bs", "4k",
                "--threads", str(case["threads"]), "--duration", f"{duration}s",
                "--out", out, "--json", "--quiet"]
    return [ioscope, "run", "--engine", "posix", "--rw", "randread", "--bs", case["bs"],
            "--size", "1g", "--files", "1", "--threads", str(case["threads"]),
            "--duration", f"{duration}s", "--dir", data_dir, "--out", out, "--json", "--quiet"]


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
    argv = fio_argv(fio, case, filename, duration)
    code, out, err = run_capture(argv, duration + 120, cwd=scratch)
    rec = {"argv": argv, "iops": None, "problems": []}
    if code != 0:
        rec["problems"].append(f"fio exited {code}: {err.strip()[-500:]}")
        return rec
    data, problem = parse_json_stdout(out)
    if problem:
        rec["problems"].append(problem)
    if data is None:
        return rec
    try:
        job = data["jobs"][0]
        rec["iops"] = float(job["read"]["iops"])
        rec["runtime_s"] = job["read"].get("runtime", 0) / 1000.0
        rec["errors"] = job.get("error", 0)
        lat = job["read"].get("clat_ns", {}).get("percentile", {})
        rec["p50_ns"] = lat.get("50.000000")
        rec["p99_ns"] = lat.get("99.000000")
    except (KeyError, IndexError, TypeError, ValueError) as e:
        rec["problems"].append(f"unexpected fio JSON: {e!r}")
    if rec.get("errors"):
        rec["problems"].append(f"fio reported error {rec['errors']}")
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
        read = data.get("ops", {}).get("read") or {}
        lat = read.get("service_time_ns") or read.get("latency_ns") or {}
        rec["p50_ns"] = lat.get("p50")
        rec["p99_ns"] = lat.get("p99")
    except (KeyError, TypeError, ValueError) as e:
        rec["problems"].append(f"unexpected ioscope JSON: {e!r}")
        return rec
    if rec.get("status") != "completed":
        rec["problems"].append(f"status {rec.get('status')!r}")
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


def table(results, rounds):
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
        lines.append(f"| {case['name']}{per} | {fmt_iops(f and f / case['threads'] if case['null'] else f)} "
                     f"| {fmt_iops(i and i / case['threads'] if case['null'] else i)} | {fmt_iops(b)} "
                     f"| {ratio} | {ratio_bare} |")
    return "\n".join(lines)


def shell(argv):
    return " ".join(shlex.quote(a) for a in argv)


def report(args, env, results, first_argv, prep_argv, started, finished):
    out = []
    out.append(f"# ioscope vs fio: {args.label}")
    out.append("")
    out.append(f"- date (UTC): {started.strftime('%Y-%m-%d %H:%M:%S')} to {finished.strftime('%H:%M:%S')}")
    for k in ("hostname", "cpu", "cores", "kernel", "fio", "ioscope", "ioscope binary", "bare loop", "source",
              "data file", "filesystem"):
        out.append(f"- {k}: {env[k]}")
    out.append(f"- rounds: {args.rounds}, {args.duration} s per measurement, order per case and round: fio, ioscope, "
               "then the bare pread loop (page-cache psync cases only); "
               "page cache warmed (whole file read) right before every page-cache measurement, bare loop included")
    out.append("- fio flags added for a fair page-cache comparison: `--invalidate=0` (fio's default `invalidate=1` "
               "drops the file from the page cache before each job, so fio would read from disk) and `--readonly` "
               "(safety: fio never writes ioscope's file); fio keeps its default latency percentile recording")
    out.append("")
    out.append(table(results, args.rounds))
    out.append("")
    out.append("IOPS are medians over the rounds; ioscope/fio is the ratio of the medians (above 1: ioscope is faster). "
               "The null-engine row is IOPS per thread (1 thread) and measures each tool's own per-I/O cost without any I/O.")
    out.append("")
    out.append("The bare loop (`bench/preadloop.c`: pread at random offsets, no per-I/O timing or recording) is the ceiling, "
               "the kernel's cost of pread alone; ioscope/bare shows how close ioscope's fully timed and recorded loop "
               "gets to it, and bare/fio (bare loop IOPS ÷ fio IOPS) shows how much room there is over fio.")
    out.append("")
    out.append("## Commands")
    out.append("")
    out.append("Working set prepared once by ioscope (creates the file if missing, reuses it otherwise):")
    out.append("")
    out.append("```")
    out.append(shell(prep_argv))
    out.append("```")
    out.append("")
    out.append("Per case (round 1 shown; later rounds differ only in the `--out` file name, which is fresh and deleted after each run). "
               "fio, ioscope and the bare loop all read `" + env["data file"] + "`. "
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
    out.append("resident = share of the file in the page cache (mincore) right after the measurement; "
               "warm = throughput of the warm-up read before it (a few GB/s means it came from cache). "
               "p50/p99 = completion latency (fio clat, ioscope service time).")
    out.append("")
    out.append("| case | round | tool | IOPS | runtime s | p50 ns | p99 ns | warm MB/s | resident after | problems |")
    out.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for case in CASES:
        r = results[case["name"]]
        for rnd in range(args.rounds):
            for tool in tools_for(case):
                x = r[tool][rnd]
                rt = x.get("runtime_s")
                warm_rec = x.get("warm") or {}
                out.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                    case["name"], rnd + 1, tool, fmt_iops(x["iops"]),
                    f"{rt:.2f}" if isinstance(rt, (int, float)) else "-",
                    x.get("p50_ns") if x.get("p50_ns") is not None else "-",
                    x.get("p99_ns") if x.get("p99_ns") is not None else "-",
                    f"{warm_rec['mb_per_s']:,.0f}" if warm_rec else "-",
                    fmt_res(x.get("resident_after")) if not case["null"] else "-",
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
    ap.add_argument("--dir", default="/var/tmp/ioscope-bench", help="data directory, ioscope's own (default /var/tmp/ioscope-bench)")
    ap.add_argument("--label", default="psync", help="label in the result file name (default psync)")
    ap.add_argument("--ioscope", help="ioscope binary (default: cargo build --release and use target/release/ioscope)")
    ap.add_argument("--fio", default=shutil.which("fio") or "/usr/bin/fio", help="fio binary (default: fio on PATH)")
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

    ioscope = os.path.abspath(args.ioscope) if args.ioscope else build_ioscope()
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
        "data file": data_file,
    }
    log(f"{env['fio']} vs {env['ioscope']} on {hostname}; {args.rounds} rounds x {args.duration} s; data {data_file}")

    scratch = tempfile.mkdtemp(prefix="ioscope-bench-")
    try:
        # 0. Build the bare pread loop (the ceiling) into the scratch directory.
        preadloop, cc_argv = build_preadloop(scratch)
        env["bare loop"] = f"bench/preadloop.c, {tool_version(['cc', '--version'])}"
        env["bare loop argv"] = cc_argv

        # 1. Let ioscope create (or reuse) its own 1 GiB file.
        os.makedirs(os.path.dirname(data_dir), exist_ok=True)
        prep_out = os.path.join(scratch, "prepare.db")
        prep_argv = [ioscope, "run", "--engine", "posix", "--rw", "randread", "--bs", "4k", "--size", "1g",
                     "--files", "1", "--threads", "1", "--duration", "1s", "--dir", data_dir,
                     "--out", prep_out, "--json", "--quiet"]
        log("preparing the working set: " + shell(prep_argv))
        code, _, err = run_capture(prep_argv, 900, cwd=scratch)
        remove_results(prep_out)
        if code != 0:
            die(f"ioscope could not prepare {data_file} (exit {code}): {err.strip()}")
        if not os.path.isfile(data_file):
            die(f"ioscope ran but {data_file} does not exist (file naming changed?)")
        size = os.path.getsize(data_file)
        if size != FILE_SIZE:
            die(f"{data_file} is {size} bytes, expected {FILE_SIZE}; fio would extend it")
        env["filesystem"] = fs_of(data_dir)

        results = {c["name"]: {t: [] for t in tools_for(c)} for c in CASES}
        first_argv = {}
        total = args.rounds * sum(len(tools_for(c)) for c in CASES)
        n = 0
        for rnd in range(args.rounds):
            for case in CASES:
                for tool in tools_for(case):
                    n += 1
                    w = None
                    if not case["null"]:
                        w = warm(data_file)
                        log(f"  warmed {data_file}: {w['mb_per_s']:,.0f} MB/s, {fmt_res(w['resident'])} resident")
                    log(f"[{n}/{total}] round {rnd + 1}: {case['name']}: {tool}")
                    if tool == "fio":
                        rec = run_fio(args.fio, case, data_file, args.duration, scratch)
                    elif tool == "bare":
                        rec = run_bare(preadloop, case, data_file, args.duration, scratch)
                    else:
                        rec = run_ioscope(ioscope, case, data_dir, args.duration, scratch, f"r{rnd + 1}-{n}")
                    rec["warm"] = w
                    if not case["null"]:
                        rec["resident_after"] = resident_fraction(data_file)
                        if rec["resident_after"] is not None and rec["resident_after"] < 0.95:
                            rec["problems"].append(f"only {rec['resident_after']:.1%} of the file resident after the run: "
                                                   "it may have read from disk")
                    results[case["name"]][tool].append(rec)
                    first_argv.setdefault(case["name"], {}).setdefault(tool, rec["argv"])
                    log(f"    {fmt_iops(rec['iops'])} IOPS" + (f"  PROBLEMS: {'; '.join(rec['problems'])}" if rec["problems"] else ""))
        finished = datetime.datetime.now(datetime.timezone.utc)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    text = report(args, env, results, first_argv, prep_argv, started, finished)
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
