//! File systems between the page cache and the block layer. A run says
//! "the jobs' files live on an ext4 file system on this device" with
//! `--mount ext4:OPTIONS` (`RunSpec::mount`), OPTIONS as `mount -o` takes
//! them. Without it, buffered jobs use the device as a raw block device
//! (the bdev inode's page cache: no journal, fsync is write + flush).
//!
//! - [`ext4`]: the mount options, and what ext4 does per file that the
//!   journal sees (timestamps, delayed allocation at writeback, unwritten
//!   extent conversion, atime), and `ext4_sync_file`'s decision.
//! - [`jbd2`]: the journal: running and committing transactions, commit
//!   triggers, the log area on the device, and what a commit writes.

pub mod ext4;
pub mod jbd2;

pub use ext4::{Ext4, MountOptions};
