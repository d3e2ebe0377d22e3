//! A request trace: what `block:block_rq_issue` shows for each request the
//! driver takes (time, rwbs, sector, bytes, submitting task), kept in a
//! bounded buffer when a run asks for it (`RunSpec::trace_requests`).
//! Tests compare it with the kernel's traced I/O sequences.

use super::request::{flags, Op, Request};
use crate::sim::time::Ns;

/// One issued request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedRq {
    /// When the driver took it.
    pub at: Ns,
    pub op: Op,
    /// `REQ_*` flags as issued.
    pub flags: u32,
    pub sector: u64,
    pub bytes: u64,
    /// Task id of the submitter (the flush machinery's flush command
    /// carries the task of the request that started it).
    pub pid: u32,
}

impl TracedRq {
    /// `blk_fill_rwbs`: F (preflush), the op (R, W, D, or F for a flush),
    /// F (FUA), S (sync), M (meta); a flush command reads "FF".
    pub fn rwbs(&self) -> String {
        let mut s = String::new();
        if self.flags & flags::PREFLUSH != 0 || self.op == Op::Flush {
            s.push('F');
        }
        s.push(match self.op {
            Op::Read => 'R',
            Op::Write => 'W',
            Op::Flush => 'F',
            Op::Discard => 'D',
        });
        if self.flags & flags::FUA != 0 {
            s.push('F');
        }
        if self.flags & flags::SYNC != 0 && self.op != Op::Flush {
            s.push('S');
        }
        if self.flags & flags::META != 0 {
            s.push('M');
        }
        s
    }
}

/// The bounded trace.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    pub records: Vec<TracedRq>,
    /// Most records kept; later requests are counted only.
    pub cap: usize,
    pub dropped: u64,
}

impl Trace {
    pub fn new(cap: usize) -> Trace {
        Trace {
            records: Vec::new(),
            cap,
            dropped: 0,
        }
    }

    /// The driver took `rq` at `at`.
    pub fn record(&mut self, at: Ns, rq: &Request) {
        if self.records.len() >= self.cap {
            self.dropped += 1;
            return;
        }
        self.records.push(TracedRq {
            at,
            op: rq.op,
            flags: rq.flags & flags::REQ_MASK,
            sector: rq.sector,
            bytes: rq.nr_sectors as u64 * 512,
            pid: rq.pid,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs_spells_like_the_kernel() {
        let r = |op, f| TracedRq {
            at: 0,
            op,
            flags: f,
            sector: 0,
            bytes: 0,
            pid: 0,
        };
        assert_eq!(r(Op::Flush, flags::PREFLUSH).rwbs(), "FF");
        assert_eq!(r(Op::Write, flags::SYNC).rwbs(), "WS");
        assert_eq!(
            r(Op::Write, flags::SYNC | flags::META | flags::IDLE).rwbs(),
            "WSM"
        );
        assert_eq!(
            r(Op::Write, flags::SYNC | flags::META | flags::FUA).rwbs(),
            "WFSM"
        );
        assert_eq!(r(Op::Write, flags::BACKGROUND).rwbs(), "W");
        assert_eq!(r(Op::Read, 0).rwbs(), "R");
        let mut t = Trace::new(1);
        let rq = Request::empty();
        t.record(5, &rq);
        t.record(6, &rq);
        assert_eq!((t.records.len(), t.dropped), (1, 1));
    }
}
