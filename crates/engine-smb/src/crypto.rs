//! SMB2/SMB3 message security: signing (HMAC-SHA256, AES-128-CMAC, AES-128-GMAC), the
//! TRANSFORM_HEADER encryption (AES-128/256-CCM/GCM), the SP800-108 key derivation of
//! SMB 3.x and the 3.1.1 preauthentication integrity hash (MS-SMB2 2.2.41, 3.1.4.1-3.1.4.3,
//! 3.2.5.3.1).
//!
//! Every key schedule is computed once, when a [`Signer`] or [`Sealer`] is made: signing and
//! sealing run for every message. Inputs from the network never panic: a short or malformed
//! message gives `false` or `Err(())`.

use std::ops::Range;

use aes::cipher::BlockCipherEncrypt;
use aes::{Aes128, Aes256};
use aes_gcm::aead::inout::InOutBuf;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use ccm::consts::{U11, U16};
use ccm::Ccm;
use cmac::{Cmac, Mac};
use ghash::universal_hash::UniversalHash;
use ghash::GHash;
use hmac::Hmac;
use sha2::{Digest, Sha256, Sha512};

type HmacSha256 = Hmac<Sha256>;
type Aes128Ccm = Ccm<Aes128, U16, U11>;
type Aes256Ccm = Ccm<Aes256, U16, U11>;

/// Size of the SMB2 header (sync and async alike).
const HDR: usize = 64;
/// Where the header's Signature field lies.
const SIG: Range<usize> = 48..64;
/// SMB2_FLAGS_SIGNED.
const FLAGS_SIGNED: u32 = 0x0000_0008;
/// SMB2_FLAGS_SERVER_TO_REDIR.
const FLAGS_SERVER_TO_REDIR: u32 = 0x0000_0001;
/// SMB2 CANCEL's command code.
const CMD_CANCEL: u16 = 0x000C;
/// Size of the SMB2 TRANSFORM_HEADER.
const TRANSFORM: usize = 52;
/// The TRANSFORM_HEADER's ProtocolId.
const TRANSFORM_ID: [u8; 4] = [0xFD, b'S', b'M', b'B'];

fn le_u16(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2).and_then(|s| s.try_into().ok()).map_or(0, u16::from_le_bytes)
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map_or(0, u32::from_le_bytes)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map_or(0, u64::from_le_bytes)
}

/// The first 16 bytes of `key`, right-padded with zeros (MS-SMB2's Session.SessionKey rule).
fn key16(key: &[u8]) -> [u8; 16] {
    let mut k = [0u8; 16];
    let n = key.len().min(16);
    k[..n].copy_from_slice(&key[..n]);
    k
}

/// Equality that takes the same time wherever the first difference is.
fn ct_eq(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Signing algorithms (MS-SMB2 3.1.4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SigningAlg {
    HmacSha256,
    AesCmac,
    AesGmac,
}

impl SigningAlg {
    /// The algorithm's name as MS-SMB2 writes it.
    pub fn name(self) -> &'static str {
        match self {
            SigningAlg::HmacSha256 => "HMAC-SHA256",
            SigningAlg::AesCmac => "AES-128-CMAC",
            SigningAlg::AesGmac => "AES-128-GMAC",
        }
    }

    /// The algorithm of an SMB2_SIGNING_CAPABILITIES id (0 HMAC-SHA256, 1 AES-CMAC, 2 AES-GMAC).
    pub fn from_id(id: u16) -> Option<SigningAlg> {
        match id {
            0 => Some(SigningAlg::HmacSha256),
            1 => Some(SigningAlg::AesCmac),
            2 => Some(SigningAlg::AesGmac),
            _ => None,
        }
    }
}

/// GMAC (GCM with no plaintext) fed in pieces: GHASH over the data, then the tag mask.
struct Gmac {
    ghash: GHash,
    /// E_K(J0), J0 = nonce || 0x00000001.
    mask: ghash::Block,
    pending: [u8; 16],
    filled: usize,
    len: u64,
}

impl Gmac {
    fn update(&mut self, mut data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        if self.filled > 0 {
            let take = data.len().min(16 - self.filled);
            let (head, tail) = data.split_at(take);
            self.pending[self.filled..self.filled + take].copy_from_slice(head);
            self.filled += take;
            data = tail;
            if self.filled < 16 {
                return;
            }
            self.ghash.update(&[ghash::Block::from(self.pending)]);
            self.filled = 0;
        }
        let (blocks, rest) = ghash::Block::slice_as_chunks(data);
        self.ghash.update(blocks);
        self.pending[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    fn finish(mut self) -> [u8; 16] {
        if self.filled > 0 {
            self.ghash.update_padded(&self.pending[..self.filled]);
        }
        let mut lens = [0u8; 16];
        lens[..8].copy_from_slice(&self.len.wrapping_mul(8).to_be_bytes());
        self.ghash.update(&[ghash::Block::from(lens)]);
        let mut tag: [u8; 16] = self.ghash.finalize().into();
        for (t, m) in tag.iter_mut().zip(self.mask.iter()) {
            *t ^= m;
        }
        tag
    }
}

/// A MAC computation under way. It lives on the stack for one message: boxing its large
/// variant would cost an allocation per message.
#[allow(clippy::large_enum_variant)]
enum MacState {
    Hmac(HmacSha256),
    Cmac(Cmac<Aes128>),
    Gmac(Gmac),
}

impl MacState {
    fn update(&mut self, data: &[u8]) {
        match self {
            MacState::Hmac(m) => m.update(data),
            MacState::Cmac(m) => m.update(data),
            MacState::Gmac(m) => m.update(data),
        }
    }

    /// The 16-byte signature: HMAC-SHA256's first 16 bytes, or the whole CMAC/GMAC tag.
    fn finish(self) -> [u8; 16] {
        match self {
            MacState::Hmac(m) => key16(&m.finalize().into_bytes()),
            MacState::Cmac(m) => m.finalize().into_bytes().into(),
            MacState::Gmac(m) => m.finish(),
        }
    }
}

#[derive(Clone)]
enum SignKey {
    Hmac(HmacSha256),
    Cmac(Cmac<Aes128>),
    Gmac { aes: Aes128, ghash: GHash },
}

/// Signs and verifies SMB2 messages with one signing key; the key schedule is computed once.
#[derive(Clone)]
pub struct Signer {
    alg: SigningAlg,
    key: SignKey,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").field("alg", &self.alg).finish_non_exhaustive()
    }
}

/// AES-GMAC's nonce for a message whose header is `hdr` (MS-SMB2 3.1.4.1): MessageId, then a
/// u32 whose bit 0 says server-to-client and bit 1 says CANCEL.
fn gmac_nonce(hdr: &[u8]) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(&le_u64(hdr, 24).to_le_bytes());
    let mut role = 0u32;
    if le_u32(hdr, 16) & FLAGS_SERVER_TO_REDIR != 0 {
        role |= 1;
    }
    if le_u16(hdr, 12) == CMD_CANCEL {
        role |= 2;
    }
    n[8..].copy_from_slice(&role.to_le_bytes());
    n
}

impl Signer {
    /// `key`: the signing key (16 bytes used; the first 16 of a longer key for HMAC-SHA256 as
    /// MS-SMB2 says: HMAC-SHA256 uses the 16-byte session key). A shorter key is right-padded
    /// with zeros.
    pub fn new(alg: SigningAlg, key: &[u8]) -> Signer {
        let k = key16(key);
        let key = match alg {
            SigningAlg::HmacSha256 => {
                // HMAC pads its key with zeros to the hash's block size: padding it here is the same.
                let mut block = [0u8; 64];
                block[..16].copy_from_slice(&k);
                SignKey::Hmac(HmacSha256::new(&block.into()))
            }
            SigningAlg::AesCmac => SignKey::Cmac(Cmac::<Aes128>::new(&k.into())),
            SigningAlg::AesGmac => {
                let aes = Aes128::new(&k.into());
                let mut h = ghash::Key::default();
                aes.encrypt_block(&mut h);
                SignKey::Gmac { aes, ghash: GHash::new(&h) }
            }
        };
        Signer { alg, key }
    }

    /// A MAC computation under `nonce` (used by AES-GMAC only).
    fn start(&self, nonce: &[u8; 12]) -> MacState {
        match &self.key {
            SignKey::Hmac(m) => MacState::Hmac(m.clone()),
            SignKey::Cmac(m) => MacState::Cmac(m.clone()),
            SignKey::Gmac { aes, ghash } => {
                let mut j0 = [0u8; 16];
                j0[..12].copy_from_slice(nonce);
                j0[15] = 1;
                let mut mask = ghash::Block::from(j0);
                aes.encrypt_block(&mut mask);
                MacState::Gmac(Gmac { ghash: ghash.clone(), mask, pending: [0; 16], filled: 0, len: 0 })
            }
        }
    }

    /// Signs a whole SMB2 message (64-byte sync or async header first, then body) in place:
    /// sets SMB2_FLAGS_SIGNED (0x00000008) in Flags (offset 16, u32 LE), zeroes Signature
    /// (bytes 48..64), computes over the whole message, writes the 16-byte signature there.
    /// For AES-GMAC the 12-byte nonce is MessageId (offset 24, u64 LE) then a u32 LE whose
    /// bit 0 is set for a server-to-client message (SMB2_FLAGS_SERVER_TO_REDIR) and bit 1 for a
    /// CANCEL (Command 0x000C). A message shorter than 64 bytes is left alone.
    pub fn sign(&self, msg: &mut [u8]) {
        self.sign_with_tail(msg, &[]);
    }

    /// Like [`sign`](Self::sign), for a message whose end (`tail`, a WRITE's data) is sent
    /// from where it lies: the signature, written into `msg`'s header, covers `msg` and then
    /// `tail`.
    pub fn sign_with_tail(&self, msg: &mut [u8], tail: &[u8]) {
        if msg.len() < HDR {
            return;
        }
        let flags = le_u32(msg, 16) | FLAGS_SIGNED;
        msg[16..20].copy_from_slice(&flags.to_le_bytes());
        msg[SIG].fill(0);
        let mut st = self.start(&gmac_nonce(msg));
        st.update(msg);
        st.update(tail);
        msg[SIG].copy_from_slice(&st.finish());
    }

    /// Whether a received message's signature is right (computed with the Signature field taken
    /// as zero; `msg` is not modified and only its 64-byte header is copied). `false` for a
    /// message shorter than 64 bytes.
    pub fn verify(&self, msg: &[u8]) -> bool {
        self.verify_parts(&[msg])
    }

    /// Like [`verify`](Self::verify), for a message received in pieces: `parts` concatenated
    /// are the message (any split works, the header may straddle parts too). Lets a caller
    /// receive a READ's data straight into its own buffer and still verify.
    pub fn verify_parts(&self, parts: &[&[u8]]) -> bool {
        let mut hdr = [0u8; HDR];
        let mut got = 0;
        for p in parts {
            let take = p.len().min(HDR - got);
            hdr[got..got + take].copy_from_slice(&p[..take]);
            got += take;
            if got == HDR {
                break;
            }
        }
        if got < HDR {
            return false;
        }
        let mut want = [0u8; 16];
        want.copy_from_slice(&hdr[SIG]);
        hdr[SIG].fill(0);
        let mut st = self.start(&gmac_nonce(&hdr));
        st.update(&hdr);
        let mut skip = HDR;
        for p in parts {
            let s = skip.min(p.len());
            skip -= s;
            st.update(&p[s..]);
        }
        ct_eq(&st.finish(), &want)
    }
}

/// Encryption algorithms (SMB2_ENCRYPTION_CAPABILITIES cipher ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cipher {
    Aes128Ccm = 1,
    Aes128Gcm = 2,
    Aes256Ccm = 3,
    Aes256Gcm = 4,
}

