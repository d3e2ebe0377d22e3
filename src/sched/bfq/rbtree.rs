//! The kernel's red-black tree (lib/rbtree.c: `rb_link_node`,
//! `rb_insert_color`, `rb_erase`, `rb_next`, `rb_prev`), on nodes named by
//! index. BFQ's service trees, idle trees and request-position trees are
//! kernel rbtrees, and its B-WF2Q+ lookup (`bfq_first_active_entity`) walks
//! the tree's actual shape: with an equal sequence of insertions and
//! erasures, this port builds the same shapes, so the walk visits the same
//! nodes and returns the same entity as the kernel's.
//!
//! Nodes live in the caller's arena ([`RbArena`]); a node sits in at most
//! one tree at a time. The rebalancing code follows lib/rbtree.c case by
//! case (insertion cases 1-3, erasure cases 1-4, both mirror images), with
//! the augmented callbacks of plain `rb_insert_color`/`rb_erase` (none):
//! BFQ repairs its augmentation itself afterwards.

/// "No node".
pub const NIL: u32 = u32::MAX;

/// A node's links and colour (`struct rb_node`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RbLinks {
    pub left: u32,
    pub right: u32,
    pub parent: u32,
    pub red: bool,
}

impl RbLinks {
    pub const EMPTY: RbLinks = RbLinks {
        left: NIL,
        right: NIL,
        parent: NIL,
        red: false,
    };
}

impl Default for RbLinks {
    fn default() -> Self {
        RbLinks::EMPTY
    }
}

/// A tree (`struct rb_root`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RbRoot {
    pub node: u32,
}

impl Default for RbRoot {
    fn default() -> Self {
        RbRoot::EMPTY
    }
}

impl RbRoot {
    pub const EMPTY: RbRoot = RbRoot { node: NIL };
    pub fn is_empty(&self) -> bool {
        self.node == NIL
    }
}

/// Where a tree's nodes live.
pub trait RbArena {
    fn links(&self, i: u32) -> &RbLinks;
    fn links_mut(&mut self, i: u32) -> &mut RbLinks;
}

#[inline]
fn is_red<A: RbArena + ?Sized>(a: &A, n: u32) -> bool {
    n != NIL && a.links(n).red
}

#[inline]
fn set_parent_color<A: RbArena + ?Sized>(a: &mut A, n: u32, parent: u32, red: bool) {
    let l = a.links_mut(n);
    l.parent = parent;
    l.red = red;
}

/// `__rb_change_child`.
#[inline]
fn change_child<A: RbArena + ?Sized>(
    a: &mut A,
    old: u32,
    new: u32,
    parent: u32,
    root: &mut RbRoot,
) {
    if parent != NIL {
        let p = a.links_mut(parent);
        if p.left == old {
            p.left = new;
        } else {
            p.right = new;
        }
    } else {
        root.node = new;
    }
}

/// `__rb_rotate_set_parents`: `new` takes `old`'s parent and colour, `old`
/// becomes `new`'s child with colour `red`.
#[inline]
fn rotate_set_parents<A: RbArena + ?Sized>(
    a: &mut A,
    old: u32,
    new: u32,
    root: &mut RbRoot,
    red: bool,
) {
    let o = *a.links(old);
    {
        let n = a.links_mut(new);
        n.parent = o.parent;
        n.red = o.red;
    }
    set_parent_color(a, old, new, red);
    change_child(a, old, new, o.parent, root);
}

/// `rb_link_node`: hang `node` (red, no children) under `parent` (NIL: as
/// the root) on the given side.
pub fn link_node<A: RbArena + ?Sized>(
    a: &mut A,
    root: &mut RbRoot,
    node: u32,
    parent: u32,
    left: bool,
) {
    *a.links_mut(node) = RbLinks {
        left: NIL,
        right: NIL,
        parent,
        red: true,
    };
    if parent == NIL {
        root.node = node;
    } else if left {
        a.links_mut(parent).left = node;
    } else {
        a.links_mut(parent).right = node;
    }
}

