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
}
