//! Reading a long entry body on a second core while this one lowers it.
//!
//! The entry's body is lowered as it is read (`Lowerer::lower_streamed`), and until
//! code generation the compile's other cores are idle. So for a long body a pool worker
//! reads the ops, a chunk at a time, and hands the chunks over in order; the calling
//! thread lowers each one as it arrives and hands it back, so syntax trees are freed on
//! the thread (and in the allocator arena) that made them, and the reader keeps reusing
//! the same memory instead of faulting in more.
//!
//! Whoever holds the cursor reads: when nothing is waiting to be lowered, the lowering
//! thread reads the next chunk itself, after the one the worker may be reading. So a
//! worker that starts late (or never) only costs parallelism, and the ops, their order
//! and the first error are the ones one thread would find: chunks are lowered in the
//! order they were read, a read error is met after every op before it, and a lowering
//! error stops the reader.

use super::ast::OpAst;
use super::lexer::Cursor;
use super::reader;
use crate::parse::ParseError;
use crate::targets::pool;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Bodies shorter than this are read and lowered on one thread: a few layers of a model
/// at least, where the hand-over's start (waking a worker) is small against the reading.
pub const MIN_BYTES: usize = 32 * 1024;

/// Ops per chunk: a chunk takes tens of microseconds to read, so a hand-over (a lock,
/// no wake-up) is noise, and the lowering thread waits at most that long.
const CHUNK: usize = 16;

/// How long the lowering thread polls for the chunk the worker is reading before it
/// blocks on the cursor (a chunk's reading, with room for a slow one).
const POLL: Duration = Duration::from_micros(300);

/// What the reader has handed over.
#[derive(Default)]
struct Handed {
    /// Chunks read and not lowered yet, in order.
    chunks: VecDeque<Vec<OpAst>>,
    /// The reading's end, once met: the closing brace (Ok) or the first read error.
    /// Nothing is read after it.
    end: Option<Result<(), ParseError>>,
    /// Chunks lowered, for the reader to free and reuse.
    spent: Vec<Vec<OpAst>>,
}

struct Handoff<'c, 'a> {
    cursor: Mutex<&'c mut Cursor<'a>>,
    handed: Mutex<Handed>,
    /// Chunks handed over so far (polled without the lock).
    count: AtomicUsize,
    /// The lowering failed: the worker stops at its next chunk.
    stop: AtomicBool,
}

/// Reads ops from `c` (in a body, after its `{`) up to and including the closing `}`,
/// calling `lower` on each in order, as `while let Some(op) = next_op(c)? { lower(&op)? }`
/// would, with the reading on a pool worker where one is free.
pub fn read_and_lower(
    c: &mut Cursor<'_>,
    mut lower: impl FnMut(&OpAst) -> Result<(), ParseError>,
) -> Result<(), ParseError> {
    let h = Handoff {
        cursor: Mutex::new(c),
        handed: Mutex::new(Handed::default()),
        count: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    };
    pool::beside(&|| h.read_ahead(), || h.lower_all(&mut lower))
}

/// Reads up to [`CHUNK`] ops into `into`; the reading's end if it was met.
fn read_chunk(c: &mut Cursor, into: &mut Vec<OpAst>) -> Option<Result<(), ParseError>> {
    while into.len() < CHUNK {
        match reader::next_op(c) {
            Ok(Some(op)) => into.push(op),
            Ok(None) => return Some(Ok(())),
            Err(e) => return Some(Err(e)),
        }
    }
    None
}

impl Handoff<'_, '_> {
    fn handed(&self) -> MutexGuard<'_, Handed> {
        self.handed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The worker's side: chunks until the end, a stop, or the lowering thread's
    /// having read to the end itself.
    fn read_ahead(&self) {
        let mut free: Vec<Vec<OpAst>> = Vec::new();
        loop {
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            let mut c = self.cursor.lock().unwrap_or_else(|e| e.into_inner());
            if self.handed().end.is_some() {
                return;
            }
            let mut chunk = free.pop().unwrap_or_else(|| Vec::with_capacity(CHUNK));
            let end = read_chunk(&mut c, &mut chunk);
            // Handed over before the cursor is free, so whoever takes the cursor next
            // finds this chunk queued first.
            let spent = {
                let mut handed = self.handed();
                handed.chunks.push_back(chunk);
                handed.end = end;
                std::mem::take(&mut handed.spent)
            };
            self.count.fetch_add(1, Ordering::Release);
            drop(c);
            // Freed here, where they were made.
            for mut chunk in spent {
                chunk.clear();
                free.push(chunk);
            }
        }
    }

    /// The calling thread's side: lowers chunks in order until the end.
    fn lower_all(&self, lower: &mut impl FnMut(&OpAst) -> Result<(), ParseError>) -> Result<(), ParseError> {
        let mut lowered = 0;
        loop {
            let next = {
                let mut handed = self.handed();
                match handed.chunks.pop_front() {
                    Some(chunk) => Ok(chunk),
                    None => Err(handed.end.clone()),
                }
            };
            let (chunk, from_worker) = match next {
                Ok(chunk) => {
                    lowered += 1;
                    (chunk, true)
                }
                Err(Some(end)) => return end,
                Err(None) => match self.read_here(lowered) {
                    Some(chunk) => (chunk, false),
                    None => continue,
                },
            };
            if let Err(e) = chunk.iter().try_for_each(&mut *lower) {
                self.stop.store(true, Ordering::Release);
                return Err(e);
            }
            if from_worker {
                self.handed().spent.push(chunk);
            }
        }
    }

    /// Nothing is queued: reads the next chunk on this thread, once the worker (if it is
    /// reading one) has handed its chunk over; None if it has, to be lowered first.
    fn read_here(&self, lowered: usize) -> Option<Vec<OpAst>> {
        let deadline = Instant::now() + POLL;
        let mut c = loop {
            if let Ok(c) = self.cursor.try_lock() {
                break c;
            }
            if self.count.load(Ordering::Acquire) > lowered {
                return None;
            }
            if Instant::now() >= deadline {
                break self.cursor.lock().unwrap_or_else(|e| e.into_inner());
            }
            std::hint::spin_loop();
        };
        let mut handed = self.handed();
        if !handed.chunks.is_empty() || handed.end.is_some() {
            return None;
        }
        drop(handed);
        let mut chunk = Vec::with_capacity(CHUNK);
        let end = read_chunk(&mut c, &mut chunk);
        handed = self.handed();
        // The worker sees the end and stops; the chunk's ops come first.
        handed.end = end;
        Some(chunk)
    }
}