/// `rb_insert_color`: rebalance after `link_node`.
pub fn insert_color<A: RbArena + ?Sized>(a: &mut A, root: &mut RbRoot, mut node: u32) {
    let mut parent = a.links(node).parent;
    loop {
        // Loop invariant: node is red.
        if parent == NIL {
            set_parent_color(a, node, NIL, false);
            break;
        }
        if !a.links(parent).red {
            break;
        }
        let gparent = a.links(parent).parent;
        let mut tmp = a.links(gparent).right;
        if parent != tmp {
            // parent == gparent->rb_left
            if is_red(a, tmp) {
                // Case 1: colour flips.
                set_parent_color(a, tmp, gparent, false);
                set_parent_color(a, parent, gparent, false);
                node = gparent;
                parent = a.links(node).parent;
                set_parent_color(a, node, parent, true);
                continue;
            }
            tmp = a.links(parent).right;
            if node == tmp {
                // Case 2: left rotate at parent.
                tmp = a.links(node).left;
                a.links_mut(parent).right = tmp;
                a.links_mut(node).left = parent;
                if tmp != NIL {
                    set_parent_color(a, tmp, parent, false);
                }
                set_parent_color(a, parent, node, true);
                parent = node;
                tmp = a.links(node).right;
            }
            // Case 3: right rotate at gparent.
            a.links_mut(gparent).left = tmp;
            a.links_mut(parent).right = gparent;
            if tmp != NIL {
                set_parent_color(a, tmp, gparent, false);
            }
            rotate_set_parents(a, gparent, parent, root, true);
            break;
        } else {
            tmp = a.links(gparent).left;
            if is_red(a, tmp) {
                // Case 1: colour flips.
                set_parent_color(a, tmp, gparent, false);
                set_parent_color(a, parent, gparent, false);
                node = gparent;
                parent = a.links(node).parent;
                set_parent_color(a, node, parent, true);
                continue;
            }
            tmp = a.links(parent).left;
            if node == tmp {
                // Case 2: right rotate at parent.
                tmp = a.links(node).right;
                a.links_mut(parent).left = tmp;
                a.links_mut(node).right = parent;
                if tmp != NIL {
                    set_parent_color(a, tmp, parent, false);
                }
                set_parent_color(a, parent, node, true);
                parent = node;
                tmp = a.links(node).left;
            }
            // Case 3: left rotate at gparent.
            a.links_mut(gparent).right = tmp;
            a.links_mut(parent).left = gparent;
            if tmp != NIL {
                set_parent_color(a, tmp, gparent, false);
            }
            rotate_set_parents(a, gparent, parent, root, true);
            break;
        }
    }
}

/// `rb_erase`: unlink `node` and rebalance. The node's links are cleared
/// (`RB_CLEAR_NODE`).
pub fn erase<A: RbArena + ?Sized>(a: &mut A, root: &mut RbRoot, node: u32) {
    let n = *a.links(node);
    let child = n.right;
    let tmp = n.left;
    let rebalance;
    if tmp == NIL {
        // Case 1: at most one child (the right one).
        change_child(a, node, child, n.parent, root);
        if child != NIL {
            set_parent_color(a, child, n.parent, n.red);
            rebalance = NIL;
        } else {
            rebalance = if n.red { NIL } else { n.parent };
        }
    } else if child == NIL {
        // Still case 1, with the left child.
        set_parent_color(a, tmp, n.parent, n.red);
        change_child(a, node, tmp, n.parent, root);
        rebalance = NIL;
    } else {
        let mut successor = child;
        let parent;
        let child2;
        let mut t = a.links(child).left;
        if t == NIL {
            // Case 2: the successor is the right child.
            parent = successor;
            child2 = a.links(successor).right;
        } else {
            // Case 3: the successor is leftmost under the right child.
            let mut p;
            loop {
                p = successor;
                successor = t;
                t = a.links(t).left;
                if t == NIL {
                    break;
                }
            }
            parent = p;
            child2 = a.links(successor).right;
            a.links_mut(parent).left = child2;
            a.links_mut(successor).right = child;
            a.links_mut(child).parent = successor;
        }
        a.links_mut(successor).left = n.left;
        a.links_mut(n.left).parent = successor;
        change_child(a, node, successor, n.parent, root);
        let successor_red = a.links(successor).red;
        if child2 != NIL {
            set_parent_color(a, child2, parent, false);
            rebalance = NIL;
        } else {
            rebalance = if successor_red { NIL } else { parent };
        }
        set_parent_color(a, successor, n.parent, n.red);
    }
    if rebalance != NIL {
        erase_color(a, root, rebalance);
    }
    *a.links_mut(node) = RbLinks::EMPTY;
}

