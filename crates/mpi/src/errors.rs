//! Errors: classes, codes with detailed messages, and their strings.
//!
//! A predefined error code is `class | (slot << 8)` where `slot` (>= 1)
//! names a stored message such as `MPI_Send(rank 3): invalid tag -5 (must be
//! 0..=MPI_TAG_UB)`; MPI_Error_string of such a code gives that message,
//! MPI_Error_class the class; these are all at most MPI_ERR_LASTCODE. Classes
//! and codes added by the user lie above MPI_ERR_LASTCODE, as the standard
//! asks: classes from `FIRST_USER_CLASS`, codes from `FIRST_USER_CODE`.

use crate::ffi::*;
use std::collections::{BTreeSet, HashMap};

/// An MPI error from a shell function: class and reason (without the
/// function name and rank, which are added when it is reported).
#[derive(Debug, Clone)]
pub struct MpiError {
    pub class: c_int,
    pub msg: String,
    /// An already-formed error code to return as is (user codes, codes from
    /// statuses).
    pub code: Option<c_int>,
}

pub fn err(class: c_int, msg: impl Into<String>) -> MpiError {
    MpiError { class, msg: msg.into(), code: None }
}

pub type R<T> = Result<T, MpiError>;

const FIRST_USER_CLASS: c_int = 0x4000_0000;
const LAST_USER_CLASS: c_int = 0x4fff_ffff;
const FIRST_USER_CODE: c_int = 0x5000_0000;
const SLOTS: usize = 1 << 12;

pub struct ErrorRegistry {
    /// Recent detailed messages, by slot (ring).
    messages: Vec<String>,
    next_slot: usize,
    /// User classes: index (value - FIRST_USER_CLASS) -> how many user
    /// codes it has, None once removed. A removed value is handed out again
    /// (the lowest first), and the table shrinks from its end, so programs
    /// that add and remove classes in a loop stay at constant cost.
    user_classes: Vec<Option<usize>>,
    free_classes: BTreeSet<usize>,
    /// User codes: index (value - FIRST_USER_CODE) -> class, None once
    /// removed; reused as the classes are.
    user_codes: Vec<Option<c_int>>,
    free_codes: BTreeSet<usize>,
    /// Strings set by MPI_Add_error_string, by code or class.
    strings: HashMap<c_int, String>,
}

impl Default for ErrorRegistry {
    fn default() -> Self {
        ErrorRegistry {
            messages: vec![String::new(); SLOTS],
            next_slot: 1,
            user_classes: Vec::new(),
            free_classes: BTreeSet::new(),
            user_codes: Vec::new(),
            free_codes: BTreeSet::new(),
            strings: HashMap::new(),
        }
    }
}

impl ErrorRegistry {
    /// A code carrying `message` for `class`.
    pub fn code_for(&mut self, class: c_int, message: String) -> c_int {
        if !(0..256).contains(&class) {
            return class;
        }
        let slot = self.next_slot;
        self.next_slot = if slot + 1 >= SLOTS { 1 } else { slot + 1 };
        self.messages[slot] = message;
        class | ((slot as c_int) << 8)
    }

    pub fn class_of(&self, code: c_int) -> Option<c_int> {
        if code < 0 {
            return None;
        }
        if code >= FIRST_USER_CODE {
            return self.user_codes.get((code - FIRST_USER_CODE) as usize).copied().flatten();
        }
        if code < 256 || code >= FIRST_USER_CLASS {
            return self.is_class(code).then_some(code);
        }
        let class = code & 0xff;
        let slot = ((code >> 8) & 0xfffff) as usize;
        (slot < SLOTS && self.is_class(class)).then_some(class)
    }

    fn is_class(&self, c: c_int) -> bool {
        (0..=MPI_ERR_ABI).contains(&c) && c != 54 || (MPIX_ERR_PROC_FAILED..=MPIX_ERR_REVOKED).contains(&c) || self.user_class(c).is_some()
    }

