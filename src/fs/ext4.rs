//! ext4 as the journal and the block layer see it (fs/ext4/, v6.5 unless
//! said otherwise; reference §4.2–§5.7): the mount options, and per file
//! what dirties metadata in the running transaction:
//! - a write changes mtime/ctime at most once per timestamp tick
//!   (`file_modified` → `ext4_dirty_inode`: the inode's table block);
//! - writeback maps delayed-allocation blocks (`delalloc`, the default) or
//!   converts unwritten (fallocated) extents: inode block, the extent-tree
//!   leaf once the inode's four in-inode extents are used up, and for a
//!   fresh allocation the group's block bitmap and group descriptor;
//!   data=ordered attaches the range to the transaction;
//! - a read updates atime under `relatime` only when atime ≤ mtime, under
//!   `strictatime` once per tick, never under `noatime`.
//!
//! `ext4_sync_file` then asks: which tid must commit for this fsync
//! (`i_sync_tid`, or `i_datasync_tid` for fdatasync), and does it still
//! need a flush of its own.
//!
//! Files: fio lays a file out with data when a job reads it (it must
//! exist), and with `fallocate` (unwritten extents) when jobs only write it
//! (fio's `fallocate=native` default); so a write job's pages convert at
//! their first writeback, as on the real file system.

use super::jbd2::{Journal, Tid};
use crate::sim::time::{self, Ns};
use std::collections::BTreeMap;

/// `data=` journaling mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataMode {
    Ordered,
    Writeback,
}

/// Access-time updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Atime {
    Relatime,
    Noatime,
    Strictatime,
}

/// The ext4 mount options the model knows (`mount -o`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountOptions {
    pub data: DataMode,
    /// `barrier` (default) / `nobarrier`, `barrier=0|1`.
    pub barrier: bool,
    /// `commit=N` seconds (0: the default 5 s).
    pub commit_secs: u64,
    pub journal_async_commit: bool,
    pub atime: Atime,
    /// `inode_readahead_blks=N` (power of two ≤ 2^30, default 32): kept for
    /// the record; the model's files are open before the run, so it reads
    /// no inode tables.
    pub inode_readahead_blks: u64,
    /// Valid options the model does not use (noted, as fio's ignored
    /// options are): `mount -o` takes them, the lab passes them on.
    pub not_modelled: Vec<String>,
}

/// ext4 and VFS mount options that change nothing the model simulates:
/// extended attributes and ACLs, error behaviour, checksums and
/// validity checks, inode-table initialisation, the allocator's tuning,
/// directory atime, `lazytime` (the model's timestamps reach the journal
/// at once), online `discard` at delete, and `dioread_nolock` (6.x's
/// default).
const NOT_MODELLED: &[&str] = &[
    "acl",
    "noacl",
    "user_xattr",
    "nouser_xattr",
    "errors",
    "nodiratime",
    "diratime",
    "lazytime",
    "nolazytime",
    "discard",
    "nodiscard",
    "dioread_nolock",
    "dioread_lock",
    "journal_checksum",
    "nojournal_checksum",
    "auto_da_alloc",
    "noauto_da_alloc",
    "block_validity",
    "noblock_validity",
    "init_itable",
    "noinit_itable",
    "i_version",
    "nombcache",
    "stripe",
    "max_batch_time",
    "min_batch_time",
    "journal_ioprio",
    "resuid",
    "resgid",
    "grpid",
    "nogrpid",
    "nosuid",
    "nodev",
    "noexec",
    "async",
];

impl Default for MountOptions {
    fn default() -> MountOptions {
        MountOptions {
            data: DataMode::Ordered,
            barrier: true,
            commit_secs: 0,
            journal_async_commit: false,
            atime: Atime::Relatime,
            inode_readahead_blks: 32,
            not_modelled: Vec::new(),
        }
    }
}

/// The options `--mount` accepts, for error messages.
pub const KNOWN_OPTIONS: &str = "data=ordered|writeback, barrier, barrier=0|1, nobarrier, \
     commit=SECONDS, journal_async_commit, noatime, relatime, strictatime, delalloc, \
     inode_readahead_blks=N, defaults, rw";

impl MountOptions {
    /// A `--mount` value: `ext4` or `ext4:OPT,OPT,...`.
    pub fn parse_mount(text: &str) -> Result<MountOptions, String> {
        let (fs, opts) = text.split_once(':').unwrap_or((text, ""));
        if fs != "ext4" {
            return Err(format!(
                "unknown file system '{fs}' (the model has ext4: --mount ext4:OPTIONS)"
            ));
        }
        MountOptions::parse(opts)
    }

