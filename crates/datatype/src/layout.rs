//! Where the packed bytes of one datatype instance live in memory: a small
//! loop nest (a "dataloop"), built once when the datatype is constructed and
//! walked by [`crate::Cursor`].
//!
//! A [`Node`] is either a dense [`Node::Run`] of bytes at offset 0, or a
//! [`Seq`]: a list of parts in packed order, where part `i` is `count`
//! copies of a child node ("kid"), the first at byte offset `disp` and the
//! following ones every `stride` bytes. So a vector is one part whose kid is
//! its block, an indexed type is one part per block sharing one kid, and a
//! struct is one part per block with a kid per member type. A million-block
//! vector stays one part: nothing is flattened.
//!
//! [`SeqBuilder`] normalises as it goes, so that the walk sees as few and as
//! long runs as possible:
//! - parts of zero bytes are dropped (a node never has size 0);
//! - a part that continues the previous one (same kid, next offset) extends
//!   it, and two adjacent dense parts become one run;
//! - a single dense part at offset 0 is a plain run, and a single part whose
//!   kid is itself one repeat with matching stride collapses into one repeat
//!   (vector of full rows, contiguous of contiguous);
//! - a small child sequence used once is inlined into its parent, so that
//!   struct members nested in structs still merge.

use std::collections::HashMap;
use std::sync::Arc;

/// Packed bytes of one instance, relative to the instance origin.
#[derive(Debug)]
pub(crate) enum Node {
    /// `len` (> 0) contiguous bytes at offset 0.
    Run(u64),
    /// Parts in packed order.
    Seq(Seq),
}

/// A sequence of parts; see the module docs.
#[derive(Debug)]
pub(crate) struct Seq {
    /// Packed bytes of one instance (> 0).
    pub size: u64,
    pub kids: Box<[Kid]>,
    pub parts: Box<[Part]>,
    /// Packed offset at which each part starts. Empty when all parts have
    /// the same kid and count (then part `i` starts at `i * part_bytes`).
    pub starts: Box<[u64]>,
    /// Bytes of each part when `starts` is empty.
    pub part_bytes: u64,
    /// Nesting depth: 1 + the deepest kid's depth (runs have depth 0).
    pub depth: u32,
}

/// A child node and the byte distance between its consecutive copies.
#[derive(Debug, Clone)]
pub(crate) struct Kid {
    pub node: Arc<Node>,
    pub stride: i64,
    /// Packed bytes of one copy of `node`.
    pub size: u64,
    /// `Some(len)` when `node` is a run of `len` bytes and `stride == len`:
    /// consecutive copies then form one run.
    pub dense: Option<u64>,
}

/// `count` (> 0) copies of `kids[kid]` starting at byte offset `disp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Part {
    pub disp: i64,
    pub count: u64,
    pub kid: u32,
}

impl Node {
    /// Packed bytes of one instance.
    pub fn size(&self) -> u64 {
        match self {
            Node::Run(len) => *len,
            Node::Seq(seq) => seq.size,
        }
    }

    pub fn depth(&self) -> u32 {
        match self {
            Node::Run(_) => 0,
            Node::Seq(seq) => seq.depth,
        }
    }

    /// The single run this node is, if it is one: (offset, length).
    pub fn single_run(&self) -> Option<(i64, u64)> {
        match self {
            Node::Run(len) => Some((0, *len)),
            Node::Seq(seq) if seq.parts.len() == 1 => {
                let part = seq.parts[0];
                let kid = &seq.kids[part.kid as usize];
                if let Some(len) = kid.dense {
                    return Some((part.disp, len.checked_mul(part.count)?));
                }
                if part.count == 1 {
                    let (off, len) = kid.node.single_run()?;
                    return Some((part.disp.checked_add(off)?, len));
                }
                None
            }
            Node::Seq(_) => None,
        }
    }
}

impl Seq {
    /// Packed offset at which part `i` starts.
    #[inline]
    pub fn start(&self, i: usize) -> u64 {
        if self.starts.is_empty() {
            i as u64 * self.part_bytes
        } else {
            self.starts[i]
        }
    }

