//! How a kernel's range is cut into pieces for threads: one rule for every target that
//! splits a kernel across cores (the CPU target's pool, the WebAssembly target's
//! instances), so the same program splits the same way on both.

/// Iterations of a kernel below which it runs on one thread: handing a range to another
/// thread costs a few microseconds, about what this much simple elementwise work takes.
pub const PARALLEL_WORK: u64 = 1 << 16;

/// `0..extent` of a kernel's parallel variable cut into [`Split::count`] pieces of `per`
/// iterations (the last may be shorter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    per: u64,
    pub count: u64,
    extent: u64,
}

impl Split {
    /// The split of a kernel of `work` iterations over `0..extent` for `threads` threads,
    /// `per_thread` pieces each, taken one at a time (a thread slowed down by other work
    /// on its core takes fewer instead of holding up the kernel with its share). None
    /// when one thread should run it all: one thread, a range of one, or too little work.
    pub fn of(extent: u64, work: u64, threads: u64, per_thread: u64) -> Option<Split> {
        if threads < 2 || work < PARALLEL_WORK || extent < 2 {
            return None;
        }
        let n = threads.saturating_mul(per_thread).clamp(1, extent);
        let mut per = extent.div_ceil(n);
        // Pieces of whole vector steps where the range allows (fewer scalar tails).
        if per > 32 {
            per = per.div_ceil(32) * 32;
        }
        Some(Split { per, count: extent.div_ceil(per), extent })
    }

    /// The split with pieces of whole steps of `step` iterations (the last may end at the
    /// extent between two): for code that has no path for part of a step (the
    /// WebAssembly target's vector loops without a scalar tail).
    pub fn in_steps(self, step: u64) -> Split {
        let per = self.per.next_multiple_of(step.max(1));
        Split { per, count: self.extent.div_ceil(per), extent: self.extent }
    }

    /// Piece `i` (below [`Split::count`]): `[begin, end)`.
    pub fn piece(&self, i: u64) -> (u64, u64) {
        (i * self.per, ((i + 1) * self.per).min(self.extent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_range_once_in_whole_vector_steps() {
        let s = Split::of(1000, 1 << 20, 2, 4).expect("large enough to split");
        let pieces: Vec<_> = (0..s.count).map(|i| s.piece(i)).collect();
        assert_eq!(
            pieces,
            [(0, 128), (128, 256), (256, 384), (384, 512), (512, 640), (640, 768), (768, 896), (896, 1000)]
        );
        assert_eq!(Split::of(1000, PARALLEL_WORK - 1, 2, 4), None);
        assert_eq!(Split::of(1000, 1 << 20, 1, 4), None);
        let few = Split::of(3, 1 << 20, 2, 4).expect("three rows of much work");
        assert_eq!((0..few.count).map(|i| few.piece(i)).collect::<Vec<_>>(), [(0, 1), (1, 2), (2, 3)]);
    }

    #[test]
    fn pieces_in_steps_start_and_end_on_a_step_or_at_the_extent() {
        // 40 iterations in 8 pieces of 5, then in steps of 4: pieces of 8.
        let s = Split::of(40, 1 << 20, 2, 4).expect("large enough to split").in_steps(4);
        let pieces: Vec<_> = (0..s.count).map(|i| s.piece(i)).collect();
        assert_eq!(pieces, [(0, 8), (8, 16), (16, 24), (24, 32), (32, 40)]);
        let odd = Split::of(42, 1 << 20, 2, 4).expect("large enough to split").in_steps(4);
        assert_eq!(odd.piece(odd.count - 1), (40, 42));
        // Already whole steps: unchanged.
        let whole = Split::of(1000, 1 << 20, 2, 4).expect("large enough to split");
        assert_eq!(whole.in_steps(4), whole);
    }
}