impl Cipher {
    /// The cipher of an SMB2_ENCRYPTION_CAPABILITIES id.
    pub fn from_id(id: u16) -> Option<Cipher> {
        match id {
            1 => Some(Cipher::Aes128Ccm),
            2 => Some(Cipher::Aes128Gcm),
            3 => Some(Cipher::Aes256Ccm),
            4 => Some(Cipher::Aes256Gcm),
            _ => None,
        }
    }

    /// The key length in bytes: 16 or 32.
    pub fn key_bytes(self) -> usize {
        match self {
            Cipher::Aes128Ccm | Cipher::Aes128Gcm => 16,
            Cipher::Aes256Ccm | Cipher::Aes256Gcm => 32,
        }
    }

    /// The cipher's name as MS-SMB2 writes it.
    pub fn name(self) -> &'static str {
        match self {
            Cipher::Aes128Ccm => "AES-128-CCM",
            Cipher::Aes128Gcm => "AES-128-GCM",
            Cipher::Aes256Ccm => "AES-256-CCM",
            Cipher::Aes256Gcm => "AES-256-GCM",
        }
    }

    /// How many bytes of the 16-byte Nonce field the cipher uses.
    fn nonce_bytes(self) -> usize {
        match self {
            Cipher::Aes128Ccm | Cipher::Aes256Ccm => 11,
            Cipher::Aes128Gcm | Cipher::Aes256Gcm => 12,
        }
    }
}

/// One direction's AEAD, key schedule included.
enum Aead {
    Ccm128(Box<Aes128Ccm>),
    Ccm256(Box<Aes256Ccm>),
    Gcm128(Box<Aes128Gcm>),
    Gcm256(Box<Aes256Gcm>),
}

impl Aead {
    fn new(cipher: Cipher, key: &[u8]) -> Aead {
        let mut k = [0u8; 32];
        let n = key.len().min(32);
        k[..n].copy_from_slice(&key[..n]);
        let k16 = key16(&k);
        match cipher {
            Cipher::Aes128Ccm => Aead::Ccm128(Box::new(Aes128Ccm::new(&k16.into()))),
            Cipher::Aes256Ccm => Aead::Ccm256(Box::new(Aes256Ccm::new(&k.into()))),
            Cipher::Aes128Gcm => Aead::Gcm128(Box::new(Aes128Gcm::new(&k16.into()))),
            Cipher::Aes256Gcm => Aead::Gcm256(Box::new(Aes256Gcm::new(&k.into()))),
        }
    }

