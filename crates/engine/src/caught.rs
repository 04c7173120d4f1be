//! Panics a caller catches. An engine that hands a peer's bytes to a library it cannot
//! check (the `smb` crate copies a READ reply into the buffer without comparing lengths)
//! runs that library through [`catching`]: a panic there becomes an error of the one call,
//! counted like any failure of the target. The program's panic hook (src/main.rs), which
//! ends the process on any other panic, lets such a panic unwind ([`is_catching`]).

use std::any::Any;
use std::cell::Cell;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread is inside [`catching`]: a panic here is caught by the caller.
pub fn is_catching() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// Runs `f`; a panic in it is returned as its message instead of unwinding further.
pub fn catching<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    DEPTH.with(|d| d.set(d.get().saturating_add(1)));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    r.map_err(|p| message(p.as_ref()))
}

/// A panic's payload as text.
pub fn message(payload: &(dyn Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => s.to_string(),
        (_, Some(s)) => s.clone(),
        _ => "a panic without a message".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_is_its_message_and_the_thread_is_marked_only_meanwhile() {
        assert!(!is_catching());
        let r: Result<(), String> = catching(|| {
            assert!(is_catching());
            let v: Vec<u8> = vec![0; 4];
            let n = v.len() + 4; // a reply longer than the buffer
            let _ = &v[..n];
        });
        assert!(r.unwrap_err().contains("out of range"));
        assert!(!is_catching());
        assert_eq!(catching(|| catching(|| 7)), Ok(Ok(7)));
        assert!(!is_catching());
    }
}