    /// The part containing packed offset `offset` (< size).
    pub fn part_at(&self, offset: u64) -> usize {
        if self.starts.is_empty() {
            ((offset / self.part_bytes) as usize).min(self.parts.len() - 1)
        } else {
            // Last part whose start is <= offset.
            self.starts.partition_point(|&s| s <= offset).saturating_sub(1)
        }
    }
}

/// Largest child sequence that is inlined into a parent that uses it once.
const INLINE_PARTS: usize = 64;

/// Builds a [`Node`] part by part; see the module docs for what it merges.
///
/// Offsets are checked: a part whose displacement arithmetic would overflow
/// is reported by returning `Err(())` from [`SeqBuilder::push`], which the
/// caller turns into a [`crate::TypeError::Overflow`]. Datatype constructors
/// validate bounds first, so this only triggers on inputs they reject anyway.
#[derive(Default)]
pub(crate) struct SeqBuilder {
    kids: Vec<Kid>,
    kid_index: HashMap<(usize, i64), u32>,
    last_kid: Option<((usize, i64), u32)>,
    parts: Vec<Part>,
}

/// Arithmetic overflow while building (the datatype constructor reports it).
#[derive(Debug)]
pub(crate) struct LayoutOverflow;

impl SeqBuilder {
    pub fn new() -> SeqBuilder {
        SeqBuilder::default()
    }

    fn kid(&mut self, node: &Arc<Node>, stride: i64) -> u32 {
        let key = (Arc::as_ptr(node) as usize, stride);
        // Most constructors use one kid for every part.
        if let Some((last, i)) = self.last_kid {
            if last == key {
                return i;
            }
        }
        if let Some(&i) = self.kid_index.get(&key) {
            self.last_kid = Some((key, i));
            return i;
        }
        let size = node.size();
        let dense = match **node {
            Node::Run(len) if len as i128 == stride as i128 => Some(len),
            _ => None,
        };
        let i = self.kids.len() as u32;
        self.kids.push(Kid { node: node.clone(), stride, size, dense });
        self.kid_index.insert(key, i);
        self.last_kid = Some((key, i));
        i
    }

    /// Appends `count` copies of `node` at `disp`, `stride` bytes apart.
    /// `None` nodes (no data) and zero counts add nothing.
    pub fn push(
        &mut self,
        disp: i64,
        count: u64,
        node: Option<&Arc<Node>>,
        stride: i64,
    ) -> Result<(), LayoutOverflow> {
        let Some(node) = node else { return Ok(()) };
        if count == 0 {
            return Ok(());
        }
        // A small sequence used once: inline its parts so they can merge
        // with their new neighbours.
        if count == 1 {
            if let Node::Seq(seq) = &**node {
                if seq.parts.len() <= INLINE_PARTS {
                    for part in seq.parts.iter() {
                        let kid = &seq.kids[part.kid as usize];
                        let d = disp.checked_add(part.disp).ok_or(LayoutOverflow)?;
                        self.push(d, part.count, Some(&kid.node), kid.stride)?;
                    }
                    return Ok(());
                }
            }
        }
        let kid = self.kid(node, stride);
        self.push_part(Part { disp, count, kid })
    }

    fn push_part(&mut self, part: Part) -> Result<(), LayoutOverflow> {
        if let Some(prev) = self.parts.last().copied() {
            let pk = &self.kids[prev.kid as usize];
            // Same kid, continuing at the next stride: extend.
            if prev.kid == part.kid {
                let next = prev.disp as i128 + prev.count as i128 * pk.stride as i128;
                if next == part.disp as i128 {
                    let last = self.parts.last_mut().expect("non-empty");
                    last.count = last.count.checked_add(part.count).ok_or(LayoutOverflow)?;
                    return Ok(());
                }
            }
            // Two adjacent dense parts: one run.
            let nk = &self.kids[part.kid as usize];
            if let (Some(plen), Some(nlen)) = (pk.dense, nk.dense) {
                let pbytes = plen as u128 * prev.count as u128;
                let nbytes = nlen as u128 * part.count as u128;
                if prev.disp as i128 + pbytes as i128 == part.disp as i128 {
                    let total = u64::try_from(pbytes + nbytes).map_err(|_| LayoutOverflow)?;
                    if total > i64::MAX as u64 {
                        return Err(LayoutOverflow);
                    }
                    let run = Arc::new(Node::Run(total));
                    let kid = self.kid(&run, total as i64);
                    let last = self.parts.last_mut().expect("non-empty");
                    *last = Part { disp: prev.disp, count: 1, kid };
                    return Ok(());
                }
            }
        }
        self.parts.push(part);
        Ok(())
    }

