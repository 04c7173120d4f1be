//! What an NFSv4.1 server sends back, as property tests (docs/robustness.md): every
//! COMPOUND result decoder given valid replies, the same replies mutated, and arbitrary
//! bytes. A valid reply reads back as written; anything else decodes within the reply's
//! own bounds or is refused with an error; nothing panics, and the engine never counts
//! more bytes than an I/O asked for.

use super::engine::slot_reply;
use super::proto::{op, read_res_split, Reply};
use crate::xdr::Encoder;
use ioscope_engine::Op;
use ioscope_props::proptest::prelude::*;

/// A compound reply: SEQUENCE, PUTFH and one result of `opnum` whose body is `body`.
fn compound(opnum: u32, status: u32, body: &[u8]) -> Vec<u8> {
    let mut e = Encoder::default();
    e.u32(status).string("").u32(3);
    e.u32(op::SEQUENCE).u32(0).fixed(&[3; 16]).u32(1).u32(0).u32(7).u32(7).u32(0);
    e.u32(op::PUTFH).u32(0);
    e.u32(opnum).u32(status);
    e.buf.extend_from_slice(body);
    e.buf
}

/// Every decoder ioscope has, run on `body` after a SEQUENCE and a PUTFH.
fn decode_all(body: &[u8]) {
    type Dec = fn(&mut Reply) -> bool;
    let decoders: [Dec; 12] = [
        |r| r.read().is_ok(),
        |r| r.write().is_ok(),
        |r| r.commit().is_ok(),
        |r| r.getattr().is_ok(),
        |r| r.getfh().is_ok(),
        |r| r.open().is_ok(),
        |r| r.close().is_ok(),
        |r| r.create().is_ok(),
        |r| r.setattr().is_ok(),
        |r| r.readdir().is_ok(),
        |r| r.exchange_id().is_ok(),
        |r| r.create_session().is_ok(),
    ];
    for d in decoders {
        if let Ok(mut r) = Reply::parse(body) {
            let _ = r.sequence();
            let _ = r.plain(op::PUTFH, 0);
            d(&mut r);
        }
    }
}

/// A valid body of each result the engine decodes: (operation, body).
fn valid() -> impl Strategy<Value = (u32, Vec<u8>)> {
    prop_oneof![
        (any::<bool>(), prop::collection::vec(any::<u8>(), 0..5000)).prop_map(|(eof, data)| {
            let mut e = Encoder::default();
            e.bool(eof).opaque(&data);
            (op::READ, e.buf)
        }),
        (0u32..70000, 0u32..3, any::<[u8; 8]>()).prop_map(|(n, how, v)| {
            let mut e = Encoder::default();
            e.u32(n).u32(how).fixed(&v);
            (op::WRITE, e.buf)
        }),
        any::<[u8; 8]>().prop_map(|v| {
            let mut e = Encoder::default();
            e.fixed(&v);
            (op::COMMIT, e.buf)
        }),
        (any::<u32>(), any::<u64>()).prop_map(|(kind, size)| {
            let mut e = Encoder::default();
            let mut v = Encoder::default();
            v.u32(kind).u64(size);
            e.u32(1).u32(1 << 1 | 1 << 4).opaque(&v.buf);
            (op::GETATTR, e.buf)
        }),
        (prop::collection::vec((any::<u64>(), "[a-z]{1,12}"), 0..20), any::<bool>()).prop_map(|(entries, eof)| {
            let mut e = Encoder::default();
            e.fixed(&[1; 8]);
            for (cookie, name) in &entries {
                let mut v = Encoder::default();
                v.u32(1).u64(*cookie);
                e.bool(true).u64(*cookie).string(name).u32(1).u32(1 << 1 | 1 << 4).opaque(&v.buf);
            }
            e.bool(false).bool(eof);
            (op::READDIR, e.buf)
        }),
        (any::<u32>(), any::<[u8; 12]>(), 0u32..4).prop_map(|(seqid, other, deleg)| {
            let mut e = Encoder::default();
            e.u32(seqid).fixed(&other).bool(true).u64(1).u64(2).u32(0).u32(1).u32(0).u32(deleg);
            if deleg == 3 {
                e.u32(0);
            } else if deleg > 0 {
                e.u32(seqid).fixed(&other).bool(false);
                if deleg == 2 {
                    e.u32(1).u64(1 << 20);
                }
                e.u32(0).u32(0).u32(0).string("OWNER@");
            }
            (op::OPEN, e.buf)
        }),
    ]
}