/// `____rb_erase_color`.
fn erase_color<A: RbArena + ?Sized>(a: &mut A, root: &mut RbRoot, mut parent: u32) {
    let mut node = NIL;
    loop {
        let mut sibling = a.links(parent).right;
        if node != sibling {
            // node == parent->rb_left
            if is_red(a, sibling) {
                // Case 1: left rotate at parent.
                let tmp1 = a.links(sibling).left;
                a.links_mut(parent).right = tmp1;
                a.links_mut(sibling).left = parent;
                set_parent_color(a, tmp1, parent, false);
                rotate_set_parents(a, parent, sibling, root, true);
                sibling = tmp1;
            }
            let mut tmp1 = a.links(sibling).right;
            if !is_red(a, tmp1) {
                let tmp2 = a.links(sibling).left;
                if !is_red(a, tmp2) {
                    // Case 2: sibling colour flip.
                    set_parent_color(a, sibling, parent, true);
                    if a.links(parent).red {
                        a.links_mut(parent).red = false;
                    } else {
                        node = parent;
                        parent = a.links(node).parent;
                        if parent != NIL {
                            continue;
                        }
                    }
                    break;
                }
                // Case 3: right rotate at sibling.
                tmp1 = a.links(tmp2).right;
                a.links_mut(sibling).left = tmp1;
                a.links_mut(tmp2).right = sibling;
                a.links_mut(parent).right = tmp2;
                if tmp1 != NIL {
                    set_parent_color(a, tmp1, sibling, false);
                }
                tmp1 = sibling;
                sibling = tmp2;
            }
            // Case 4: left rotate at parent and colour flips.
            let tmp2 = a.links(sibling).left;
            a.links_mut(parent).right = tmp2;
            a.links_mut(sibling).left = parent;
            set_parent_color(a, tmp1, sibling, false);
            if tmp2 != NIL {
                a.links_mut(tmp2).parent = parent;
            }
            rotate_set_parents(a, parent, sibling, root, false);
            break;
        } else {
            sibling = a.links(parent).left;
            if is_red(a, sibling) {
                // Case 1: right rotate at parent.
                let tmp1 = a.links(sibling).right;
                a.links_mut(parent).left = tmp1;
                a.links_mut(sibling).right = parent;
                set_parent_color(a, tmp1, parent, false);
                rotate_set_parents(a, parent, sibling, root, true);
                sibling = tmp1;
            }
            let mut tmp1 = a.links(sibling).left;
            if !is_red(a, tmp1) {
                let tmp2 = a.links(sibling).right;
                if !is_red(a, tmp2) {
                    // Case 2: sibling colour flip.
                    set_parent_color(a, sibling, parent, true);
                    if a.links(parent).red {
                        a.links_mut(parent).red = false;
                    } else {
                        node = parent;
                        parent = a.links(node).parent;
                        if parent != NIL {
                            continue;
                        }
                    }
                    break;
                }
                // Case 3: left rotate at sibling.
                tmp1 = a.links(tmp2).left;
                a.links_mut(sibling).right = tmp1;
                a.links_mut(tmp2).left = sibling;
                a.links_mut(parent).left = tmp2;
                if tmp1 != NIL {
                    set_parent_color(a, tmp1, sibling, false);
                }
                tmp1 = sibling;
                sibling = tmp2;
            }
            // Case 4: right rotate at parent and colour flips.
            let tmp2 = a.links(sibling).right;
            a.links_mut(parent).left = tmp2;
            a.links_mut(sibling).right = parent;
            set_parent_color(a, tmp1, sibling, false);
            if tmp2 != NIL {
                a.links_mut(tmp2).parent = parent;
            }
            rotate_set_parents(a, parent, sibling, root, false);
            break;
        }
    }
}

/// `rb_first`.
pub fn first<A: RbArena + ?Sized>(a: &A, root: &RbRoot) -> u32 {
    let mut n = root.node;
    if n == NIL {
        return NIL;
    }
    while a.links(n).left != NIL {
        n = a.links(n).left;
    }
    n
}

/// `rb_last`.
pub fn last<A: RbArena + ?Sized>(a: &A, root: &RbRoot) -> u32 {
    let mut n = root.node;
    if n == NIL {
        return NIL;
    }
    while a.links(n).right != NIL {
        n = a.links(n).right;
    }
    n
}

/// `rb_next`: in-order successor, or NIL.
pub fn next<A: RbArena + ?Sized>(a: &A, node: u32) -> u32 {
    let l = a.links(node);
    if l.right != NIL {
        let mut n = l.right;
        while a.links(n).left != NIL {
            n = a.links(n).left;
        }
        return n;
    }
    let mut n = node;
    let mut p = l.parent;
    while p != NIL && a.links(p).right == n {
        n = p;
        p = a.links(p).parent;
    }
    p
}

/// `rb_prev`: in-order predecessor, or NIL.
pub fn prev<A: RbArena + ?Sized>(a: &A, node: u32) -> u32 {
    let l = a.links(node);
    if l.left != NIL {
        let mut n = l.left;
        while a.links(n).right != NIL {
            n = a.links(n).right;
        }
        return n;
    }
    let mut n = node;
    let mut p = l.parent;
    while p != NIL && a.links(p).left == n {
        n = p;
        p = a.links(p).parent;
    }
    p
}