    /// The finished node, or `None` if no part holds any data.
    pub fn finish(self) -> Result<Option<Arc<Node>>, LayoutOverflow> {
        if self.parts.is_empty() {
            return Ok(None);
        }
        if self.parts.len() == 1 {
            return self.finish_single();
        }
        self.build().map(Some)
    }

    fn finish_single(mut self) -> Result<Option<Arc<Node>>, LayoutOverflow> {
        loop {
            let part = self.parts[0];
            let kid = self.kids[part.kid as usize].clone();
            if part.disp == 0 && part.count == 1 {
                return Ok(Some(kid.node));
            }
            if let Some(len) = kid.dense {
                if part.disp == 0 {
                    let total = len.checked_mul(part.count).ok_or(LayoutOverflow)?;
                    return Ok(Some(Arc::new(Node::Run(total))));
                }
            }
            // `count` copies of a single repeat whose copies tile exactly:
            // one longer repeat of the inner kid.
            if let Node::Seq(inner) = &*kid.node {
                if inner.parts.len() == 1 {
                    let ip = inner.parts[0];
                    let ik = &inner.kids[ip.kid as usize];
                    let tiles = ik.stride as i128 * ip.count as i128 == kid.stride as i128;
                    if part.count == 1 || tiles {
                        let disp = part.disp.checked_add(ip.disp).ok_or(LayoutOverflow)?;
                        let count = part.count.checked_mul(ip.count).ok_or(LayoutOverflow)?;
                        let (node, stride) = (ik.node.clone(), ik.stride);
                        let k = self.kid(&node, stride);
                        self.parts[0] = Part { disp, count, kid: k };
                        continue;
                    }
                }
            }
            return self.build().map(Some);
        }
    }

    fn build(self) -> Result<Arc<Node>, LayoutOverflow> {
        // Keep only the kids still referenced, renumbered.
        let mut remap = vec![u32::MAX; self.kids.len()];
        let mut kids = Vec::new();
        let mut parts = self.parts;
        for part in parts.iter_mut() {
            let old = part.kid as usize;
            if remap[old] == u32::MAX {
                remap[old] = kids.len() as u32;
                kids.push(self.kids[old].clone());
            }
            part.kid = remap[old];
        }
        let first = parts[0];
        let uniform = parts.iter().all(|p| p.kid == first.kid && p.count == first.count);
        let mut size: u64 = 0;
        let mut starts = Vec::new();
        if !uniform {
            starts.reserve_exact(parts.len());
        }
        for part in &parts {
            if !uniform {
                starts.push(size);
            }
            let bytes = kids[part.kid as usize].size.checked_mul(part.count).ok_or(LayoutOverflow)?;
            size = size.checked_add(bytes).ok_or(LayoutOverflow)?;
        }
        if size > i64::MAX as u64 {
            return Err(LayoutOverflow);
        }
        let part_bytes = kids[first.kid as usize].size * first.count;
        let depth = 1 + kids.iter().map(|k| k.node.depth()).max().unwrap_or(0);
        Ok(Arc::new(Node::Seq(Seq {
            size,
            kids: kids.into_boxed_slice(),
            parts: parts.into_boxed_slice(),
            starts: starts.into_boxed_slice(),
            part_bytes,
            depth,
        })))
    }
}

