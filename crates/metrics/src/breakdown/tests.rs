use super::*;
use crate::Histogram;

fn rec(done_ns: u64, file: u32, op: Op, latency_ns: u64) -> IoRecord {
    IoRecord {
        done_ns,
        file,
        op: op as u8,
        ok: true,
        latency_ns,
        service_ns: latency_ns / 2,
        place: op.has_size().then_some((4096, file as u64 * 4096)),
        slot: 0,
        seq: 0,
    }
}

fn name(f: u32) -> String {
    format!("f{f}")
}

/// Merges the distributions of every row of `op`.
fn whole(rows: &[FileDists], op: Op) -> OpInterval {
    let mut m = OpInterval::empty();
    rows.iter().filter(|r| r.op == op).for_each(|r| m.merge(&r.data));
    m
}

#[test]
fn a_record_survives_the_ring_as_it_was_pushed() {
    let ring = FileRing::new(4);
    let r = IoRecord {
        done_ns: 7,
        file: 12,
        op: 3,
        ok: false,
        latency_ns: u64::MAX,
        service_ns: 1,
        place: Some((9, 1 << 40)),
        slot: 1,
        seq: u64::MAX - 1,
    };
    ring.push(&r);
    ring.push(&IoRecord { place: None, ok: true, ..r });
    let mut got = Vec::new();
    ring.drain(|x| got.push(x));
    assert_eq!(got, [r, IoRecord { place: None, ok: true, ..r }]);
}

#[test]
fn latency_breaks_down_by_file_and_the_files_add_up_to_the_whole() {
    // 3 seconds, 40 files, a skewed load: file f gets more I/O the lower its number.
    let rings: Vec<FileRing> = (0..2).map(|_| FileRing::new(1 << 14)).collect();
    let mut b = FileBreakdown::new(4, false, Op::ALL.len(), rings.len());
    for second in 0..3u32 {
        let mut expect = [Histogram::new(), Histogram::new()];
        let mut sizes = Histogram::new();
        let mut n = 0u64;
        for f in 0..40u32 {
            for k in 0..(40 - f as u64) * (second as u64 + 1) {
                let op = if k % 3 == 0 { Op::Fsync } else { Op::Write };
                let r = rec(second as u64 * SECOND_NS + n, f, op, 1000 + 37 * k + f as u64);
                rings[(n % 2) as usize].push(&r);
                expect[(op == Op::Write) as usize].record(r.latency_ns);
                if op == Op::Write {
                    sizes.record(4096);
                }
                n += 1;
            }
            if f % 10 == 9 {
                b.drain(&rings, &[], second, (second as u64 + 1) * SECOND_NS, false);
            }
        }
        b.drain(&rings, &[], second, (second as u64 + 1) * SECOND_NS, true);
        let got = b.close(name);
        assert_eq!(got.not_broken_down, 0);
        for (op, want) in [(Op::Fsync, &expect[0]), (Op::Write, &expect[1])] {
            let rows: Vec<&FileDists> = got.dists.iter().filter(|r| r.op == op).collect();
            // The 4 busiest files by name, then "(other)".
            let names: Vec<&str> = rows.iter().map(|r| r.file.as_str()).collect();
            assert_eq!(names, ["f0", "f1", "f2", "f3", OTHER], "second {second} {op:?}");
            let all = whole(&got.dists, op);
            assert_eq!(&all.latency_ns, want, "second {second} {op:?}: the parts add up to the whole");
            assert_eq!(all.service_ns.count(), want.count());
        }
        // Sync operations have no size or offset; writes have both.
        assert!(whole(&got.dists, Op::Fsync).size_bytes.is_empty());
        assert!(whole(&got.dists, Op::Fsync).offset_bytes.is_empty());
        assert_eq!(whole(&got.dists, Op::Write).size_bytes, sizes);
    }
}

