//! What an NFS server sends back, as property tests (docs/robustness.md): every reply
//! decoder (`proto`, the RPC header in `rpc`, record marking in `pipe`) given valid replies
//! of every procedure the engine decodes, the same replies mutated, and arbitrary bytes.
//! A valid reply reads back as written; anything else decodes to a value within the
//! reply's own bounds or is refused with an error that says where and what; nothing panics.

use crate::pipe::{CallError, Pipe};
use crate::proto::{self, Attr, Fh, FsInfo};
use crate::rpc::{parse_reply, AuthSys};
use crate::xdr::{Encoder, XdrError};
use ioscope_engine::Op;
use ioscope_props::proptest::prelude::*;
use ioscope_props::proptest::sample::select;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

/// A WRITE's results: (pre-op size/mtime/ctime, post-op attributes, count, committed,
/// verifier).
type WriteOk = (Option<[u64; 3]>, Option<Attr>, u32, u32, [u8; 8]);

/// One procedure's reply as ioscope reads it (the fields it keeps), or a failing status.
#[derive(Clone, Debug)]
enum Reply {
    Getattr(Result<Attr, u32>),
    Lookup(Result<(Fh, Option<Attr>), u32>),
    /// (post-op attributes, count, eof, data)
    Read(Result<(Option<Attr>, u32, bool, Vec<u8>), u32>),
    Write(Result<WriteOk, u32>),
    Create(Result<Option<Fh>, u32>),
    /// REMOVE, RMDIR, RENAME, SETATTR, COMMIT.
    Status(u32),
    Fsinfo(Result<(Option<Attr>, FsInfo), u32>),
    Readdirplus(Result<(Vec<proto::DirEntry>, [u8; 8], bool), u32>),
    Mnt(Result<Fh, u32>),
    Export(Vec<(String, Vec<String>)>),
    Getport(u32),
}

fn attr() -> impl Strategy<Value = Attr> {
    (0u32..8, any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(kind, mode, size, fileid)| Attr {
        kind,
        mode,
        size,
        fileid,
    })
}

fn fh() -> impl Strategy<Value = Fh> {
    prop::collection::vec(any::<u8>(), 0..=64).prop_map(Fh)
}

/// A failing status: the ones servers send, and any other number.
fn failing() -> impl Strategy<Value = u32> {
    prop_oneof![select(vec![1u32, 2, 5, 13, 17, 28, 30, 70, 10004, 10008]), 1u32..]
}

fn or_fail<T: std::fmt::Debug>(ok: impl Strategy<Value = T>) -> impl Strategy<Value = Result<T, u32>> {
    prop_oneof![4 => ok.prop_map(Ok), 1 => failing().prop_map(Err)]
}

fn reply() -> impl Strategy<Value = Reply> {
    let entry = ("[a-z0-9._-]{0,20}", any::<u64>(), prop::option::of(fh()), prop::option::of(attr()))
        .prop_map(|(name, cookie, fh, attr)| proto::DirEntry { name, cookie, fh, attr });
    let fsinfo = (any::<[u32; 4]>(), any::<u64>()).prop_map(|([rtmax, rtpref, wtmax, wtpref], maxfilesize)| FsInfo {
        rtmax,
        rtpref,
        wtmax,
        wtpref,
        maxfilesize,
    });
    prop_oneof![
        or_fail(attr()).prop_map(Reply::Getattr),
        or_fail((fh(), prop::option::of(attr()))).prop_map(Reply::Lookup),
        or_fail((prop::option::of(attr()), any::<u32>(), any::<bool>(), prop::collection::vec(any::<u8>(), 0..64)))
            .prop_map(Reply::Read),
        or_fail((
            prop::option::of(any::<[u64; 3]>()),
            prop::option::of(attr()),
            any::<u32>(),
            0u32..3,
            any::<[u8; 8]>()
        ))
        .prop_map(Reply::Write),
        or_fail(prop::option::of(fh())).prop_map(Reply::Create),
        prop_oneof![Just(0u32), failing()].prop_map(Reply::Status),
        or_fail((prop::option::of(attr()), fsinfo)).prop_map(Reply::Fsinfo),
        or_fail((prop::collection::vec(entry, 0..4), any::<[u8; 8]>(), any::<bool>())).prop_map(Reply::Readdirplus),
        or_fail(fh()).prop_map(Reply::Mnt),
        prop::collection::vec(("/[a-z/]{0,30}", prop::collection::vec("[a-z0-9.*]{0,10}", 0..3)), 0..4)
            .prop_map(Reply::Export),
        any::<u32>().prop_map(Reply::Getport),
    ]
}

