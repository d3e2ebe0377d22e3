//! fio's strided zones (`zonemode=strided`, `zonesize`, `zonerange`,
//! `zoneskip`; `setup_strided_zone_mode` in fio 3.33 io_u.c), for a job with
//! one file (fio turns them off for more).
//!
//! I/O stays in a zone of `range` bytes from the zone's start until `size`
//! bytes of I/O were done there; then the zone moves on by `range + skip`,
//! wrapping to the region's start at the end of the file (the device, for a
//! job on a block device: zones go on past `size=`, which only bounds the
//! bytes, as fio 3.33 measured here shows). A zone's random map is reset
//! every `range` bytes of I/O, and a sequential stream reaching the zone's
//! end starts over at its start, so `zonesize` above `zonerange` goes over
//! the range again.

use crate::job::StridedZones;

#[derive(Clone, Debug)]
pub(super) struct Strided {
    zones: StridedZones,
    /// Where zone starts wrap: the file's end, relative to the region start.
    file_room: u64,
    /// The current zone's start, relative to the region start (fio's
    /// `f->file_offset` minus the job's start offset).
    start: u64,
    /// Bytes of I/O done in the current zone (fio's `td->zone_bytes`).
    done: u64,
}

/// What the zone state asks of the streams before an I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ZoneStep {
    /// The streams start at the zone's start (a new zone, or a reset).
    pub restart_streams: bool,
    /// The zone's random map starts over (`fio_file_reset`).
    pub reset_map: bool,
}

impl Strided {
    pub(super) fn new(zones: StridedZones, file_room: u64) -> Strided {
        Strided {
            zones,
            file_room: file_room.max(1),
            start: 0,
            done: 0,
        }
    }

    /// Zone bytes a random picker chooses blocks from.
    pub(super) fn range(&self) -> u64 {
        self.zones.range
    }

    /// The current zone's start, relative to the region start.
    pub(super) fn start(&self) -> u64 {
        self.start
    }

    /// Where a zone's I/O may go up to: the file's end.
    pub(super) fn file_room(&self) -> u64 {
        self.file_room
    }

    /// Before an I/O whose stream would continue at `last_end`: move to the
    /// next zone when this one had its bytes, and say what restarts.
    pub(super) fn before_io(&mut self, last_end: u64) -> ZoneStep {
        let mut restart = false;
        if self.done >= self.zones.size {
            self.done = 0;
            self.start = self
                .start
                .saturating_add(self.zones.range + self.zones.skip);
            if self.start >= self.file_room {
                self.start = 0;
            }
            restart = true;
        }
        if last_end >= self.start + self.zones.range || last_end < self.start {
            restart = true;
        }
        let reset_map = self.done.is_multiple_of(self.zones.range);
        ZoneStep {
            restart_streams: restart || reset_map,
            reset_map,
        }
    }

    pub(super) fn after_io(&mut self, len: u64) {
        self.done += len;
    }

    /// A new pass starts at the first zone.
    pub(super) fn restart(&mut self) {
        self.start = 0;
        self.done = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn zones_move_by_range_plus_skip_and_wrap_at_the_file_end() {
        let mut z = Strided::new(
            StridedZones {
                size: MIB,
                range: MIB,
                skip: 3 * MIB,
            },
            10 * MIB,
        );
        let mut starts = Vec::new();
        for _ in 0..4 {
            let step = z.before_io(z.start());
            assert!(step.reset_map && step.restart_streams);
            starts.push(z.start() / MIB);
            z.after_io(MIB);
        }
        assert_eq!(starts, [0, 4, 8, 0]);
    }

    #[test]
    fn a_zone_larger_than_its_range_goes_over_it_again() {
        let mut z = Strided::new(
            StridedZones {
                size: 2 * MIB,
                range: MIB,
                skip: MIB,
            },
            100 * MIB,
        );
        assert!(z.before_io(0).reset_map);
        z.after_io(MIB / 2);
        assert_eq!(
            z.before_io(MIB / 2),
            ZoneStep {
                restart_streams: false,
                reset_map: false
            }
        );
        z.after_io(MIB / 2);
        // A range's worth done: the map resets and the stream starts over.
        let step = z.before_io(MIB);
        assert!(step.reset_map && step.restart_streams);
        assert_eq!(z.start(), 0);
        z.after_io(MIB);
        z.before_io(MIB);
        assert_eq!(z.start(), 2 * MIB);
    }
}
