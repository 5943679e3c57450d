//! Handle encoding (MPICH's): bits 30-31 say builtin (1), direct (2) or
//! indirect (3); bits 26-29 the object kind; the low 26 bits an index.
//! Predefined objects are builtin handles with fixed values (mpi.h); objects
//! the user creates get indirect handles indexing a [`Table`].

use crate::ffi::c_int;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    Comm = 0x1,
    Group = 0x2,
    Datatype = 0x3,
    /// MPI_File is a pointer in the MPICH ABI; ours hold this handle's value.
    File = 0x4,
    Errhandler = 0x5,
    Op = 0x6,
    Info = 0x7,
    Win = 0x8,
    Keyval = 0x9,
    Request = 0xb,
    Session = 0xe,
}

const BUILTIN: u32 = 1 << 30;
const INDIRECT: u32 = 3 << 30;
const INDEX_MASK: u32 = (1 << 26) - 1;

pub fn kind_of(h: c_int) -> u32 {
    ((h as u32) >> 26) & 0xf
}

pub fn is_builtin(h: c_int) -> bool {
    (h as u32) >> 30 == 1
}

pub fn builtin(kind: Kind, idx: u32) -> c_int {
    (BUILTIN | (kind as u32) << 26 | idx) as c_int
}

pub fn indirect(kind: Kind, idx: u32) -> c_int {
    debug_assert!(idx <= INDEX_MASK);
    (INDIRECT | (kind as u32) << 26 | idx) as c_int
}

/// The table index of an indirect handle of `kind`.
pub fn index_of(h: c_int, kind: Kind) -> Option<u32> {
    let u = h as u32;
    if u >> 30 == 3 && kind_of(h) == kind as u32 {
        Some(u & INDEX_MASK)
    } else {
        None
    }
}

/// Objects of one kind, by index, with a free list.
pub struct Table<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    kind: Kind,
    /// Slots below this are reserved for builtin objects.
    reserved: u32,
}

impl<T> Table<T> {
    pub fn new(kind: Kind) -> Table<T> {
        Table { slots: Vec::new(), free: Vec::new(), kind, reserved: 0 }
    }

    pub fn insert(&mut self, v: T) -> c_int {
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(v);
                i
            }
            None => {
                self.slots.push(Some(v));
                (self.slots.len() - 1) as u32
            }
        };
        indirect(self.kind, i)
    }

    pub fn get(&self, h: c_int) -> Option<&T> {
        let i = index_of(h, self.kind)?;
        self.slots.get(i as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, h: c_int) -> Option<&mut T> {
        let i = index_of(h, self.kind)?;
        self.slots.get_mut(i as usize)?.as_mut()
    }

    pub fn remove(&mut self, h: c_int) -> Option<T> {
        let i = index_of(h, self.kind)?;
        if i < self.reserved {
            return None;
        }
        let v = self.slots.get_mut(i as usize)?.take();
        if v.is_some() {
            self.free.push(i);
        }
        v
    }

    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }

    pub fn handles(&self) -> Vec<c_int> {
        self.slots.iter().enumerate().filter(|(_, s)| s.is_some()).map(|(i, _)| indirect(self.kind, i as u32)).collect()
    }
}
