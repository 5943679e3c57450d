//! Reduction operations: predefined and user-defined, and the reducers
//! collective schedules apply.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_engine::sched::Reducer;
use gridmpi_reduce::Op;

/// The predefined operation of a builtin op handle.
pub fn predefined_op(h: MPI_Op) -> Option<Op> {
    Some(match h {
        MPI_MAX => Op::Max,
        MPI_MIN => Op::Min,
        MPI_SUM => Op::Sum,
        MPI_PROD => Op::Prod,
        MPI_LAND => Op::Land,
        MPI_BAND => Op::Band,
        MPI_LOR => Op::Lor,
        MPI_BOR => Op::Bor,
        MPI_LXOR => Op::Lxor,
        MPI_BXOR => Op::Bxor,
        MPI_MINLOC => Op::Minloc,
        MPI_MAXLOC => Op::Maxloc,
        MPI_REPLACE => Op::Replace,
        MPI_NO_OP => Op::NoOp,
        _ => return None,
    })
}

/// A predefined operation on any datatype whose elements it is defined on.
pub struct PredefReducer {
    pub op: Op,
}

fn reduce_packed(op: Op, dt: &Datatype, left: &[u8], inout: &mut [u8], items: u64) -> Result<(), String> {
    let n_el = (items * dt.elements_per_item()) as usize;
    if let Some(b) = dt.uniform_element().filter(|_| dt.uniform_pair().is_none()) {
        // SAFETY: both slices hold n_el packed elements of `b`.
        return unsafe { gridmpi_reduce::reduce(op, b, left.as_ptr(), inout.as_mut_ptr(), n_el) }.map_err(|e| e.to_string());
    }
    if let Some((v, i, _)) = dt.uniform_pair() {
        let stride = v.size() + i.size();
        let pairs = inout.len() / stride;
        // SAFETY: both slices hold `pairs` packed (value, index) pairs.
        return unsafe { gridmpi_reduce::reduce_pair(op, v, i, v.size(), stride, left.as_ptr(), inout.as_mut_ptr(), pairs) }
            .map_err(|e| e.to_string());
    }
    Err(format!("{} is not defined on a datatype mixing element types", op.name()))
}

impl Reducer for PredefReducer {
    unsafe fn reduce(&self, left: *const u8, inout: *mut u8, count: u64, dt: &Arc<Datatype>) -> Result<(), String> {
        if count == 0 || self.op == Op::NoOp {
            return Ok(());
        }
        if let Some(p) = dt.pair() {
            let stride = dt.extent().max(0) as usize;
            return gridmpi_reduce::reduce_pair(self.op, p.0, p.1, p.2, stride, left, inout, count as usize).map_err(|e| e.to_string());
        }
        if let Some(b) = dt.basic_type() {
            return gridmpi_reduce::reduce(self.op, b, left, inout, count as usize).map_err(|e| e.to_string());
        }
        if let (true, Some(b), None) = (dt.is_contiguous(), dt.uniform_element(), dt.uniform_pair()) {
            let off = dt.true_lb() as isize;
            let n = (count * dt.elements_per_item()) as usize;
            return gridmpi_reduce::reduce(self.op, b, left.wrapping_offset(off), inout.wrapping_offset(off), n).map_err(|e| e.to_string());
        }
        // A derived layout: reduce in packed form.
        let lb = UserBuf::new(left as *mut u8, count, dt.clone());
        let ib = UserBuf::new(inout, count, dt.clone());
        let mut a = vec![0u8; lb.len() as usize];
        let mut b = vec![0u8; ib.len() as usize];
        lb.read_packed(0, &mut a);
        ib.read_packed(0, &mut b);
        reduce_packed(self.op, dt, &a, &mut b, count)?;
        ib.write_packed(0, &b);
        Ok(())
    }

    fn is_commutative(&self) -> bool {
        self.op.is_commutative()
    }
}

