//! `ioscope probe` (in progress): samplers of what the target does, per second. So far the
//! procfs readers ([`procfs`]).

pub mod procfs;
