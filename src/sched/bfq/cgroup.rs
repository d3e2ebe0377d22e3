//! BFQ's groups (block/bfq-cgroup.c): one `bfq_group` per cgroup that does
//! I/O on the device, created with its ancestors on first use; each non-root
//! group is a BE-class entity of weight `blkio.bfq.weight` /
//! `io.bfq.weight` in its parent's sched_data. Also the tag-depth limits of
//! `bfq_limit_depth`, which walk the same hierarchy.

use super::rbtree::{RbRoot, NIL};
use super::wf2q::CLASS_BE;
use super::{Bfq, T};
use crate::block::elevator::{BioInfo, QueueInfo};
use crate::cgroup::{CgroupTree, WeightPolicy, IOPRIO_NR_LEVELS};

/// `struct bfq_group`.
#[derive(Clone, Debug)]
pub struct Group {
    /// The group's entity in its parent (NIL for the root).
    pub ent: u32,
    /// Its sched_data (the engine's index).
    pub sd: u32,
    /// Async queues per class (RT, BE) and level, and the idle-class one.
    pub async_bfqq: [[u32; IOPRIO_NR_LEVELS as usize]; 2],
    pub async_idle: u32,
    /// Sync queues of the group by the position of their next request.
    pub pos_tree: RbRoot,
    /// The group's last created queue (stable merging).
    pub last_bfqq_created: u32,
}

impl Group {
    fn new(ent: u32, sd: u32) -> Group {
        Group {
            ent,
            sd,
            async_bfqq: [[NIL; IOPRIO_NR_LEVELS as usize]; 2],
            async_idle: NIL,
            pos_tree: RbRoot::EMPTY,
            last_bfqq_created: NIL,
        }
    }
}

impl Bfq {
    /// The root group (index 0), created at init.
    pub(super) fn init_root_group(&mut self, t: T) {
        let sd = self.wf.new_sched_data(NIL, t.j);
        debug_assert_eq!(sd, 0);
        self.g.push(Group::new(NIL, sd));
        self.group_of = vec![0];
    }

    /// The group of cgroup `cg`, created with its ancestors on first use
    /// (`bfq_bio_bfqg`, with `blkg_lookup_create` making the parents).
    pub(super) fn group_of(&mut self, cgroups: &CgroupTree, t: T, cg: u16) -> u32 {
        if let Some(&g) = self.group_of.get(cg as usize) {
            if g != NIL {
                return g;
            }
        }
        let parent_cg = cgroups.parent(cg).unwrap_or(0);
        let parent = if cg == 0 {
            0
        } else {
            self.group_of(cgroups, t, parent_cg)
        };
        if cg == 0 {
            return 0;
        }
        let weight = cgroups.weight(cg, WeightPolicy::Bfq);
        let (psd, pent) = {
            let p = &self.g[parent as usize];
            (p.sd, p.ent)
        };
        let ent = self.wf.new_entity(psd, pent, weight);
        let sd = self.wf.new_sched_data(ent, t.j);
        {
            let e = &mut self.wf.e[ent as usize];
            e.my_sd = sd;
            e.class = CLASS_BE;
            e.new_class = CLASS_BE;
        }
        let g = self.g.len() as u32;
        debug_assert_eq!(g, sd, "a group's index is its sched_data's");
        self.g.push(Group::new(ent, sd));
        if self.group_of.len() <= cg as usize {
            self.group_of.resize(cg as usize + 1, NIL);
        }
        self.group_of[cg as usize] = g;
        g
    }

    /// `bfqq_request_over_limit`: whether the queue of this allocation, or
    /// one of its groups, already holds more scheduler tags than its weight
    /// gives it out of `limit`.
    pub(super) fn request_over_limit(&mut self, q: u32, limit: u32) -> bool {
        let ent = self.q[q as usize].ent;
        if !self.wf.e[ent as usize].on_st_or_in_serv {
            return false;
        }
        // Gather the path (queue first), stopping if some level is inactive.
        let mut path = [NIL; 64];
        let mut n = 0;
        let mut id = ent;
        while id != NIL {
            if !self.wf.e[id as usize].on_st_or_in_serv {
                return false;
            }
            if n == path.len() {
                break;
            }
            path[n] = id;
            n += 1;
            id = self.wf.e[id as usize].parent;
        }
        self.wf.steps += n as u64 - 1;
        let mut limit = u64::from(limit);
        for level in (0..n).rev() {
            let id = path[level];
            let e = &self.wf.e[id as usize];
            let sd = &self.wf.sd[e.sd as usize];
            let wsum = if level > 0 {
                sd.st[e.class as usize].wsum
            } else {
                // For the queue itself, weights of higher classes count
                // IOPRIO_NR_LEVELS times as much per class step.
                let mut w: u64 = 0;
                for c in 0..=e.class as usize {
                    w = w * u64::from(IOPRIO_NR_LEVELS) + sd.st[c].wsum;
                }
                w
            };
            if wsum == 0 {
                continue;
            }
            // DIV_ROUND_CLOSEST.
            limit = (limit * u64::from(e.weight) + wsum / 2) / wsum;
            if u64::from(e.allocated) >= limit {
                return true;
            }
        }
        false
    }

    /// `bfq_limit_depth`: the shallow depth of a scheduler-tag allocation.
    /// The cap of a queue and its groups is counted in tags of the whole
    /// queue; the depth handed out is in the kernel's shallow unit (bits
    /// per tag word before v6.17, of the whole map from v6.17), and 1 once
    /// some level is over its cap.
    pub(super) fn limit_depth_of(&mut self, bio: &BioInfo, q: &QueueInfo) -> Option<u32> {
        let sync = bio.is_sync();
        let write = bio.op.is_write();
        let (limit, mut shallow) = if sync && !write {
            (q.nr_requests, None)
        } else {
            let (wr, s) = (usize::from(self.wf.wr_busy_queues > 0), usize::from(sync));
            (self.async_depths[wr][s], Some(self.shallow_depths[wr][s]))
        };
        let bic = self.bic_lookup(bio.pid);
        if bic != NIL {
            let bfqq = self.bics[bic as usize].bfqq[usize::from(sync)];
            if bfqq != NIL && self.request_over_limit(bfqq, limit) {
                shallow = Some(1);
            }
        }
        shallow.filter(|&d| d < q.nr_requests)
    }

    /// `bfq_update_depths`: ½ and ¾ of the tags for async and sync writes,
    /// 3/16 and 6/16 while some queue is weight-raised. The caps count
    /// whole-queue tags (`nr_requests`); the shallow depths are the same
    /// fractions of the kernel's shallow unit (before v6.17 one tag word,
    /// `word_depths` scaled by `1 << sb.shift`).
    pub(super) fn update_depths(&mut self, q: &QueueInfo) {
        let fractions = |base: u32| {
            [
                [(base >> 1).max(1), ((base * 3) >> 2).max(1)],
                [((base * 3) >> 4).max(1), ((base * 6) >> 4).max(1)],
            ]
        };
        self.async_depths = fractions(q.nr_requests);
        self.shallow_depths = fractions(q.shallow_base());
    }
}