    /// Encrypts `buf` in place; the tag.
    fn seal(&self, nonce: &[u8; 16], aad: &[u8], buf: &mut [u8]) -> Result<[u8; 16], ()> {
        let mut n11 = [0u8; 11];
        n11.copy_from_slice(&nonce[..11]);
        let mut n12 = [0u8; 12];
        n12.copy_from_slice(&nonce[..12]);
        let buf = InOutBuf::from(buf);
        let tag = match self {
            Aead::Ccm128(a) => a.encrypt_inout_detached(&n11.into(), aad, buf).map(Into::into),
            Aead::Ccm256(a) => a.encrypt_inout_detached(&n11.into(), aad, buf).map(Into::into),
            Aead::Gcm128(a) => a.encrypt_inout_detached(&n12.into(), aad, buf).map(Into::into),
            Aead::Gcm256(a) => a.encrypt_inout_detached(&n12.into(), aad, buf).map(Into::into),
        };
        tag.map_err(|_| ())
    }

    /// Decrypts `buf` in place; `Err` if `tag` does not authenticate it (CCM then zeroes `buf`).
    fn open(&self, nonce: &[u8; 16], aad: &[u8], buf: &mut [u8], tag: [u8; 16]) -> Result<(), ()> {
        let mut n11 = [0u8; 11];
        n11.copy_from_slice(&nonce[..11]);
        let mut n12 = [0u8; 12];
        n12.copy_from_slice(&nonce[..12]);
        let buf = InOutBuf::from(buf);
        let tag = tag.into();
        let r = match self {
            Aead::Ccm128(a) => a.decrypt_inout_detached(&n11.into(), aad, buf, &tag),
            Aead::Ccm256(a) => a.decrypt_inout_detached(&n11.into(), aad, buf, &tag),
            Aead::Gcm128(a) => a.decrypt_inout_detached(&n12.into(), aad, buf, &tag),
            Aead::Gcm256(a) => a.decrypt_inout_detached(&n12.into(), aad, buf, &tag),
        };
        r.map_err(|_| ())
    }
}

/// Fills `buf` from the OS's random source (nonces, a client GUID, a salt: unique, not
/// secret). Should /dev/urandom be unreadable, std's randomly keyed hasher, the time and
/// the process id stand in.
pub fn random_bytes(buf: &mut [u8]) {
    use std::io::Read;
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        if f.read_exact(buf).is_ok() {
            return;
        }
    }
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    h.write_u128(now.map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    for chunk in buf.chunks_mut(8) {
        let v = h.finish();
        h.write_u64(v);
        chunk.copy_from_slice(&v.to_le_bytes()[..chunk.len()]);
    }
}

/// The transform (encryption) of messages of one session (MS-SMB2 2.2.41, 3.1.4.3).
///
/// Not `Clone` on purpose: two copies would issue the same nonces. The nonce of each sealed
/// message is a 64-bit counter (starting at a random value) then 3 (CCM) or 4 (GCM) random
/// bytes fixed for this `Sealer`, so that another `Sealer` with the same key (another channel
/// of the session) does not repeat it either.
pub struct Sealer {
    cipher: Cipher,
    enc: Aead,
    dec: Aead,
    counter: u64,
    salt: [u8; 4],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").field("cipher", &self.cipher).finish_non_exhaustive()
    }
}

impl Sealer {
    /// `encrypt_key` seals what this side sends, `decrypt_key` opens what it receives (a
    /// client's Session.EncryptionKey and Session.DecryptionKey). The cipher's
    /// [`key_bytes`](Cipher::key_bytes) are used, a shorter key right-padded with zeros.
    pub fn new(cipher: Cipher, encrypt_key: &[u8], decrypt_key: &[u8]) -> Sealer {
        let mut r = [0u8; 12];
        random_bytes(&mut r);
        let mut start = [0u8; 8];
        start.copy_from_slice(&r[..8]);
        let mut salt = [0u8; 4];
        salt.copy_from_slice(&r[8..]);
        Sealer {
            cipher,
            enc: Aead::new(cipher, encrypt_key),
            dec: Aead::new(cipher, decrypt_key),
            counter: u64::from_le_bytes(start),
            salt,
        }
    }

    /// Appends to `out` the SMB2 TRANSFORM_HEADER (52 bytes: ProtocolId 0xFD 'S' 'M' 'B',
    /// Signature = the AEAD tag, Nonce 16 (11 bytes used for CCM, 12 for GCM, rest zero),
    /// OriginalMessageSize, Reserved, Flags/EncryptionAlgorithm = 0x0001, SessionId) followed by
    /// `msg` encrypted; the AAD is the header from the Nonce on (bytes 20..52). A message of
    /// 4 GiB or more (which SMB2's framing cannot carry) appends nothing.
    pub fn seal(&mut self, session_id: u64, msg: &[u8], out: &mut Vec<u8>) {
        let used = self.cipher.nonce_bytes();
        let mut nonce = [0u8; 16];
        nonce[..8].copy_from_slice(&self.counter.to_le_bytes());
        nonce[8..used].copy_from_slice(&self.salt[..used - 8]);
        self.counter = self.counter.wrapping_add(1);
        self.seal_with(&nonce, session_id, msg, out);
    }

    /// `seal` with a given Nonce field (the published vectors fix it).
    fn seal_with(&self, nonce: &[u8; 16], session_id: u64, msg: &[u8], out: &mut Vec<u8>) {
        let Ok(size) = u32::try_from(msg.len()) else { return };
        let start = out.len();
        out.reserve(TRANSFORM + msg.len());
        out.extend_from_slice(&TRANSFORM_ID);
        out.extend_from_slice(&[0; 16]);
        out.extend_from_slice(nonce);
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&session_id.to_le_bytes());
        out.extend_from_slice(msg);
        let (hdr, body) = out[start..].split_at_mut(TRANSFORM);
        match self.enc.seal(nonce, &hdr[20..], body) {
            Ok(tag) => hdr[4..20].copy_from_slice(&tag),
            Err(()) => out.truncate(start),
        }
    }

    /// Decrypts a received transform message (`frame` starts with 0xFD 'S' 'M' 'B') in place;
    /// the range of `frame` that holds the plaintext SMB2 message (bytes after
    /// OriginalMessageSize are ignored), or `Err(())` when it is short, malformed
    /// (OriginalMessageSize larger than what follows, Flags not 0x0001) or does not
    /// authenticate. When it does not authenticate, the ciphertext may have been overwritten
    /// (CCM zeroes it rather than leave unauthenticated plaintext).
    #[allow(clippy::result_unit_err)] // the one failure a caller can act on: drop the frame
    pub fn open(&self, frame: &mut [u8]) -> Result<Range<usize>, ()> {
        if frame.len() < TRANSFORM || frame[..4] != TRANSFORM_ID || le_u16(frame, 42) != 1 {
            return Err(());
        }
        let size = usize::try_from(le_u32(frame, 36)).map_err(|_| ())?;
        let end = TRANSFORM.checked_add(size).filter(|&e| e <= frame.len()).ok_or(())?;
        let (hdr, rest) = frame.split_at_mut(TRANSFORM);
        let mut tag = [0u8; 16];
        tag.copy_from_slice(&hdr[4..20]);
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(&hdr[20..36]);
        self.dec.open(&nonce, &hdr[20..], &mut rest[..size], tag)?;
        Ok(TRANSFORM..end)
    }
}