fn put_attr(e: &mut Encoder, a: &Attr) {
    e.u32(a.kind).u32(a.mode).u32(1).u32(0).u32(0).u64(a.size).u64(a.size).u64(0).u64(9).u64(a.fileid);
    e.u64(1).u64(2).u64(3);
}

fn put_post_op(e: &mut Encoder, a: &Option<Attr>) {
    e.bool(a.is_some());
    if let Some(a) = a {
        put_attr(e, a);
    }
}

fn put_fh_opt(e: &mut Encoder, f: &Option<Fh>) {
    e.bool(f.is_some());
    if let Some(f) = f {
        e.opaque(&f.0);
    }
}

/// The status word, then `ok`'s fields when the status is NFS3_OK.
fn put<T>(e: &mut Encoder, r: &Result<T, u32>, ok: impl FnOnce(&mut Encoder, &T)) {
    match r {
        Ok(v) => {
            e.u32(0);
            ok(e, v);
        }
        Err(s) => {
            // A failing reply carries the same attributes as a good one; ioscope reads only the status.
            e.u32(*s).bool(false);
        }
    }
}

/// The reply's results as a server encodes them (RFC 1813, RFC 1833).
fn encode(r: &Reply) -> Vec<u8> {
    let mut e = Encoder::default();
    match r {
        Reply::Getattr(r) => put(&mut e, r, put_attr),
        Reply::Lookup(r) => put(&mut e, r, |e, (f, a)| {
            e.opaque(&f.0);
            put_post_op(e, a);
            e.bool(false); // the directory's attributes
        }),
        Reply::Read(r) => put(&mut e, r, |e, (a, count, eof, data)| {
            put_post_op(e, a);
            e.u32(*count).bool(*eof).opaque(data);
        }),
        Reply::Write(r) => put(&mut e, r, |e, (pre, post, count, committed, verf)| {
            e.bool(pre.is_some());
            if let Some([size, mtime, ctime]) = pre {
                e.u64(*size).u64(*mtime).u64(*ctime);
            }
            put_post_op(e, post);
            e.u32(*count).u32(*committed).fixed(verf);
        }),
        Reply::Create(r) => put(&mut e, r, |e, f| {
            put_fh_opt(e, f);
            e.bool(false).bool(false).bool(false); // obj attributes, dir wcc
        }),
        Reply::Status(s) => {
            e.u32(*s).bool(false).bool(false);
        }
        Reply::Fsinfo(r) => put(&mut e, r, |e, (a, i)| {
            put_post_op(e, a);
            e.u32(i.rtmax).u32(i.rtpref).u32(4096).u32(i.wtmax).u32(i.wtpref).u32(4096).u32(8192);
            e.u64(i.maxfilesize).u32(0).u32(1).u32(0x1b);
        }),
        Reply::Readdirplus(r) => put(&mut e, r, |e, (entries, verf, eof)| {
            e.bool(false).fixed(verf);
            for (i, x) in entries.iter().enumerate() {
                e.bool(true).u64(i as u64).string(&x.name).u64(x.cookie);
                put_post_op(e, &x.attr);
                put_fh_opt(e, &x.fh);
            }
            e.bool(false).bool(*eof);
        }),
        Reply::Mnt(r) => put(&mut e, r, |e, f| {
            e.opaque(&f.0).u32(1).u32(1); // auth flavors: AUTH_SYS
        }),
        Reply::Export(list) => {
            for (dir, groups) in list {
                e.bool(true).string(dir);
                for g in groups {
                    e.bool(true).string(g);
                }
                e.bool(false);
            }
            e.bool(false);
        }
        Reply::Getport(p) => {
            e.u32(*p);
        }
    }
    e.buf
}

