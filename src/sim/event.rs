//! The event queue: a binary heap ordered by (time, insertion sequence), so
//! events at the same nanosecond run in the order they were scheduled.

use super::time::Ns;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Something that happens at a point in simulated time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A job may act (start, end of think/rate delay, end of a submit call, woken from a tag wait).
    JobWake(u32),
    /// The device completes a request.
    DeviceComplete(u32),
    /// An internal device wake-up with the device's token.
    DeviceWake(u64),
    /// Delayed run of a hardware queue (`blk_mq_delay_run_hw_queue`).
    QueueRun(u16),
    /// An elevator timer with the elevator's token.
    ElvTimer(u64),
    /// A scheduler switch requested with `--switch` (index into the switch list).
    Switch(u32),
}

/// A heap entry ordered by one integer: time in the high 64 bits, the
/// insertion sequence in the low 64 (one comparison per heap step).
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u128,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue::default()
    }
    pub fn push(&mut self, at: Ns, ev: Event) {
        self.seq += 1;
        let key = ((at as u128) << 64) | self.seq as u128;
        self.heap.push(Reverse(Entry { key, ev }));
    }
    pub fn pop(&mut self) -> Option<(Ns, Event)> {
        self.heap
            .pop()
            .map(|Reverse(e)| ((e.key >> 64) as Ns, e.ev))
    }
    pub fn peek_time(&self) -> Option<Ns> {
        self.heap.peek().map(|Reverse(e)| (e.key >> 64) as Ns)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn same_time_events_keep_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, Event::JobWake(2));
        q.push(5, Event::JobWake(1));
        q.push(3, Event::QueueRun(0));
        assert_eq!(q.pop(), Some((3, Event::QueueRun(0))));
        assert_eq!(q.pop(), Some((5, Event::JobWake(2))));
        assert_eq!(q.pop(), Some((5, Event::JobWake(1))));
        assert!(q.is_empty());
    }
}
