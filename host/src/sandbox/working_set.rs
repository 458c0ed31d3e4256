//! Keeping a call's working set of linear memory mapped for the next
//! instance of the same component.
//!
//! A fresh instance maps its component's memory image copy-on-write, so a
//! call pays a page fault for each page it first touches (for CPython, ~200
//! per call). When the instance is dropped, wasmtime resets the pages the
//! call wrote and keeps them mapped for the next instance in that pool
//! slot, but only the first 32 runs of such pages (one `PAGEMAP_SCAN`
//! buffer); everything past the 32nd run is unmapped again, written and
//! read pages alike, and faults again in the next call. A CPython call
//! writes some 180 scattered runs.
//!
//! So before a used instance is dropped (off the call's path, by the spare
//! instances' task), [`keep`] reads which pages of its memory the call
//! wrote and writes the smallest gaps between them too (`MADV_POPULATE_WRITE`,
//! which copies a page without changing a byte), until they form at most
//! [`MAX_RUNS`] runs. wasmtime then resets every one of those pages and
//! keeps them mapped, with the pages the call only read, and the next call
//! on that slot, which touches much the same pages, takes almost no faults.
//! What an instance sees is unchanged: wasmtime still resets every page
//! that differs from the image.
//!
//! Linux only (`PAGEMAP_SCAN` is 6.7+, `MADV_POPULATE_WRITE` 5.14+);
//! elsewhere, or when the kernel refuses, nothing happens.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Where an instance's linear memory lies in the host's address space, as
/// the canonical ABI saw it when a call's arguments were written into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemorySpan {
    pub(crate) base: usize,
    pub(crate) len: usize,
}

/// Most runs of written pages wasmtime keeps mapped at a reset (its
/// `PAGEMAP_SCAN` buffer holds 32); one is left for a run the call's own
/// tail (its stack, a grown heap) may add.
pub(crate) const MAX_RUNS: usize = 31;

/// Most bytes of linear memory an instance keeps mapped when it is reset
/// (wasmtime's `linear_memory_keep_resident`); [`keep`] writes no gap that
/// would take the kept pages past it.
pub(crate) const KEEP_RESIDENT: usize = 8 << 20;

/// Most gap pages written per instance, as a multiple of the pages the call
/// wrote itself: each one is copied back at every reset (off the call's
/// path, by the spare instances' task).
const MAX_FILL_FACTOR: usize = 8;

