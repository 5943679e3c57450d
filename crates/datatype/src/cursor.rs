//! [`Cursor`]: a position in the packed byte stream of `count` items of a
//! datatype, producing the memory runs (offset from the buffer base,
//! length) that hold the following packed bytes.
//!
//! The cursor walks the dataloop (see `layout.rs`) with a stack holding one
//! frame per nesting level: the current part and copy of each sequence on
//! the path to the current run. Moving to the next run touches O(1) frames
//! amortised; [`Cursor::seek`] descends from the root in
//! O(depth x log(parts)) using the packed start offsets of the parts. The
//! stack lives inline for the usual depths (no allocation per cursor).
//!
//! Offsets are computed with wrapping arithmetic: they cannot overflow for
//! any buffer that exists, and absurd counts give wrong offsets rather than
//! a panic (the caller's buffer contract covers them).

use crate::datatype::Datatype;
use crate::layout::{Kid, Node, Part, Seq};

/// Receives the runs a cursor produces.
pub(crate) trait Sink {
    /// `len` bytes at byte offset `off` from the buffer base.
    fn run(&mut self, off: i64, len: usize);
    /// `n` runs of `len` bytes at `off`, `off + stride`, ...
    #[inline]
    fn strided(&mut self, off: i64, stride: i64, len: usize, n: u64) {
        let mut at = off;
        for _ in 0..n {
            self.run(at, len);
            at = at.wrapping_add(stride);
        }
    }
    /// Whole `parts` of one instance of a flat sequence (its kids all
    /// runs) whose origin is `origin`.
    #[inline]
    fn parts(&mut self, origin: i64, parts: &[Part], kids: &[Kid]) {
        for part in parts {
            emit_part(self, origin.wrapping_add(part.disp), part.count, &kids[part.kid as usize]);
        }
    }
}

/// One level of the walk: the part and copy being visited in one instance
/// of a sequence (or, for the root frame, which item).
#[derive(Clone, Copy)]
struct Frame<'a> {
    /// `None` for the root frame (`count` items of the datatype).
    seq: Option<&'a Seq>,
    part: usize,
    // The current part, cached: copies of `kid` at `base + disp + k * stride`.
    disp: i64,
    count: u64,
    stride: i64,
    kid: &'a Node,
    /// `Some(len)` if `kid` is a run of `len == stride` bytes.
    dense: Option<u64>,
    /// The copy being visited.
    copy: u64,
    /// Origin of this sequence instance.
    base: i64,
}

impl<'a> Frame<'a> {
    #[inline]
    fn origin(&self, copy: u64) -> i64 {
        self.base.wrapping_add(self.disp).wrapping_add((copy as i64).wrapping_mul(self.stride))
    }

    fn load_part(&mut self, seq: &'a Seq, part: usize) {
        let p = seq.parts[part];
        let kid = &seq.kids[p.kid as usize];
        self.part = part;
        self.disp = p.disp;
        self.count = p.count;
        self.stride = kid.stride;
        self.kid = &kid.node;
        self.dense = kid.dense;
        self.copy = 0;
    }
}

static PLACEHOLDER: Node = Node::Run(1);

const INLINE_FRAMES: usize = 8;

/// A stack of frames, inline up to [`INLINE_FRAMES`] deep.
struct Frames<'a> {
    inline: [Frame<'a>; INLINE_FRAMES],
    len: usize,
    spill: Vec<Frame<'a>>,
}

impl<'a> Frames<'a> {
    fn new() -> Frames<'a> {
        let blank = Frame {
            seq: None,
            part: 0,
            disp: 0,
            count: 0,
            stride: 0,
            kid: &PLACEHOLDER,
            dense: None,
            copy: 0,
            base: 0,
        };
        Frames { inline: [blank; INLINE_FRAMES], len: 0, spill: Vec::new() }
    }
    fn clear(&mut self) {
        self.len = 0;
        self.spill.clear();
    }
    fn push(&mut self, f: Frame<'a>) {
        if self.len < INLINE_FRAMES {
            self.inline[self.len] = f;
        } else {
            self.spill.push(f);
        }
        self.len += 1;
    }
    fn pop(&mut self) {
        if self.len > INLINE_FRAMES {
            self.spill.pop();
        }
        self.len -= 1;
    }
    #[inline]
    fn top(&mut self) -> &mut Frame<'a> {
        if self.len <= INLINE_FRAMES {
            &mut self.inline[self.len - 1]
        } else {
            self.spill.last_mut().expect("spilled frames")
        }
    }
    fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A position in the packed byte stream of `count` items of a datatype;