    /// `mount -o` options of ext4, comma-separated.
    pub fn parse(text: &str) -> Result<MountOptions, String> {
        let mut o = MountOptions::default();
        for opt in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = match opt.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (opt, None),
            };
            match (name, value) {
                ("data", Some("ordered")) => o.data = DataMode::Ordered,
                ("data", Some("writeback")) => o.data = DataMode::Writeback,
                ("data", Some("journal")) => {
                    return Err("data=journal is not modelled (use ordered or writeback)".into())
                }
                ("barrier", None) => o.barrier = true,
                ("barrier", Some(v)) => o.barrier = number(opt, v)? != 0,
                ("nobarrier", None) => o.barrier = false,
                ("commit", Some(v)) => o.commit_secs = commit_secs(opt, v)?,
                ("journal_async_commit", None) => o.journal_async_commit = true,
                ("noatime", None) => o.atime = Atime::Noatime,
                ("relatime", None) => o.atime = Atime::Relatime,
                ("strictatime", None) => o.atime = Atime::Strictatime,
                ("delalloc" | "defaults" | "rw", None) => {}
                ("ro", None) => {
                    return Err("ro: the jobs create and write their files (use rw)".into())
                }
                ("sync", None) => {
                    return Err(
                        "sync: synchronous mounts are not modelled (fio's sync=1 is)".into(),
                    )
                }
                (n, _) if NOT_MODELLED.contains(&n) => o.not_modelled.push(opt.to_string()),
                ("nodelalloc", None) => {
                    return Err("nodelalloc is not modelled (delalloc is ext4's default)".into())
                }
                ("inode_readahead_blks", Some(v)) => {
                    let n = number(opt, v)?;
                    // ext4 super.c: a power of two, at most 2^30 (6.x).
                    if !n.is_power_of_two() || n > 1 << 30 {
                        return Err(format!(
                            "'{opt}': inode_readahead_blks must be a power of two up to 2^30"
                        ));
                    }
                    o.inode_readahead_blks = n;
                }
                _ => {
                    return Err(format!(
                        "unknown or malformed ext4 option '{opt}' (known: {KNOWN_OPTIONS})"
                    ))
                }
            }
        }
        if o.journal_async_commit && o.data == DataMode::Ordered {
            // fs/ext4/super.c refuses it since 4.10 (reference §5.2 step 6).
            return Err(
                "journal_async_commit is incompatible with data=ordered (ext4 refuses it since \
                 4.10); add data=writeback"
                    .into(),
            );
        }
        Ok(o)
    }
}

fn number(opt: &str, v: &str) -> Result<u64, String> {
    v.parse()
        .map_err(|_| format!("'{opt}': '{v}' is not a whole number"))
}

/// `commit=` seconds; ext4 takes up to INT_MAX / HZ (fs/ext4/super.c).
fn commit_secs(opt: &str, v: &str) -> Result<u64, String> {
    let n = number(opt, v)?;
    let max = i32::MAX as u64 / time::HZ;
    if n > max {
        return Err(format!("'{opt}': commit= is at most {max} seconds"));
    }
    Ok(n)
}

/// Inodes per 4 KiB inode-table block (256-byte inodes, mke2fs's default).
const INODES_PER_BLOCK: u64 = 16;
/// `EXT4_FIRST_INO`: the first ordinary inode number (11 is lost+found).
const FIRST_INO: u64 = 12;
/// Extents an inode holds itself (`i_block`: 4 × 12-byte entries).
const INODE_EXTENTS: u64 = 4;
/// Extents per 4 KiB leaf block ((4096 − 12) / 12).
const LEAF_EXTENTS: u64 = 340;
/// Blocks per block group (4 KiB blocks: 8 × 4096 bits of bitmap).
const GROUP_PAGES: u64 = 32768;
/// Group descriptors per block (64-byte descriptors with 64bit).
const DESCS_PER_BLOCK: u64 = 64;

/// Metadata block ids: a kind in the top byte, a number below.
const META_INODE: u64 = 1 << 56;
const META_BITMAP: u64 = 2 << 56;
const META_GDT: u64 = 3 << 56;
const META_LEAF: u64 = 4 << 56;
const META_DIR: u64 = 5 << 56;
const META_IBITMAP: u64 = 6 << 56;
/// The orphan list's block (the superblock's `s_last_orphan`, or the
/// orphan file's block with mke2fs 1.47's `orphan_file`).
const META_ORPHAN: u64 = 7 << 56;
/// Groups per flexible block group (mke2fs's default `flex_bg` size): the
/// bitmaps and inode tables of 16 groups lie together at the start of the
/// first.
const FLEX_GROUPS: u64 = 16;
/// Inode-table blocks per group (8192 inodes of 256 bytes).
const INODE_TABLE_PAGES: u64 = INODES_PER_GROUP / INODES_PER_BLOCK;
/// Directory entries per 4 KiB directory block: fio's names
/// (`job.N.M`, ~12 bytes) take 20-byte `ext4_dir_entry_2` records.
const DIR_ENTRIES_PER_BLOCK: u64 = 4096 / 20;
/// Inodes per block group (mke2fs's default inode_ratio 16384 over a
/// 128 MiB group).
const INODES_PER_GROUP: u64 = 8192;