    /// The slot of a live user class.
    fn user_class(&self, c: c_int) -> Option<usize> {
        let i = usize::try_from(c.checked_sub(FIRST_USER_CLASS)?).ok()?;
        (c <= LAST_USER_CLASS && self.user_classes.get(i)?.is_some()).then_some(i)
    }

    pub fn string_of(&self, code: c_int) -> Option<String> {
        if let Some(s) = self.strings.get(&code) {
            return Some(s.clone());
        }
        let class = self.class_of(code)?;
        if (256..=MPI_ERR_LASTCODE).contains(&code) {
            let slot = ((code >> 8) & 0xfffff) as usize;
            let m = &self.messages[slot];
            if !m.is_empty() {
                return Some(m.clone());
            }
        }
        if code >= FIRST_USER_CLASS {
            // User classes and codes have no string until one is added.
            return Some(String::new());
        }
        if let Some(s) = self.strings.get(&class) {
            return Some(s.clone());
        }
        Some(class_string(class).to_string())
    }

    pub fn add_class(&mut self) -> R<c_int> {
        let i = take_slot(&mut self.user_classes, &mut self.free_classes, Some(0));
        match c_int::try_from(i).ok().and_then(|i| FIRST_USER_CLASS.checked_add(i)).filter(|&c| c <= LAST_USER_CLASS) {
            Some(c) => Ok(c),
            None => {
                give_back(&mut self.user_classes, &mut self.free_classes, i);
                Err(err(MPI_ERR_OTHER, "no more error classes can be added"))
            }
        }
    }

    pub fn add_code(&mut self, class: c_int) -> R<c_int> {
        if !self.is_class(class) {
            return Err(err(MPI_ERR_ARG, format!("{class} is not an error class")));
        }
        let i = take_slot(&mut self.user_codes, &mut self.free_codes, Some(class));
        let Some(code) = c_int::try_from(i).ok().and_then(|i| FIRST_USER_CODE.checked_add(i)) else {
            give_back(&mut self.user_codes, &mut self.free_codes, i);
            return Err(err(MPI_ERR_OTHER, "no more error codes can be added"));
        };
        if let Some(n) = self.user_class(class).and_then(|k| self.user_classes[k].as_mut()) {
            *n += 1;
        }
        Ok(code)
    }

    pub fn set_string(&mut self, code: c_int, s: String) -> R<()> {
        if code < FIRST_USER_CLASS || self.class_of(code).is_none() {
            return Err(err(MPI_ERR_ARG, format!("{code} is not a user-defined error code or class")));
        }
        self.strings.insert(code, s);
        Ok(())
    }

    /// MPI_Remove_error_class: a user class with no codes and no string.
    pub fn remove_class(&mut self, class: c_int) -> R<()> {
        let Some(i) = self.user_class(class) else {
            return Err(err(MPI_ERR_ARG, format!("{class} is not a user-defined error class")));
        };
        if self.user_classes[i] != Some(0) {
            return Err(err(MPI_ERR_ARG, format!("error class {class} still has error codes (remove them first)")));
        }
        if self.strings.contains_key(&class) {
            return Err(err(MPI_ERR_ARG, format!("error class {class} still has an error string (remove it first)")));
        }
        give_back(&mut self.user_classes, &mut self.free_classes, i);
        Ok(())
    }

    /// MPI_Remove_error_code: a user code with no string.
    pub fn remove_code(&mut self, code: c_int) -> R<()> {
        let i = (code - FIRST_USER_CODE) as usize;
        if code < FIRST_USER_CODE || self.user_codes.get(i).copied().flatten().is_none() {
            return Err(err(MPI_ERR_ARG, format!("{code} is not a user-defined error code")));
        }
        if self.strings.contains_key(&code) {
            return Err(err(MPI_ERR_ARG, format!("error code {code} still has an error string (remove it first)")));
        }
        let class = self.user_codes[i].expect("checked");
        give_back(&mut self.user_codes, &mut self.free_codes, i);
        if let Some(n) = self.user_class(class).and_then(|k| self.user_classes[k].as_mut()) {
            *n -= 1;
        }
        Ok(())
    }

