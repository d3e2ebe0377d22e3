//! Sector-sorted request index, the model's stand-in for the kernel's
//! per-direction `sort_list` rb-trees (`elv_rb_add/del/find`,
//! `elv_rb_former_request`/`elv_rb_latter_request`).
//!
//! Design: one node pool (`SortForest`) indexed by `RqId` serves every tree of a
//! scheduler (a request sits in at most one tree at a time). Each tree is a
//! treap with parent links, so insert/remove/lookup are O(log n) expected and
//! successor/predecessor are O(log n) worst case without a stack. The pool only
//! grows to the highest request id ever inserted, so the hot path does not
//! allocate once the arena has reached its peak size.
//!
//! Ordering: by start sector; requests with equal start sectors keep insertion
//! order (the kernel's `elv_rb_add` sends equal keys to the right, so a later
//! insertion sorts after earlier ones; re-keying after a front merge is a
//! delete + add and therefore also goes after its equals).

use crate::block::request::{RqId, NIL};

#[derive(Clone, Copy, Debug)]
struct Node {
    left: RqId,
    right: RqId,
    parent: RqId,
    sector: u64,
    /// Insertion sequence number: tie-break for equal sectors.
    seq: u64,
    /// Heap priority of the treap.
    prio: u32,
    /// Tree id this node belongs to, or `FREE`.
    owner: u8,
}

const FREE: u8 = u8::MAX;

impl Node {
    const EMPTY: Node = Node {
        left: NIL,
        right: NIL,
        parent: NIL,
        sector: 0,
        seq: 0,
        prio: 0,
        owner: FREE,
    };
}

/// One sorted tree (root handle). Create trees with distinct ids through
/// `SortTree::new(id)`; the forest uses the id to check membership.
#[derive(Clone, Copy, Debug)]
pub struct SortTree {
    root: RqId,
    len: u32,
    id: u8,
}