/// Descriptor blocks mke2fs reserves for online growth (`resize_inode`;
/// e2fsprogs lib/ext2fs/initialize.c `calc_reserved_gdt_blocks`): enough
/// for 1024 times the size, or 2^32 blocks, at most 1024 blocks.
fn reserved_gdt_pages(blocks: u64, gdt_pages: u64) -> u64 {
    let max_blocks = blocks.saturating_mul(1024).min(u32::MAX as u64);
    let groups = max_blocks.div_ceil(GROUP_PAGES);
    groups
        .div_ceil(DESCS_PER_BLOCK)
        .saturating_sub(gdt_pages)
        .min(1024)
}

/// What ext4 knows of one file.
#[derive(Clone, Debug)]
struct FileMeta {
    /// Device pages `[first, end)`.
    first: u64,
    end: u64,
    /// Pages whose blocks are allocated and written (initialised extents),
    /// start → end.
    written: BTreeMap<u64, u64>,
    /// The rest is fallocated (unwritten extents), not unallocated.
    fallocated: bool,
    /// The timestamp tick of the last mtime update.
    mtime_tick: Option<u64>,
    atime_tick: Option<u64>,
    /// relatime: atime ≤ mtime, the next read updates it.
    atime_stale: bool,
    /// `i_sync_tid`, `i_datasync_tid` (0: nothing to commit).
    sync_tid: Tid,
    datasync_tid: Tid,
    /// When the conversion of a direct write in progress releases
    /// `i_data_sem` (conversions of one file run one at a time).
    conversion_free: Ns,
}

/// What an fsync needs after its data is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncStep {
    /// Nothing: the transaction committed and barriers are off.
    Done,
    /// A cache flush only (`blkdev_issue_flush`).
    Flush,
    /// Wait for the commit of `tid`; then a flush if `flush_after`.
    Commit { tid: Tid, flush_after: bool },
}

/// A mounted ext4 file system.
#[derive(Clone, Debug)]
pub struct Ext4 {
    pub opts: MountOptions,
    pub journal: Journal,
    /// The task id of kjournald2.
    pub jbd2_task: u32,
    files: Vec<FileMeta>,
    /// Scratch: page runs not yet written.
    gaps: Vec<(u64, u64)>,
    /// Block groups of the file system, its group-descriptor blocks and
    /// the descriptor blocks mke2fs reserves for growth.
    groups: u64,
    gdt_pages: u64,
    reserved_gdt_pages: u64,
    /// Scratch: block ids of a checkpoint.
    ckpt_ids: Vec<u64>,
}

impl Ext4 {
    /// Mount on a device of `capacity` bytes holding `files`: device page
    /// ranges `(first, end, laid_out_with_data)`, in the page cache's order.
    pub fn new(opts: MountOptions, capacity: u64, files: &[(u64, u64, bool)]) -> Ext4 {
        let blocks = capacity / 4096;
        let groups = blocks.div_ceil(GROUP_PAGES).max(1);
        let gdt_pages = groups.div_ceil(DESCS_PER_BLOCK);
        let journal = Journal::new(
            capacity,
            opts.commit_secs,
            opts.barrier,
            opts.journal_async_commit,
        );
        let files = files
            .iter()
            .map(|&(first, end, data)| FileMeta {
                first,
                end,
                written: if data {
                    BTreeMap::from([(first, end)])
                } else {
                    BTreeMap::new()
                },
                fallocated: !data,
                mtime_tick: None,
                atime_tick: None,
                atime_stale: data,
                sync_tid: 0,
                datasync_tid: 0,
                conversion_free: 0,
            })
            .collect();
        Ext4 {
            opts,
            journal,
            jbd2_task: 0,
            files,
            gaps: Vec::new(),
            groups,
            gdt_pages,
            reserved_gdt_pages: reserved_gdt_pages(blocks, gdt_pages),
            ckpt_ids: Vec::new(),
        }
    }

    fn inode_block(file: u32) -> u64 {
        META_INODE | ((FIRST_INO + file as u64) / INODES_PER_BLOCK)
    }

