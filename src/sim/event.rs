//! The event queue: events ordered by (time, insertion sequence), so events
//! at the same nanosecond run in the order they were scheduled.
//!
//! Every timer is one event kind, [`Event::Timer`], routed by its owner: a
//! task (its wake-up), the attached elevator (with the attach generation, so
//! a switched-away scheduler's timers are dropped), or the device model.
//!
//! Speed matters here: every request costs two or three events. Keys are
//! bare 16-byte integers (time in the high 64 bits, then a 40-bit sequence
//! number and the event in 24 bits, or a slot of a payload table for the rare
//! events that do not fit). Task wake-ups live in their own small heap (one
//! or two per task) apart from device completions and timers (one per request
//! in flight): most pops then sift through a heap of a few entries, and the
//! (time, sequence) keys keep one total order across both heaps.

use super::time::Ns;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Who a timer belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TimerOwner {
    /// A task (fio job or kernel thread), by task id: it may act.
    Task(u32),
    /// The elevator attached at `generation` (the block layer counts
    /// attaches; a timer of an earlier generation is dropped).
    Elevator { generation: u32 },
    /// The device model (an internal wake-up).
    Device,
    /// The queue's rq-qos policies (the token names policy and timer).
    RqQos,
}

/// Something that happens at a point in simulated time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A timer fired; its owner interprets the token.
    Timer(TimerOwner, u64),
    /// The device completes a request.
    DeviceComplete(u32),
    /// Delayed run of a hardware queue (`blk_mq_delay_run_hw_queue`).
    QueueRun(u16),
    /// A scheduler switch requested with `--switch` (index into the switch list).
    Switch(u32),
}

impl Event {
    /// The plain wake-up of task `task` (the most frequent timer).
    pub const fn wake(task: u32) -> Event {
        Event::Timer(TimerOwner::Task(task), 0)
    }
}

/// Low bits of a key: the event itself when it is small (a 3-bit kind and a
/// 21-bit number), else kind `SLAB` and a slot of the payload table.
const CODE_BITS: u32 = 24;
const CODE_MASK: u128 = (1 << CODE_BITS) - 1;
const ARG_BITS: u32 = CODE_BITS - 3;
const ARG_LIMIT: u64 = 1 << ARG_BITS;
const KIND_TASK_WAKE: u32 = 0;
const KIND_DEVICE_COMPLETE: u32 = 1;
const KIND_QUEUE_RUN: u32 = 2;
const KIND_SWITCH: u32 = 3;
const KIND_SLAB: u32 = 7;
/// Sequence numbers use the 40 bits above the code; the queue renumbers its
/// entries before they run out (after about 10^12 events).
const SEQ_LIMIT: u64 = 1 << (64 - CODE_BITS);

