"""CPU time of a benchmark's two sides, for bench/nfs.py, bench/s3.py and bench/smb.py:
the client's (user+system of every child process the benchmark ran and waited for, all
their threads, from getrusage) and the server's (from /proc/PID/stat), over one command.

Python 3 standard library only.
"""

import os
import resource
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid):
    """The fields of /proc/PID/stat after the process name (fields[0] is the state)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def process_cpu_s(pid_file):
    """User+system seconds of the process whose pid is in pid_file."""
    with open(pid_file) as f:
        pid = f.read().strip()
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / TICK


def group_cpu_s(pid_file):
    """User+system seconds of the process group led by the pid in pid_file: each live
    member's own time plus that of the children it reaped (a server process that ends with
    its connection then counts in its parent's cutime/cstime)."""
    with open(pid_file) as f:
        pgid = f.read().strip()
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        if fields[2] == pgid:
            total += sum(int(x) for x in fields[11:15])
    return total / TICK


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measured(cmd, server_cpu_s, env=None):
    """Runs cmd; returns (stdout, wall s, client CPU s, server CPU s)."""
    c0, s0, t0 = children_cpu_s(), server_cpu_s(), time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    t1, c1, s1 = time.monotonic(), children_cpu_s(), server_cpu_s()
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise subprocess.CalledProcessError(done.returncode, cmd, done.stdout, done.stderr)
    return done.stdout, t1 - t0, c1 - c0, s1 - s0