    /// A buffered write to `file` at `now`: the timestamp update
    /// (`file_modified`, coarse clock: once per tick).
    pub fn write(&mut self, file: u32, now: Ns) {
        let tick = time::jiffies(now);
        let f = &mut self.files[file as usize];
        if f.mtime_tick == Some(tick) {
            return;
        }
        f.mtime_tick = Some(tick);
        f.atime_stale = true;
        let tid = self.journal.dirty_metadata(Self::inode_block(file), now);
        self.files[file as usize].sync_tid = tid;
    }

    /// A buffered read of `file` at `now` (`touch_atime`).
    pub fn read(&mut self, file: u32, now: Ns) {
        let tick = time::jiffies(now);
        let f = &mut self.files[file as usize];
        let update = match self.opts.atime {
            Atime::Noatime => false,
            Atime::Relatime => f.atime_stale,
            Atime::Strictatime => f.atime_tick != Some(tick),
        };
        if !update {
            return;
        }
        f.atime_stale = false;
        f.atime_tick = Some(tick);
        let tid = self.journal.dirty_metadata(Self::inode_block(file), now);
        self.files[file as usize].sync_tid = tid;
    }

    /// Writeback of pages `[start, end)` of `file` is submitted at `now`
    /// (`ext4_do_writepages` → `mpage_map_and_submit_extent`): pages not
    /// yet written get their blocks allocated or converted in a handle.
    pub fn writeback(&mut self, file: u32, start: u64, end: u64, now: Ns) {
        self.map_unwritten(file, start, end, true, now);
    }

    /// Map every run of `[start, end)` not yet written (`map_run`).
    fn map_unwritten(&mut self, file: u32, start: u64, end: u64, buffered: bool, now: Ns) {
        let mut gaps = std::mem::take(&mut self.gaps);
        self.unwritten_runs(file, start, end, &mut gaps);
        for &(s, e) in &gaps {
            self.map_run(file, s, e, buffered, now);
        }
        self.gaps = gaps;
    }

    /// Whether some block of `[start, end)` of `file` is not yet written
    /// (unwritten extent or hole): a direct write there ends in a
    /// conversion.
    pub fn needs_conversion(&self, file: u32, start: u64, end: u64) -> bool {
        // Written runs are disjoint and joined when they touch (`map_run`
        // maps only gaps), so the range is written only if the run that
        // holds `start` reaches `end`.
        let w = &self.files[file as usize].written;
        w.range(..=start).next_back().is_none_or(|(_, &e)| e < end)
    }

    /// The conversion of a direct write to `[start, end)` of `file` ended
    /// at `now` and its blocks turn written
    /// (`ext4_convert_unwritten_extents`: holes were allocated as unwritten
    /// at submission, so both convert): the metadata joins the running
    /// transaction; no ordered data (the data is on the device before the
    /// conversion). The file's next conversion starts no earlier.
    pub fn dio_written(&mut self, file: u32, start: u64, end: u64, now: Ns) {
        self.map_unwritten(file, start, end, false, now);
        self.files[file as usize].conversion_free = now;
    }

    /// When `file`'s conversions let the next one start.
    pub fn conversion_free(&self, file: u32) -> Ns {
        self.files[file as usize].conversion_free
    }

    /// The runs of `[start, end)` not yet written.
    fn unwritten_runs(&self, file: u32, start: u64, end: u64, out: &mut Vec<(u64, u64)>) {
        out.clear();
        let w = &self.files[file as usize].written;
        let mut pos = start;
        if let Some((_, &e)) = w.range(..=start).next_back() {
            pos = pos.max(e);
        }
        for (&s, &e) in w.range(start..end) {
            if s > pos {
                out.push((pos, s));
            }
            pos = pos.max(e);
        }
        if pos < end {
            out.push((pos, end));
        }
    }