/// `count` copies of `node`, `stride` bytes apart, starting at `disp`.
pub(crate) fn repeat(
    disp: i64,
    count: u64,
    node: Option<&Arc<Node>>,
    stride: i64,
) -> Result<Option<Arc<Node>>, LayoutOverflow> {
    let mut b = SeqBuilder::new();
    b.push(disp, count, node, stride)?;
    b.finish()
}

/// Whether inlining would be used for `node` (exposed for tests).
#[cfg(test)]
pub(crate) fn inlinable(node: &Node) -> bool {
    match node {
        Node::Run(_) => true,
        Node::Seq(seq) => seq.parts.len() <= INLINE_PARTS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(len: u64) -> Arc<Node> {
        Arc::new(Node::Run(len))
    }

    #[test]
    fn contiguous_of_dense_is_one_run() {
        let n = repeat(0, 10, Some(&run(8)), 8).unwrap().unwrap();
        assert!(matches!(*n, Node::Run(80)));
    }

    #[test]
    fn vector_with_tiling_stride_collapses() {
        // vector(4, 2, 2, double): blocks of 16 bytes every 16 bytes.
        let block = repeat(0, 2, Some(&run(8)), 8).unwrap().unwrap();
        let v = repeat(0, 4, Some(&block), 16).unwrap().unwrap();
        assert!(matches!(*v, Node::Run(64)), "{v:?}");
        // A real gap stays a repeat of one run.
        let v = repeat(0, 4, Some(&block), 24).unwrap().unwrap();
        match &*v {
            Node::Seq(s) => {
                assert_eq!(s.parts.len(), 1);
                assert_eq!(s.parts[0].count, 4);
                assert_eq!(s.kids[0].stride, 24);
                assert!(matches!(*s.kids[0].node, Node::Run(16)));
                assert!(s.starts.is_empty());
                assert_eq!(s.size, 64);
            }
            _ => panic!("{v:?}"),
        }
    }

    #[test]
    fn adjacent_struct_members_merge() {
        let mut b = SeqBuilder::new();
        b.push(0, 1, Some(&run(4)), 4).unwrap();
        b.push(4, 1, Some(&run(8)), 8).unwrap();
        b.push(12, 2, Some(&run(2)), 2).unwrap();
        let n = b.finish().unwrap().unwrap();
        assert!(matches!(*n, Node::Run(16)), "{n:?}");
    }

    #[test]
    fn nested_small_sequences_are_inlined() {
        let mut inner = SeqBuilder::new();
        inner.push(0, 1, Some(&run(4)), 4).unwrap();
        inner.push(8, 1, Some(&run(4)), 4).unwrap();
        let inner = inner.finish().unwrap().unwrap();
        assert!(inlinable(&inner));
        let mut outer = SeqBuilder::new();
        outer.push(0, 1, Some(&run(4)), 4).unwrap();
        outer.push(4, 1, Some(&inner), 16).unwrap();
        let n = outer.finish().unwrap().unwrap();
        // run(4)@0 + run(4)@4 merge to run(8)@0; run(4)@12 stays.
        match &*n {
            Node::Seq(s) => {
                assert_eq!(s.parts.len(), 2);
                assert_eq!(s.size, 12);
                assert_eq!(s.starts.as_ref(), &[0, 8]);
                assert_eq!(s.part_at(7), 0);
                assert_eq!(s.part_at(8), 1);
            }
            _ => panic!("{n:?}"),
        }
    }

    #[test]
    fn empty_and_zero_counts_vanish() {
        assert!(repeat(0, 0, Some(&run(4)), 4).unwrap().is_none());
        assert!(repeat(0, 5, None, 4).unwrap().is_none());
    }

    #[test]
    fn single_run_detection() {
        let n = repeat(16, 3, Some(&run(4)), 4).unwrap().unwrap();
        assert_eq!(n.single_run(), Some((16, 12)));
        let n = repeat(16, 3, Some(&run(4)), 8).unwrap().unwrap();
        assert_eq!(n.single_run(), None);
    }
}