    pub fn remove_string(&mut self, code: c_int) -> R<()> {
        self.strings.remove(&code).map(|_| ()).ok_or_else(|| err(MPI_ERR_ARG, format!("no string was added for {code}")))
    }

    /// The largest error code in use (MPI_LASTUSEDCODE).
    pub fn last_used_code(&self) -> c_int {
        // Both tables end with a live entry (give_back).
        if !self.user_codes.is_empty() {
            FIRST_USER_CODE + (self.user_codes.len() as c_int - 1)
        } else if !self.user_classes.is_empty() {
            FIRST_USER_CLASS + (self.user_classes.len() as c_int - 1)
        } else {
            MPI_ERR_LASTCODE
        }
    }
}

/// The lowest free slot of `table`, filled with `v`.
fn take_slot<T>(table: &mut Vec<Option<T>>, free: &mut BTreeSet<usize>, v: Option<T>) -> usize {
    match free.pop_first() {
        Some(i) => {
            table[i] = v;
            i
        }
        None => {
            table.push(v);
            table.len() - 1
        }
    }
}

/// Free slot `i` of `table`; free slots at its end are dropped, so the
/// table always ends with a live one.
fn give_back<T>(table: &mut Vec<Option<T>>, free: &mut BTreeSet<usize>, i: usize) {
    table[i] = None;
    free.insert(i);
    while table.last().is_some_and(|e| e.is_none()) {
        table.pop();
        free.remove(&table.len());
    }
}

