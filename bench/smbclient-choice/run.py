#!/usr/bin/env python3
"""Chooses the SMB client library for ioscope's `smb` engine by measuring both candidates
against the same Samba, on the same file: the pure-Rust `smb` crate and Samba's own
libsmbclient. 4 KiB random reads and writes, one request in flight (QD1) and, for the
crate, 16; several rounds of every case, alternating, medians.

Usage: bench/smbclient-choice/run.py [--rounds N] [--secs S] [--out FILE.md]
(as root: it starts scripts/smb-server.sh on its default STATE_DIR, /tmp/ioscope-smb, and
leaves it running). The bench binary (src/main.rs) prints one JSON line per case; this
script runs it, keeps every line, and writes a Markdown table of the medians.
"""

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("CARGO_TARGET_DIR", "/root/.cache/ioscope/target-smbchoice")
BIN = os.path.join(TARGET, "release", "smbclient-choice")
FILE = "smbclient-choice.dat"
FILE_SIZE = 64 << 20  # small enough to stay in the page cache (warmed before each read run)

# (label, client, depth, extra flags). Every case runs for reads and for writes.
CASES = [
    ("libsmbclient, QD1, signing required", "libsmbclient", 1, ["--sign"]),
    ("libsmbclient, QD1, client defaults", "libsmbclient", 1, []),
    ("smb crate, QD1, as shipped", "crate", 1, []),
    ("smb crate, QD1, TCP_NODELAY set", "crate", 1, ["--nodelay"]),
    ("smb crate, QD16, as shipped", "crate", 16, []),
    ("smb crate, QD16, TCP_NODELAY set", "crate", 16, ["--nodelay"]),
    ("smb crate, QD16, TCP_NODELAY, multi-thread runtime", "crate", 16, ["--nodelay", "--runtime", "multi"]),
    ("libsmbclient, QD1, encryption required", "libsmbclient", 1, ["--encrypt"]),
    ("smb crate, QD1, TCP_NODELAY, encryption required", "crate", 1, ["--nodelay", "--encrypt"]),
    ("smb crate, QD16, TCP_NODELAY, encryption required", "crate", 16, ["--nodelay", "--encrypt"]),
]


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=float, default=5.0)
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    env = dict(os.environ, CARGO_TARGET_DIR=TARGET, CARGO_INCREMENTAL="0")
    print("== building", file=sys.stderr)
    subprocess.run(["nice", "-n", "10", "cargo", "build", "--release", "--locked"], cwd=HERE, env=env, check=True)

    print("== starting smbd (scripts/smb-server.sh start)", file=sys.stderr)
    state_dir = "/tmp/ioscope-smb"
    url = sh(os.path.join(REPO, "scripts", "smb-server.sh"), "start", state_dir).strip().splitlines()[-1]
    env["IOSCOPE_SMB_URL"] = url
    env["IOSCOPE_SMB_PASSWORD_FILE"] = os.path.join(state_dir, "password")
    env.pop("RUST_BACKTRACE", None)

    # The file both clients use, written locally into the share and given to the SMB user.
    path = os.path.join(state_dir, "share", FILE)
    if not os.path.exists(path) or os.path.getsize(path) != FILE_SIZE:
        with open(path, "wb") as f:
            f.write(os.urandom(FILE_SIZE))
        sh("chown", "ioscope:ioscope", path)

    raw = {}
    for rnd in range(args.rounds):
        for label, client, depth, extra in CASES:
            for op in ("read", "write"):
                # Warm the file right before each run: a DAMON scheme on these machines
                # evicts cold page cache, and the point is the client, not the disk.
                with open(path, "rb") as f:
                    while f.read(1 << 20):
                        pass
                cmd = [BIN, "--client", client, "--op", op, "--depth", str(depth), "--file", FILE,
                       "--size", str(FILE_SIZE), "--secs", str(args.secs)] + extra
                try:
                    r = subprocess.run(cmd, env=env, text=True, capture_output=True,
                                       timeout=args.secs + 60)
                    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
                    failure = "" if r.returncode == 0 and line else f"exit {r.returncode}: {r.stderr.strip()[-300:]}"
                except subprocess.TimeoutExpired:
                    failure = f"killed after {args.secs + 60:g} s"
                if failure:
                    # Kept as a failed round (no figures); the other cases go on.
                    print(f"FAILED: {' '.join(cmd)}: {failure}", file=sys.stderr)
                    raw.setdefault(f"{label} | {op}", []).append({"failed": failure})
                    continue
                res = json.loads(line)
                raw.setdefault(f"{label} | {op}", []).append(res)
                print(f"round {rnd + 1} {label:55} {op:5} {res['requests_per_s']:10.1f} req/s "
                      f"{res['client_cpu_us_per_request']:7.1f} us cpu/req  [{res['smbstatus']}] "
                      f"{res['first_error']}", file=sys.stderr)
                time.sleep(0.5)

    def ok(key):
        return [r for r in raw[key] if "failed" not in r and not r.get("hung")]

    def med(key, field):
        vals = [r[field] for r in ok(key)]
        return statistics.median(vals) if vals else float("nan")

    lines = []
    lines.append("| case | op | requests/s | client CPU µs/request | smbd CPU µs/request | errors (requests) | smbstatus: dialect, encryption, signing |")
    lines.append("|---|---|---|---|---|---|---|")
    for label, _, _, _ in CASES:
        for op in ("read", "write"):
            key = f"{label} | {op}"
            errs = sum(r.get("errors", 0) for r in raw[key])
            bad = len(raw[key]) - len(ok(key))
            if bad:
                errs = f"{errs} ({bad} of {len(raw[key])} rounds hung or failed)"
            status = next((r["smbstatus"] for r in reversed(raw[key]) if "smbstatus" in r), "")
            status = status.split(") ", 1)[-1]
            lines.append(f"| {label} | {op} | {med(key, 'requests_per_s'):,.0f} | "
                         f"{med(key, 'client_cpu_us_per_request'):.1f} | "
                         f"{med(key, 'smbd_cpu_us_per_request'):.1f} | {errs} | {status} |")
    table = "\n".join(lines)

    with open(BIN, "rb") as f:
        bin_hash = hashlib.sha256(f.read()).hexdigest()[:16]
    header = (f"host: {platform.node()}, kernel {platform.release()}, {os.cpu_count()} CPUs; "
              f"{sh('smbd', '--version').strip()}; bench binary sha256 {bin_hash}…; "
              f"{args.rounds} rounds of {args.secs:g} s per case, alternating; medians")
    out = f"{header}\n\n{table}\n\nRaw rounds:\n\n```\n{json.dumps(raw, indent=1)}\n```\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(out)
    print(header)
    print(table)


if __name__ == "__main__":
    main()