/// Runs of pages (page index, count) that, written, join `written` into at
/// most `max_runs` runs, filling the smallest gaps first, with at most
/// `max_fill` pages and `max_total` pages in all; empty when that is not
/// possible (then filling would only cost).
fn gaps_to_fill(
    written: &[(usize, usize)],
    max_runs: usize,
    max_fill: usize,
    max_total: usize,
) -> Vec<(usize, usize)> {
    if written.len() <= max_runs {
        return Vec::new();
    }
    let mut gaps: Vec<(usize, usize)> = written
        .windows(2)
        .map(|w| {
            let end = w[0].0 + w[0].1;
            (end, w[1].0.saturating_sub(end))
        })
        .filter(|&(_, len)| len > 0)
        .collect();
    gaps.sort_unstable_by_key(|&(start, len)| (len, start));
    let joins = written.len() - max_runs;
    let Some(chosen) = gaps.get(..joins) else {
        return Vec::new();
    };
    let fill: usize = chosen.iter().map(|&(_, len)| len).sum();
    let total = fill + written.iter().map(|&(_, len)| len).sum::<usize>();
    if fill > max_fill || total > max_total {
        return Vec::new();
    }
    chosen.to_vec()
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{KEEP_RESIDENT, MAX_FILL_FACTOR, MAX_RUNS, MemorySpan, gaps_to_fill};

    /// `struct pm_scan_arg` of `linux/fs.h`.
    #[repr(C)]
    struct PmScanArg {
        size: u64,
        flags: u64,
        start: u64,
        end: u64,
        walk_end: u64,
        vec: u64,
        vec_len: u64,
        max_pages: u64,
        category_inverted: u64,
        category_mask: u64,
        category_anyof_mask: u64,
        return_mask: u64,
    }

    /// `struct page_region` of `linux/fs.h`.
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct PageRegion {
        start: u64,
        end: u64,
        categories: u64,
    }

    const PAGE_IS_WRITTEN: u64 = 1 << 1;
    const PAGE_IS_FILE: u64 = 1 << 2;
    const PAGE_IS_PRESENT: u64 = 1 << 3;
    const PAGE_IS_PFNZERO: u64 = 1 << 5;
    /// `_IOWR('f', 16, struct pm_scan_arg)`.
    const PAGEMAP_SCAN: libc::c_ulong =
        (3 << 30) | (96 << 16) | ((b'f' as libc::c_ulong) << 8) | 16;
    const _: () = assert!(size_of::<PmScanArg>() == 96);

    /// Most runs one scan reports: far more than [`MAX_RUNS`], so that the
    /// gaps chosen are the smallest of the whole memory.
    const SCAN_RUNS: usize = 1024;

    fn page_size() -> usize {
        // SAFETY: sysconf has no preconditions.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
    }

    /// This process's page map, opened once; `None` when it cannot be read.
    fn pagemap() -> Option<&'static std::fs::File> {
        static PAGEMAP: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
        PAGEMAP
            .get_or_init(|| std::fs::File::open("/proc/self/pagemap").ok())
            .as_ref()
    }

    /// The runs of pages in `span` written since they were mapped (present,
    /// private, not the zero page): what wasmtime resets. `None` when the
    /// kernel cannot say, or there are more than [`SCAN_RUNS`].
    pub(super) fn written_runs(span: MemorySpan, page: usize) -> Option<Vec<(usize, usize)>> {
        use std::os::fd::AsRawFd;
        let file = pagemap()?;
        let mut regions = vec![PageRegion::default(); SCAN_RUNS];
        let end = span.base.checked_add(span.len)?;
        let mut arg = PmScanArg {
            size: size_of::<PmScanArg>() as u64,
            flags: 0,
            start: span.base as u64,
            end: end as u64,
            walk_end: 0,
            vec: regions.as_mut_ptr() as u64,
            vec_len: regions.len() as u64,
            max_pages: 0,
            category_inverted: PAGE_IS_PFNZERO | PAGE_IS_FILE,
            category_mask: PAGE_IS_WRITTEN | PAGE_IS_PRESENT | PAGE_IS_PFNZERO | PAGE_IS_FILE,
            category_anyof_mask: 0,
            return_mask: 0,
        };
        // SAFETY: `arg` is a valid `pm_scan_arg` whose output vector is
        // `regions`, alive and writable for `vec_len` entries; the scan only
        // reads page tables.
        let found = unsafe { libc::ioctl(file.as_raw_fd(), PAGEMAP_SCAN as _, &raw mut arg) };
        let found = usize::try_from(found).ok()?;
        if arg.walk_end < end as u64 {
            // Out of room for regions: the picture would be partial.
            return None;
        }
        Some(
            regions[..found.min(SCAN_RUNS)]
                .iter()
                .map(|r| {
                    let start = (r.start as usize - span.base) / page;
                    (start, (r.end - r.start) as usize / page)
                })
                .collect(),
        )
    }

    /// Join `span`'s written pages into at most [`MAX_RUNS`] runs; the
    /// number of runs the call wrote, `None` when the kernel cannot scan.
    pub(super) fn keep(span: MemorySpan) -> Option<usize> {
        let page = page_size();
        let written = written_runs(span, page)?;
        let dirty: usize = written.iter().map(|&(_, len)| len).sum();
        let fill = gaps_to_fill(
            &written,
            MAX_RUNS,
            dirty * MAX_FILL_FACTOR,
            KEEP_RESIDENT / page,
        );
        tracing::debug!(
            runs = written.len(),
            pages = dirty,
            filled = fill.iter().map(|&(_, len)| len).sum::<usize>(),
            "joining the pages a call wrote"
        );
        for (start, len) in fill {
            // SAFETY: the range lies between two written runs of the
            // instance's own memory, which is mapped read-write while its
            // store lives (the caller holds it) and runs no code now;
            // MADV_POPULATE_WRITE only faults pages in as if written, and
            // changes no byte.
            let rc = unsafe {
                libc::madvise(
                    (span.base + start * page) as *mut libc::c_void,
                    len * page,
                    libc::MADV_POPULATE_WRITE,
                )
            };
            if rc != 0 {
                break;
            }
        }
        Some(written.len())
    }
}

/// After this many instances whose calls wrote few enough runs, a
/// component's next one is scanned again (a scan costs a few µs, a good
/// part of a small guest's call).
const RECHECK_EVERY: u32 = 64;