pub fn class_string(class: c_int) -> &'static str {
    match class {
        MPI_SUCCESS => "MPI_SUCCESS: no error",
        MPI_ERR_BUFFER => "MPI_ERR_BUFFER: invalid buffer pointer",
        MPI_ERR_COUNT => "MPI_ERR_COUNT: invalid count argument",
        MPI_ERR_TYPE => "MPI_ERR_TYPE: invalid datatype",
        MPI_ERR_TAG => "MPI_ERR_TAG: invalid tag",
        MPI_ERR_COMM => "MPI_ERR_COMM: invalid communicator",
        MPI_ERR_RANK => "MPI_ERR_RANK: invalid rank",
        MPI_ERR_ROOT => "MPI_ERR_ROOT: invalid root",
        MPI_ERR_GROUP => "MPI_ERR_GROUP: invalid group",
        MPI_ERR_OP => "MPI_ERR_OP: invalid reduction operation",
        MPI_ERR_TOPOLOGY => "MPI_ERR_TOPOLOGY: invalid topology",
        MPI_ERR_DIMS => "MPI_ERR_DIMS: invalid dimension argument",
        MPI_ERR_ARG => "MPI_ERR_ARG: invalid argument",
        MPI_ERR_UNKNOWN => "MPI_ERR_UNKNOWN: unknown error",
        MPI_ERR_TRUNCATE => "MPI_ERR_TRUNCATE: message truncated",
        MPI_ERR_OTHER => "MPI_ERR_OTHER: other error",
        MPI_ERR_INTERN => "MPI_ERR_INTERN: internal error",
        MPI_ERR_IN_STATUS => "MPI_ERR_IN_STATUS: error code is in status",
        MPI_ERR_PENDING => "MPI_ERR_PENDING: pending request",
        MPI_ERR_REQUEST => "MPI_ERR_REQUEST: invalid request",
        MPI_ERR_ACCESS => "MPI_ERR_ACCESS: permission denied",
        MPI_ERR_AMODE => "MPI_ERR_AMODE: invalid access mode",
        MPI_ERR_BAD_FILE => "MPI_ERR_BAD_FILE: invalid file name",
        MPI_ERR_CONVERSION => "MPI_ERR_CONVERSION: data conversion failed",
        MPI_ERR_DUP_DATAREP => "MPI_ERR_DUP_DATAREP: data representation already defined",
        MPI_ERR_FILE_EXISTS => "MPI_ERR_FILE_EXISTS: file exists",
        MPI_ERR_FILE_IN_USE => "MPI_ERR_FILE_IN_USE: file in use",
        MPI_ERR_FILE => "MPI_ERR_FILE: invalid file",
        MPI_ERR_INFO => "MPI_ERR_INFO: invalid info object",
        MPI_ERR_INFO_KEY => "MPI_ERR_INFO_KEY: invalid info key",
        MPI_ERR_INFO_VALUE => "MPI_ERR_INFO_VALUE: invalid info value",
        MPI_ERR_INFO_NOKEY => "MPI_ERR_INFO_NOKEY: no such info key",
        MPI_ERR_IO => "MPI_ERR_IO: I/O error",
        MPI_ERR_NAME => "MPI_ERR_NAME: invalid service name",
        MPI_ERR_NO_MEM => "MPI_ERR_NO_MEM: out of memory",
        MPI_ERR_NOT_SAME => "MPI_ERR_NOT_SAME: collective arguments differ across processes",
        MPI_ERR_NO_SPACE => "MPI_ERR_NO_SPACE: no space left",
        MPI_ERR_NO_SUCH_FILE => "MPI_ERR_NO_SUCH_FILE: no such file",
        MPI_ERR_PORT => "MPI_ERR_PORT: invalid port",
        MPI_ERR_QUOTA => "MPI_ERR_QUOTA: quota exceeded",
        MPI_ERR_READ_ONLY => "MPI_ERR_READ_ONLY: read-only file",
        MPI_ERR_SERVICE => "MPI_ERR_SERVICE: invalid service",
        MPI_ERR_SPAWN => "MPI_ERR_SPAWN: spawn failed",
        MPI_ERR_UNSUPPORTED_DATAREP => "MPI_ERR_UNSUPPORTED_DATAREP: unsupported data representation",
        MPI_ERR_UNSUPPORTED_OPERATION => "MPI_ERR_UNSUPPORTED_OPERATION: operation not supported",
        MPI_ERR_WIN => "MPI_ERR_WIN: invalid window",
        MPI_ERR_BASE => "MPI_ERR_BASE: invalid base address",
        MPI_ERR_LOCKTYPE => "MPI_ERR_LOCKTYPE: invalid lock type",
        MPI_ERR_KEYVAL => "MPI_ERR_KEYVAL: invalid attribute key",
        MPI_ERR_RMA_CONFLICT => "MPI_ERR_RMA_CONFLICT: conflicting RMA accesses",
        MPI_ERR_RMA_SYNC => "MPI_ERR_RMA_SYNC: wrong RMA synchronization",
        MPI_ERR_SIZE => "MPI_ERR_SIZE: invalid size",
        MPI_ERR_DISP => "MPI_ERR_DISP: invalid displacement",
        MPI_ERR_ASSERT => "MPI_ERR_ASSERT: invalid assert",
        MPI_ERR_RMA_RANGE => "MPI_ERR_RMA_RANGE: RMA target out of range",
        MPI_ERR_RMA_ATTACH => "MPI_ERR_RMA_ATTACH: memory cannot be attached",
        MPI_ERR_RMA_SHARED => "MPI_ERR_RMA_SHARED: memory cannot be shared",
        MPI_ERR_RMA_FLAVOR => "MPI_ERR_RMA_FLAVOR: wrong window flavor",
        MPI_ERR_SESSION => "MPI_ERR_SESSION: invalid session",
        MPI_ERR_PROC_ABORTED => "MPI_ERR_PROC_ABORTED: communication with an aborted process",
        MPI_ERR_VALUE_TOO_LARGE => "MPI_ERR_VALUE_TOO_LARGE: value too large to store",
        MPI_ERR_ERRHANDLER => "MPI_ERR_ERRHANDLER: invalid error handler",
        MPI_ERR_ABI => "MPI_ERR_ABI: ABI mismatch",
        MPIX_ERR_PROC_FAILED => "MPIX_ERR_PROC_FAILED: a process the operation needs failed",
        MPIX_ERR_PROC_FAILED_PENDING => "MPIX_ERR_PROC_FAILED_PENDING: a process failed; the receive from MPI_ANY_SOURCE is still pending",
        MPIX_ERR_REVOKED => "MPIX_ERR_REVOKED: the communicator was revoked",
        c if (59..=79).contains(&c) => "MPI_T error",
        _ => "user-defined error class",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detailed_codes_keep_class_and_message() {
        let mut r = ErrorRegistry::default();
        let c = r.code_for(MPI_ERR_TAG, "MPI_Send(rank 3): invalid tag -5".into());
        assert!(c > 255 && c <= MPI_ERR_LASTCODE);
        assert_eq!(r.class_of(c), Some(MPI_ERR_TAG));
        assert_eq!(r.string_of(c).unwrap(), "MPI_Send(rank 3): invalid tag -5");
        assert_eq!(r.class_of(MPI_ERR_TAG), Some(MPI_ERR_TAG));
        assert_eq!(r.class_of(54), None, "54 is not an MPICH class");
        assert_eq!(r.class_of(-1), None);
    }

    #[test]
    fn user_classes_and_codes_lie_above_lastcode() {
        let mut r = ErrorRegistry::default();
        assert_eq!(r.last_used_code(), MPI_ERR_LASTCODE);
        let class = r.add_class().unwrap();
        assert!(class > MPI_ERR_LASTCODE);
        let code = r.add_code(class).unwrap();
        assert!(code > MPI_ERR_LASTCODE && code != class);
        assert_eq!(r.class_of(code), Some(class));
        assert_eq!(r.last_used_code(), code);
        r.set_string(code, "mine".into()).unwrap();
        assert_eq!(r.string_of(code).unwrap(), "mine");
        assert!(r.set_string(MPI_ERR_TAG, "no".into()).is_err(), "predefined strings cannot be replaced");
        assert!(r.remove_class(class).is_err(), "a class with codes cannot be removed");
        assert!(r.remove_code(code).is_err(), "a code with a string cannot be removed");
        r.remove_string(code).unwrap();
        r.remove_code(code).unwrap();
        assert!(r.remove_code(code).is_err(), "removed twice");
        r.remove_class(class).unwrap();
        assert_eq!(r.class_of(code), None);
        assert_eq!(r.last_used_code(), MPI_ERR_LASTCODE, "nothing of the user's is left");
    }

    /// Removed values are handed out again, so adding and removing in a
    /// loop neither grows the tables nor slows down (an outside suite runs
    /// 10,000 rounds of 32 classes with 5 codes each).
    #[test]
    fn removed_classes_and_codes_are_reused() {
        let mut r = ErrorRegistry::default();
        let keep = r.add_class().unwrap();
        let mut first = None;
        for _ in 0..1000 {
            let classes: Vec<c_int> = (0..32).map(|_| r.add_class().unwrap()).collect();
            let codes: Vec<c_int> = classes.iter().flat_map(|&c| (0..5).map(|_| r.add_code(c).unwrap()).collect::<Vec<_>>()).collect();
            assert_eq!(*first.get_or_insert((classes[0], codes[0], r.last_used_code())), (classes[0], codes[0], r.last_used_code()));
            assert_eq!(r.class_of(codes[7]), Some(classes[1]));
            assert!(r.remove_class(classes[3]).is_err(), "it still has codes");
            for &code in &codes {
                r.remove_code(code).unwrap();
            }
            for &class in classes.iter().rev() {
                r.remove_class(class).unwrap();
            }
        }
        assert_eq!(r.user_classes.len(), 1);
        assert!(r.user_codes.is_empty() && r.free_codes.is_empty() && r.free_classes.is_empty());
        assert_eq!(r.last_used_code(), keep);
        // A hole in the middle is filled first.
        let (a, b) = (r.add_class().unwrap(), r.add_class().unwrap());
        r.remove_class(a).unwrap();
        assert_eq!(r.add_class().unwrap(), a);
        assert_eq!(r.last_used_code(), b);
    }
}