/// SP800-108 counter-mode KDF with HMAC-SHA256 as SMB 3.x uses it (MS-SMB2 3.1.4.2): r = 32,
/// L = `bits`, input = i (u32 BE, from 1) || label || 0x00 || context || L (u32 BE).
pub fn kdf(key: &[u8], label: &[u8], context: &[u8], bits: u32) -> Vec<u8> {
    let len = usize::try_from(bits.div_ceil(8)).unwrap_or(0);
    let mut out = Vec::with_capacity(len + 32);
    let Ok(prf) = HmacSha256::new_from_slice(key) else { return out };
    let mut i = 1u32;
    while out.len() < len {
        let mut m = prf.clone();
        m.update(&i.to_be_bytes());
        m.update(label);
        m.update(&[0]);
        m.update(context);
        m.update(&bits.to_be_bytes());
        out.extend_from_slice(&m.finalize().into_bytes());
        i = i.wrapping_add(1);
    }
    out.truncate(len);
    out
}

/// The keys of a session (MS-SMB2 3.2.5.3.1 / 3.3.5.5.3), as a client uses them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionKeys {
    /// Session.SigningKey (16 bytes).
    pub signing: Vec<u8>,
    /// Session.EncryptionKey: seals client-to-server messages (empty before 3.0).
    pub encrypt: Vec<u8>,
    /// Session.DecryptionKey: opens server-to-client messages (empty before 3.0).
    pub decrypt: Vec<u8>,
}

/// The keys of a session. `dialect`: 0x0202, 0x0210, 0x0300, 0x0302 or 0x0311 (any other is
/// taken as 2.x). `session_key`: the authentication's session key (NTLM: 16 bytes); MS-SMB2's
/// Session.SessionKey is its first 16 bytes, zero-padded. `preauth_hash`: the 3.1.1
/// preauthentication integrity hash value (ignored for other dialects). `cipher`: the
/// negotiated cipher (3.1.1 only; 3.0/3.0.2 use AES-128-CCM): with AES-256 the encryption keys
/// are 32 bytes, derived from the whole session key (Session.FullSessionKey).
pub fn session_keys(dialect: u16, session_key: &[u8], preauth_hash: &[u8; 64], cipher: Option<Cipher>) -> SessionKeys {
    let sk = key16(session_key);
    match dialect {
        0x0300 | 0x0302 => SessionKeys {
            signing: kdf(&sk, b"SMB2AESCMAC\0", b"SmbSign\0", 128),
            encrypt: kdf(&sk, b"SMB2AESCCM\0", b"ServerIn \0", 128),
            decrypt: kdf(&sk, b"SMB2AESCCM\0", b"ServerOut\0", 128),
        },
        0x0311 => {
            let (ki, bits): (&[u8], u32) = match cipher {
                Some(Cipher::Aes256Ccm | Cipher::Aes256Gcm) => (session_key, 256),
                _ => (&sk, 128),
            };
            SessionKeys {
                signing: kdf(&sk, b"SMBSigningKey\0", preauth_hash, 128),
                encrypt: kdf(ki, b"SMBC2SCipherKey\0", preauth_hash, bits),
                decrypt: kdf(ki, b"SMBS2CCipherKey\0", preauth_hash, bits),
            }
        }
        _ => SessionKeys { signing: sk.to_vec(), encrypt: Vec::new(), decrypt: Vec::new() },
    }
}

/// The 3.1.1 preauthentication integrity hash (SHA-512): starts as 64 zero bytes;
/// `update(msg)` sets H = SHA-512(H || msg).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreauthHash(pub [u8; 64]);

impl Default for PreauthHash {
    fn default() -> Self {
        PreauthHash([0; 64])
    }
}

impl PreauthHash {
    /// The hash before any message: 64 zero bytes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds in one whole message (NEGOTIATE or SESSION_SETUP, request or response).
    pub fn update(&mut self, msg: &[u8]) {
        let mut h = Sha512::new();
        h.update(self.0);
        h.update(msg);
        self.0 = h.finalize().into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hex to bytes; whitespace is skipped.
    fn h(s: &str) -> Vec<u8> {
        let d: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
        d.chunks(2).map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap()).collect()
    }

    fn h64(s: &str) -> [u8; 64] {
        h(s).try_into().unwrap()
    }

    fn mac(s: &Signer, nonce: [u8; 12], parts: &[&[u8]]) -> Vec<u8> {
        let mut st = s.start(&nonce);
        for p in parts {
            st.update(p);
        }
        st.finish().to_vec()
    }

    // --- Primitives ---

