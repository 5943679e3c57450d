//! Datatypes: constructors, queries, names, decoding; addresses.

use super::*;
use crate::objects::*;
use crate::state::{self, api, Target};
use gridmpi_datatype::{Distrib, ErrorClass, MatchClass, Order, TypeError};

pub fn type_err(e: TypeError) -> crate::errors::MpiError {
    let class = match e.class() {
        ErrorClass::Count => MPI_ERR_COUNT,
        ErrorClass::Arg => MPI_ERR_ARG,
        ErrorClass::Type => MPI_ERR_TYPE,
        ErrorClass::Dims => MPI_ERR_DIMS,
        ErrorClass::Truncate => MPI_ERR_TRUNCATE,
        ErrorClass::ValueTooLarge => MPI_ERR_VALUE_TOO_LARGE,
    };
    err(class, e.to_string())
}

impl State {
    pub fn new_type(&mut self, dt: Datatype, committed: bool) -> MPI_Datatype {
        self.types.insert(TypeEntry { dt: Arc::new(dt), name: String::new(), committed, attrs: Default::default() })
    }

    /// A handle for a datatype found inside another (MPI_Type_get_contents):
    /// predefined ones by their handle, derived ones as new handles.
    fn handle_for_child(&mut self, dt: &Arc<Datatype>) -> MPI_Datatype {
        if let Some(h) = self.predef.handle_of(dt) {
            return h;
        }
        if dt.is_named() {
            for &(h, _, p) in PREDEFINED_TYPES {
                let same = match p {
                    Predef::Basic(b) => dt.basic_type() == Some(b) && dt.pair().is_none(),
                    Predef::Pair(v, i) => dt.pair().is_some_and(|pl| pl.0 == v && pl.1 == i),
                };
                if same {
                    return h;
                }
            }
        }
        self.types.insert(TypeEntry { dt: dt.clone(), name: String::new(), committed: true, attrs: Default::default() })
    }
}

/// `n` values of an array argument; `n` is the call's count argument.
fn arr(n: i64, p: Ints, what: &str) -> R<Vec<i64>> {
    if n < 0 {
        return Err(err(MPI_ERR_COUNT, format!("invalid count {n}")));
    }
    p.read(n, what)
}

/// Build a new derived type with `f`. `large`: called through a
/// large-count (`_c`) constructor, whose arguments the envelope then
/// reports as large counts (MPI_Type_get_envelope_c), as MPICH does.
fn construct(name: &'static str, large: bool, newtype: *mut MPI_Datatype, f: impl FnOnce(&mut State) -> R<Datatype>) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(newtype, "newtype")?;
        let h = state::with(|st| {
            let dt = f(st)?;
            Ok(st.new_type(if large { dt.with_large_counts() } else { dt }, false))
        })?;
        // SAFETY: checked non-null.
        unsafe { *newtype = h };
        Ok(())
    })
}

