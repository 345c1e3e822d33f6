//! What a stream's task will touch at its next poll, asked for in the cache before that poll.
//!
//! At thousands of streams a stream's state is cold each time its socket wakes it (its last
//! event was tens of milliseconds ago), and each line it touches waits for the last one to
//! arrive. The task's own future is asked for whole when it is polled (`drive::warm`). The
//! memory an event touches outside it is on the heap: the read buffer the kernel copies the
//! bytes into, the end of the chunk times' vector, the end of the text kept for the tokenizer.
//! Their addresses are known one event ahead, so the code that touches them notes where the
//! next event will ([`note`]) in the task's [`Ahead`], and the task asks for those lines with
//! its own before its next poll ([`Ahead::polling`]): the misses (and their page walks) overlap
//! instead of following one another. A note is a hint: a stale or wrong address costs one
//! wasted prefetch, never a fault or a wrong result.

use std::cell::Cell;

/// Where a note goes: each kind keeps its latest address.
#[derive(Clone, Copy, Debug)]
pub enum Slot {
    /// The start of the read buffer (the kernel writes the next read there).
    Read,
    /// Where the next chunk time is written.
    Times,
    /// Where the next piece of text is kept.
    Text,
}

/// Lines of the read buffer asked for: an event of a streamed answer with its chunk framing
/// is 150-300 bytes.
const READ_LINES: usize = 4;

const LINE: usize = 64;

/// The addresses a task noted during its last poll, by [`Slot`]; 0: none. Kept as integers so
/// the task stays `Send`.
#[derive(Debug, Default)]
pub struct Ahead([usize; 3]);

thread_local! {
    /// The [`Ahead`] of the task being polled on this thread, if it keeps one.
    static POLLING: Cell<*mut Ahead> = const { Cell::new(std::ptr::null_mut()) };
}

/// Notes that the task being polled will touch `at` at its next poll (nothing when the task
/// keeps no [`Ahead`]).
#[inline]
pub fn note(slot: Slot, at: *const u8) {
    POLLING.with(|p| {
        let ahead = p.get();
        if !ahead.is_null() {
            // SAFETY: `POLLING` holds a pointer only while `Ahead::polling` runs on this thread,
            // with the `Ahead` borrowed mutably by it and touched by nothing else meanwhile.
            unsafe { (*ahead).0[slot as usize] = at as usize };
        }
    });
}

impl Ahead {
    /// Asks for the lines noted at the last poll, then runs `poll` with this `Ahead` taking
    /// the notes.
    pub fn polling<R>(&mut self, poll: impl FnOnce() -> R) -> R {
        for (slot, &at) in self.0.iter().enumerate() {
            if at != 0 {
                let lines = if slot == Slot::Read as usize {
                    READ_LINES
                } else {
                    1
                };
                prefetch(at as *const u8, lines * LINE);
            }
        }
        /// Puts back the task polled before (none: tasks do not nest), also if `poll` panics.
        struct Restore(*mut Ahead);
        impl Drop for Restore {
            fn drop(&mut self) {
                POLLING.with(|p| p.set(self.0));
            }
        }
        let _restore = Restore(POLLING.with(|p| p.replace(self)));
        poll()
    }
}

/// Asks for the `len` bytes at `at` in the cache, a line at a time; a hint only (a prefetch
/// never faults, whatever the address).
pub fn prefetch(at: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..len).step_by(LINE) {
        // SAFETY: a prefetch reads nothing into the program and never faults; `wrapping_add`
        // keeps the address arithmetic defined for any `at`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                at.wrapping_add(off).cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Notes reach the task being polled, the latest per slot, and no other: outside a poll
    /// nothing is kept, and a poll that panics leaves no task noted.
    #[test]
    fn notes_go_to_the_task_being_polled() {
        let (a, b) = ([0u8; 8], [0u8; 8]);
        note(Slot::Times, a.as_ptr());
        let mut ahead = Ahead::default();
        assert_eq!(ahead.0, [0; 3]);
        ahead.polling(|| {
            note(Slot::Times, a.as_ptr());
            note(Slot::Times, b.as_ptr());
            note(Slot::Read, a.as_ptr());
        });
        assert_eq!(ahead.0[Slot::Times as usize], b.as_ptr() as usize);
        assert_eq!(ahead.0[Slot::Read as usize], a.as_ptr() as usize);
        assert_eq!(ahead.0[Slot::Text as usize], 0);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ahead.polling(|| panic!("a task's poll panicked"))
        }));
        assert!(caught.is_err());
        assert!(POLLING.with(|p| p.get().is_null()));
        // The noted lines are asked for at the next poll, stale or not: nothing faults.
        ahead.0[Slot::Text as usize] = usize::MAX - 8;
        assert_eq!(ahead.polling(|| 7), 7);
    }
}