#[test]
fn every_v4_result_reads_its_valid_replies_back() {
    ioscope_props::check("nfs4: valid replies read back", 2000, valid(), |(opnum, body)| {
        let reply = compound(opnum, 0, &body);
        let mut r = Reply::parse(&reply).unwrap();
        assert!(matches!(r.sequence(), Ok(Ok(1))));
        assert_eq!(r.plain(op::PUTFH, 0).unwrap(), Ok(()));
        let read = match opnum {
            op::READ => r.read().map(|x| x.is_ok()),
            op::WRITE => r.write().map(|x| x.is_ok()),
            op::COMMIT => r.commit().map(|x| x.is_ok()),
            op::GETATTR => r.getattr().map(|x| x.is_ok()),
            op::READDIR => r.readdir().map(|x| x.is_ok()),
            _ => r.open().map(|x| x.is_ok()),
        };
        assert_eq!(read, Ok(true), "{opnum}");
        assert_eq!(r.d.remaining(), 0, "{opnum}: the whole result is read");
        if opnum == op::READ {
            // The data found for a landing is the data the whole reply holds.
            let (off, len) = read_res_split(&reply).expect("a READ reply's data is found");
            let data = Reply::parse(&reply).and_then(|mut r| {
                r.sequence()?.ok();
                r.plain(op::PUTFH, 0)?.ok();
                Ok(r.read()?.map(|(d, _)| d.to_vec()))
            });
            assert_eq!(Ok(Ok(reply[off..off + len].to_vec())), data);
            let mut r = Reply::parse(&reply[..off]).unwrap();
            assert!(matches!(r.sequence(), Ok(Ok(1))));
            assert_eq!(r.plain(op::PUTFH, 0).unwrap(), Ok(()));
            assert!(matches!(r.read_landed(len), Ok(Ok(_))));
        }
    });
}

#[test]
fn mutated_v4_replies_decode_within_bounds_or_are_refused() {
    let strategy = (valid(), prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6), any::<bool>());
    ioscope_props::check("nfs4: mutated replies", 4000, strategy, |((opnum, body), mutations, cut)| {
        let mut reply = compound(opnum, 0, &body);
        for (at, byte) in &mutations {
            let i = at.index(reply.len());
            reply[i] = *byte;
        }
        if cut {
            let n = mutations[0].0.index(reply.len());
            reply.truncate(n);
        }
        decode_all(&reply);
        let asked = 4096;
        for op in [Op::Read, Op::Write, Op::Fsync] {
            let mut buf = vec![0u8; asked as usize];
            let into = Some((buf.as_mut_ptr() as usize, buf.len()));
            assert!(slot_reply(op, asked, &reply, None, into, &mut Some([0; 8])).result <= i64::from(asked));
        }
        // Where a landing READ's data begins (the pipe reads the data into the buffer and
        // hands over the results up to there): within the reply, and its results decode
        // within bounds.
        if let Some((off, len)) = read_res_split(&reply) {
            assert!(off <= reply.len(), "the data begins at {off}, beyond the {} bytes", reply.len());
            let r = slot_reply(Op::Read, asked, &reply[..off], Some(len), None, &mut None).result;
            assert!(r <= i64::from(asked) && (r < 0 || r as usize == len), "{r} of {len} landed");
        }
    });
}

#[test]
fn arbitrary_bytes_never_panic_a_v4_decoder() {
    let strategy = prop::collection::vec(any::<u8>(), 0..512);
    ioscope_props::check("nfs4: arbitrary reply bytes", 4000, strategy, |bytes| {
        decode_all(&bytes);
        let asked = bytes.len() as u32 / 2;
        for op in [Op::Read, Op::Write, Op::Fsync] {
            assert!(slot_reply(op, asked, &bytes, None, None, &mut None).result <= i64::from(asked));
            assert!(slot_reply(op, asked, &bytes, Some(bytes.len()), None, &mut None).result <= i64::from(asked));
        }
    });
}