/// see the module docs. Created by [`Datatype::cursor`].
pub struct Cursor<'a> {
    dt: &'a Datatype,
    count: u64,
    /// Packed bytes of all `count` items (saturated at `u64::MAX`).
    total: u64,
    pos: u64,
    /// The part of the current run not yet produced.
    run_off: i64,
    run_len: u64,
    frames: Frames<'a>,
}

impl Datatype {
    /// A cursor at packed offset 0 of `count` items of this type, the
    /// first item at the buffer base.
    pub fn cursor(&self, count: u64) -> Cursor<'_> {
        let mut c = Cursor {
            dt: self,
            count,
            total: count.saturating_mul(self.size),
            pos: 0,
            run_off: 0,
            run_len: 0,
            frames: Frames::new(),
        };
        c.seek(0);
        c
    }
}

impl<'a> Cursor<'a> {
    /// Packed bytes of all items.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The current packed offset.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Bytes left from the current position.
    pub fn remaining(&self) -> u64 {
        self.total - self.pos
    }

    /// Moves to packed offset `packed_offset` (clamped to the end).
    pub fn seek(&mut self, packed_offset: u64) {
        self.frames.clear();
        self.run_len = 0;
        if packed_offset >= self.total {
            self.pos = self.total;
            return;
        }
        self.pos = packed_offset;
        let node = self.dt.node.as_deref().expect("a type with data has a layout");
        let size = self.dt.size;
        let dense = match node {
            Node::Run(len) if *len as i128 == self.dt.extent as i128 => Some(*len),
            _ => None,
        };
        self.frames.push(Frame {
            seq: None,
            part: 0,
            disp: 0,
            count: self.count,
            stride: self.dt.extent,
            kid: node,
            dense,
            copy: packed_offset / size,
            base: 0,
        });
        self.descend(packed_offset % size);
    }

    /// From the top frame's current copy, `rem` packed bytes into it,
    /// descends to the run holding that byte.
    fn descend(&mut self, mut rem: u64) {
        loop {
            let top = *self.frames.top();
            match top.kid {
                Node::Run(len) => {
                    let len = match top.dense {
                        Some(_) => (top.count - top.copy).saturating_mul(*len),
                        None => *len,
                    };
                    self.run_off = top.origin(top.copy).wrapping_add(rem as i64);
                    self.run_len = len - rem;
                    return;
                }
                Node::Seq(seq) => {
                    let i = seq.part_at(rem);
                    let mut f = top;
                    f.seq = Some(seq);
                    f.base = top.origin(top.copy);
                    f.load_part(seq, i);
                    let within = rem - seq.start(i);
                    let kid_size = seq.kids[seq.parts[i].kid as usize].size;
                    f.copy = within / kid_size;
                    rem = within % kid_size;
                    self.frames.push(f);
                }
            }
        }
    }

    /// Moves to the run after the current one; false at the end.
    fn advance(&mut self) -> bool {
        loop {
            if self.frames.is_empty() {
                return false;
            }
            let top = self.frames.top();
            top.copy = if top.dense.is_some() { top.count } else { top.copy + 1 };
            if top.copy < top.count {
                self.descend(0);
                return true;
            }
            if let Some(seq) = top.seq {
                if top.part + 1 < seq.parts.len() {
                    let next = top.part + 1;
                    top.load_part(seq, next);
                    self.descend(0);
                    return true;
                }
            }
            self.frames.pop();
        }
    }

    /// Produces up to `budget` packed bytes into `sink`; returns how many.
    pub(crate) fn drive(&mut self, budget: u64, sink: &mut impl Sink) -> u64 {
        let mut left = budget.min(self.total - self.pos);
        let start = left;
        while left > 0 {
            if self.run_len == 0 && !self.advance() {
                break;
            }
            let take = self.run_len.min(left);
            sink.run(self.run_off, take as usize);
            self.run_off = self.run_off.wrapping_add(take as i64);
            self.run_len -= take;
            left -= take;
            if self.run_len == 0 && left > 0 {
                self.batch(&mut left, sink);
            }
        }
        let moved = start - left;
        self.pos += moved;
        moved
    }