/// What the decoder of `r`'s procedure makes of `body`: the value as ioscope keeps it, or
/// the decoding error.
fn decode(r: &Reply, body: &[u8]) -> Result<String, XdrError> {
    Ok(match r {
        Reply::Getattr(_) => format!("{:?}", proto::getattr_res(body)?),
        Reply::Lookup(_) => format!("{:?}", proto::lookup_res(body)?),
        Reply::Read(_) => {
            let got = proto::read_res(body)?;
            if let Ok((count, _)) = got {
                // The count is within the data actually there.
                let data_len = body.len().saturating_sub(8);
                assert!(count as usize <= data_len, "READ count {count} beyond the reply's {} bytes", body.len());
            }
            if let Some((off, len)) = proto::read_res_split(body) {
                // Where the data would land from: within the bytes seen, and the head alone
                // (as the pipe hands it over once the data landed) counts within the data.
                assert!(off <= body.len(), "READ data at {off} beyond the reply's {} bytes", body.len());
                if let Ok(Ok((count, _))) = proto::read_res_landed(&body[..off], len) {
                    assert!(count as usize <= len, "READ count {count} beyond the {len} bytes landed");
                }
            }
            format!("{got:?}")
        }
        Reply::Write(_) => format!("{:?}", proto::write_res(body)?),
        Reply::Create(_) => format!("{:?}", proto::create_res(body)?),
        Reply::Status(_) => format!("{:?}", proto::status_res(body)?),
        Reply::Fsinfo(_) => format!("{:?}", proto::fsinfo_res(body)?),
        Reply::Readdirplus(_) => format!("{:?}", proto::readdirplus_res(body)?),
        Reply::Mnt(_) => format!("{:?}", proto::mnt_res(body)?),
        Reply::Export(_) => format!("{:?}", proto::export_res(body)?),
        Reply::Getport(_) => format!("{:?}", crate::xdr::Decoder::new(body).u32()?),
    })
}

/// What the decoder must give for `r` encoded whole.
fn expected(r: &Reply) -> String {
    let ok_or = |s: &u32| format!("Err({s})");
    match r {
        Reply::Getattr(r) => format!("{:?}", r),
        Reply::Lookup(r) => format!("{:?}", r),
        Reply::Read(r) => match r {
            Ok((_, count, eof, data)) => format!("{:?}", Ok::<_, u32>(((*count).min(data.len() as u32), *eof))),
            Err(s) => ok_or(s),
        },
        Reply::Write(r) => match r {
            Ok((_, _, count, committed, verf)) => format!("{:?}", Ok::<_, u32>((*count, *committed, *verf))),
            Err(s) => ok_or(s),
        },
        Reply::Create(r) => format!("{:?}", r),
        Reply::Status(0) => "Ok(())".into(),
        Reply::Status(s) => ok_or(s),
        Reply::Fsinfo(r) => format!("{:?}", r.as_ref().map(|(_, i)| *i).map_err(|s| *s)),
        Reply::Readdirplus(r) => format!("{:?}", r),
        Reply::Mnt(r) => format!("{:?}", r),
        Reply::Export(list) => format!("{:?}", list.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>()),
        Reply::Getport(p) => format!("{p:?}"),
    }
}

/// A decoding error says where (a byte inside the reply) and what.
fn assert_clear(e: &XdrError, len: usize) {
    assert!(e.at <= len, "error at byte {} of a {len}-byte reply", e.at);
    let shown = e.to_string();
    assert!(shown.starts_with(&format!("malformed XDR at byte {}: ", e.at)) && !e.what.is_empty(), "{shown}");
}

/// One change to a reply's bytes (positions modulo its length).
#[derive(Clone, Debug)]
enum Mutation {
    Flip {
        at: usize,
        mask: u8,
    },
    /// A 4-byte word (lengths, counts, booleans, discriminants) set to `value`.
    Word {
        at: usize,
        value: u32,
    },
    Truncate {
        at: usize,
    },
    Insert {
        at: usize,
        bytes: Vec<u8>,
    },
    Remove {
        at: usize,
        len: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let boundary =
        select(vec![0u32, 1, 2, 3, 4, 8, 63, 64, 65, 255, 256, 400, 401, 0x7fff_ffff, 0x8000_0000, u32::MAX]);
    prop_oneof![
        (any::<usize>(), 1u8..).prop_map(|(at, mask)| Mutation::Flip { at, mask }),
        (any::<usize>(), prop_oneof![boundary, any::<u32>()]).prop_map(|(at, value)| Mutation::Word { at, value }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), prop::collection::vec(any::<u8>(), 1..12))
            .prop_map(|(at, bytes)| Mutation::Insert { at, bytes }),
        (any::<usize>(), 1usize..16).prop_map(|(at, len)| Mutation::Remove { at, len }),
    ]
}