pub struct EventQueue {
    /// Task wake-ups.
    wakes: BinaryHeap<Reverse<u128>>,
    /// Everything else.
    heap: BinaryHeap<Reverse<u128>>,
    /// Events that do not fit in a key (device and elevator tokens).
    payload: Vec<Event>,
    free_slots: Vec<u32>,
    seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::new()
    }
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue {
            wakes: BinaryHeap::new(),
            heap: BinaryHeap::new(),
            payload: Vec::new(),
            free_slots: Vec::new(),
            seq: 0,
        }
    }

    /// The 24-bit code of `ev`.
    #[inline]
    fn encode(&mut self, ev: Event) -> u32 {
        let small =
            |kind: u32, arg: u64| (arg < ARG_LIMIT).then_some(kind << ARG_BITS | arg as u32);
        let code = match ev {
            Event::Timer(TimerOwner::Task(j), 0) => small(KIND_TASK_WAKE, j as u64),
            Event::DeviceComplete(rq) => small(KIND_DEVICE_COMPLETE, rq as u64),
            Event::QueueRun(h) => small(KIND_QUEUE_RUN, h as u64),
            Event::Switch(i) => small(KIND_SWITCH, i as u64),
            Event::Timer(..) => None,
        };
        code.unwrap_or_else(|| self.store_in_slab(ev))
    }

    #[inline]
    fn decode(&mut self, code: u32) -> Event {
        let arg = code & (ARG_LIMIT as u32 - 1);
        match code >> ARG_BITS {
            KIND_TASK_WAKE => Event::wake(arg),
            KIND_DEVICE_COMPLETE => Event::DeviceComplete(arg),
            KIND_QUEUE_RUN => Event::QueueRun(arg as u16),
            KIND_SWITCH => Event::Switch(arg),
            _ => {
                self.free_slots.push(arg);
                self.payload[arg as usize]
            }
        }
    }

    fn store_in_slab(&mut self, ev: Event) -> u32 {
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.payload[s as usize] = ev;
                s
            }
            None => {
                let s = self.payload.len() as u32;
                assert!(
                    (s as u64) < ARG_LIMIT,
                    "more than 2M timers with tokens pending"
                );
                self.payload.push(ev);
                s
            }
        };
        KIND_SLAB << ARG_BITS | slot
    }

    pub fn push(&mut self, at: Ns, ev: Event) {
        let wake = matches!(ev, Event::Timer(TimerOwner::Task(_), _));
        let code = self.encode(ev);
        if self.seq + 1 >= SEQ_LIMIT {
            self.renumber();
        }
        self.seq += 1;
        let key = ((at as u128) << 64) | ((self.seq as u128) << CODE_BITS) | code as u128;
        if wake {
            self.wakes.push(Reverse(key));
        } else {
            self.heap.push(Reverse(key));
        }
    }

    pub fn pop(&mut self) -> Option<(Ns, Event)> {
        let from_wakes = match (self.wakes.peek(), self.heap.peek()) {
            (Some(Reverse(w)), Some(Reverse(h))) => w < h,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let Reverse(key) = if from_wakes {
            self.wakes.pop()
        } else {
            self.heap.pop()
        }?;
        let ev = self.decode((key & CODE_MASK) as u32);
        Some(((key >> 64) as Ns, ev))
    }

    pub fn peek_time(&self) -> Option<Ns> {
        let w = self.wakes.peek().map(|Reverse(k)| *k);
        let h = self.heap.peek().map(|Reverse(k)| *k);
        let first = match (w, h) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some((first >> 64) as Ns)
    }

    pub fn len(&self) -> usize {
        self.wakes.len() + self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Give the pending events fresh sequence numbers 1..=n in their order.
    #[cold]
    fn renumber(&mut self) {
        let mut keys: Vec<(u128, bool)> = Vec::with_capacity(self.len());
        keys.extend(self.wakes.drain().map(|Reverse(k)| (k, true)));
        keys.extend(self.heap.drain().map(|Reverse(k)| (k, false)));
        keys.sort_unstable();
        for (i, (k, wake)) in keys.into_iter().enumerate() {
            let time = k >> 64;
            let code = k & CODE_MASK;
            let k = (time << 64) | (((i as u128) + 1) << CODE_BITS) | code;
            if wake {
                self.wakes.push(Reverse(k));
            } else {
                self.heap.push(Reverse(k));
            }
        }
        self.seq = self.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_keep_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, Event::wake(2));
        q.push(5, Event::wake(1));
        q.push(3, Event::QueueRun(0));
        assert_eq!(q.pop(), Some((3, Event::QueueRun(0))));
        assert_eq!(q.pop(), Some((5, Event::wake(2))));
        assert_eq!(q.pop(), Some((5, Event::wake(1))));
        assert!(q.is_empty());
        assert_eq!(q.pop(), None);
    }

    /// The queue against a plain sorted reference, with interleaved pushes and
    /// pops of both heaps' kinds (no event may jump the order).
    #[test]
    fn matches_a_sorted_reference() {
        let mut q = EventQueue::new();
        let mut reference: Vec<(Ns, u64, u32)> = Vec::new();
        let mut seq = 0u64;
        let mut x: u64 = 12345;
        let mut now: Ns = 0;
        for step in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = x >> 33;
            if !r.is_multiple_of(3) || reference.is_empty() {
                let at = now + (r % 7) * (r % 50);
                seq += 1;
                let ev = if r.is_multiple_of(2) {
                    Event::wake(step)
                } else {
                    Event::DeviceComplete(step)
                };
                q.push(at, ev);
                reference.push((at, seq, step));
            } else {
                reference.sort();
                let (at, _, id) = reference.remove(0);
                assert_eq!(q.peek_time(), Some(at));
                let (t, ev) = q.pop().unwrap();
                assert_eq!(t, at);
                assert!(
                    matches!(ev, Event::Timer(TimerOwner::Task(x), 0) | Event::DeviceComplete(x) if x == id)
                );
                now = at;
            }
            assert_eq!(q.len(), reference.len());
        }
    }

    #[test]
    fn every_kind_round_trips() {
        let mut q = EventQueue::new();
        let evs = [
            Event::wake(7),
            Event::wake(u32::MAX),
            Event::DeviceComplete(3),
            Event::DeviceComplete(1 << 22),
            Event::QueueRun(65535),
            Event::Switch(2),
            Event::Timer(TimerOwner::Device, u64::MAX),
            Event::Timer(TimerOwner::Elevator { generation: 3 }, 42),
            Event::Timer(TimerOwner::Task(9), 5),
        ];
        for (i, e) in evs.iter().enumerate() {
            q.push(100 - i as Ns, *e);
        }
        let mut out: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        out.reverse();
        assert_eq!(out, evs.to_vec());
        // Slab slots are reused.
        q.push(1, Event::Timer(TimerOwner::Device, 5));
        assert_eq!(q.pop(), Some((1, Event::Timer(TimerOwner::Device, 5))));
        assert_eq!(q.payload.len(), 5, "five events did not fit in a key");
    }

    #[test]
    fn renumbering_keeps_the_order() {
        let mut q = EventQueue::new();
        q.push(10, Event::wake(1));
        q.push(10, Event::DeviceComplete(2));
        q.push(4, Event::wake(3));
        q.push(10, Event::wake(4));
        q.seq = SEQ_LIMIT - 2;
        q.push(10, Event::wake(5));
        q.push(10, Event::wake(6));
        assert!(q.seq < 10, "renumbered");
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            [3, 1, 2, 4, 5, 6]
                .map(|i| if i == 2 {
                    Event::DeviceComplete(2)
                } else {
                    Event::wake(i)
                })
                .to_vec(),
            "same-time events keep their order across a renumbering"
        );
    }
}