    /// Just after a run ends, produces whole runs in bulk where the loop
    /// nest is regular, leaving the cursor on the last run produced:
    /// 1. the rest of a repeat of one short run, in one `strided` call;
    /// 2. the remaining parts of the current instance of a flat sequence
    ///    (one whose kids are all runs: a struct, an indexed type);
    /// 3. whole further copies of that flat sequence, without a frame push
    ///    per copy.
    #[inline]
    fn batch(&mut self, left: &mut u64, sink: &mut impl Sink) {
        let top = self.frames.top();
        if let (Node::Run(len), None) = (top.kid, top.dense) {
            let n = (top.count - top.copy - 1).min(*left / len);
            if n > 0 {
                sink.strided(top.origin(top.copy + 1), top.stride, *len as usize, n);
                top.copy += n;
                *left -= n * len;
            }
        }
        let Some(seq) = top.seq else { return };
        let part_done = top.dense.is_some() || top.copy + 1 == top.count;
        if seq.depth != 1 || !part_done {
            return;
        }
        // 2. The following parts of this instance, each whole: all at once
        // when they fit (the usual case), else as many as fit.
        let mut next = top.part + 1;
        if next < seq.parts.len() && seq.size - seq.start(next) <= *left {
            sink.parts(top.base, &seq.parts[next..], &seq.kids);
            *left -= seq.size - seq.start(next);
            next = seq.parts.len();
        }
        while next < seq.parts.len() {
            let part = seq.parts[next];
            let kid = &seq.kids[part.kid as usize];
            let bytes = part.count * kid.size;
            if bytes > *left {
                break;
            }
            emit_part(sink, top.base.wrapping_add(part.disp), part.count, kid);
            *left -= bytes;
            next += 1;
        }
        if next > top.part + 1 {
            top.load_part(seq, next - 1);
            top.copy = top.count - 1;
        }
        if next < seq.parts.len() || self.frames.len < 2 {
            return;
        }
        // 3. Whole further copies of the sequence.
        self.frames.pop();
        let parent = self.frames.top();
        let n = (parent.count - parent.copy - 1).min(*left / seq.size);
        for k in 1..=n {
            sink.parts(parent.origin(parent.copy + k), &seq.parts, &seq.kids);
        }
        parent.copy += n;
        *left -= n * seq.size;
        // The parent now sits on its last finished copy; `advance` moves on.
    }

    /// The next contiguous run of at most `max` bytes: (offset from the
    /// buffer base, possibly negative; length). Adjacent runs are merged.
    /// `None` at the end (or if `max` is 0).
    pub fn next_run(&mut self, max: usize) -> Option<(i64, usize)> {
        let max = (max as u64).min(self.total - self.pos);
        if max == 0 {
            return None;
        }
        if self.run_len == 0 && !self.advance() {
            return None;
        }
        let off = self.run_off;
        let mut len = 0u64;
        while len < max {
            if self.run_len == 0 && !self.advance() {
                break;
            }
            if self.run_off != off.wrapping_add(len as i64) {
                break;
            }
            let take = self.run_len.min(max - len);
            len += take;
            self.run_off = self.run_off.wrapping_add(take as i64);
            self.run_len -= take;
        }
        self.pos += len;
        Some((off, len as usize))
    }
}

/// All `count` copies of a run kid, the first at `at`.
#[inline(always)]
fn emit_part<S: Sink + ?Sized>(sink: &mut S, at: i64, count: u64, kid: &Kid) {
    match kid.dense {
        Some(len) => sink.run(at, (len * count) as usize),
        None if count == 1 => sink.run(at, kid.size as usize),
        None => sink.strided(at, kid.stride, kid.size as usize, count),
    }
}

impl Iterator for Cursor<'_> {
    type Item = (i64, usize);
    /// Runs of any length (see [`Cursor::next_run`]).
    fn next(&mut self) -> Option<(i64, usize)> {
        self.next_run(usize::MAX)
    }
}