    /// Allocate or convert `[s, e)` of `file`: its metadata joins the
    /// running transaction, which the file's fsync and fdatasync now need.
    /// `buffered`: writeback's allocation, ordered data under data=ordered.
    fn map_run(&mut self, file: u32, s: u64, e: u64, buffered: bool, now: Ns) {
        let ordered = buffered && self.opts.data == DataMode::Ordered;
        let f = &mut self.files[file as usize];
        let fresh = !f.fallocated;
        // Join neighbours: [s, e) becomes one written extent.
        let mut ns = s;
        let mut ne = e;
        if let Some((&ps, &pe)) = f.written.range(..=s).next_back() {
            if pe >= s {
                ns = ps;
                ne = ne.max(pe);
            }
        }
        if let Some(&ae) = f.written.get(&e) {
            f.written.remove(&e);
            ne = ne.max(ae);
        }
        f.written.insert(ns, ne);
        // Extents: written runs, and with fallocate the unwritten ones
        // between them.
        let runs = f.written.len() as u64;
        let extents = if f.fallocated { 2 * runs + 1 } else { runs };
        let pages = (f.end - f.first).max(1);
        let leaf = if extents > INODE_EXTENTS {
            let leaves = extents.div_ceil(LEAF_EXTENTS);
            Some((s - f.first) * leaves / pages)
        } else {
            None
        };
        let mut blocks = vec![Self::inode_block(file)];
        if let Some(l) = leaf {
            blocks.push(META_LEAF | ((file as u64) << 32) | l);
        }
        if fresh {
            let g = s / GROUP_PAGES;
            blocks.push(META_BITMAP | g);
            blocks.push(META_GDT | (g / DESCS_PER_BLOCK));
        }
        let mut tid = 0;
        for b in blocks {
            tid = self.journal.dirty_metadata(b, now);
        }
        if ordered && fresh {
            self.journal.add_ordered(file, s, e, now);
        }
        let f = &mut self.files[file as usize];
        f.sync_tid = tid;
        f.datasync_tid = tid;
    }

    /// What `ext4_sync_file` does after `file_write_and_wait_range` for
    /// `files` (`datasync`: fdatasync / O_DSYNC), at `now`: commit the
    /// transaction that last changed them (asking kjournald2 for it), and
    /// flush unless that commit sends the barrier itself.
    pub fn sync_step(&mut self, files: &[u32], datasync: bool, now: Ns) -> SyncStep {
        let tid = files
            .iter()
            .map(|&f| {
                let m = &self.files[f as usize];
                if datasync {
                    m.datasync_tid
                } else {
                    m.sync_tid
                }
            })
            .max()
            .unwrap_or(0);
        let j = &mut self.journal;
        let needs_barrier = j.barrier && !j.will_send_data_barrier(tid);
        if tid == 0 || j.is_committed(tid) {
            return if needs_barrier {
                j.stats.flushes += 1;
                SyncStep::Flush
            } else {
                SyncStep::Done
            };
        }
        j.request_commit(tid, now);
        if needs_barrier {
            j.stats.flushes += 1;
        }
        SyncStep::Commit {
            tid,
            flush_after: needs_barrier,
        }
    }

    /// `file` is deleted at `now` (fio closed it first, so the unlink drops
    /// the last link and `ext4_evict_inode` runs at once): the directory
    /// entry goes, the inode joins and leaves the orphan list, its extents
    /// are freed (the block bitmap and group descriptor of every group they
    /// lie in) and so is the inode (the inode bitmap). Its page cache is
    /// the caller's (`PageCache::delete_file`). With `recreate`, fio's next
    /// open (`O_CREAT`) makes an empty file of the same name: a new inode
    /// and directory entry, no blocks (its writes allocate them at
    /// writeback, delayed allocation, with no fallocate).
    pub fn delete(&mut self, file: u32, recreate: bool, now: Ns) {
        let ino = FIRST_INO + file as u64;
        let mut blocks = vec![
            META_DIR | (file as u64 / DIR_ENTRIES_PER_BLOCK),
            Self::inode_block(file),
            META_ORPHAN,
            META_IBITMAP | (ino / INODES_PER_GROUP),
            META_GDT | (ino / INODES_PER_GROUP / DESCS_PER_BLOCK),
        ];
        let f = &self.files[file as usize];
        let mut groups: Vec<u64> = f
            .written
            .iter()
            .flat_map(|(&s, &e)| (s / GROUP_PAGES)..=((e - 1) / GROUP_PAGES))
            .collect();
        if f.fallocated {
            // Unwritten extents hold blocks too.
            groups.extend((f.first / GROUP_PAGES)..=((f.end.max(f.first + 1) - 1) / GROUP_PAGES));
        }
        groups.sort_unstable();
        groups.dedup();
        for g in groups {
            blocks.push(META_BITMAP | g);
            blocks.push(META_GDT | (g / DESCS_PER_BLOCK));
        }
        let mut tid = 0;
        for b in blocks {
            tid = self.journal.dirty_metadata(b, now);
        }
        let f = &mut self.files[file as usize];
        f.written.clear();
        f.fallocated = false;
        f.mtime_tick = None;
        f.atime_tick = None;
        f.atime_stale = false;
        f.sync_tid = if recreate { tid } else { 0 };
        f.datasync_tid = f.sync_tid;
    }