/// What the host has seen of one component's calls: whether their written
/// pages need joining before an instance is dropped.
#[derive(Debug, Default)]
pub(crate) struct WorkingSet {
    /// Instances to drop without a look, since the last scan found few
    /// enough runs (or found the kernel unable to scan).
    skip: AtomicU32,
    /// Set once a call wrote too many runs: from then on every instance is
    /// looked at, since the state is per pool slot and a slot joined
    /// earlier looks fine while the next slot may not be.
    joins: AtomicBool,
}

impl WorkingSet {
    /// Before an instance whose linear memory is `span` is dropped: join the
    /// pages its calls wrote into few enough runs that wasmtime keeps them
    /// all mapped for the next instance in the slot (see the module's
    /// docs). Components whose calls write few runs are only looked at now
    /// and then.
    ///
    /// # Safety
    ///
    /// `span` is the linear memory of an instance whose store is alive for
    /// the whole call, and no code runs in that store meanwhile.
    pub(crate) unsafe fn keep(&self, span: MemorySpan) {
        if self
            .skip
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
        {
            return;
        }
        #[cfg(target_os = "linux")]
        let runs = linux::keep(span);
        #[cfg(not(target_os = "linux"))]
        let runs: Option<usize> = {
            let _ = span;
            None
        };
        let skip = match runs {
            Some(runs) if runs > MAX_RUNS => {
                self.joins.store(true, Ordering::Relaxed);
                0
            }
            Some(_) if self.joins.load(Ordering::Relaxed) => 0,
            Some(_) => RECHECK_EVERY,
            None => u32::MAX,
        };
        self.skip.store(skip, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_runs_need_no_filling() {
        assert!(gaps_to_fill(&[(0, 1), (5, 2)], 2, 100, 100).is_empty());
    }

    #[test]
    fn the_smallest_gaps_are_filled_first() {
        // Gaps: 3 pages at 1, 1 page at 6, 10 pages at 8.
        let written = [(0, 1), (4, 2), (7, 1), (18, 1)];
        assert_eq!(gaps_to_fill(&written, 3, 100, 100), vec![(6, 1)]);
        assert_eq!(gaps_to_fill(&written, 2, 100, 100), vec![(6, 1), (1, 3)]);
    }

    /// On a real private mapping: scattered written pages are joined into
    /// few enough runs, and no byte changes.
    #[cfg(target_os = "linux")]
    #[test]
    fn scattered_writes_end_up_in_few_runs_with_their_bytes_intact() {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let pages = 512;
        // SAFETY: a fresh private anonymous mapping, unmapped below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let base = base as usize;
        // 40 written pages: 35 one page apart, then 5 fifty pages apart.
        let written: Vec<usize> = (0..35)
            .map(|i| i * 2)
            .chain((0..5).map(|i| 120 + i * 50))
            .collect();
        for (n, &p) in written.iter().enumerate() {
            // SAFETY: inside the mapping.
            unsafe { *((base + p * page) as *mut u8) = n as u8 + 1 };
        }
        let span = MemorySpan {
            base,
            len: pages * page,
        };
        let Some(before) = linux::written_runs(span, page) else {
            eprintln!("this kernel has no PAGEMAP_SCAN (Linux 6.7+): nothing to keep");
            return;
        };
        assert_eq!(before.len(), 40, "{before:?}");
        // SAFETY: the mapping is alive and nothing else uses it.
        unsafe { WorkingSet::default().keep(span) };
        let after = linux::written_runs(span, page).unwrap();
        assert!(after.len() <= MAX_RUNS, "{} runs: {after:?}", after.len());
        let kept: usize = after.iter().map(|&(_, len)| len).sum();
        assert_eq!(kept, 40 + 9, "nine one-page gaps filled: {after:?}");
        for (n, &p) in written.iter().enumerate() {
            // SAFETY: inside the mapping.
            assert_eq!(unsafe { *((base + p * page) as *const u8) }, n as u8 + 1);
        }
        for gap in [1, 3, 15] {
            // SAFETY: inside the mapping.
            assert_eq!(unsafe { *((base + gap * page) as *const u8) }, 0);
        }
        // SAFETY: mapped above, used no more.
        unsafe { libc::munmap(base as *mut libc::c_void, pages * page) };
    }

    #[test]
    fn no_filling_past_the_budgets() {
        let written = [(0, 1), (4, 2), (7, 1), (18, 1)];
        assert!(gaps_to_fill(&written, 1, 13, 100).is_empty(), "fill budget");
        assert!(
            gaps_to_fill(&written, 1, 100, 10).is_empty(),
            "total budget"
        );
        assert_eq!(gaps_to_fill(&written, 1, 14, 19).len(), 3);
    }
}