fn mutate(bytes: &mut Vec<u8>, m: &Mutation) {
    let n = bytes.len() + 1;
    match m {
        Mutation::Flip { at, mask } => {
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] ^= mask;
            }
        }
        Mutation::Word { at, value } => {
            let i = (at % n) / 4 * 4;
            if i + 4 <= bytes.len() {
                bytes[i..i + 4].copy_from_slice(&value.to_be_bytes());
            }
        }
        Mutation::Truncate { at } => bytes.truncate(at % n),
        Mutation::Insert { at, bytes: new } => {
            let i = at % n;
            bytes.splice(i..i, new.iter().copied());
        }
        Mutation::Remove { at, len } => {
            let i = at % n;
            let end = (i + len).min(bytes.len());
            bytes.drain(i.min(end)..end);
        }
    }
}

/// An accepted RPC reply record around `body`, with a verifier of `verf` bytes.
fn record(xid: u32, verf: &[u8], body: &[u8]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.u32(xid).u32(1).u32(0).u32(0).opaque(verf).u32(0);
    e.buf.extend_from_slice(body);
    e.buf
}

#[test]
fn every_decoded_procedure_reads_its_valid_replies_back() {
    let strategy = (reply(), any::<u32>(), prop::collection::vec(any::<u8>(), 0..=16));
    ioscope_props::check("nfs: valid replies read back", 3000, strategy, |(r, xid, verf)| {
        let body = encode(&r);
        let got = decode(&r, &body).unwrap_or_else(|e| panic!("a valid reply was refused: {e}"));
        assert_eq!(got, expected(&r));
        let rec = record(xid, &verf, &body);
        assert_eq!(parse_reply(&rec), Ok((xid, &body[..])), "the RPC header is read and the results follow");
        if let Reply::Read(Ok((_, _, _, data))) = &r {
            // The data is found where it begins, and the head alone reads as the whole reply.
            let (off, len) = proto::read_res_split(&body).expect("a READ reply's data is found");
            assert_eq!((len, &body[off..off + len]), (data.len(), &data[..]));
            assert_eq!(format!("{:?}", proto::read_res_landed(&body[..off], len).unwrap()), expected(&r));
        }
    });
}

#[test]
fn mutated_replies_decode_within_bounds_or_are_refused_clearly() {
    let strategy = (reply(), prop::collection::vec(mutation(), 1..4), any::<bool>());
    ioscope_props::check("nfs: mutated replies", 5000, strategy, |(r, mutations, in_record)| {
        let mut bytes = encode(&r);
        if in_record {
            // Mutations may land in the RPC header too.
            bytes = record(7, &[1, 2, 3], &bytes);
        }
        for m in &mutations {
            mutate(&mut bytes, m);
        }
        let body = if in_record {
            match parse_reply(&bytes) {
                Ok((_, body)) => body,
                Err(refused) => {
                    assert!(!refused.why.trim().is_empty(), "refused without a reason");
                    return;
                }
            }
        } else {
            &bytes[..]
        };
        if let Err(e) = decode(&r, body) {
            assert_clear(&e, body.len());
        }
    });
}

#[test]
fn arbitrary_bytes_never_panic_a_reply_decoder() {
    let strategy = (reply(), prop::collection::vec(any::<u8>(), 0..256));
    ioscope_props::check("nfs: arbitrary reply bytes", 5000, strategy, |(r, bytes)| {
        if let Err(e) = decode(&r, &bytes) {
            assert_clear(&e, bytes.len());
        }
        match parse_reply(&bytes) {
            Ok((_, body)) => assert!(body.len() <= bytes.len()),
            Err(refused) => assert!(!refused.why.trim().is_empty()),
        }
        // What the engine counts: never more bytes than the I/O asked for.
        let asked = bytes.len() as u32 / 2;
        for op in [Op::Read, Op::Write, Op::Fsync] {
            assert!(crate::engine::reply_result(op, asked, &bytes) <= i64::from(asked));
        }
    });
}