    /// RFC 4493 section 4, examples 1-4, whole and in pieces.
    #[test]
    fn cmac_rfc4493() {
        let s = Signer::new(SigningAlg::AesCmac, &h("2b7e151628aed2a6abf7158809cf4f3c"));
        let m = h("6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51
                   30c81c46a35ce411e5fbc1191a0a52ef f69f2445df4f9b17ad2b417be66c3710");
        for (len, want) in [
            (0, "bb1d6929e95937287fa37d129b756746"),
            (16, "070a16b46b4d4144f79bdd9dd04a287c"),
            (40, "dfa66747de9ae63030ca32611497c827"),
            (64, "51f0bebf7e3b9d92fc49741779363cfe"),
        ] {
            assert_eq!(mac(&s, [0; 12], &[&m[..len]]), h(want), "{len}");
            for cut in [1, 7, 16, 17, 33] {
                if cut < len {
                    assert_eq!(mac(&s, [0; 12], &[&m[..cut], &[], &m[cut..len]]), h(want));
                }
            }
        }
    }

    /// RFC 4231 test case 2 (a 4-byte key: HMAC's zero padding makes 16 bytes the same),
    /// HMAC-SHA256's first 16 bytes.
    #[test]
    fn hmac_rfc4231() {
        let s = Signer::new(SigningAlg::HmacSha256, b"Jefe");
        let got = mac(&s, [0; 12], &[b"what do ya ", b"want for nothing?"]);
        assert_eq!(got, h("5bdcc146bf60754e6a042426089575c7"));
    }

    /// NIST SP800-38D CAVS (gcmEncryptExtIV128.rsp, PTlen 0): GMAC is GCM with AAD only.
    #[test]
    fn gmac_nist() {
        for (key, iv, aad, tag) in [
            ("11754cd72aec309bf52f7687212e8957", "3c819d9a9bed087615030b65", "", "250327c674aaf477aef2675748cf6971"),
            (
                "77be63708971c4e240d1cb79e8d77feb",
                "e0e00f19fed7ba0136a797f3",
                "7a43ec1d9c0a5a78a0b16533a6213cab",
                "209fcc8d3675ed938e9c7166709dd946",
            ),
        ] {
            let s = Signer::new(SigningAlg::AesGmac, &h(key));
            let a = h(aad);
            let nonce: [u8; 12] = h(iv).try_into().unwrap();
            assert_eq!(mac(&s, nonce, &[&a]), h(tag));
            if a.len() > 5 {
                assert_eq!(mac(&s, nonce, &[&a[..5], &a[5..]]), h(tag));
            }
        }
    }

    /// The streaming GMAC equals aes-gcm's tag over (AAD, empty plaintext) for any length and split.
    #[test]
    fn gmac_matches_aes_gcm() {
        let key = h("000102030405060708090a0b0c0d0e0f");
        let s = Signer::new(SigningAlg::AesGmac, &key);
        let gcm = Aes128Gcm::new(&key16(&key).into());
        let data: Vec<u8> = (0..70_000u32).map(|i| (i * 7 + i / 255) as u8).collect();
        let nonce = [9u8; 12];
        for len in (0..100).chain([255, 4096, 65_537, 70_000]) {
            let want: [u8; 16] =
                gcm.encrypt_inout_detached(&nonce.into(), &data[..len], InOutBuf::from(&mut [][..])).unwrap().into();
            assert_eq!(mac(&s, nonce, &[&data[..len]]), want, "{len}");
            let (a, b) = data[..len].split_at(len / 3);
            let (b, c) = b.split_at(b.len() / 2);
            assert_eq!(mac(&s, nonce, &[a, b, &[], c]), want, "{len} split");
        }
    }

    // --- Keys (Microsoft Open Specifications blog vectors) ---

    /// "SMB 2 and SMB 3 security in Windows 10: the anatomy of signing and cryptographic keys",
    /// appendix (3.0 and 3.1.1 first channels), and "Encryption in SMB 3.0: A protocol perspective".
    #[test]
    fn keys_ms_vectors() {
        let none = [0u8; 64];
        let k = session_keys(0x0300, &h("7CD451825D0450D235424E44BA6E78CC"), &none, None);
        assert_eq!(k.signing, h("0B7E9C5CAC36C0F6EA9AB275298CEDCE"));
        assert_eq!(k.encrypt, h("FAD27796665B313EBB578F388632B4F7"));
        assert_eq!(k.decrypt, h("B0F0427F7CEB416D1D9DCC0CD4F99447"));
        assert_eq!(
            kdf(&h("7CD451825D0450D235424E44BA6E78CC"), b"SMB2APP\0", b"SmbRpc\0", 128),
            h("BB23A4575AA26C721AF525AF15A87B4F")
        );

        let k = session_keys(0x0302, &h("B4546771B515F766A86735532DD6C4F0"), &none, Some(Cipher::Aes256Gcm));
        assert_eq!(k.signing, h("F773CD23C18FD1E08EE510CADA7CF852"));
        assert_eq!(k.encrypt, h("261B72350558F2E9DCF613070383EDBF"));
        assert_eq!(k.decrypt, h("8FE2B57EC34D2DB5B1A9727F526BBDB5"));

        let pa = h64("0DD13628CC3ED218EF9DF9772D436D0887AB9814BFAE63A80AA845F36909DB79
                      28622DDDAD522D9751640A459762C5A9D6BB084CBB3CE6BDADEF5D5BCE3C6C01");
        let k = session_keys(0x0311, &h("270E1BA896585EEB7AF3472D3B4C75A7"), &pa, Some(Cipher::Aes128Gcm));
        assert_eq!(k.signing, h("73FE7A9A77BEF0BDE49C650D8CCB5F76"));
        assert_eq!(k.encrypt, h("629BCBC54422A0F572B97F45989B6073"));
        assert_eq!(k.decrypt, h("E2AF0DCEFAC68DA71A0DFBD0D1350D74"));

        // "SMB 3.1.1 Encryption in Windows 10", appendix A.1 (AES-128-GCM).
        let pa = h64("B23F3CBFD69487D9832B79B1594A367CDD950909B774C3A4C412B4FCEA9EDDDB
                      A7DB256BA2EA30E977F11F9B113247578E0E915C6D2A513B8F2FCA5707DC8770");
        let k = session_keys(0x0311, &h("419FDDF34C1E001909D362AE7FB6AF79"), &pa, Some(Cipher::Aes128Gcm));
        assert_eq!(k.signing, h("8765949DFEAEE105CE9118B45BE988F0"));
        assert_eq!(k.encrypt, h("A2F5E80E5D59103034F32E52F698E5EC"));
        assert_eq!(k.decrypt, h("748C50868C90F302962A5C35F5F9A8BF"));
    }

    /// 2.x signs with the session key; 3.1.1 with a 256-bit cipher derives 32-byte keys (no
    /// published vector exists for these: checked against the KDF's definition).
    #[test]
    fn keys_2x_and_256() {
        let sk = h("000102030405060708090a0b0c0d0e0f1011121314151617");
        let k = session_keys(0x0210, &sk, &[0; 64], None);
        assert_eq!(k.signing, sk[..16].to_vec());
        assert!(k.encrypt.is_empty() && k.decrypt.is_empty());
        assert_eq!(session_keys(0x0202, b"short", &[0; 64], None).signing, h("73686f72740000000000000000000000"));
        let pa = [7u8; 64];
        for c in [Cipher::Aes256Ccm, Cipher::Aes256Gcm] {
            let k = session_keys(0x0311, &sk, &pa, Some(c));
            assert_eq!(k.encrypt.len(), 32);
            assert_eq!(k.encrypt, kdf(&sk, b"SMBC2SCipherKey\0", &pa, 256));
            assert_eq!(k.decrypt, kdf(&sk, b"SMBS2CCipherKey\0", &pa, 256));
            assert_eq!(k.signing, kdf(&sk[..16], b"SMBSigningKey\0", &pa, 128));
            // L is part of the KDF's input: the 256-bit key is not the 128-bit key extended.
            assert_ne!(k.encrypt[..16], kdf(&sk, b"SMBC2SCipherKey\0", &pa, 128)[..]);
        }
        assert_eq!(kdf(b"k", b"l", b"c", 0), Vec::<u8>::new());
        assert_eq!(kdf(b"k", b"l", b"c", 300).len(), 38);
    }

    // --- A whole 3.1.1 session: "SMB 3.1.1 Encryption in Windows 10", appendix A.2 (AES-128-CCM) ---

    const A2_MSGS: [(&str, &str); 5] = [
        (
            // NEGOTIATE request
            "FE534D4240000100000000000000010000000000000000000000000000000000FFFE000000000000
             00000000000000000000000000000000000000000000000024000500010000006600000078EA16AC
             6877C34A95F7160F73EA377270000000020000000202100200030203110300000100260000000000
             0100200001001A05A92392E1554C072AE7B186EE7DC02CB90BEF2E639CCC94B7A9DC7B3934420000
             0200060000000000020001000200",
            "A3A8A769FEA693B3D037406EF945E115D2B7A4A9318564D2CAAA4B1FE0EC36D8D92A4802619EDCF2
             9E2410534D2D3749E71F76ADF5212F959210D291097A6355",
        ),
        (
            // NEGOTIATE response
            "FE534D4240000100000000000000010001000000000000000000000000000000FFFE000000000000
             000000000000000000000000000000000000000000000000410001001103020039CBCAF329714942
             BDCE5D60F09AB3FB27000000000080000000800000008000D04C8443CCAED00109094AB095AED001
             80004001C00100006082013C06062B0601050502A08201303082012CA01A3018060A2B0601040182
             3702021E060A2B06010401823702020AA282010C048201084E45474F455854530100000000000000
             60000000700000007F7CC0FD06D6362D02DDE1CF343BFE2973007DCF55CA793E082B7A257DEFE6E8
             E18291ABF112C0599108C772F55CBB2A000000000000000060000000010000000000000000000000
             5C33530DEAF90D4DB2EC4AE3786EC3084E45474F4558545303000000010000004000000098000000
             7F7CC0FD06D6362D02DDE1CF343BFE295C33530DEAF90D4DB2EC4AE3786EC3084000000058000000
             3056A05430523027802530233121301F06035504031318546F6B656E205369676E696E6720507562
             6C6963204B65793027802530233121301F06035504031318546F6B656E205369676E696E67205075
             626C6963204B6579010026000000000001002000010088AFA422ECC239CB16F30BA641AE4B6EE79F
             5A4AF74FE18A301E9790515D07F70000020004000000000001000100",
            "A21419AD43D5A4975326E07142734EADA33D0927738F3C1B05A65B003CCAAAE225B547045260356C
             2014A21E0A3DFA9EF7B192C375BFFC5F5E766AC3261F0457",
        ),
        (
            // SESSION_SETUP request 1
            "FE534D4240000100000000000100800000000000000000000100000000000000FFFE000000000000
             00000000000000000000000000000000000000000000000019000001010000000000000058004A00
             0000000000000000604806062B0601050502A03E303CA00E300C060A2B06010401823702020AA22A
             04284E544C4D5353500001000000978208E200000000000000000000000000000000060380250000
             000F",
            "FD10D68FFBB5D94DD483DE14DC8AF92B4D2D8517A5D245FE091C93050AC56239B3B829F74CB25451
             276248F12279DCC027C9B53841A67052A617C32C93CBA8C2",
        ),
        (
            // SESSION_SETUP response 1 (STATUS_MORE_PROCESSING_REQUIRED)
            "FE534D4240000100160000C00100010001000000000000000100000000000000FFFE000000000000
             210000000010000000000000000000000000000000000000090000004800B300A181B03081ADA003
             0A0101A10C060A2B06010401823702020AA281970481944E544C4D53535000020000000C000C0038
             00000015828AE29296836B33F712E0000000000000000050005000440000000A0092270000000F53
             005500540033003100310002000C0053005500540033003100310001000C00530055005400330031
             00310004000C0053005500540033003100310003000C005300550054003300310031000700080019
             C69C43CCAED00100000000",
            "2AA0A0D736D4A3BE4A2FA06B20EEBF02635543C0310F72595ACEAF9893BBE647D9C753175215BB24
             71DF365D4FC77AB8D168ECC91ABC02C4611D2AAC33181967",
        ),
        (
            // SESSION_SETUP request 2
            "FE534D4240000100000000000100800000000000000000000200000000000000FFFE000000000000
             2100000000100000000000000000000000000000000000001900000101000000000000005800CF01
             0000000000000000A18201CB308201C7A0030A0101A28201AA048201A64E544C4D53535000030000
             001800180090000000EE00EE00A80000000C000C00580000001A001A0064000000120012007E0000
             001000100096010000158288E2060380250000000F3E492B87B2606D263031D0D12B6AD267530055
             005400330031003100610064006D0069006E006900730074007200610074006F0072004400520049
             005600450052003300310031000000000000000000000000000000000000000000000000009AEF57
             4DBD2E8A323B017ED361EEA14B010100000000000019C69C43CCAED00176AC9CBD38378531000000
             0002000C0053005500540033003100310001000C0053005500540033003100310004000C00530055
             00540033003100310003000C005300550054003300310031000700080019C69C43CCAED001060004
             00020000000800300030000000000000000000000000300000B61FEFCAA857EA57BF1EDCEBF8974B
             8E0EBA5A6DFD9D07A31D11B548F8C9D0CC0A00100000000000000000000000000000000000090016
             0063006900660073002F005300550054003300310031000000000000000000000000005E621187A7
             5CC18E3982494ECC4793B7A3120410010000005C661B9E6BE0F1E500000000",
            "DECF98A420718718F22090D3580FCC5E484BD310FA1268210C6E86335A8891E767F5BCD99FA5A785
             9D665AD07A73EA94E1BCDB7CFA69A6962A28A244138340B1",
        ),
    ];

    /// The final SESSION_SETUP response of A.2, signed (AES-128-CMAC) by the server.
    const A2_SIGNED: &str = "FE534D4240000100000000000100800009000000000000000200000000000000FFFE000000000000
        21000000001000003676196AEE8CA17E5D50A53642EF2BE40900000048001D00A11B3019A0030A01
        00A3120410010000000F57444342A2717E00000000";

    #[test]
    fn session_311_ccm_ms_vector() {
        // Preauthentication hash, message by message.
        let mut pa = PreauthHash::new();
        assert_eq!(pa.0, [0; 64]);
        for (msg, want) in A2_MSGS {
            pa.update(&h(msg));
            assert_eq!(pa.0, h64(want));
        }
        // Keys.
        let k = session_keys(0x0311, &h("07B7F69C1E2581662DF6987E88F9E891"), &pa.0, Some(Cipher::Aes128Ccm));
        assert_eq!(k.signing, h("3DCC82C5795AE27F383242761078C59B"));
        assert_eq!(k.encrypt, h("DFAAA31AAE40A2485D47AC4DF09FDA1D"));
        assert_eq!(k.decrypt, h("95C544AEF6072680DA1CE49A68A97FA6"));
        // The signed SESSION_SETUP response.
        let signer = Signer::new(SigningAlg::AesCmac, &k.signing);
        let signed = h(A2_SIGNED);
        assert!(signer.verify(&signed));
        let mut resigned = signed.clone();
        resigned[48..64].fill(0xAA);
        signer.sign(&mut resigned);
        assert_eq!(resigned, signed);
        // WRITE request, sealed with the blog's nonce.
        let sealer = Sealer::new(Cipher::Aes128Ccm, &k.encrypt, &k.decrypt);
        let write = h("FE534D4240000100000000000900010008000000000000000500000000000000FFFE000001000000
                       21000000001000000000000000000000000000000000000031007000170000000000000000000000
                       0500000004000000010000000400000000000000000000007000000000000000536D623320656E63
                       72797074696F6E2074657374696E67");
        let mut out = b"prefix".to_vec();
        let nonce: [u8; 16] = h("9F6F1EAAD7E9F24AACD38F0000000000").try_into().unwrap();
        sealer.seal_with(&nonce, 0x1000_0000_0021, &write, &mut out);
        assert_eq!(&out[..6], b"prefix");
        assert_eq!(
            out[6..],
            h("FD534D42E89551D666DAB8993488F5A97103116C9F6F1EAAD7E9F24AACD38F000000000087000000
               00000100210000000010000056A74778199A9D2B6E9C3A376FD88D27680694FED253A313BEB07381
               AE8689F973ACDB8D716E4477803BCE53A92E1B81FA3E965AD9AF2C89C08CE66A344664453B8FC881
               18EDC9814CF58E92AA465E6EFB09958A9FDAD96FBD55B36A710C30D5E7C64AD7B9449F9F17EDD024
               FE8BA79154F340A82740D1D5180C69B0A2DE6A4BA893BD55D3210E")
        );
        // READ response, opened.
        let mut frame = h("FD534D42E241A13C7E1EE42ECF1FD69F3B8668C6DA6831DD2E8EB7B4000000000000000067000000
                           00000100210000000010000015D67234FC8358D7BA1BF037ABC8EFD41A0A8F9BB04B16DEB1E85606
                           BD8C2770823FE6239A286CB3E3D5762ABBD53FD8DE11ED491FE905E146A8FFCE09414AB741103D63
                           7E28B19C6BA759B399DCC21FAE24CF2A455A13B215FC2857ABB513927F9F271D1C208B");
        let r = sealer.open(&mut frame).unwrap();
        assert_eq!(
            frame[r],
            h("FE534D4240000100000000000800010001000000000000000600000000000000FFFE000001000000
               21000000001000000000000000000000000000000000000011005000170000000000000000000000
               536D623320656E6372797074696F6E2074657374696E67")
        );
    }

    /// "SMB 3.1.1 Encryption in Windows 10", appendix A.1 (AES-128-GCM): the signed
    /// SESSION_SETUP response, the WRITE request sealed, the READ response opened.
    #[test]
    fn session_311_gcm_ms_vector() {
        let signed = h("FE534D4240000100000000000100800009000000000000000200000000000000FFFE000000000000
                        25000000001000006B85A4519A0F3EEA35BA946DD3AFE6B80900000048001D00A11B3019A0030A01
                        00A3120410010000003932A87523AB660100000000");
        assert!(Signer::new(SigningAlg::AesCmac, &h("8765949DFEAEE105CE9118B45BE988F0")).verify(&signed));

        let sealer = Sealer::new(
            Cipher::Aes128Gcm,
            &h("A2F5E80E5D59103034F32E52F698E5EC"),
            &h("748C50868C90F302962A5C35F5F9A8BF"),
        );
        let write = h("FE534D4240000100000000000900010008000000000000000500000000000000FFFE000001000000
                       25000000001000000000000000000000000000000000000031007000170000000000000000000000
                       0600000004000000010000000400000000000000000000007000000000000000536D623320656E63
                       72797074696F6E2074657374696E67");
        let mut out = Vec::new();
        let nonce: [u8; 16] = h("C7D6822D269CAF48904C664C00000000").try_into().unwrap();
        sealer.seal_with(&nonce, 0x1000_0000_0025, &write, &mut out);
        assert_eq!(
            out,
            h("FD534D42BD73D97D2BC9001BCAFAC0FDFF5FEEBCC7D6822D269CAF48904C664C0000000087000000
               0000010025000000001000006ECDD2A7AFC7B47763057A041B8FD4DAFFE990B70C9E09D36C084E02
               D14EF247F8BDE38ACF6256F8B1D3B56F77FBDEB312FEA5E92CBCC1ED8FB2EBBFAA75E49A4A394BB4
               4576545567C24D4C014D47C9FBDFDAFD2C4F9B72F8D256452620A299F48E29E53D6B61D1C13A19E9
               1AF013F00D17E3ABC2FC3D36C8C1B6B93973253852DBD442E46EE8")
        );
        let mut frame = h("FD534D427F714B3B9D8FA1198584E71C2BAA1CB6E16831DD2E8EB7B4000000000000000067000000
                           000001002500000000100000FECEDF4D03BB11A6CC5D8A53BE33D6D8701986342B4197D306E16F9C
                           BB218E92F7F8281F51CE68BB85A20D87DE90EBBF80538066D1C37513C0A58D70936D537B624F5500
                           202A612B6CD30D448A82791A0B2E049ED512AFAEFB06E98AB3D6F931D7D50DB2DBD36A");
        let r = sealer.open(&mut frame).unwrap();
        assert_eq!(
            frame[r],
            h("FE534D4240000100000000000800010001000000000000000600000000000000FFFE000001000000
               25000000001000000000000000000000000000000000000011005000170000000000000000000000
               536D623320656E6372797074696F6E2074657374696E67")
        );
    }

    /// "Encryption in SMB 3.0: A protocol perspective": WRITE sealed (all 16 Nonce bytes are in
    /// the AAD, only 11 in the CCM nonce), READ response opened.
    #[test]
    fn session_30_ccm_ms_vector() {
        let sealer = Sealer::new(
            Cipher::Aes128Ccm,
            &h("261B72350558F2E9DCF613070383EDBF"),
            &h("8FE2B57EC34D2DB5B1A9727F526BBDB5"),
        );
        let write = h("FE534D4240000100000000000900400008000000000000000400000000000000
                       FFFE0000010000001100001400E4080000000000000000000000000000000000
                       3100700017000000000000000000000015010000390000020100000039020000
                       00000000000000007000000000000000536D623320656E6372797074696F6E20
                       74657374696E67");
        let mut out = Vec::new();
        let nonce: [u8; 16] = h("66E69A111892584FB5ED524A744DA3EE").try_into().unwrap();
        sealer.seal_with(&nonce, 0x8_e400_1400_0011, &write, &mut out);
        assert_eq!(
            out,
            h("FD534D4281A286535415445DAE393921E44FA42E66E69A111892584FB5ED524A
               744DA3EE87000000000001001100001400E4080025C8FEE16605A437832D1CD5
               2DA9F4645333482A175FE5384563F45FCDAFAEF38BC62BA4D5C62897996625A4
               4C29BE5658DE2E6117585779E7B59FFD971278D08580D7FA899E410E910EABF5
               AA1DB43050B33B49182637759AC15D84BFCDF5B6B238993C0F4CF4D6012023F6
               C627297075D84B7803912D0A9639634453595EF3E33FFE4E7AC2AB")
        );
        let mut frame = h("FD534D42ABD518B68C2F04D7879F482B689EB83F870000000000000011000014
                           00E4080067000000000001001100001400E40800493D6FE2BDBEB435CF5F5469
                           70C7BB57BF20E713C75A3D045507E0D68E5C0346659D6FFB8AC1504A786CA2BB
                           89C9E7FE4F313E910A04180D2D0EA7DF636329E5A3285984500EF86FE9D55DA4
                           FAB9531CFDD4C551D47F3C73124BB4590A45052B694048B991CCF5");
        let r = sealer.open(&mut frame).unwrap();
        assert_eq!(
            frame[r],
            h("FE534D4240000100000000000800210009000000000000000500000000000000
               FFFE0000010000001100001400E4080000000000000000000000000000000000
               11005000170000000000000000000000536D623320656E6372797074696F6E20
               74657374696E67")
        );
    }

    // --- Properties ---

    fn message(len: usize, msg_id: u64, flags: u32, command: u16) -> Vec<u8> {
        let mut m: Vec<u8> = (0..len).map(|i| (i * 31 + 5) as u8).collect();
        m[..4].copy_from_slice(b"\xFESMB");
        m[12..14].copy_from_slice(&command.to_le_bytes());
        m[16..20].copy_from_slice(&flags.to_le_bytes());
        m[24..32].copy_from_slice(&msg_id.to_le_bytes());
        m
    }

    const ALGS: [SigningAlg; 3] = [SigningAlg::HmacSha256, SigningAlg::AesCmac, SigningAlg::AesGmac];

    #[test]
    fn sign_verify_and_every_flipped_byte() {
        for alg in ALGS {
            let s = Signer::new(alg, &h("0f0e0d0c0b0a09080706050403020100"));
            let mut m = message(200, 42, 0, 8);
            s.sign(&mut m);
            assert_eq!(le_u32(&m, 16) & FLAGS_SIGNED, FLAGS_SIGNED);
            assert!(s.verify(&m), "{alg:?}");
            assert!(!Signer::new(alg, &[1; 16]).verify(&m));
            for i in 0..m.len() {
                let mut bad = m.clone();
                bad[i] ^= 0x01;
                assert!(!s.verify(&bad), "{alg:?} byte {i}");
            }
            // Longer or shorter by a byte fails too.
            let mut longer = m.clone();
            longer.push(0);
            assert!(!s.verify(&longer) && !s.verify(&m[..m.len() - 1]));
        }
    }

    #[test]
    fn verify_parts_agrees_with_verify() {
        for alg in ALGS {
            let s = Signer::new(alg, &[3; 16]);
            let mut m = message(1000, 7, 1, 8);
            s.sign(&mut m);
            let mut bad = m.clone();
            bad[900] ^= 0x80;
            for msg in [&m, &bad] {
                let want = s.verify(msg);
                for cut in [0, 1, 10, 48, 63, 64, 65, 100, 999, 1000] {
                    let (a, b) = msg.split_at(cut);
                    assert_eq!(s.verify_parts(&[a, b]), want, "{alg:?} {cut}");
                    for cut2 in [cut, cut + 1, cut + 300] {
                        if cut2 <= msg.len() {
                            let (b1, b2) = msg.split_at(cut2);
                            assert_eq!(s.verify_parts(&[a, &b1[cut..], &[], b2]), want, "{alg:?} {cut} {cut2}");
                        }
                    }
                }
            }
            assert!(s.verify(&m) && !s.verify(&bad));
        }
    }

    #[test]
    fn a_message_signed_with_its_tail_apart_is_signed_as_if_whole() {
        for alg in ALGS {
            let s = Signer::new(alg, &[5; 16]);
            let whole = message(70_000, 9, 0, 8);
            let mut m = whole.clone();
            s.sign(&mut m);
            for cut in [64, 112, 5000, 70_000] {
                let mut head = whole[..cut].to_vec();
                s.sign_with_tail(&mut head, &whole[cut..]);
                assert_eq!(head[..64], m[..64], "{alg:?} {cut}");
                assert!(s.verify_parts(&[&head, &whole[cut..]]), "{alg:?} {cut}");
            }
        }
    }

    #[test]
    fn short_messages() {
        for alg in ALGS {
            let s = Signer::new(alg, &[3; 16]);
            for len in [0, 1, 47, 63] {
                let mut m = vec![0x5A; len];
                s.sign(&mut m);
                assert_eq!(m, vec![0x5A; len]);
                assert!(!s.verify(&m));
                assert!(!s.verify_parts(&[&m, &m[..0]]));
            }
            assert!(!s.verify_parts(&[]));
            // A 64-byte message (header only) signs and verifies.
            let mut m = message(64, 1, 0, 0);
            s.sign(&mut m);
            assert!(s.verify(&m) && s.verify_parts(&[&m[..30], &m[30..]]));
        }
    }

    #[test]
    fn gmac_nonce_response_and_cancel() {
        let req = message(100, 5, 0, 8);
        let resp = message(100, 5, FLAGS_SERVER_TO_REDIR, 8);
        let cancel = message(100, 5, 0, CMD_CANCEL);
        assert_eq!(gmac_nonce(&req), h("050000000000000000000000")[..]);
        assert_eq!(gmac_nonce(&resp), h("050000000000000001000000")[..]);
        assert_eq!(gmac_nonce(&cancel), h("050000000000000002000000")[..]);
        let s = Signer::new(SigningAlg::AesGmac, &[8; 16]);
        let (mut a, mut b, mut c) = (req.clone(), resp.clone(), cancel.clone());
        for m in [&mut a, &mut b, &mut c] {
            s.sign(m);
        }
        assert_ne!(a[48..64], b[48..64]);
        assert_ne!(a[48..64], c[48..64]);
        // The response's signature does not verify as a request's (flags differ only in bit 0).
        b[16] &= !1;
        assert!(!s.verify(&b));
    }

    const CIPHERS: [Cipher; 4] = [Cipher::Aes128Ccm, Cipher::Aes128Gcm, Cipher::Aes256Ccm, Cipher::Aes256Gcm];

    #[test]
    fn seal_open_round_trip_and_tampering() {
        for c in CIPHERS {
            let (k1, k2) = (vec![1u8; c.key_bytes()], vec![2u8; c.key_bytes()]);
            let mut client = Sealer::new(c, &k1, &k2);
            let server = Sealer::new(c, &k2, &k1);
            for len in [0, 1, 64, 1000, 65_536 + 3] {
                let msg: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
                let mut out = Vec::new();
                client.seal(0xABCD, &msg, &mut out);
                assert_eq!(out.len(), 52 + len);
                assert_eq!(out[..4], TRANSFORM_ID);
                assert_eq!(le_u32(&out, 36) as usize, len);
                assert_eq!(le_u16(&out, 42), 1);
                assert_eq!(le_u64(&out, 44), 0xABCD);
                assert_eq!(out[20 + c.nonce_bytes()..36], [0; 16][c.nonce_bytes()..]);
                let mut frame = out.clone();
                let r = server.open(&mut frame).unwrap();
                assert_eq!(frame[r], msg[..], "{c:?} {len}");
                // The client cannot open its own message (other key).
                assert!(client.open(&mut out.clone()).is_err());
                // Every byte of the header from the Signature on, and some of the ciphertext.
                let spots: Vec<usize> = (4..52).chain((52..out.len()).step_by(97.max(len / 8))).collect();
                for i in spots {
                    let mut bad = out.clone();
                    bad[i] ^= 0x10;
                    assert!(server.open(&mut bad).is_err(), "{c:?} {len} byte {i}");
                }
                // Trailing bytes after the message are ignored.
                let mut longer = out.clone();
                longer.extend_from_slice(b"trailing");
                assert_eq!(server.open(&mut longer), Ok(52..52 + len));
            }
        }
    }

    #[test]
    fn open_malformed_never_panics() {
        let s = Sealer::new(Cipher::Aes128Gcm, &[1; 16], &[2; 16]);
        let mut good = Vec::new();
        Sealer::new(Cipher::Aes128Gcm, &[2; 16], &[1; 16]).seal(9, &[7; 100], &mut good);
        for len in 0..good.len() {
            assert!(s.open(&mut good[..len].to_vec()).is_err(), "{len}");
        }
        for (at, value) in [(0, 0xFE), (36, 0xFF), (39, 0x80), (42, 0)] {
            let mut bad = good.clone();
            bad[at] = value;
            assert!(s.open(&mut bad).is_err(), "{at}");
        }
        let mut huge = good.clone();
        huge[36..40].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(s.open(&mut huge).is_err());
        assert!(s.open(&mut good).is_ok());
    }

    #[test]
    fn nonces_never_repeat() {
        let mut seen = std::collections::HashSet::new();
        for c in CIPHERS {
            for _ in 0..2 {
                let mut s = Sealer::new(c, &[5; 32], &[6; 32]);
                for _ in 0..100 {
                    let mut out = Vec::new();
                    s.seal(1, b"x", &mut out);
                    assert!(seen.insert(out[20..36].to_vec()));
                }
            }
        }
    }

    #[test]
    fn names_and_ids() {
        assert_eq!(SigningAlg::HmacSha256.name(), "HMAC-SHA256");
        assert_eq!(SigningAlg::AesCmac.name(), "AES-128-CMAC");
        assert_eq!(SigningAlg::AesGmac.name(), "AES-128-GMAC");
        assert_eq!(SigningAlg::from_id(2), Some(SigningAlg::AesGmac));
        assert_eq!(SigningAlg::from_id(3), None);
        for c in CIPHERS {
            assert_eq!(Cipher::from_id(c as u16), Some(c));
        }
        assert_eq!(Cipher::from_id(0), None);
        assert_eq!(Cipher::from_id(5), None);
        assert_eq!((Cipher::Aes128Gcm.key_bytes(), Cipher::Aes256Ccm.key_bytes()), (16, 32));
        assert_eq!(Cipher::Aes256Gcm.name(), "AES-256-GCM");
        assert_eq!(Cipher::Aes128Ccm.name(), "AES-128-CCM");
    }
}
