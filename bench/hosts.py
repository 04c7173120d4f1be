#!/usr/bin/env python3
"""Many hosts, one run: what starting and streaming from agents costs.

Part 1 (ssh): starts the lab (scripts/hosts-lab.sh: four hosts as network namespaces
running sshd, nfs-ganesha in a fifth) and runs `ioscope run --hosts` on the four hosts
against ganesha with the nfs engine. It reports:
  - the time from starting `ioscope run` to the first I/O on every host (each host's time
    zero, on the coordinator's clock, from the results file);
  - the spread of those start instants across hosts (target: <= 1 ms);
  - each host's estimated clock offset and its uncertainty;
  - the agents' CPU (user+system of each `ioscope agent` process over the measured run,
    from /proc) against the series each host streamed per second (target: <= 1% of one
    core per host at 1 s snapshots with 64 series).
Part 2 (64 agents): starts 64 `ioscope agent --listen 127.0.0.1:PORT` processes on this
machine and one coordinator with the null engine, and reports the coordinator's CPU and
the delay from the end of each second to its storage (target <= 1 s at 64 agents).

Prints markdown and writes bench/results/DATE-HOST-hosts.md. Needs root (namespaces).
Python 3 standard library only.
"""

import argparse
import datetime
import json
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAB = os.path.join(ROOT, "scripts", "hosts-lab.sh")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def agent_pids():
    """pid of every `ioscope agent` process, by namespace (ip netns pids)."""
    out = {}
    for n in range(1, 5):
        ns = f"ioscope-h{n}"
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        for p in pids:
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
            except OSError:
                continue
            if b"agent" in cmd and any(c.endswith(b"ioscope") or b"ioscope-" in c for c in cmd):
                out[ns] = int(p)
    return out


def agents_of(db):
    c = sqlite3.connect(db)
    rows = c.execute("SELECT name, config_json FROM host ORDER BY name").fetchall()
    series = dict(c.execute("SELECT host, count(*) FROM series GROUP BY host").fetchall())
    seconds = dict(c.execute("SELECT host, count(*) FROM tick GROUP BY host").fetchall())
    c.close()
    return [(n, json.loads(cfg).get("agent", {}), series.get(n, 0), seconds.get(n, 0)) for n, cfg in rows]


def run_measuring_agents(ioscope, cmd, env, duration):
    """Runs `cmd` (an ioscope run over the lab's hosts); returns (began_ns, agent CPU % of a
    core by namespace over the middle of the run)."""
    began = time.time_ns()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pids = {}
    for _ in range(300):
        time.sleep(0.1)
        pids = agent_pids()
        if len(pids) == 4:
            break
    time.sleep(4)  # past preparation and the start
    cpu = {}
    try:
        cpu0 = {ns: cpu_s(pid) for ns, pid in pids.items()}
        t0 = time.monotonic()
        time.sleep(max(duration - 8, 1))
        window = time.monotonic() - t0
        cpu = {ns: (cpu_s(pid) - cpu0[ns]) / window * 100 for ns, pid in pids.items()}
    except OSError:
        pass
    _, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"ioscope run failed ({p.returncode}): {err}")
    return began, cpu


