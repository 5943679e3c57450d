//! A PMIx client, for ranks started by a PMIx server: Open MPI's `mpirun`
//! (PRRTE), `srun --mpi=pmix`. Such servers set `PMIX_NAMESPACE` and
//! `PMIX_RANK` and speak only PMIx, whose wire protocol is the PMIx
//! library's own business; so this is the system's `libpmix.so.2` (Debian's
//! `libpmix2`), loaded when a job needs it, not linked: GridMPI runs
//! without it everywhere else.
//!
//! Only what [`crate::Pmi`] offers is used: who we are, the job's size,
//! put / commit + fence (collecting the data) / get of string values, abort
//! and finalize. The structures passed to the library are laid out here as
//! the PMIx standard's headers define them (checked against
//! `pmix_common.h` of PMIx 4.2: `pmix_proc_t` 260 bytes with the rank at
//! 256, `pmix_value_t` 32 bytes with its data at 8, `pmix_info_t` 552).

use std::ffi::{c_char, c_int, c_void, CStr, CString};

const NSLEN: usize = 256;
const RANK_WILDCARD: u32 = u32::MAX - 1;
const SUCCESS: c_int = 0;
const TYPE_BOOL: u16 = 1;
const TYPE_STRING: u16 = 3;
const TYPE_UINT32: u16 = 14;
/// Share with every process of the job, on this node and others.
const SCOPE_GLOBAL: u8 = 3;
const INFO_LEN: usize = 552;

#[repr(C)]
struct Proc {
    nspace: [c_char; NSLEN],
    rank: u32,
}

#[repr(C)]
struct Value {
    kind: u16,
    /// The union; only its first 8 bytes are read or written here.
    data: [u64; 3],
}

/// A `pmix_info_t`, filled by the library's own `PMIx_Info_load`.
#[repr(C, align(8))]
struct Info([u8; INFO_LEN]);

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> c_int;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> c_int;
type AbortFn = unsafe extern "C" fn(c_int, *const c_char, *const Proc, usize) -> c_int;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> c_int;
type CommitFn = unsafe extern "C" fn() -> c_int;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> c_int;
type GetFn = unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> c_int;
type InfoLoadFn = unsafe extern "C" fn(*mut Info, *const c_char, *const c_void, u16) -> c_int;
type ValueDestructFn = unsafe extern "C" fn(*mut Value);
type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;

/// The library's functions this client calls.
struct Lib {
    init: InitFn,
    finalize: FinalizeFn,
    abort: AbortFn,
    put: PutFn,
    commit: CommitFn,
    fence: FenceFn,
    get: GetFn,
    info_load: InfoLoadFn,
    value_destruct: ValueDestructFn,
    error_string: ErrorStringFn,
}

/// The library names tried, newest ABI first.
const LIBRARIES: &[&str] = &["libpmix.so.2", "libpmix.so"];

impl Lib {
    fn load() -> Result<Lib, String> {
        let mut handle = std::ptr::null_mut();
        for name in LIBRARIES {
            let c = CString::new(*name).expect("no NUL");
            // SAFETY: dlopen with a valid C string; the handle is kept for
            // the life of the process (never closed: its functions are used
            // until exit).
            handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
            if !handle.is_null() {
                break;
            }
        }
        if handle.is_null() {
            return Err(format!(
                "this process was started by a PMIx server (PMIX_NAMESPACE is set) but no PMIx library could be loaded ({}); install libpmix2",
                LIBRARIES.join(", ")
            ));
        }
        let sym = |name: &str| -> Result<*mut c_void, String> {
            let c = CString::new(name).expect("no NUL");
            // SAFETY: dlsym on the open handle with a valid C string.
            let p = unsafe { libc::dlsym(handle, c.as_ptr()) };
            if p.is_null() {
                Err(format!("the PMIx library has no {name}"))
            } else {
                Ok(p)
            }
        };
        // SAFETY: each symbol is the PMIx function of that name, whose C
        // signature the type states (PMIx standard, v4 and later).
        unsafe {
            Ok(Lib {
                init: std::mem::transmute::<*mut c_void, InitFn>(sym("PMIx_Init")?),
                finalize: std::mem::transmute::<*mut c_void, FinalizeFn>(sym("PMIx_Finalize")?),
                abort: std::mem::transmute::<*mut c_void, AbortFn>(sym("PMIx_Abort")?),
                put: std::mem::transmute::<*mut c_void, PutFn>(sym("PMIx_Put")?),
                commit: std::mem::transmute::<*mut c_void, CommitFn>(sym("PMIx_Commit")?),
                fence: std::mem::transmute::<*mut c_void, FenceFn>(sym("PMIx_Fence")?),
                get: std::mem::transmute::<*mut c_void, GetFn>(sym("PMIx_Get")?),
                info_load: std::mem::transmute::<*mut c_void, InfoLoadFn>(sym("PMIx_Info_load")?),
                value_destruct: std::mem::transmute::<*mut c_void, ValueDestructFn>(sym("PMIx_Value_destruct")?),
                error_string: std::mem::transmute::<*mut c_void, ErrorStringFn>(sym("PMIx_Error_string")?),
            })
        }
    }
}

/// A rank connected to its PMIx server.
pub(crate) struct Client {
    lib: Lib,
    me: Proc,
}

/// What a PMIx value holds, as far as this client reads values.
enum Got {
    Text(String),
    Number(u32),
}

