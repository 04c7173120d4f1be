// SPDX-License-Identifier: GPL-2.0
/* File-system system calls of named processes, aggregated in the kernel per second of
 * the run: a latency histogram (entry to exit, ns) per process name and call. Only the
 * processes user space lists in `syscall_tgids` and the calls it marks in `fs_nr` are
 * timed; the time is counted in the second the call returned in. Read by
 * crates/probe/src/bpf.rs. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "hist.bpf.h"

#define MAX_NR 512

/* The calls timed, set before load. */
const volatile u8 fs_nr[MAX_NR] = {};
/* The run's time zero (CLOCK_MONOTONIC ns), written by user space (the only variable
 * of .bss, bpf/loader.rs writes it whole); 0 until then: nothing is counted. */
u64 t0_ns = 0;

/* Must match SyscallKey in bpf.rs; the stats map uses bucket 0. */
struct sys_key {
    u32 second;
    u32 process; /* index of the process name in user space's list */
    u16 nr;
    u16 bucket;
};

struct entry {
    u64 enter_ns;
    u32 process;
    u32 nr;
};

/* Process id (tgid) -> index of its name; kept by user space. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 4096);
    __type(key, u32);
    __type(value, u32);
} syscall_tgids SEC(".maps");

/* The call in progress of each thread (enter_ns 0: none), kept in the thread itself
 * (task storage): the exit program, which runs at the end of every system call of the
 * machine, finds "not ours" in a few loads rather than a hash lookup. */
struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct entry);
} syscall_inflight SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 32768);
    __type(key, struct sys_key);
    __type(value, u64);
} syscall_hist SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
    __uint(max_entries, 1024);
    __type(key, struct sys_key);
    __type(value, struct stat_val);
} syscall_stats SEC(".maps");

DROPPED_MAP(syscall_dropped);

const struct stat_val zeroed_stat = {};

/* A named process entered call `id`: stamp it in the thread. */
static __always_inline int on_enter(long id)
{
    if (id < 0 || id >= MAX_NR || !fs_nr[id])
        return 0;
    u64 pid_tgid = bpf_get_current_pid_tgid();
    u32 tgid = pid_tgid >> 32;
    u32 *process = bpf_map_lookup_elem(&syscall_tgids, &tgid);
    if (!process)
        return 0;
    struct entry *e = bpf_task_storage_get(&syscall_inflight, bpf_get_current_task_btf(), 0,
                                           BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!e) {
        count_dropped(&syscall_dropped);
        return 0;
    }
    e->process = *process;
    e->nr = (u32)id;
    e->enter_ns = bpf_ktime_get_ns();
    return 0;
}

/* A call returned: count it if its entry was stamped. */
static __always_inline int on_exit(void)
{
    struct entry *e = bpf_task_storage_get(&syscall_inflight, bpf_get_current_task_btf(), 0, 0);
    if (!e || e->enter_ns == 0)
        return 0;
    u64 now = bpf_ktime_get_ns();
    struct entry en = *e;
    e->enter_ns = 0;
    s64 second = run_second(now, t0_ns);
    if (second < 0 || second > 0xffffffffLL)
        return 0;
    u64 latency = now > en.enter_ns ? now - en.enter_ns : 0;
    struct sys_key key = { .second = (u32)second, .process = en.process, .nr = (u16)en.nr };
    struct stat_val *stats = stat_entry(&syscall_stats, &key, &zeroed_stat);
    if (stats)
        stat_add(stats, latency);
    key.bucket = bucket_index(latency);
    if (!hist_add(&syscall_hist, &key) || !stats)
        count_dropped(&syscall_dropped);
    return 0;
}

/* Attached to every system call of the machine (when tracefs cannot name the calls). */
SEC("tp_btf/sys_enter")
int BPF_PROG(syscall_enter, struct pt_regs *regs, long id)
{
    return on_enter(id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(syscall_exit, struct pt_regs *regs, long ret)
{
    return on_exit();
}

/* Attached by user space to syscalls:sys_enter_NAME / sys_exit_NAME of each timed call
 * only: the machine's other system calls run no program at all. */
SEC("tracepoint")
int syscall_enter_tp(struct syscall_trace_enter *ctx)
{
    return on_enter(ctx->nr);
}

SEC("tracepoint")
int syscall_exit_tp(struct syscall_trace_exit *ctx)
{
    return on_exit();
}

char LICENSE[] SEC("license") = "GPL";
