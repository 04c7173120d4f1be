//! Data validation. Every block ioscope writes with verification on carries a header
//! ([`header`]): who wrote it (run, file, offset), which write of that block it was (its
//! generation) and a checksum of the whole block. Reads check the header against what the
//! run knows of the block ([`state`]): the oldest generation it may still hold, the newest
//! ever issued to it. A block that disagrees is a mismatch of one kind ([`check::Kind`]):
//! checksum, torn, header-destroyed, misplaced, stale, unissued, zeroed or truncated.
//!
//! The core loop stamps and checks the blocks of its own buffers; the only I/O here is
//! the journal's ([`journal`]), which keeps every block's floors across a crash.

pub mod check;
pub mod header;
pub mod journal;
pub mod recheck;
pub mod sink;
pub mod state;

pub use check::{check, Expect, Kind, Mismatch, Outcome};
pub use header::{Header, HEADER_LEN, MIN_BLOCK_LEN};
pub use sink::Sink;
pub use state::{BlockStates, Snapshot};