    /// The device page where metadata `block` lives, as mke2fs (1.47)
    /// lays out a file system with its defaults (4 KiB blocks, 32768 per
    /// group, `flex_bg` 16, 256-byte inodes, 8192 per group): block 0 holds
    /// the superblock (and the orphan list's head), the group descriptors
    /// and the reserved descriptor blocks follow it; each flex group starts
    /// with its groups' block bitmaps, inode bitmaps and inode tables, in
    /// that order (ext2fs `flexbg_offset`), at its first group's first
    /// block (after the superblock and descriptors in group 0; the later
    /// flex groups' first groups carry no backup under `sparse_super`).
    /// Checked on 6.18 with a fresh 512 MiB file system: inodes 12-75 are
    /// blocks 73-77 (1 + 1 + 63 reserved + 4 + 4 bitmaps). fio's files share
    /// one directory, whose blocks follow flex group 0's inode tables; an
    /// extent-tree leaf lies at the start of its file's data (the
    /// allocator's goal). Files are placed from page 0
    /// (workload/layout.rs), so the first ones overlap these pages: only the
    /// device's positions (seeks) see that.
    pub fn home_page(&self, block: u64) -> u64 {
        let kind = block & !((1 << 56) - 1);
        let n = block & ((1 << 56) - 1);
        let groups = self.groups;
        let base = |g: u64| {
            let f = g / FLEX_GROUPS;
            let head = if f == 0 {
                1 + self.gdt_pages + self.reserved_gdt_pages
            } else {
                0
            };
            let in_flex = (groups - f * FLEX_GROUPS).min(FLEX_GROUPS);
            (f * FLEX_GROUPS * GROUP_PAGES + head, in_flex)
        };
        match kind {
            META_BITMAP => base(n).0 + n % FLEX_GROUPS,
            META_IBITMAP => {
                let (b, k) = base(n);
                b + k + n % FLEX_GROUPS
            }
            META_INODE => {
                // n: the inode-table block of inodes n * 16 .. n * 16 + 15.
                let ino = n * INODES_PER_BLOCK;
                let g = (ino / INODES_PER_GROUP).min(groups - 1);
                let (b, k) = base(g);
                b + 2 * k
                    + (g % FLEX_GROUPS) * INODE_TABLE_PAGES
                    + (ino % INODES_PER_GROUP) / INODES_PER_BLOCK
            }
            META_GDT => 1 + n,
            META_DIR => {
                let (b, k) = base(0);
                b + 2 * k + k * INODE_TABLE_PAGES + n
            }
            META_LEAF => {
                let file = (n >> 32) as usize;
                self.files.get(file).map_or(0, |f| f.first) + (n & 0xffff_ffff)
            }
            _ => 0,
        }
    }

    /// When committed metadata waiting for its in-place write was first
    /// dirtied (the block device inode's `dirtied_when`), if any waits.
    pub fn checkpoint_dirtied(&self) -> Option<Ns> {
        self.journal.checkpoint_dirtied()
    }

    /// The flusher takes the committed metadata for its in-place write:
    /// the device pages, ascending and distinct, into `pages`.
    pub fn take_checkpoint(&mut self, pages: &mut Vec<u64>) {
        let mut ids = std::mem::take(&mut self.ckpt_ids);
        self.journal.take_checkpoint(&mut ids);
        pages.clear();
        pages.extend(ids.iter().map(|&b| self.home_page(b)));
        pages.sort_unstable();
        pages.dedup();
        self.ckpt_ids = ids;
    }