pub(crate) fn contiguous(name: &'static str, count: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::contiguous(count, &old).map_err(type_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn vector(name: &'static str, count: MPI_Count, blocklength: MPI_Count, stride: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::vector(count, blocklength, stride, &old).map_err(type_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn hvector(name: &'static str, count: MPI_Count, blocklength: MPI_Count, stride: MPI_Count, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hvector(count, blocklength, stride, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_hvector(count: c_int, blocklength: c_int, stride: MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_hvector", false, newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hvector_integer(count.into(), blocklength.into(), stride, &old).map_err(type_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn indexed(name: &'static str, count: MPI_Count, blocklengths: Ints, displacements: Ints, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let bl = arr(count, blocklengths, "array_of_blocklengths")?;
        let d = arr(count, displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::indexed(&bl, &d, &old).map_err(type_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn hindexed(name: &'static str, count: MPI_Count, blocklengths: Ints, displacements: Ints, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let bl = arr(count, blocklengths, "array_of_blocklengths")?;
        let d = arr(count, displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hindexed(&bl, &d, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_hindexed(count: c_int, array_of_blocklengths: *mut c_int, array_of_displacements: *mut MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_hindexed", false, newtype, |st| {
        let bl = arr(count.into(), array_of_blocklengths.into(), "array_of_blocklengths")?;
        let d = arr(count.into(), array_of_displacements.into(), "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hindexed_integer(&bl, &d, &old).map_err(type_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn indexed_block(name: &'static str, count: MPI_Count, blocklength: MPI_Count, displacements: Ints, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let d = arr(count, displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::indexed_block(blocklength, &d, &old).map_err(type_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn hindexed_block(name: &'static str, count: MPI_Count, blocklength: MPI_Count, displacements: Ints, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let d = arr(count, displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hindexed_block(blocklength, &d, &old).map_err(type_err)
    })
}

/// The arguments of a struct constructor: blocklengths, displacements, types.
type StructArgs = (Vec<i64>, Vec<i64>, Vec<Arc<Datatype>>);

fn struct_args(st: &State, count: MPI_Count, bl: Ints, d: Ints, types: *const MPI_Datatype) -> R<StructArgs> {
    let bl = arr(count, bl, "array_of_blocklengths")?;
    let d = arr(count, d, "array_of_displacements")?;
    let mut ts = Vec::with_capacity(bl.len());
    if !bl.is_empty() {
        check_ptr(types, "array_of_types")?;
        for i in 0..bl.len() {
            // SAFETY: the standard makes the caller pass `count` types.
            let t = unsafe { *types.add(i) };
            ts.push(st.dtype_any(t, false).map_err(|e| err(e.class, format!("array_of_types[{i}]: {}", e.msg)))?);
        }
    }
    Ok((bl, d, ts))
}

pub(crate) fn create_struct(name: &'static str, count: MPI_Count, blocklengths: Ints, displacements: Ints, types: *const MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let (bl, d, ts) = struct_args(st, count, blocklengths, displacements, types)?;
        Datatype::create_struct(&bl, &d, &ts).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_struct(count: c_int, array_of_blocklengths: *mut c_int, array_of_displacements: *mut MPI_Aint, array_of_types: *mut MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_struct", false, newtype, |st| {
        let (bl, d, ts) = struct_args(st, count.into(), array_of_blocklengths.into(), array_of_displacements.into(), array_of_types)?;
        Datatype::struct_integer(&bl, &d, &ts).map_err(type_err)
    })
}

fn order(o: c_int) -> R<Order> {
    Order::from_mpi(o).ok_or_else(|| err(MPI_ERR_ARG, format!("invalid order {o} (use MPI_ORDER_C or MPI_ORDER_FORTRAN)")))
}

fn check_ndims(ndims: c_int) -> R<()> {
    if ndims <= 0 {
        return Err(err(MPI_ERR_DIMS, format!("invalid number of dimensions {ndims}")));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn subarray(name: &'static str, ndims: c_int, sizes: Ints, subsizes: Ints, starts: Ints, order_: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        check_ndims(ndims)?;
        let n = ndims.into();
        let s = arr(n, sizes, "array_of_sizes")?;
        let ss = arr(n, subsizes, "array_of_subsizes")?;
        let st_ = arr(n, starts, "array_of_starts")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::subarray(&s, &ss, &st_, order(order_)?, &old).map_err(type_err)
    })
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn darray(name: &'static str, size: c_int, rank: c_int, ndims: c_int, gsizes: Ints, distribs: *const c_int, dargs: *const c_int,
    psizes: *const c_int, order_: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        check_ndims(ndims)?;
        let n = ndims.into();
        let g = arr(n, gsizes, "array_of_gsizes")?;
        let dist = arr(n, distribs.into(), "array_of_distribs")?
            .into_iter()
            .enumerate()
            .map(|(i, v)| Distrib::from_mpi(v as i32).ok_or_else(|| err(MPI_ERR_ARG, format!("array_of_distribs[{i}] = {v} is not a distribution"))))
            .collect::<R<Vec<_>>>()?;
        let da = arr(n, dargs.into(), "array_of_dargs")?;
        let p = arr(n, psizes.into(), "array_of_psizes")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::darray(size as i64, rank as i64, &g, &dist, &da, &p, order(order_)?, &old).map_err(type_err)
    })
}

pub(crate) fn resized(name: &'static str, oldtype: MPI_Datatype, lb: MPI_Count, extent: MPI_Count, newtype: *mut MPI_Datatype, large: bool) -> c_int {
    construct(name, large, newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::resized(&old, lb, extent).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_integer(r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90("MPI_Type_create_f90_integer", MPI_UNDEFINED, r, newtype, || Datatype::f90_integer(r))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90("MPI_Type_create_f90_real", p, r, newtype, || Datatype::f90_real(p, r))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90("MPI_Type_create_f90_complex", p, r, newtype, || Datatype::f90_complex(p, r))
}

fn f90(name: &'static str, p: c_int, r: c_int, newtype: *mut MPI_Datatype, make: impl FnOnce() -> Result<Datatype, TypeError>) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(newtype, "newtype")?;
        // These are predefined-like: committed, and freeing them is an error
        // the standard allows us not to detect. One handle per (p, r).
        let h = state::with(|st| {
            if let Some(&(_, _, _, h)) = st.f90_types.iter().find(|&&(n, tp, tr, _)| n == name && tp == p && tr == r) {
                return Ok(h);
            }
            let h = st.new_type(make().map_err(type_err)?, true);
            st.f90_types.push((name, p, r, h));
            Ok(h)
        })?;
        // SAFETY: checked non-null.
        unsafe { *newtype = h };
        Ok(())
    })
}

pub(crate) fn type_extent_deprecated(st: &mut State, datatype: MPI_Datatype) -> R<MPI_Aint> {
    Ok(st.dtype_any(datatype, false)?.extent() as MPI_Aint)
}

pub(crate) fn type_lb_deprecated(st: &mut State, datatype: MPI_Datatype) -> R<MPI_Aint> {
    Ok(st.dtype_any(datatype, false)?.lb() as MPI_Aint)
}

pub(crate) fn type_ub_deprecated(st: &mut State, datatype: MPI_Datatype) -> R<MPI_Aint> {
    Ok(st.dtype_any(datatype, false)?.ub() as MPI_Aint)
}

pub(crate) fn type_size(name: &'static str, datatype: MPI_Datatype, size: CountPtr) -> c_int {
    api(name, Target::NoComm, || {
        size.check("size")?;
        let d = state::with(|st| st.dtype_any(datatype, false))?;
        // SAFETY: checked non-null.
        unsafe { size.put(d.size() as i64) };
        Ok(())
    })
}

/// The (true) lower bound and extent: `MPI_Aint`s in the classic binding,
/// `MPI_Count`s in the _x and _c ones (both 64-bit here).
pub(crate) fn type_extent(name: &'static str, datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count, true_bounds: bool) -> c_int {
    api(name, Target::NoComm, || {
        let (lb_name, extent_name) = if true_bounds { ("true_lb", "true_extent") } else { ("lb", "extent") };
        check_ptr(lb, lb_name)?;
        check_ptr(extent, extent_name)?;
        let d = state::with(|st| st.dtype_any(datatype, false))?;
        let (l, e) = if true_bounds { (d.true_lb(), d.true_extent()) } else { (d.lb(), d.extent()) };
        // SAFETY: both checked non-null.
        unsafe {
            *lb = l;
            *extent = e;
        }
        Ok(())
    })
}

/// MPI_Type_get_envelope(_c). `num_large_counts` is None in the classic
/// binding, which cannot describe a type with large-count arguments (built
/// by a `_c` constructor): that is an MPI_ERR_TYPE error, as in MPICH.
fn get_envelope(
    name: &'static str, datatype: MPI_Datatype, num_integers: CountPtr, num_addresses: CountPtr, num_large_counts: Option<CountPtr>,
    num_datatypes: CountPtr, combiner: *mut c_int,
) -> c_int {
    api(name, Target::NoComm, || {
        num_integers.check("num_integers")?;
        num_addresses.check("num_addresses")?;
        if let Some(p) = num_large_counts {
            p.check("num_large_counts")?;
        }
        num_datatypes.check("num_datatypes")?;
        check_ptr(combiner, "combiner")?;
        let d = state::with(|st| st.dtype_any(datatype, false))?;
        let e = d.envelope();
        if num_large_counts.is_none() && e.num_large_counts > 0 {
            return Err(err(MPI_ERR_TYPE, "this datatype was built with large counts (use MPI_Type_get_envelope_c)"));
        }
        // SAFETY: all checked non-null.
        unsafe {
            num_integers.put(e.num_integers as i64);
            num_addresses.put(e.num_addresses as i64);
            if let Some(p) = num_large_counts {
                p.put(e.num_large_counts as i64);
            }
            num_datatypes.put(e.num_datatypes as i64);
            *combiner = e.combiner as i32;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_envelope(datatype: MPI_Datatype, num_integers: *mut c_int, num_addresses: *mut c_int, num_datatypes: *mut c_int, combiner: *mut c_int) -> c_int {
    get_envelope("MPI_Type_get_envelope", datatype, num_integers.into(), num_addresses.into(), None, num_datatypes.into(), combiner)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_envelope_c(datatype: MPI_Datatype, num_integers: *mut MPI_Count, num_addresses: *mut MPI_Count, num_large_counts: *mut MPI_Count, num_datatypes: *mut MPI_Count, combiner: *mut c_int) -> c_int {
    get_envelope("MPI_Type_get_envelope_c", datatype, num_integers.into(), num_addresses.into(), Some(num_large_counts.into()), num_datatypes.into(), combiner)
}

/// MPI_Type_get_contents(_c). `large_counts` (the array and its length) is
/// None in the classic binding; see [`get_envelope`].
#[allow(clippy::too_many_arguments)]
fn get_contents(
    name: &'static str, datatype: MPI_Datatype, max_integers: MPI_Count, max_addresses: MPI_Count, large_counts: Option<(MPI_Count, *mut MPI_Count)>,
    max_datatypes: MPI_Count, array_of_integers: *mut c_int, array_of_addresses: *mut MPI_Aint, array_of_datatypes: *mut MPI_Datatype,
) -> c_int {
    api(name, Target::NoComm, || {
        let (max_large, array_of_large_counts) = large_counts.unwrap_or((0, std::ptr::null_mut()));
        let (is, ads, ls, hs) = state::with(|st| {
            let d = st.dtype_any(datatype, false)?;
            if d.is_named() {
                return Err(err(MPI_ERR_TYPE, format!("{name} is not defined for named (predefined) datatypes")));
            }
            let c = d.contents();
            if large_counts.is_none() && !c.large_counts.is_empty() {
                return Err(err(MPI_ERR_TYPE, "this datatype was built with large counts (use MPI_Type_get_contents_c)"));
            }
            let fits = |max: MPI_Count, n: usize| usize::try_from(max).is_ok_and(|m| m >= n);
            if !fits(max_integers, c.integers.len())
                || !fits(max_addresses, c.addresses.len())
                || !fits(max_large, c.large_counts.len())
                || !fits(max_datatypes, c.datatypes.len())
            {
                let large = if large_counts.is_some() { format!("{} large counts, ", c.large_counts.len()) } else { String::new() };
                return Err(err(
                    MPI_ERR_ARG,
                    format!(
                        "the arrays are too small: need {} integers, {} addresses, {large}{} datatypes",
                        c.integers.len(),
                        c.addresses.len(),
                        c.datatypes.len()
                    ),
                ));
            }
            let hs: Vec<MPI_Datatype> = c.datatypes.iter().map(|t| st.handle_for_child(t)).collect();
            Ok((c.integers, c.addresses, c.large_counts, hs))
        })?;
        // SAFETY: the caller passes arrays of at least the max_* lengths,
        // which hold these (checked above).
        unsafe {
            for (i, v) in is.iter().enumerate() {
                *array_of_integers.add(i) = *v;
            }
            for (i, v) in ads.iter().enumerate() {
                *array_of_addresses.add(i) = *v as MPI_Aint;
            }
            for (i, v) in ls.iter().enumerate() {
                *array_of_large_counts.add(i) = *v;
            }
            for (i, v) in hs.iter().enumerate() {
                *array_of_datatypes.add(i) = *v;
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents(datatype: MPI_Datatype, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int, array_of_integers: *mut c_int, array_of_addresses: *mut MPI_Aint, array_of_datatypes: *mut MPI_Datatype) -> c_int {
    get_contents("MPI_Type_get_contents", datatype, max_integers.into(), max_addresses.into(), None, max_datatypes.into(), array_of_integers, array_of_addresses, array_of_datatypes)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents_c(
    datatype: MPI_Datatype, max_integers: MPI_Count, max_addresses: MPI_Count, max_large_counts: MPI_Count, max_datatypes: MPI_Count,
    array_of_integers: *mut c_int, array_of_addresses: *mut MPI_Aint, array_of_large_counts: *mut MPI_Count, array_of_datatypes: *mut MPI_Datatype,
) -> c_int {
    get_contents(
        "MPI_Type_get_contents_c", datatype, max_integers, max_addresses, Some((max_large_counts, array_of_large_counts)), max_datatypes,
        array_of_integers, array_of_addresses, array_of_datatypes,
    )
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_address(location: *const c_void, address: *mut MPI_Aint) -> c_int {
    if address.is_null() {
        return api("MPI_Get_address", Target::NoComm, || Err(err(MPI_ERR_ARG, "address is NULL")));
    }
    *address = location as MPI_Aint;
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}

// MPI_Type_free, _commit, _dup, _set_name, _get_name, _match_size and
// _get_value_index are generated from abi/functions.txt; these are their
// implementations.

fn user_type_mut(st: &mut State, h: MPI_Datatype) -> R<&mut TypeEntry> {
    st.types.get_mut(h).ok_or_else(|| err(MPI_ERR_TYPE, format!("invalid datatype handle {h:#x}")))
}

pub(crate) fn type_free(h: MPI_Datatype) -> R<MPI_Datatype> {
    if state::with(|st| Ok(st.predef.get(h).is_some() || st.f90_types.iter().any(|e| e.3 == h)))? {
        return Err(err(MPI_ERR_TYPE, "predefined datatypes (MPI_Type_create_f90_* gives such) cannot be freed"));
    }
    state::with(|st| user_type_mut(st, h).map(|_| ()))?;
    super::attr::delete_all_type_attrs(h)?;
    // Pending operations hold their own reference to the type.
    state::with(|st| Ok(st.types.remove(h)))?;
    Ok(MPI_DATATYPE_NULL)
}

pub(crate) fn type_commit(st: &mut State, h: MPI_Datatype) -> R<()> {
    if st.predef.get(h).is_none() {
        user_type_mut(st, h)?.committed = true;
    }
    Ok(())
}

pub(crate) fn type_dup(oldtype: MPI_Datatype) -> R<MPI_Datatype> {
    let (h, copies) = state::with(|st| {
        let old = st.dtype_any(oldtype, false)?;
        let committed = st.types.get(oldtype).is_none_or(|t| t.committed);
        let h = st.new_type(Datatype::dup(&old), committed);
        Ok((h, super::attr::type_attrs_of(st, oldtype)))
    })?;
    if let Err(e) = super::attr::copy_type_attrs(oldtype, h, copies) {
        // A copy callback failed: no duplicate (it holds no attribute yet).
        type_free(h)?;
        return Err(e);
    }
    Ok(h)
}

/// MPI_Type_dup: on an error the program gets MPI_DATATYPE_NULL (as from
/// MPICH), not what its variable held before.
pub(crate) fn type_dup_call(name: &'static str, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(newtype, "newtype")?;
        let made = type_dup(oldtype);
        // SAFETY: checked non-null.
        unsafe { *newtype = *made.as_ref().unwrap_or(&MPI_DATATYPE_NULL) };
        made.map(|_| ())
    })
}

pub(crate) fn type_set_name(st: &mut State, h: MPI_Datatype, name: &str) -> R<()> {
    let name = object_name(name);
    if st.predef.get(h).is_some() {
        st.predef.names.insert(h, name);
    } else {
        user_type_mut(st, h)?.name = name;
    }
    Ok(())
}

pub(crate) fn type_get_name(st: &mut State, h: MPI_Datatype) -> R<String> {
    if h == MPI_DATATYPE_NULL {
        return Ok("MPI_DATATYPE_NULL".into());
    }
    if let Some((_, n)) = st.predef.get(h) {
        return Ok(st.predef.names.get(&h).cloned().unwrap_or_else(|| n.to_string()));
    }
    Ok(user_type_mut(st, h)?.name.clone())
}

pub(crate) fn type_match_size(typeclass: c_int, size: c_int) -> R<MPI_Datatype> {
    let class = match typeclass {
        MPI_TYPECLASS_REAL => MatchClass::Real,
        MPI_TYPECLASS_INTEGER => MatchClass::Integer,
        MPI_TYPECLASS_COMPLEX => MatchClass::Complex,
        _ => return Err(err(MPI_ERR_ARG, format!("invalid type class {typeclass}"))),
    };
    let b = gridmpi_datatype::match_size(class, size.max(0) as usize).map_err(type_err)?;
    let found = PREDEFINED_TYPES.iter().find(|(_, _, p)| matches!(p, Predef::Basic(x) if *x == b));
    found.map(|(h, _, _)| *h).ok_or_else(|| err(MPI_ERR_ARG, "no matching predefined type"))
}

/// Only the predefined pairs (as MPICH): other combinations give
/// MPI_DATATYPE_NULL.
pub(crate) fn type_value_index(st: &mut State, value_type: MPI_Datatype, index_type: MPI_Datatype) -> R<MPI_Datatype> {
    let (v, i) = (st.dtype_any(value_type, false)?, st.dtype_any(index_type, false)?);
    let pair = (v.basic_type(), i.basic_type());
    let found = PREDEFINED_TYPES.iter().find(|(_, _, p)| matches!((p, pair), (Predef::Pair(pv, pi), (Some(vb), Some(ib))) if *pv == vb && *pi == ib));
    Ok(found.map_or(MPI_DATATYPE_NULL, |(h, _, _)| *h))
}
