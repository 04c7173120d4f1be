//! XDR (RFC 4506): big-endian 4-byte units, opaque data padded to a multiple of four.

/// Appends XDR items to a buffer.
#[derive(Default)]
pub struct Encoder {
    pub buf: Vec<u8>,
}

impl Encoder {
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u32(v as u32)
    }
    /// Variable-length opaque: length, bytes, zero padding.
    pub fn opaque(&mut self, data: &[u8]) -> &mut Self {
        self.u32(data.len() as u32);
        self.fixed(data)
    }
    /// Fixed-length opaque: bytes and zero padding.
    pub fn fixed(&mut self, data: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(data);
        self.buf.resize(self.buf.len() + pad(data.len()), 0);
        self
    }
    pub fn string(&mut self, s: &str) -> &mut Self {
        self.opaque(s.as_bytes())
    }
}

/// Bytes of padding after `len` bytes of opaque data.
pub fn pad(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// Reads XDR items from a buffer; every read checks the length.
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// The reply ended early or held an impossible value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed XDR at byte {at}: {what}")]
pub struct XdrError {
    pub at: usize,
    pub what: &'static str,
}

impl<'a> Decoder<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], XdrError> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.buf.len()).ok_or(XdrError { at: self.pos, what })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    pub fn u32(&mut self) -> Result<u32, XdrError> {
        Ok(u32::from_be_bytes(self.take(4, "u32")?.try_into().expect("4 bytes")))
    }
    pub fn u64(&mut self) -> Result<u64, XdrError> {
        Ok(u64::from_be_bytes(self.take(8, "u64")?.try_into().expect("8 bytes")))
    }
    pub fn bool(&mut self) -> Result<bool, XdrError> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(XdrError { at: self.pos - 4, what: "bool other than 0 or 1" }),
        }
    }
    /// Variable-length opaque, at most `max` bytes.
    pub fn opaque(&mut self, max: usize) -> Result<&'a [u8], XdrError> {
        let len = self.u32()? as usize;
        if len > max {
            return Err(XdrError { at: self.pos - 4, what: "opaque longer than allowed" });
        }
        self.fixed(len)
    }
    pub fn fixed(&mut self, len: usize) -> Result<&'a [u8], XdrError> {
        let data = self.take(len, "opaque data")?;
        self.take(pad(len), "opaque padding")?;
        Ok(data)
    }
    /// Fixed-length opaque of 8 bytes (a write, commit or cookie verifier).
    pub fn fixed8(&mut self) -> Result<[u8; 8], XdrError> {
        let mut out = [0u8; 8];
        out.copy_from_slice(self.fixed(8)?); // fixed(8) is 8 bytes or an error
        Ok(out)
    }
    pub fn skip(&mut self, n: usize) -> Result<(), XdrError> {
        self.take(n, "skipped bytes").map(|_| ())
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opaque_is_padded_to_four_and_reads_back() {
        let mut e = Encoder::default();
        e.u32(7).opaque(b"abcde").u64(1 << 40).string("");
        assert_eq!(e.buf.len(), 4 + 4 + 8 + 8 + 4);
        assert_eq!(&e.buf[4..16], &[0, 0, 0, 5, b'a', b'b', b'c', b'd', b'e', 0, 0, 0]);
        let mut d = Decoder::new(&e.buf);
        assert_eq!(d.u32().unwrap(), 7);
        assert_eq!(d.opaque(64).unwrap(), b"abcde");
        assert_eq!(d.u64().unwrap(), 1 << 40);
        assert_eq!(d.opaque(0).unwrap(), b"");
        assert_eq!(d.remaining(), 0);
        assert!(d.u32().is_err(), "reading past the end is an error, not a panic");
    }

    #[test]
    fn lengths_beyond_the_limit_or_the_buffer_are_refused() {
        let mut e = Encoder::default();
        e.opaque(&[1; 100]);
        assert!(Decoder::new(&e.buf).opaque(64).is_err());
        assert!(Decoder::new(&e.buf[..50]).opaque(200).is_err());
        assert!(Decoder::new(&[0, 0, 0, 2]).bool().is_err());
    }
}