impl Client {
    /// Connect to the server named by the environment.
    pub(crate) fn init() -> Result<Client, String> {
        let lib = Lib::load()?;
        let mut me = Proc { nspace: [0; NSLEN], rank: 0 };
        // SAFETY: `me` is a pmix_proc_t the library fills in.
        let rc = unsafe { (lib.init)(&mut me, std::ptr::null_mut(), 0) };
        let client = Client { lib, me };
        client.check("PMIx_Init", rc)?;
        Ok(client)
    }

    fn check(&self, what: &str, rc: c_int) -> Result<(), String> {
        if rc == SUCCESS {
            return Ok(());
        }
        // SAFETY: PMIx_Error_string returns a static NUL-terminated string.
        let why = unsafe { CStr::from_ptr((self.lib.error_string)(rc)) }.to_string_lossy().into_owned();
        Err(format!("{what}: {why} ({rc})"))
    }

    pub(crate) fn rank(&self) -> u32 {
        self.me.rank
    }

    pub(crate) fn namespace(&self) -> String {
        // SAFETY: the library wrote a NUL-terminated name into the array.
        unsafe { CStr::from_ptr(self.me.nspace.as_ptr()) }.to_string_lossy().into_owned()
    }

    fn proc_of(&self, rank: u32) -> Proc {
        Proc { nspace: self.me.nspace, rank }
    }

    /// A job-level value (`pmix.job.size`, `pmix.appnum`, ...) as a number.
    pub(crate) fn job_number(&self, key: &str) -> Result<Option<u32>, String> {
        match self.get_value(RANK_WILDCARD, key)? {
            Some(Got::Number(n)) => Ok(Some(n)),
            Some(Got::Text(t)) => t.trim().parse().map(Some).map_err(|_| format!("PMIx key {key} holds {t:?}, not a number")),
            None => Ok(None),
        }
    }

    pub(crate) fn put(&mut self, key: &str, value: &str) -> Result<(), String> {
        let k = CString::new(key).map_err(|_| format!("PMIx key {key:?} holds a NUL"))?;
        let v = CString::new(value).map_err(|_| format!("the value of PMIx key {key:?} holds a NUL"))?;
        let mut val = Value { kind: TYPE_STRING, data: [v.as_ptr() as u64, 0, 0] };
        // SAFETY: key and value are valid C strings for the call; PMIx
        // copies the value.
        let rc = unsafe { (self.lib.put)(SCOPE_GLOBAL, k.as_ptr(), &mut val) };
        self.check("PMIx_Put", rc)
    }

    /// Publish our puts and wait for every rank's, collecting their data.
    pub(crate) fn fence(&mut self) -> Result<(), String> {
        // SAFETY: no arguments.
        let rc = unsafe { (self.lib.commit)() };
        self.check("PMIx_Commit", rc)?;
        let mut info = Info([0; INFO_LEN]);
        let yes = true;
        let key = CString::new("pmix.collect").expect("no NUL");
        // SAFETY: `info` is a zeroed pmix_info_t the library fills with a
        // copy of the bool.
        let rc = unsafe { (self.lib.info_load)(&mut info, key.as_ptr(), &yes as *const bool as *const c_void, TYPE_BOOL) };
        self.check("PMIx_Info_load", rc)?;
        // SAFETY: a NULL process list means every process of our namespace.
        let rc = unsafe { (self.lib.fence)(std::ptr::null(), 0, &info, 1) };
        self.check("PMIx_Fence", rc)
    }

    /// The string `rank` put under `key`, if any.
    pub(crate) fn get(&mut self, rank: u32, key: &str) -> Result<Option<String>, String> {
        match self.get_value(rank, key)? {
            Some(Got::Text(t)) => Ok(Some(t)),
            Some(Got::Number(n)) => Ok(Some(n.to_string())),
            None => Ok(None),
        }
    }

    fn get_value(&self, rank: u32, key: &str) -> Result<Option<Got>, String> {
        let k = CString::new(key).map_err(|_| format!("PMIx key {key:?} holds a NUL"))?;
        let who = self.proc_of(rank);
        let mut val: *mut Value = std::ptr::null_mut();
        // SAFETY: valid process and key; the library allocates the value.
        let rc = unsafe { (self.lib.get)(&who, k.as_ptr(), std::ptr::null(), 0, &mut val) };
        if rc != SUCCESS || val.is_null() {
            return Ok(None); // not found (or not yet): the caller decides
        }
        // SAFETY: the library returned a valid pmix_value_t it allocated
        // with malloc; its contents are freed by PMIx_Value_destruct and
        // the struct itself with free.
        unsafe {
            let got = match (*val).kind {
                TYPE_STRING => {
                    let p = (*val).data[0] as *const c_char;
                    Some(Got::Text(if p.is_null() { String::new() } else { CStr::from_ptr(p).to_string_lossy().into_owned() }))
                }
                TYPE_UINT32 => Some(Got::Number((*val).data[0] as u32)),
                _ => None,
            };
            (self.lib.value_destruct)(val);
            libc::free(val as *mut c_void);
            Ok(got)
        }
    }

    pub(crate) fn abort(&mut self, code: i32, message: &str) {
        let m = CString::new(message.replace('\0', " ")).expect("NULs replaced");
        // SAFETY: a valid message; NULL processes: our whole namespace.
        unsafe { (self.lib.abort)(code, m.as_ptr(), std::ptr::null(), 0) };
    }

    pub(crate) fn finalize(self) -> Result<(), String> {
        // SAFETY: no info.
        let rc = unsafe { (self.lib.finalize)(std::ptr::null(), 0) };
        self.check("PMIx_Finalize", rc)
    }
}
