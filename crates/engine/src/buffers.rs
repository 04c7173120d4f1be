//! Aligned I/O buffers, one per in-flight slot, allocated once before the run.
//! Write buffers hold random (non-zero, incompressible) bytes.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Alignment that satisfies O_DIRECT on common devices and file systems.
pub const ALIGN: usize = 4096;

/// `slots` buffers of `len` bytes each, every one aligned to [`ALIGN`].
pub struct IoBuffers {
    ptr: *mut u8,
    layout: Layout,
    stride: usize,
    slots: usize,
}

// The buffers are owned memory; the pointer is not shared across threads.
unsafe impl Send for IoBuffers {}

impl IoBuffers {
    /// Allocates and fills the buffers with random bytes from `seed`.
    pub fn new(slots: usize, len: usize, seed: u64) -> Self {
        let stride = len.max(1).div_ceil(ALIGN) * ALIGN;
        let layout = Layout::from_size_align(stride * slots.max(1), ALIGN).expect("buffer layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory allocating I/O buffers");
        let mut b = Self { ptr, layout, stride, slots: slots.max(1) };
        fill_random(b.all_mut(), seed);
        b
    }

    pub fn slots(&self) -> usize {
        self.slots
    }
    /// Bytes per slot (a multiple of [`ALIGN`]).
    pub fn slot_len(&self) -> usize {
        self.stride
    }

    /// The buffer of one slot.
    #[inline(always)]
    pub fn slot(&mut self, slot: u32) -> &mut [u8] {
        let slot = slot as usize;
        assert!(slot < self.slots);
        // SAFETY: in bounds of the allocation; &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(slot * self.stride), self.stride) }
    }

    /// Raw pointer to a slot's buffer, for engines that hand it to the kernel.
    #[inline(always)]
    pub fn slot_ptr(&self, slot: u32) -> *mut u8 {
        assert!((slot as usize) < self.slots);
        // SAFETY: in bounds of the allocation.
        unsafe { self.ptr.add(slot as usize * self.stride) }
    }

    fn all_mut(&mut self) -> &mut [u8] {
        // SAFETY: the whole allocation, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }
}

impl Drop for IoBuffers {
    fn drop(&mut self) {
        // SAFETY: allocated in new() with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Fills `buf` with pseudo-random bytes (wyrand). Never all zero, not compressible.
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut state = seed ^ 0x2545_f491_4f6c_dd1d;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&wyrand(&mut state).to_le_bytes());
    }
    let tail = chunks.into_remainder();
    let last = wyrand(&mut state).to_le_bytes();
    let n = tail.len();
    tail.copy_from_slice(&last[..n]);
}

/// One step of wyrand: fast, good enough for data and offsets.
#[inline(always)]
pub fn wyrand(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0xa076_1d64_78bd_642f);
    let t = (*state as u128).wrapping_mul((*state ^ 0xe703_7ed1_a0b4_28db) as u128);
    (t as u64) ^ ((t >> 64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_aligned_and_random() {
        let mut b = IoBuffers::new(3, 5000, 7);
        assert_eq!(b.slot_len(), 8192);
        for s in 0..3 {
            assert_eq!(b.slot_ptr(s) as usize % ALIGN, 0);
            let zeros = b.slot(s).iter().filter(|x| **x == 0).count();
            assert!(zeros < 8192 / 64, "slot {s} has {zeros} zero bytes");
        }
        let first = b.slot(0)[..64].to_vec();
        assert_ne!(first, b.slot(1)[..64]);
    }
}