/// One call's answer on the wire, before the stream is damaged.
#[derive(Clone, Debug)]
struct Answer {
    body: Vec<u8>,
    /// Where the record is cut into fragments (offsets taken modulo its length).
    cuts: Vec<usize>,
}

/// A server that answers `calls` calls: reads them, writes the replies (each with the
/// call's XID) cut into fragments, in reverse order, applies `damage` to the whole stream,
/// sends it and closes the connection.
fn serve(listener: TcpListener, answers: Vec<Answer>, damage: Vec<Mutation>) {
    let Ok((mut s, _)) = listener.accept() else { return };
    let mut xids = Vec::new();
    for _ in 0..answers.len() {
        let mut mark = [0u8; 4];
        if s.read_exact(&mut mark).is_err() {
            return;
        }
        let mut rec = vec![0u8; (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize];
        if s.read_exact(&mut rec).is_err() {
            return;
        }
        xids.push(u32::from_be_bytes(rec[..4].try_into().unwrap()));
    }
    let mut stream = Vec::new();
    for (xid, a) in xids.iter().zip(&answers).rev() {
        let rec = record(*xid, &[], &a.body);
        let mut cuts: Vec<usize> = a.cuts.iter().map(|c| c % (rec.len() + 1)).collect();
        cuts.push(rec.len());
        cuts.sort();
        cuts.dedup();
        let mut from = 0;
        for (i, to) in cuts.iter().enumerate() {
            let last = if i + 1 == cuts.len() { 0x8000_0000 } else { 0 };
            stream.extend_from_slice(&(last | (to - from) as u32).to_be_bytes());
            stream.extend_from_slice(&rec[from..*to]);
            from = *to;
        }
    }
    for m in &damage {
        mutate(&mut stream, m);
    }
    let _ = s.write_all(&stream);
}

#[test]
fn damaged_reply_streams_finish_every_call_once() {
    let answer = (prop::collection::vec(any::<u8>(), 0..64), prop::collection::vec(any::<usize>(), 0..3))
        .prop_map(|(body, cuts)| Answer { body, cuts });
    let strategy = (prop::collection::vec(answer, 1..5), prop::collection::vec(mutation(), 0..3));
    let auth = AuthSys { machine: "fuzz".into(), uid: 0, gid: 0, gids: vec![] };
    ioscope_props::check("nfs: damaged reply streams", 500, strategy, |(answers, damage)| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let intact = damage.is_empty();
        let server = {
            let (answers, damage) = (answers.clone(), damage.clone());
            std::thread::spawn(move || serve(listener, answers, damage))
        };
        // The server closes when done: a call left without its reply fails as lost at
        // once; the timeout is only the backstop.
        let mut pipe = Pipe::connect(addr, 1, auth.clone(), Duration::from_secs(20)).unwrap();
        for tag in 0..answers.len() as u64 {
            pipe.send(100003, 3, 6, &[], tag).unwrap();
        }
        let mut done = Vec::new();
        while pipe.in_flight() > 0 {
            pipe.poll(answers.len(), None, &mut done);
        }
        server.join().unwrap();
        let mut tags: Vec<u64> = done.iter().map(|d| d.tag).collect();
        tags.sort();
        assert_eq!(tags, (0..answers.len() as u64).collect::<Vec<_>>(), "every call finishes once");
        for d in &done {
            match &d.result {
                Ok(body) if intact => assert_eq!(body, &answers[d.tag as usize].body),
                Ok(_) => {}
                Err(e) if intact => panic!("call {} failed on an intact stream: {e}", d.tag),
                Err(e @ (CallError::Timeout(_) | CallError::Lost(_) | CallError::Refused(_))) => {
                    assert!(!e.to_string().trim().is_empty())
                }
            }
        }
    });
}

/// The answer to a READ of about `LARGE` bytes (data of `len` bytes, its count and opaque
/// length as given), for the landing test below.
fn large_read(len: usize, count: u32, opaque_len: u32) -> Vec<u8> {
    let mut e = Encoder::default();
    e.u32(0).bool(false).u32(count).bool(false).u32(opaque_len);
    e.buf.extend((0..len).map(|i| (i % 253) as u8));
    e.buf.resize(e.buf.len() + crate::xdr::pad(len), 0);
    e.buf
}