    /// The page range of `file`.
    pub fn file_pages(&self, file: u32) -> (u64, u64) {
        let f = &self.files[file as usize];
        (f.first, f.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_the_model_does_not_use_are_accepted_and_listed() {
        let o =
            MountOptions::parse("errors=remount-ro,lazytime,noatime,discard,user_xattr").unwrap();
        assert_eq!(o.atime, Atime::Noatime);
        assert_eq!(
            o.not_modelled,
            ["errors=remount-ro", "lazytime", "discard", "user_xattr"]
        );
        assert!(MountOptions::parse("ro").unwrap_err().contains("ro:"));
        assert!(MountOptions::parse("sync").unwrap_err().contains("sync:"));
        assert!(MountOptions::parse("bogus")
            .unwrap_err()
            .contains("unknown"));
    }

    #[test]
    fn options_parse_like_mount() {
        let o = MountOptions::parse_mount(
            "ext4:data=writeback,noatime,nobarrier,delalloc,inode_readahead_blks=4096,journal_async_commit,commit=1800",
        )
        .unwrap();
        assert_eq!(o.data, DataMode::Writeback);
        assert!(!o.barrier && o.journal_async_commit);
        assert_eq!((o.commit_secs, o.atime), (1800, Atime::Noatime));
        assert_eq!(
            MountOptions::parse_mount("ext4").unwrap(),
            MountOptions::default()
        );
        assert!(!MountOptions::parse("barrier=0").unwrap().barrier);
        let e = |s: &str| MountOptions::parse_mount(s).unwrap_err();
        assert!(e("xfs:noatime").contains("unknown file system"));
        assert!(e("ext4:journal_async_commit").contains("data=ordered"));
        assert!(e("ext4:data=journal").contains("not modelled"));
        assert!(e("ext4:commit=x").contains("whole number"));
        assert!(e("ext4:inode_readahead_blks=3").contains("power of two"));
        assert!(e("ext4:bogus").contains("known:"));
        assert!(e("ext4:commit=99999999999").contains("at most"));
    }

    #[test]
    fn metadata_lives_where_mke2fs_puts_it() {
        // Measured on 6.18 (mke2fs 1.47, 512 MiB): 63 reserved descriptor
        // blocks, 4 groups in the one flex group, inodes 12-75 at 73-77.
        let small = Ext4::new(MountOptions::default(), 512 << 20, &[(0, 1, true)]);
        assert_eq!(small.reserved_gdt_pages, 63);
        assert_eq!(small.home_page(Ext4::inode_block(0)), 73);
        assert_eq!(small.home_page(Ext4::inode_block(63)), 77);
        // 8 GiB: 64 groups, one descriptor block, 1023 reserved; flex
        // groups start at groups 0, 16, 32, 48.
        let f = fs("", true);
        assert_eq!((f.groups, f.reserved_gdt_pages), (64, 1023));
        assert_eq!(f.home_page(META_GDT), 1);
        assert_eq!(f.home_page(META_ORPHAN), 0);
        // Group 17's bitmaps at the start of group 16 (no backup there).
        let flex1 = 16 * GROUP_PAGES;
        assert_eq!(f.home_page(META_BITMAP | 17), flex1 + 1);
        assert_eq!(f.home_page(META_IBITMAP | 17), flex1 + 16 + 1);
        // File 0 is inode 12: inode-table block 0 of group 0; file 4 (inode
        // 16) the next block.
        let it0 = 1 + 1 + 1023 + 32;
        assert_eq!(f.home_page(Ext4::inode_block(0)), it0);
        assert_eq!(f.home_page(Ext4::inode_block(4)), it0 + 1);
        // Inode 8192 starts group 1's table, 512 blocks on.
        assert_eq!(f.home_page(Ext4::inode_block(8192 - 12)), it0 + 512);
        assert_eq!(f.home_page(META_DIR | 3), it0 + 16 * 512 + 3);
        assert_eq!(f.home_page(META_LEAF | 2), 2, "file 0's data starts at 0");
    }

    #[test]
    fn a_committed_atime_update_waits_for_its_in_place_write() {
        let mut f = fs("", true);
        f.read(0, 0);
        let t = f.journal.begin_commit(super::super::jbd2::CommitWhy::Timer);
        f.journal.end_commit(&mut Vec::new());
        assert!(f.journal.checkpoint_add(&t.unwrap().blocks, 7));
        assert_eq!(f.checkpoint_dirtied(), Some(7));
        let mut pages = Vec::new();
        f.take_checkpoint(&mut pages);
        assert_eq!(pages, vec![1 + 1 + 1023 + 32]);
        assert_eq!(f.checkpoint_dirtied(), None);
        // noatime: the read dirties nothing.
        let mut g = fs("noatime", true);
        g.read(0, 0);
        assert!(g.journal.running.is_none());
    }

    fn fs(opts: &str, data: bool) -> Ext4 {
        let o = MountOptions::parse(opts).unwrap();
        Ext4::new(o, 8 << 30, &[(0, 1000, data)])
    }

    #[test]
    fn mtime_once_per_tick_and_fdatasync_needs_only_allocation() {
        let mut f = fs("", true);
        f.write(0, 0);
        // An overwrite of written blocks: fsync commits (mtime), fdatasync
        // only flushes (reference §4.3 cases B and C).
        assert_eq!(f.sync_step(&[0], true, 0), SyncStep::Flush);
        let SyncStep::Commit { tid, flush_after } = f.sync_step(&[0], false, 0) else {
            panic!("fsync after an mtime change commits")
        };
        assert!(!flush_after, "the commit block carries the barrier");
        f.journal.begin_commit(super::super::jbd2::CommitWhy::Sync);
        f.journal.end_commit(&mut Vec::new());
        assert!(f.journal.is_committed(tid));
        // Same tick: no new mtime update, nothing to commit.
        f.write(0, 1);
        assert_eq!(f.sync_step(&[0], false, 1), SyncStep::Flush);
    }

    #[test]
    fn conversion_at_writeback_dirties_metadata_once() {
        let mut f = fs("nobarrier", false);
        f.writeback(0, 10, 11, 0);
        let t = f.journal.running.clone().unwrap();
        // Inode block only: a converted extent, no fresh allocation.
        assert_eq!(t.blocks.len(), 1);
        assert!(t.ordered.is_empty());
        let SyncStep::Commit { flush_after, .. } = f.sync_step(&[0], true, 0) else {
            panic!("conversion needs a commit for fdatasync")
        };
        assert!(!flush_after);
        f.journal.begin_commit(super::super::jbd2::CommitWhy::Sync);
        f.journal.end_commit(&mut Vec::new());
        // Written now: writeback again changes nothing.
        f.writeback(0, 10, 11, 1);
        assert!(f.journal.running.is_none());
        assert_eq!(f.sync_step(&[0], true, 1), SyncStep::Done);
        // Many random conversions use extent leaves.
        for p in (20..200).step_by(3) {
            f.writeback(0, p, p + 1, 2);
        }
        assert!(f.journal.running.as_ref().unwrap().blocks.len() > 1);
    }

    #[test]
    fn fresh_allocation_is_ordered_data_and_touches_bitmaps() {
        let o = MountOptions::default();
        let mut f = Ext4::new(o, 8 << 30, &[(0, 10, true), (10, 2000, false)]);
        f.files[1].fallocated = false;
        f.writeback(1, 10, 50, 0);
        let t = f.journal.running.clone().unwrap();
        assert_eq!(t.blocks.len(), 3);
        assert_eq!(t.ordered, vec![(1, 10, 50)]);
    }

    #[test]
    fn a_deleted_file_frees_its_blocks_and_comes_back_unallocated() {
        let o = MountOptions::default();
        // A fallocated file: deleting it frees its (unwritten) extents too.
        let mut f = Ext4::new(o, 8 << 30, &[(0, 10, true), (40_000, 40_100, false)]);
        f.delete(1, true, 0);
        let t = f.journal.running.take().unwrap();
        // Directory, inode, orphan list, inode bitmap and its descriptor,
        // and the block bitmap of group 1 (its descriptor block is the
        // inode group's, block 0).
        assert_eq!(t.blocks.len(), 6);
        assert_eq!(f.files[1].sync_tid, t.tid);
        // Recreated empty: its first writeback is a fresh allocation, as
        // ordered data (no unwritten extents to convert).
        f.writeback(1, 40_000, 40_010, 1);
        let t = f.journal.running.take().unwrap();
        assert_eq!(t.ordered, vec![(1, 40_000, 40_010)]);
        assert!(t.blocks.contains(&(META_BITMAP | 1)));
        // A written file: the groups of its written runs; not recreated,
        // nothing is left for an fsync to wait for.
        f.delete(0, false, 2);
        assert!(f
            .journal
            .running
            .as_ref()
            .unwrap()
            .blocks
            .contains(&META_BITMAP));
        assert_eq!(f.files[0].sync_tid, 0);
        assert!(f.files[0].written.is_empty());
    }

    #[test]
    fn a_direct_write_converts_only_unwritten_blocks() {
        let o = MountOptions::default();
        let mut f = Ext4::new(o, 8 << 30, &[(0, 100, true), (100, 200, false)]);
        assert!(!f.needs_conversion(0, 10, 20), "laid out with data");
        assert!(f.needs_conversion(1, 110, 111), "fallocated");
        f.dio_written(1, 110, 111, 0);
        assert!(!f.needs_conversion(1, 110, 111));
        assert!(f.needs_conversion(1, 110, 112), "partly written");
        assert!(f.needs_conversion(1, 109, 111), "partly written");
        let t = f.journal.running.take().unwrap();
        // The inode block only (a conversion, no allocation), and no
        // ordered data: the data is on the device before the conversion.
        assert_eq!(t.blocks.len(), 1);
        assert!(t.ordered.is_empty());
        assert_eq!(f.files[1].sync_tid, t.tid);
        // Writing it again changes no metadata.
        f.dio_written(1, 110, 111, 1);
        assert!(f.journal.running.is_none());
    }

    #[test]
    fn relatime_updates_atime_once_after_a_write_noatime_never() {
        let reads = |opts: &str| {
            let mut f = fs(opts, true);
            let mut handles = 0;
            for i in 0..3 {
                f.read(0, NS_PER_TICK * i);
                if f.journal.running.take().is_some() {
                    handles += 1;
                }
            }
            f.write(0, NS_PER_TICK * 5);
            f.journal.running = None;
            f.read(0, NS_PER_TICK * 6);
            handles + f.journal.running.is_some() as u32
        };
        assert_eq!(reads(""), 2);
        assert_eq!(reads("noatime"), 0);
        assert_eq!(reads("strictatime"), 4);
    }

    const NS_PER_TICK: Ns = time::NS_PER_JIFFY;
}