/// Check the red-black invariants and parent links; returns the nodes in
/// order (tests).
#[cfg(test)]
pub fn check<A: RbArena + ?Sized>(a: &A, root: &RbRoot) -> Vec<u32> {
    fn walk<A: RbArena + ?Sized>(a: &A, n: u32, parent: u32, out: &mut Vec<u32>) -> u32 {
        if n == NIL {
            return 1;
        }
        let l = *a.links(n);
        assert_eq!(l.parent, parent, "parent link of {n}");
        if l.red {
            assert!(
                !is_red(a, l.left) && !is_red(a, l.right),
                "red {n} has a red child"
            );
        }
        let bl = walk(a, l.left, n, out);
        out.push(n);
        let br = walk(a, l.right, n, out);
        assert_eq!(bl, br, "black heights differ under {n}");
        bl + u32::from(!l.red)
    }
    let mut out = Vec::new();
    assert!(!is_red(a, root.node), "red root");
    walk(a, root.node, NIL, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Nodes {
        links: Vec<RbLinks>,
        key: Vec<u64>,
    }

    impl RbArena for Nodes {
        fn links(&self, i: u32) -> &RbLinks {
            &self.links[i as usize]
        }
        fn links_mut(&mut self, i: u32) -> &mut RbLinks {
            &mut self.links[i as usize]
        }
    }

    /// Insert keeping equal keys to the right (as `bfq_insert` does).
    fn insert(t: &mut Nodes, root: &mut RbRoot, id: u32) {
        let mut parent = NIL;
        let mut cur = root.node;
        let mut left = false;
        while cur != NIL {
            parent = cur;
            left = t.key[cur as usize] > t.key[id as usize];
            cur = if left {
                t.links[cur as usize].left
            } else {
                t.links[cur as usize].right
            };
        }
        link_node(t, root, id, parent, left);
        insert_color(t, root, id);
    }

    #[test]
    fn random_inserts_and_erases_keep_invariants_and_order() {
        let n = 600;
        let mut t = Nodes {
            links: vec![RbLinks::EMPTY; n],
            key: vec![0; n],
        };
        let mut root = RbRoot::EMPTY;
        let mut inside: Vec<u32> = Vec::new();
        let mut x: u64 = 0x1234_5678;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..20_000 {
            let r = rnd();
            let free: Vec<u32> = (0..n as u32).filter(|i| !inside.contains(i)).collect();
            if (r % 3 != 0 || inside.is_empty()) && !free.is_empty() {
                let id = free[(r as usize / 3) % free.len()];
                t.key[id as usize] = rnd() % 64;
                insert(&mut t, &mut root, id);
                inside.push(id);
            } else {
                let i = (r as usize / 3) % inside.len();
                let id = inside.swap_remove(i);
                erase(&mut t, &mut root, id);
                assert_eq!(t.links[id as usize], RbLinks::EMPTY);
            }
            if step % 97 == 0 || inside.len() < 8 {
                let order = check(&t, &root);
                assert_eq!(order.len(), inside.len());
                for w in order.windows(2) {
                    assert!(t.key[w[0] as usize] <= t.key[w[1] as usize]);
                }
                // next/prev agree with the in-order walk.
                let mut cur = first(&t, &root);
                for &o in &order {
                    assert_eq!(cur, o);
                    cur = next(&t, cur);
                }
                assert_eq!(cur, NIL);
                let mut cur = last(&t, &root);
                for &o in order.iter().rev() {
                    assert_eq!(cur, o);
                    cur = prev(&t, cur);
                }
                assert_eq!(cur, NIL);
            }
        }
    }

    #[test]
    fn ascending_inserts_build_the_kernel_shape() {
        // Inserting 1..=7 in order into a Linux rbtree gives root 2 with
        // 1 and 4 below it, then 3 and 6, then 5 and 7 (red 5 and 7).
        let mut t = Nodes {
            links: vec![RbLinks::EMPTY; 8],
            key: (0..8).collect(),
        };
        let mut root = RbRoot::EMPTY;
        for id in 1..=7 {
            insert(&mut t, &mut root, id);
        }
        check(&t, &root);
        assert_eq!(root.node, 2);
        assert_eq!((t.links[2].left, t.links[2].right), (1, 4));
        assert_eq!((t.links[4].left, t.links[4].right), (3, 6));
        assert_eq!((t.links[6].left, t.links[6].right), (5, 7));
        assert!(t.links[4].red && !t.links[6].red && t.links[5].red && t.links[7].red);
    }
}