/// A user function from MPI_Op_create, called with the user's datatype handle.
pub struct UserReducer {
    pub func: UserFunc,
    pub commute: bool,
    pub dt_handle: MPI_Datatype,
}

#[derive(Clone, Copy)]
pub enum UserFunc {
    /// From MPI_Op_create: called on at most INT_MAX items at a time.
    Int(MPI_User_function),
    /// From MPI_Op_create_c: called once on all the items.
    Big(MPI_User_function_c),
}

impl Reducer for UserReducer {
    unsafe fn reduce(&self, left: *const u8, inout: *mut u8, count: u64, _dt: &Arc<Datatype>) -> Result<(), String> {
        let mut h = self.dt_handle;
        match self.func {
            UserFunc::Int(f) => {
                // Call in slices of at most INT_MAX items.
                let ext = _dt.extent() as usize;
                let mut done = 0u64;
                while done < count {
                    let chunk = (count - done).min(c_int::MAX as u64);
                    let mut n = chunk as c_int;
                    let off = (done as usize).wrapping_mul(ext);
                    f(left.wrapping_add(off) as *mut c_void, inout.wrapping_add(off) as *mut c_void, &mut n, &mut h);
                    done += chunk;
                }
            }
            UserFunc::Big(f) => {
                let mut n = count as MPI_Count;
                f(left as *mut c_void, inout as *mut c_void, &mut n, &mut h);
            }
        }
        Ok(())
    }

    fn is_commutative(&self) -> bool {
        self.commute
    }

    fn calls_user_code(&self) -> bool {
        true
    }
}

impl State {
    /// The reducer for `op` on `datatype`, checked: the operation must be
    /// defined on the datatype's elements.
    pub fn reducer(&self, op: MPI_Op, datatype: MPI_Datatype) -> R<Arc<dyn Reducer>> {
        if let Some(p) = predefined_op(op) {
            let dt = self.dtype(datatype)?;
            check_predefined(p, &dt)?;
            return Ok(predefined_reducer(p));
        }
        if op == MPI_OP_NULL {
            return Err(err(MPI_ERR_OP, "the operation is MPI_OP_NULL"));
        }
        match self.ops.get(op) {
            Some(OpEntry::User { func, commute }) => Ok(Arc::new(UserReducer { func: UserFunc::Int(*func), commute: *commute, dt_handle: datatype })),
            Some(OpEntry::UserBig { func, commute }) => Ok(Arc::new(UserReducer { func: UserFunc::Big(*func), commute: *commute, dt_handle: datatype })),
            None => Err(err(MPI_ERR_OP, format!("invalid operation handle {op:#x}"))),
        }
    }
}

/// The reducer of a predefined operation, made once per operation and
/// shared: every reduction takes one, and a small allreduce on one host
/// costs little more than its allocations.
fn predefined_reducer(op: Op) -> Arc<dyn Reducer> {
    static MADE: std::sync::OnceLock<Vec<Arc<dyn Reducer>>> = std::sync::OnceLock::new();
    let made = MADE.get_or_init(|| Op::ALL.iter().map(|&o| Arc::new(PredefReducer { op: o }) as Arc<dyn Reducer>).collect());
    let i = Op::ALL.iter().position(|&o| o == op).expect("every op is in ALL");
    made[i].clone()
}

/// `gridmpi_reduce::supported`, from a table made once: one-sided
/// accumulates check it on every call, and the kernel lookup behind it
/// costs more than a small accumulate in shared memory.
fn supported(op: Op, b: gridmpi_datatype::BasicType) -> bool {
    use gridmpi_datatype::BasicType;
    static TABLE: std::sync::OnceLock<Vec<bool>> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| Op::ALL.iter().flat_map(|&o| BasicType::ALL.iter().map(move |&b| gridmpi_reduce::supported(o, b))).collect());
    let oi = Op::ALL.iter().position(|&o| o == op).expect("every op is in ALL");
    t[oi * BasicType::ALL.len() + b as usize]
}