#[test]
fn damaged_streams_of_large_reads_finish_every_call_once_and_land_only_in_their_buffers() {
    use crate::pipe::Landing;
    const GUARD: usize = 32;
    // Data around the size from which a reply's data lands, a buffer a little smaller or
    // larger, and lengths in the reply that may disagree with the data.
    let answer = (65_500usize..66_000, -4i64..4, select(vec![0u32, 1, 4, 65_536, u32::MAX]), any::<bool>())
        .prop_flat_map(|(len, slack, count, true_len)| {
            let opaque = if true_len { Just(len as u32).boxed() } else { (0u32..70_000).boxed() };
            (Just(len), Just(slack), Just(count), opaque, prop::collection::vec(any::<usize>(), 0..2))
        });
    let strategy = (prop::collection::vec(answer, 1..4), prop::collection::vec(mutation(), 0..2));
    let auth = AuthSys { machine: "fuzz".into(), uid: 0, gid: 0, gids: vec![] };
    ioscope_props::check("nfs: damaged large READ streams", 150, strategy, |(answers, damage)| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let wire: Vec<Answer> = answers
            .iter()
            .map(|(len, _, count, opaque, cuts)| Answer { body: large_read(*len, *count, *opaque), cuts: cuts.clone() })
            .collect();
        let server = {
            let (wire, damage) = (wire.clone(), damage.clone());
            std::thread::spawn(move || serve(listener, wire, damage))
        };
        let caps: Vec<usize> = answers.iter().map(|(len, slack, ..)| (*len as i64 + slack) as usize).collect();
        let mut bufs: Vec<Vec<u8>> = caps.iter().map(|cap| vec![0xEE; cap + GUARD]).collect();
        let mut pipe = Pipe::connect(addr, 1, auth.clone(), Duration::from_secs(20)).unwrap();
        for (tag, (buf, cap)) in bufs.iter_mut().zip(&caps).enumerate() {
            // SAFETY: the buffers outlive the pipe's use of them; read only after every call.
            let landing = unsafe { Landing::new(buf.as_mut_ptr(), *cap, proto::read_res_split) };
            pipe.send_with_landing(100003, 3, 6, tag as u64, |_| {}, landing).unwrap();
        }
        let mut done = Vec::new();
        while pipe.in_flight() > 0 {
            pipe.poll_replies(answers.len(), None, &mut |tag, r| {
                done.push((tag as usize, r.map(|r| (r.body.to_vec(), r.landed))))
            });
        }
        server.join().unwrap();
        let mut tags: Vec<usize> = done.iter().map(|d| d.0).collect();
        tags.sort();
        assert_eq!(tags, (0..answers.len()).collect::<Vec<_>>(), "every call finishes once");
        for (tag, result) in &done {
            let cap = caps[*tag];
            assert!(bufs[*tag][cap..].iter().all(|b| *b == 0xEE), "call {tag}: written past its buffer");
            match result {
                Ok((body, Some(landed))) => {
                    assert!(*landed <= cap, "call {tag}: {landed} bytes landed in a buffer of {cap}");
                    if damage.is_empty() {
                        assert_eq!(&bufs[*tag][..*landed], &wire[*tag].body[20..20 + landed], "call {tag}'s data");
                    }
                    let got = proto::read_res_landed(body, *landed);
                    if let Ok(Ok((count, _))) = got {
                        assert!(count as usize <= *landed);
                    }
                }
                Ok((body, None)) => {
                    if damage.is_empty() {
                        assert_eq!(body, &wire[*tag].body, "call {tag} came whole");
                    }
                }
                Err(e) => assert!(!damage.is_empty(), "call {tag} failed on an intact stream: {e}"),
            }
            // The first reply on the wire (the last call: they come in reverse), intact, in
            // one fragment, its data as long as said and fitting: it landed. (A later one
            // may have come whole with the reply before it, read in the same system call.)
            let (len, _, _, opaque, cuts) = &answers[*tag];
            let first = *tag + 1 == answers.len();
            if first && damage.is_empty() && cuts.is_empty() && *opaque as usize == *len && *len <= cap {
                assert!(matches!(result, Ok((_, Some(n))) if n == len), "call {tag} did not land");
            }
        }
    });
}
