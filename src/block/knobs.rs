//! Queue sysfs knobs (`/sys/block/DEV/queue/*`) that the model honours.

/// Knobs a user can set with `--set NAME=VALUE`, with the kernel's names.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueKnobs {
    /// `nr_requests`: None = the kernel's default for the attached scheduler.
    pub nr_requests: Option<u32>,
    /// `read_ahead_kb` (KiB).
    pub read_ahead_kb: u32,
    /// `nomerges` 0/1/2.
    pub nomerges: u8,
    /// `rotational` (None = the device's own).
    pub rotational: Option<bool>,
    /// `max_sectors_kb` (None = min(max_hw_sectors_kb, 1280)).
    pub max_sectors_kb: Option<u32>,
    /// `write_cache` (None = the device's own): true = "write back".
    pub write_cache: Option<bool>,
    /// `wbt_lat_usec` as written: None (or −1) = the default target for
    /// the queue's `rotational`, 0 = WBT off.
    pub wbt_lat_usec: Option<u64>,
}

impl Default for QueueKnobs {
    fn default() -> Self {
        QueueKnobs {
            nr_requests: None,
            // VM_READAHEAD_PAGES: 128 KiB default read-ahead (include/linux/mm.h)
            read_ahead_kb: 128,
            nomerges: 0,
            rotational: None,
            max_sectors_kb: None,
            write_cache: None,
            wbt_lat_usec: None,
        }
    }
}

/// Names `--set` accepts for queue knobs (scheduler knobs are `iosched/NAME`).
pub const QUEUE_KNOBS: &[&str] = &[
    "nr_requests",
    "read_ahead_kb",
    "nomerges",
    "rotational",
    "max_sectors_kb",
    "write_cache",
    "wbt_lat_usec",
];

/// BLKDEV_MIN_RQ (include/linux/blkdev.h): the smallest nr_requests.
pub const BLKDEV_MIN_RQ: u32 = 4;
/// BLKDEV_DEFAULT_RQ: cap in the default scheduler depth 2 × min(QD, 128).
pub const BLKDEV_DEFAULT_RQ: u32 = 128;
/// MAX_SCHED_RQ = 16 × BLKDEV_DEFAULT_RQ (block/blk-mq-sched.h).
pub const MAX_SCHED_RQ: u32 = 16 * BLKDEV_DEFAULT_RQ;
/// BLK_DEF_MAX_SECTORS_CAP: default max_sectors_kb cap of 1280 KiB (v6.17).
pub const DEFAULT_MAX_SECTORS_KB_CAP: u32 = 1280;

impl QueueKnobs {
    /// Apply `NAME=VALUE` for a queue knob, validating like the kernel.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let num = |v: &str| -> Result<u32, String> {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{name}: expected a non-negative integer, got '{v}'"))
        };
        match name {
            "nr_requests" => {
                // Values below BLKDEV_MIN_RQ are raised to it (blk-sysfs.c).
                self.nr_requests = Some(num(value)?.max(BLKDEV_MIN_RQ));
            }
            "read_ahead_kb" => self.read_ahead_kb = num(value)?,
            "nomerges" => {
                let v = num(value)?;
                if v > 2 {
                    return Err(format!("nomerges: expected 0, 1 or 2, got '{value}'"));
                }
                self.nomerges = v as u8;
            }
            "rotational" => {
                self.rotational = Some(match value.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("rotational: expected 0 or 1, got '{value}'")),
                })
            }
            "max_sectors_kb" => {
                let v = num(value)?;
                // Writing 0 restores the default (v6.17 blk-sysfs.c).
                self.max_sectors_kb = if v == 0 { None } else { Some(v) };
            }
            "write_cache" => {
                self.write_cache = Some(match value.trim() {
                    "write back" | "write-back" | "writeback" => true,
                    "write through" | "write-through" | "writethrough" | "none" => false,
                    _ => {
                        return Err(format!(
                        "write_cache: expected \"write back\" or \"write through\", got '{value}'"
                    ))
                    }
                })
            }
            "wbt_lat_usec" => {
                // queue_wb_lat_store (v6.17 blk-sysfs.c): kstrtoll; below
                // -1 is -EINVAL; -1 restores the default.
                let v = super::sysfs::kstrtoll(value.trim())
                    .map_err(|e| format!("wbt_lat_usec: {e}"))?;
                self.wbt_lat_usec = match v {
                    -1 => None,
                    v if v < -1 => {
                        return Err(format!("wbt_lat_usec: expected -1 or more, got '{value}'"))
                    }
                    v => Some(v as u64),
                };
            }
            other => {
                return Err(format!(
                "unknown queue knob '{other}' (known: {}, and iosched/NAME for scheduler tunables)",
                QUEUE_KNOBS.join(", ")
            ))
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn knob_validation() {
        let mut k = QueueKnobs::default();
        k.set("nr_requests", "2").unwrap();
        assert_eq!(k.nr_requests, Some(4));
        assert!(k.set("nomerges", "3").is_err());
        assert!(k
            .set("nr_requests", "abc")
            .unwrap_err()
            .contains("nr_requests"));
        k.set("write_cache", "write back").unwrap();
        assert_eq!(k.write_cache, Some(true));
        k.set("wbt_lat_usec", "0").unwrap();
        assert_eq!(k.wbt_lat_usec, Some(0));
        k.set("wbt_lat_usec", "-1").unwrap();
        assert_eq!(k.wbt_lat_usec, None);
        assert!(k.set("wbt_lat_usec", "-2").is_err());
        assert!(k
            .set("bogus", "1")
            .unwrap_err()
            .contains("unknown queue knob"));
        k.set("max_sectors_kb", "0").unwrap();
        assert_eq!(k.max_sectors_kb, None);
    }
}