#[test]
fn records_completed_after_the_end_of_a_second_belong_to_the_next() {
    let rings = [FileRing::new(16)];
    let mut b = FileBreakdown::new(2, true, Op::ALL.len(), 1);
    rings[0].push(&rec(10, 0, Op::Read, 5));
    rings[0].push(&rec(SECOND_NS + 1, 1, Op::Read, 6));
    b.drain(&rings, &[], 0, SECOND_NS, true);
    let first = b.close(name);
    assert_eq!(first.dists.iter().map(|d| (d.file.as_str(), d.data.counts.ops)).collect::<Vec<_>>(), [("f0", 1)]);
    assert_eq!(first.counts.iter().map(|c| (c.file.as_str(), c.counts.ops)).collect::<Vec<_>>(), [("f0", 1)]);
    b.drain(&rings, &[], 1, 2 * SECOND_NS, true);
    let second = b.close(name);
    assert_eq!(second.dists.iter().map(|d| (d.file.as_str(), d.data.counts.ops)).collect::<Vec<_>>(), [("f1", 1)]);
}

#[test]
fn a_file_tree_keeps_counters_of_its_busiest_files_and_the_rest_as_other() {
    let rings = [FileRing::new(1024)];
    let mut b = FileBreakdown::new(2, true, Op::ALL.len(), 1);
    for (f, n) in [(5u32, 3), (6, 10), (7, 1), (8, 2)] {
        for _ in 0..n {
            rings[0].push(&rec(1, f, Op::Read, 100));
        }
    }
    rings[0].push(&IoRecord { ok: false, ..rec(1, 7, Op::Read, 0) });
    rings[0].push(&rec(1, NO_FILE, Op::Mkdir, 100)); // a directory: no file
    b.drain(&rings, &[], 0, SECOND_NS, true);
    let got = b.close(name);
    let counts: Vec<(&str, u64, u64, u64)> =
        got.counts.iter().map(|c| (c.file.as_str(), c.counts.ops, c.counts.bytes, c.counts.errors)).collect();
    assert_eq!(counts, [("f6", 10, 40960, 0), ("f5", 3, 12288, 0), (OTHER, 3, 12288, 1)]);
    assert!(got.dists.iter().all(|d| d.op == Op::Read));
}

#[test]
fn a_files_creates_have_a_size_and_no_offset_as_in_the_whole() {
    // A file tree's create writes the file (a size, the bytes it wrote) at no offset.
    let rings = [FileRing::new(1024)];
    let mut b = FileBreakdown::new(4, true, Op::ALL.len(), 1);
    rings[0].push(&IoRecord { place: Some((8192, 0)), ..rec(1, 3, Op::Create, 100) });
    rings[0].push(&rec(1, 3, Op::Read, 100));
    b.drain(&rings, &[], 0, SECOND_NS, true);
    let got = b.close(name);
    let create = got.dists.iter().find(|d| d.op == Op::Create && d.file == "f3").expect("create of f3");
    assert_eq!((create.data.size_bytes.count(), create.data.size_bytes.sum()), (1, 8192));
    assert!(create.data.offset_bytes.is_empty(), "a create has no offset");
    assert_eq!(create.data.counts.bytes, 8192);
    let read = got.dists.iter().find(|d| d.op == Op::Read).expect("read");
    assert_eq!((read.data.size_bytes.count(), read.data.offset_bytes.count()), (1, 1));
}

#[test]
fn a_full_ring_is_counted_and_its_second_has_no_per_file_distributions() {
    let rings = [FileRing::new(4)];
    let mut b = FileBreakdown::new(8, true, Op::ALL.len(), 1);
    rings[0].set_start(0);
    for k in 0..10 {
        rings[0].push(&rec(k, 0, Op::Write, 100));
    }
    assert_eq!(rings[0].dropped(), [6, 0]);
    // Drops are counted by the parity of their second.
    let other = FileRing::new(2);
    other.set_start(100);
    for done in [100, 101, 102, 100 + SECOND_NS, 100 + SECOND_NS + 5, 100 + 2 * SECOND_NS, 99] {
        other.push(&rec(done, 0, Op::Read, 1));
    }
    assert_eq!(other.dropped(), [3, 2], "seconds 0, 0 | 1, 1 | 2 and 0 (before the start)");
    b.drain(&rings, &[], 0, SECOND_NS, true);
    let got = b.close(name);
    assert_eq!(got.not_broken_down, 6);
    assert!(got.dists.is_empty() && got.counts.is_empty(), "{got:?}");
    // The next second is whole again.
    rings[0].push(&rec(SECOND_NS + 5, 0, Op::Write, 100));
    b.drain(&rings, &[], 1, 2 * SECOND_NS, true);
    let next = b.close(name);
    assert_eq!((next.not_broken_down, next.dists.len()), (0, 1));
}