def ssh_part(ioscope, args, lines):
    out = subprocess.run([LAB, "start"], capture_output=True, text=True, check=True).stdout
    kv = dict(l.split("=", 1) for l in out.splitlines() if "=" in l)
    hosts = kv["hosts"].split(",")
    env = dict(os.environ, IOSCOPE_SSH_COMMAND=f"ssh -F {kv['ssh_config']}")
    hosts_arg = ",".join("root@" + h for h in hosts)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # Round 0 copies the binary to the hosts; the measured rounds reuse the copy.
            for rnd in range(args.rounds + 1):
                db = os.path.join(tmp, f"r{rnd}.db")
                cmd = [ioscope, "run", "--engine", "nfs", "--target", kv["nfs"] + "/bench", "--hosts", hosts_arg,
                       "--rw", "randread", "--bs", "4k", "--size", "16m", "--files", "16", "--threads", "2",
                       "--duration", f"{args.duration}s", "--out", db, "--quiet"]
                began, cpu = run_measuring_agents(ioscope, cmd, env, args.duration)
                if rnd == 0:
                    continue
                agents = agents_of(db)
                starts = [a["first_io_unix_ns"] for _, a, _, _ in agents]
                planned = agents[0][1]["planned_start_unix_ns"]
                lines.append(f"\n### ssh round {rnd}: 4 hosts, nfs engine against ganesha (2 threads, 16 files each), "
                             f"{args.duration} s\n")
                lines.append(f"- from `ioscope run` to the first I/O: {(min(starts) - began) / 1e6:.0f} ms (first host) "
                             f"to {(max(starts) - began) / 1e6:.0f} ms (last)")
                lines.append(f"- spread of the first I/Os (measured on each host, on the coordinator's clock through "
                             f"the offsets): {(max(starts) - min(starts)) / 1e3:.0f} µs; the latest "
                             f"{(max(starts) - planned) / 1e3:.0f} µs after the planned instant")
                lines.append("\n| host | clock offset | uncertainty | first I/O − planned | series | agent CPU incl. load |")
                lines.append("|---|---|---|---|---|---|")
                for (name, a, series, secs), ns in zip(agents, sorted(cpu)):
                    lines.append(f"| {name} | {a['clock_offset_ns'] / 1e3:+.1f} µs | ±{a['clock_uncertainty_ns'] / 1e3:.1f} µs "
                                 f"| {(a['first_io_unix_ns'] - planned) / 1e3:+.0f} µs | {series} | {cpu.get(ns, float('nan')):.1f}% |")
            # The cost of streaming: runs at 100 IOPS per host, so that the agent's own load is
            # next to nothing, with few series (null engine: per worker only) and with many
            # (posix, 32 files, each broken down). The CPU includes the load and the collector.
            lines.append("\n### streaming: agent CPU at 100 IOPS per host, 1 s snapshots (load and collector included)\n")
            lines.append("| run | series per host | h1 | h2 | h3 | h4 |")
            lines.append("|---|---|---|---|---|---|")
            for label, extra in [
                ("null engine, 1 file", ["--engine", "null"]),
                ("posix, 32 files", ["--dir", os.path.join(tmp, "stream"), "--size", "32m", "--files", "32",
                                     "--set", "breakdown_top=32"]),
            ]:
                db = os.path.join(tmp, f"stream-{len(extra)}.db")
                cmd = [ioscope, "run", "--hosts", hosts_arg, *extra, "--threads", "2", "--rw", "randrw",
                       "--rate-iops", "400", "--duration", f"{args.duration}s", "--out", db, "--quiet"]
                _, cpu = run_measuring_agents(ioscope, cmd, env, args.duration)
                series = agents_of(db)[0][2]
                lines.append(f"| {label} | {series} | " + " | ".join(f"{cpu[ns]:.2f}%" for ns in sorted(cpu)) + " |")
    finally:
        subprocess.run([LAB, "stop"], capture_output=True)


def many_part(ioscope, args, lines):
    n = args.agents
    with tempfile.TemporaryDirectory() as tmp:
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write("bench-token-" + os.urandom(16).hex() + "\n")
        os.chmod(token, 0o600)
        agents = []
        try:
            for i in range(n):
                root = os.path.join(tmp, f"a{i}")
                os.mkdir(root)
                port = 17400 + i
                agents.append(subprocess.Popen([ioscope, "agent", "--listen", f"127.0.0.1:{port}", "--token-file", token,
                                                "--root", root], stderr=subprocess.DEVNULL))
            time.sleep(2)
            hosts = ",".join(f"agent://127.0.0.1:{17400 + i}" for i in range(n))
            db = os.path.join(tmp, "many.db")
            cmd = [ioscope, "run", "--engine", "null", "--hosts", hosts, "--token-file", token, "--threads", "1",
                   "--rate-iops", str(1000 * n), "--duration", f"{args.duration}s", "--out", db, "--quiet"]
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1)
            c0, t0 = cpu_s(p.pid), time.monotonic()
            while p.poll() is None:
                try:
                    c1, t1 = cpu_s(p.pid), time.monotonic()
                except OSError:
                    break
                time.sleep(0.2)
            _, err = p.communicate()
            if p.returncode != 0:
                sys.exit(f"ioscope run with {n} agents failed ({p.returncode}): {err}")
            delays = [a.get("store_delay_ns", {}) for _, a, _, _ in agents_of(db)]
            worst = max(d.get("max", 0) for d in delays) / 1e6
            mean = sum(d.get("mean", 0) for d in delays) / max(len(delays), 1) / 1e6
            lines.append(f"\n### {n} agents on this machine (null engine, 1 thread each, {args.duration} s)\n")
            lines.append(f"- coordinator CPU: {(c1 - c0) / (t1 - t0) * 100:.1f}% of one core")
            lines.append(f"- delay from a second's end to its storage: mean {mean:.0f} ms, worst {worst:.0f} ms (target ≤ 1000 ms)")
        finally:
            for a in agents:
                a.terminate()
            for a in agents:
                a.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ioscope", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.expanduser(
        "~/.cache/ioscope/target")), "release", "ioscope"))
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--agents", type=int, default=64)
    ap.add_argument("--skip-ssh", action="store_true")
    args = ap.parse_args()
    lines = [f"# Many hosts: start, clocks and streaming ({datetime.date.today()}, {platform.node()}, "
             f"{os.cpu_count()} CPUs)\n", f"`{' '.join(sys.argv)}`"]
    if not args.skip_ssh:
        ssh_part(args.ioscope, args, lines)
    many_part(args.ioscope, args, lines)
    text = "\n".join(lines) + "\n"
    print(text)
    out = os.path.join(ROOT, "bench", "results", f"{datetime.date.today()}-vm-hosts.md")
    with open(out, "w") as f:
        f.write(text)
    print(f"written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