pub(crate) fn check_predefined(op: Op, dt: &Datatype) -> R<()> {
    let ok = if let Some(p) = dt.pair().or(dt.uniform_pair()) {
        matches!(op, Op::Minloc | Op::Maxloc | Op::Replace | Op::NoOp) || p.0 == p.1 && gridmpi_reduce::supported(op, p.0)
    } else if let Some(b) = dt.uniform_element() {
        !matches!(op, Op::Minloc | Op::Maxloc) && supported(op, b)
    } else {
        dt.size() == 0 || matches!(op, Op::Replace | Op::NoOp)
    };
    if !ok {
        let tname = dt.basic_type().map(|b| b.name().to_string()).unwrap_or_else(|| "this derived datatype".into());
        return Err(err(MPI_ERR_OP, format!("{} is not defined for {tname}", op.name())));
    }
    Ok(())
}

/// MPI_Op_create(_c): `entry` is None when the user function is NULL.
fn op_create(name: &'static str, entry: Option<OpEntry>, op: *mut MPI_Op) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(op, "op")?;
        let e = entry.ok_or_else(|| err(MPI_ERR_ARG, "user_fn is NULL"))?;
        let h = state::with(|st| Ok(st.ops.insert(e)))?;
        // SAFETY: checked non-null.
        unsafe { *op = h };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_create(user_fn: Option<MPI_User_function>, commute: c_int, op: *mut MPI_Op) -> c_int {
    op_create("MPI_Op_create", user_fn.map(|func| OpEntry::User { func, commute: commute != 0 }), op)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_create_c(user_fn: Option<MPI_User_function_c>, commute: c_int, op: *mut MPI_Op) -> c_int {
    op_create("MPI_Op_create_c", user_fn.map(|func| OpEntry::UserBig { func, commute: commute != 0 }), op)
}

pub(crate) fn op_free(st: &mut State, h: MPI_Op) -> R<MPI_Op> {
    if predefined_op(h).is_some() {
        return Err(err(MPI_ERR_OP, "predefined operations cannot be freed"));
    }
    st.ops.remove(h).ok_or_else(|| err(MPI_ERR_OP, format!("invalid operation handle {h:#x}")))?;
    Ok(MPI_OP_NULL)
}

/// Every predefined operation counts as commutative (as in MPICH).
pub(crate) fn op_commutative(st: &mut State, op: MPI_Op) -> R<c_int> {
    if predefined_op(op).is_some() {
        return Ok(1);
    }
    match st.ops.get(op) {
        Some(OpEntry::User { commute, .. }) | Some(OpEntry::UserBig { commute, .. }) => Ok(*commute as c_int),
        None => Err(err(MPI_ERR_OP, format!("invalid operation handle {op:#x}"))),
    }
}

pub(crate) fn reduce_local(name: &'static str, inbuf: *const c_void, inoutbuf: *mut c_void, count: MPI_Count, datatype: MPI_Datatype, op: MPI_Op) -> c_int {
    api(name, Target::NoComm, || {
        let n = check_count(count)?;
        let (red, dt) = state::with(|st| Ok((st.reducer(op, datatype)?, st.dtype(datatype)?)))?;
        if super::coll::in_place(inbuf) || super::coll::in_place(inoutbuf) {
            return Err(err(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed here (both buffers are needed)"));
        }
        if n == 0 {
            return Ok(());
        }
        check_ptr(inbuf, "inbuf")?;
        check_ptr(inoutbuf, "inoutbuf")?;
        if std::ptr::eq(inbuf, inoutbuf as *const c_void) {
            // The operation reads each input item while it writes the
            // output; MPI 4.1 (2.6.3) forbids such aliasing, as MPICH checks.
            return Err(err(MPI_ERR_BUFFER, "inbuf and inoutbuf are the same buffer"));
        }
        // SAFETY: the caller's buffers hold `count` items of the datatype.
        unsafe { red.reduce(inbuf as *const u8, inoutbuf as *mut u8, n, &dt) }.map_err(|e| err(MPI_ERR_OP, e))
    })
}