#[test]
fn the_busiest_workers_keep_their_distributions_and_the_rest_is_other() {
    let mut top = WorkerTop::new(2, Op::ALL.len());
    let mut whole = OpInterval::empty();
    for (w, n) in [(0u32, 5u64), (1, 50), (2, 7), (3, 0), (4, 20)] {
        let mut d = OpInterval::empty();
        for k in 0..n {
            d.latency_ns.record(1000 + k * (w as u64 + 1));
        }
        d.counts.ops = n;
        whole.merge(&d);
        top.offer(w, Op::Read as usize, d);
    }
    let rows = top.finish();
    let keys: Vec<(Option<u32>, u64)> = rows.iter().map(|r| (r.worker, r.data.counts.ops)).collect();
    assert_eq!(keys, [(Some(1), 50), (Some(4), 20), (None, 12)]);
    let mut merged = Histogram::new();
    rows.iter().for_each(|r| merged.merge(&r.data.latency_ns));
    assert_eq!(merged, whole.latency_ns, "the workers add up to the whole");
    assert!(top.finish().is_empty(), "each second starts over");
    // A worker read twice in one tick (after a gap) is one row.
    let mut again = WorkerTop::new(2, Op::ALL.len());
    again.offer(7, Op::Read as usize, whole.clone());
    again.offer(7, Op::Read as usize, whole.clone());
    let rows = again.finish();
    assert_eq!((rows.len(), rows[0].data.counts.ops), (1, 2 * whole.counts.ops));
    let mut off = WorkerTop::new(0, Op::ALL.len());
    off.offer(0, Op::Read as usize, whole);
    assert!(off.finish().is_empty(), "breakdown_top = 0: no per-worker rows");
}

#[test]
fn a_files_record_counts_in_the_second_whose_read_of_its_slot_has_the_io() {
    use crate::{WorkerReader, WorkerRecorder};
    let kinds = Op::ALL.len();
    let w = WorkerRecorder::new(kinds);
    w.start(0, 10 * SECOND_NS);
    let mut reader = WorkerReader::new(kinds);
    let rings = [FileRing::new(64)];
    let mut b = FileBreakdown::new(4, true, kinds, 1);
    // One read of `file` done at `done`: its statistics and its ring record, through one slot.
    let io = |done: u64, file: u32| {
        let slot = w.at(done);
        slot.op(Op::Read as usize).record(1, 1, 4096, 0);
        rings[0].push(&IoRecord { slot: slot.slot_index(), seq: slot.seq(), ..rec(done, file, Op::Read, 1) });
    };
    let files = |s: &FileSecond| s.counts.iter().map(|c| (c.file.clone(), c.counts.ops)).collect::<Vec<_>>();
    let f = |n: &str| vec![(n.to_string(), 1)];
    io(10, 0);
    b.drain(&rings, &[reader.read_through()], 0, u64::MAX, false);
    // Second 0 is read; then the worker records an I/O it stamped in second 0 (it had lost
    // its CPU): the slot's next read has it, second 2. Then one of second 1.
    let s0 = reader.read_slot(&w, 0, || panic!("nothing in flight")).0;
    io(SECOND_NS - 1, 2);
    io(SECOND_NS + 10, 1);
    b.drain(&rings, &[reader.read_through()], 0, u64::MAX, true);
    assert_eq!((s0[Op::Read as usize].counts.ops, files(&b.close(name))), (1, f("f0")), "second 0");
    b.drain(&rings, &[reader.read_through()], 1, u64::MAX, false);
    let s1 = reader.read_slot(&w, 1, || panic!("nothing in flight")).0;
    b.drain(&rings, &[reader.read_through()], 1, u64::MAX, true);
    assert_eq!((s1[Op::Read as usize].counts.ops, files(&b.close(name))), (1, f("f1")), "second 1");
    let s2 = reader.read_slot(&w, 0, || panic!("nothing in flight")).0;
    b.drain(&rings, &[reader.read_through()], 2, u64::MAX, true);
    assert_eq!((s2[Op::Read as usize].counts.ops, files(&b.close(name))), (1, f("f2")), "second 2: the straggler");
}