impl SortTree {
    pub const fn new(id: u8) -> SortTree {
        SortTree {
            root: NIL,
            len: 0,
            id,
        }
    }
    pub fn len(&self) -> u32 {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn id(&self) -> u8 {
        self.id
    }
}

/// Node pool shared by the trees of one scheduler.
#[derive(Clone, Debug)]
pub struct SortForest {
    nodes: Vec<Node>,
    seq: u64,
    rng: u64,
}

impl Default for SortForest {
    fn default() -> Self {
        SortForest::new()
    }
}

impl SortForest {
    pub fn new() -> SortForest {
        SortForest {
            nodes: Vec::new(),
            seq: 0,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn next_prio(&mut self) -> u32 {
        // xorshift64*: deterministic, good enough for treap balance.
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    fn key_less(&self, a: RqId, b: RqId) -> bool {
        let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
        (na.sector, na.seq) < (nb.sector, nb.seq)
    }

    /// Tree id holding `id`, if any.
    pub fn owner(&self, id: RqId) -> Option<u8> {
        match self.nodes.get(id as usize) {
            Some(n) if n.owner != FREE => Some(n.owner),
            _ => None,
        }
    }

    /// Whether `id` is in `tree`.
    pub fn contains(&self, tree: &SortTree, id: RqId) -> bool {
        self.owner(id) == Some(tree.id)
    }

    /// Sector key `id` was inserted with.
    pub fn sector(&self, id: RqId) -> Option<u64> {
        self.owner(id).map(|_| self.nodes[id as usize].sector)
    }

    /// Add `id` keyed by `sector`. A request already in some tree is moved.
    pub fn insert(&mut self, tree: &mut SortTree, id: RqId, sector: u64) {
        if self.owner(id).is_some() {
            // Defensive: never link a node twice. The caller should have
            // removed it; if it sits in another tree we cannot reach that
            // tree's root, so only accept re-insertion into the same tree.
            if self.contains(tree, id) {
                self.remove(tree, id);
            } else {
                return;
            }
        }
        let idx = id as usize;
        if self.nodes.len() <= idx {
            self.nodes.resize(idx + 1, Node::EMPTY);
        }
        self.seq += 1;
        let prio = self.next_prio();
        self.nodes[idx] = Node {
            left: NIL,
            right: NIL,
            parent: NIL,
            sector,
            seq: self.seq,
            prio,
            owner: tree.id,
        };
        // Plain BST descent.
        let mut parent = NIL;
        let mut cur = tree.root;
        let mut go_left = false;
        while cur != NIL {
            parent = cur;
            go_left = self.key_less(id, cur);
            cur = if go_left {
                self.nodes[cur as usize].left
            } else {
                self.nodes[cur as usize].right
            };
        }
        self.nodes[idx].parent = parent;
        if parent == NIL {
            tree.root = id;
        } else if go_left {
            self.nodes[parent as usize].left = id;
        } else {
            self.nodes[parent as usize].right = id;
        }
        tree.len += 1;
        // Restore the heap property.
        loop {
            let p = self.nodes[idx].parent;
            if p == NIL || self.nodes[p as usize].prio >= prio {
                break;
            }
            self.rotate_up(tree, id);
        }
    }

    /// Rotate `x` above its parent.
    fn rotate_up(&mut self, tree: &mut SortTree, x: RqId) {
        let p = self.nodes[x as usize].parent;
        let g = self.nodes[p as usize].parent;
        if self.nodes[p as usize].left == x {
            let b = self.nodes[x as usize].right;
            self.nodes[p as usize].left = b;
            if b != NIL {
                self.nodes[b as usize].parent = p;
            }
            self.nodes[x as usize].right = p;
        } else {
            let b = self.nodes[x as usize].left;
            self.nodes[p as usize].right = b;
            if b != NIL {
                self.nodes[b as usize].parent = p;
            }
            self.nodes[x as usize].left = p;
        }
        self.nodes[p as usize].parent = x;
        self.nodes[x as usize].parent = g;
        self.replace_child(tree, g, p, x);
    }

    fn replace_child(&mut self, tree: &mut SortTree, parent: RqId, old: RqId, new: RqId) {
        if parent == NIL {
            tree.root = new;
        } else if self.nodes[parent as usize].left == old {
            self.nodes[parent as usize].left = new;
        } else {
            self.nodes[parent as usize].right = new;
        }
    }

    /// Remove `id` from `tree`; false if it was not there.
    pub fn remove(&mut self, tree: &mut SortTree, id: RqId) -> bool {
        if !self.contains(tree, id) {
            return false;
        }
        let idx = id as usize;
        // Rotate the node down until it has at most one child.
        loop {
            let (l, r) = (self.nodes[idx].left, self.nodes[idx].right);
            if l == NIL || r == NIL {
                break;
            }
            let c = if self.nodes[l as usize].prio > self.nodes[r as usize].prio {
                l
            } else {
                r
            };
            self.rotate_up(tree, c);
        }
        let (l, r, p) = (
            self.nodes[idx].left,
            self.nodes[idx].right,
            self.nodes[idx].parent,
        );
        let child = if l != NIL { l } else { r };
        if child != NIL {
            self.nodes[child as usize].parent = p;
        }
        self.replace_child(tree, p, id, child);
        self.nodes[idx] = Node::EMPTY;
        tree.len -= 1;
        true
    }

    /// Change the key of `id` (front merge moved its start sector).
    pub fn rekey(&mut self, tree: &mut SortTree, id: RqId, sector: u64) {
        if self.remove(tree, id) {
            self.insert(tree, id, sector);
        }
    }

    fn leftmost(&self, mut x: RqId) -> RqId {
        while x != NIL && self.nodes[x as usize].left != NIL {
            x = self.nodes[x as usize].left;
        }
        x
    }

    fn rightmost(&self, mut x: RqId) -> RqId {
        while x != NIL && self.nodes[x as usize].right != NIL {
            x = self.nodes[x as usize].right;
        }
        x
    }

    /// Lowest request of the tree.
    pub fn first(&self, tree: &SortTree) -> Option<RqId> {
        let x = self.leftmost(tree.root);
        (x != NIL).then_some(x)
    }

    /// Highest request of the tree.
    pub fn last(&self, tree: &SortTree) -> Option<RqId> {
        let x = self.rightmost(tree.root);
        (x != NIL).then_some(x)
    }

    /// First request (in sort order) whose start sector is >= `pos`
    /// (mq-deadline's `deadline_from_pos`).
    pub fn lower_bound(&self, tree: &SortTree, pos: u64) -> Option<RqId> {
        let mut cur = tree.root;
        let mut res = NIL;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if n.sector >= pos {
                res = cur;
                cur = n.left;
            } else {
                cur = n.right;
            }
        }
        (res != NIL).then_some(res)
    }

    /// A request starting exactly at `sector` (`elv_rb_find`); the earliest
    /// inserted one if several do.
    pub fn find(&self, tree: &SortTree, sector: u64) -> Option<RqId> {
        self.lower_bound(tree, sector)
            .filter(|&x| self.nodes[x as usize].sector == sector)
    }

    /// In-order successor of `id` in its tree (`rb_next`).
    pub fn next(&self, id: RqId) -> Option<RqId> {
        self.owner(id)?;
        let n = &self.nodes[id as usize];
        if n.right != NIL {
            return Some(self.leftmost(n.right));
        }
        let mut x = id;
        let mut p = n.parent;
        while p != NIL && self.nodes[p as usize].right == x {
            x = p;
            p = self.nodes[p as usize].parent;
        }
        (p != NIL).then_some(p)
    }

    /// In-order predecessor of `id` in its tree (`rb_prev`).
    pub fn prev(&self, id: RqId) -> Option<RqId> {
        self.owner(id)?;
        let n = &self.nodes[id as usize];
        if n.left != NIL {
            return Some(self.rightmost(n.left));
        }
        let mut x = id;
        let mut p = n.parent;
        while p != NIL && self.nodes[p as usize].left == x {
            x = p;
            p = self.nodes[p as usize].parent;
        }
        (p != NIL).then_some(p)
    }

    /// All members of `tree` in order (tests and debugging; allocates).
    pub fn to_vec(&self, tree: &SortTree) -> Vec<RqId> {
        let mut out = Vec::with_capacity(tree.len as usize);
        let mut cur = self.first(tree);
        while let Some(x) = cur {
            out.push(x);
            cur = self.next(x);
        }
        out
    }

    /// Check the BST, heap, parent-link and size invariants (tests).
    #[cfg(test)]
    pub fn check(&self, tree: &SortTree) {
        fn walk(f: &SortForest, t: &SortTree, x: RqId, parent: RqId, count: &mut u32) {
            if x == NIL {
                return;
            }
            let n = &f.nodes[x as usize];
            assert_eq!(n.owner, t.id, "node {x} in wrong tree");
            assert_eq!(n.parent, parent, "bad parent link at {x}");
            if n.left != NIL {
                assert!(f.key_less(n.left, x));
                assert!(f.nodes[n.left as usize].prio <= n.prio);
            }
            if n.right != NIL {
                assert!(f.key_less(x, n.right));
                assert!(f.nodes[n.right as usize].prio <= n.prio);
            }
            *count += 1;
            walk(f, t, n.left, x, count);
            walk(f, t, n.right, x, count);
        }
        let mut count = 0;
        walk(self, tree, tree.root, NIL, &mut count);
        assert_eq!(count, tree.len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn equal_sectors_keep_insertion_order() {
        let mut f = SortForest::new();
        let mut t = SortTree::new(0);
        f.insert(&mut t, 5, 100);
        f.insert(&mut t, 2, 100);
        f.insert(&mut t, 9, 50);
        f.insert(&mut t, 1, 100);
        assert_eq!(f.to_vec(&t), vec![9, 5, 2, 1]);
        assert_eq!(f.find(&t, 100), Some(5));
        assert_eq!(f.find(&t, 99), None);
        assert_eq!(f.lower_bound(&t, 51), Some(5));
        assert_eq!(f.lower_bound(&t, 101), None);
        // Re-keying sends the request after its new equals.
        f.rekey(&mut t, 9, 100);
        assert_eq!(f.to_vec(&t), vec![5, 2, 1, 9]);
        assert_eq!(f.prev(5), None);
        assert_eq!(f.next(9), None);
        assert_eq!(f.prev(9), Some(1));
        f.check(&t);
    }

    #[test]
    fn membership_is_per_tree() {
        let mut f = SortForest::new();
        let mut a = SortTree::new(0);
        let mut b = SortTree::new(1);
        f.insert(&mut a, 3, 10);
        assert!(!f.remove(&mut b, 3));
        assert!(f.contains(&a, 3));
        // Inserting into another tree while linked is refused.
        f.insert(&mut b, 3, 10);
        assert_eq!(b.len(), 0);
        assert!(f.remove(&mut a, 3));
        assert!(!f.remove(&mut a, 3));
        assert_eq!(f.next(3), None);
        f.insert(&mut b, 3, 10);
        assert_eq!(f.owner(3), Some(1));
    }

    #[test]
    fn random_operations_match_btreeset() {
        let mut f = SortForest::new();
        let mut t = SortTree::new(7);
        let mut model: BTreeSet<(u64, u64, RqId)> = BTreeSet::new();
        let mut seq_of = vec![0u64; 256];
        let mut seq = 0u64;
        let mut x: u64 = 12345;
        for step in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let id = ((x >> 33) % 256) as RqId;
            let sector = (x >> 45) % 64;
            if f.contains(&t, id) {
                let s = f.sector(id).unwrap();
                model.remove(&(s, seq_of[id as usize], id));
                if step % 3 == 0 {
                    f.rekey(&mut t, id, sector);
                    seq += 1;
                    seq_of[id as usize] = seq;
                    model.insert((sector, seq, id));
                } else {
                    assert!(f.remove(&mut t, id));
                }
            } else {
                f.insert(&mut t, id, sector);
                seq += 1;
                seq_of[id as usize] = seq;
                model.insert((sector, seq, id));
            }
            if step % 997 == 0 {
                f.check(&t);
            }
            let want: Vec<RqId> = model.iter().map(|e| e.2).collect();
            if step % 101 == 0 {
                assert_eq!(f.to_vec(&t), want);
                let pos = (x >> 20) % 70;
                let lb = model.iter().find(|e| e.0 >= pos).map(|e| e.2);
                assert_eq!(f.lower_bound(&t, pos), lb);
                // Predecessors agree too.
                for w in want.windows(2) {
                    assert_eq!(f.prev(w[1]), Some(w[0]));
                }
            }
        }
        f.check(&t);
        assert_eq!(t.len() as usize, model.len());
    }
}
