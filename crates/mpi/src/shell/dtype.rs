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

unsafe fn ints(n: c_int, p: *const c_int, what: &str) -> R<Vec<i64>> {
    if n < 0 {
        return Err(err(MPI_ERR_COUNT, format!("invalid count {n}")));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    check_ptr(p, what)?;
    Ok(std::slice::from_raw_parts(p, n as usize).iter().map(|&v| v as i64).collect())
}

unsafe fn aints(n: c_int, p: *const MPI_Aint, what: &str) -> R<Vec<i64>> {
    if n <= 0 {
        return Ok(Vec::new());
    }
    check_ptr(p, what)?;
    Ok(std::slice::from_raw_parts(p, n as usize).iter().map(|&v| v as i64).collect())
}

/// Build a new derived type from `old` with `f`.
fn construct(name: &'static str, newtype: *mut MPI_Datatype, f: impl FnOnce(&mut State) -> R<Datatype>) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(newtype, "newtype")?;
        let h = state::with(|st| {
            let dt = f(st)?;
            Ok(st.new_type(dt, false))
        })?;
        // SAFETY: checked non-null.
        unsafe { *newtype = h };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_contiguous(count: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_contiguous", newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::contiguous(count as i64, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_vector(count: c_int, blocklength: c_int, stride: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_vector", newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::vector(count as i64, blocklength as i64, stride as i64, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hvector(count: c_int, blocklength: c_int, stride: MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_create_hvector", newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hvector(count as i64, blocklength as i64, stride as i64, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_hvector(count: c_int, blocklength: c_int, stride: MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_hvector", newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hvector_integer(count as i64, blocklength as i64, stride as i64, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_indexed(count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_indexed", newtype, |st| {
        let bl = ints(count, array_of_blocklengths, "array_of_blocklengths")?;
        let d = ints(count, array_of_displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::indexed(&bl, &d, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed(count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_create_hindexed", newtype, |st| {
        let bl = ints(count, array_of_blocklengths, "array_of_blocklengths")?;
        let d = aints(count, array_of_displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hindexed(&bl, &d, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_hindexed(count: c_int, array_of_blocklengths: *mut c_int, array_of_displacements: *mut MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_hindexed", newtype, |st| {
        let bl = ints(count, array_of_blocklengths, "array_of_blocklengths")?;
        let d = aints(count, array_of_displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hindexed_integer(&bl, &d, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_indexed_block(count: c_int, blocklength: c_int, array_of_displacements: *const c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_create_indexed_block", newtype, |st| {
        let d = ints(count, array_of_displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::indexed_block(blocklength as i64, &d, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed_block(count: c_int, blocklength: c_int, array_of_displacements: *const MPI_Aint, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_create_hindexed_block", newtype, |st| {
        if count < 0 {
            return Err(err(MPI_ERR_COUNT, format!("invalid count {count}")));
        }
        let d = aints(count, array_of_displacements, "array_of_displacements")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::hindexed_block(blocklength as i64, &d, &old).map_err(type_err)
    })
}

unsafe fn struct_args(st: &State, count: c_int, bl: *const c_int, d: *const MPI_Aint, types: *const MPI_Datatype) -> R<(Vec<i64>, Vec<i64>, Vec<Arc<Datatype>>)> {
    let bl = ints(count, bl, "array_of_blocklengths")?;
    let d = aints(count, d, "array_of_displacements")?;
    let mut ts = Vec::with_capacity(count.max(0) as usize);
    if count > 0 {
        check_ptr(types, "array_of_types")?;
        for i in 0..count as usize {
            ts.push(st.dtype_any(*types.add(i), false).map_err(|e| err(e.class, format!("array_of_types[{i}]: {}", e.msg)))?);
        }
    }
    Ok((bl, d, ts))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_struct(count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const MPI_Aint, array_of_types: *const MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_create_struct", newtype, |st| {
        let (bl, d, ts) = struct_args(st, count, array_of_blocklengths, array_of_displacements, array_of_types)?;
        Datatype::create_struct(&bl, &d, &ts).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_struct(count: c_int, array_of_blocklengths: *mut c_int, array_of_displacements: *mut MPI_Aint, array_of_types: *mut MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_struct", newtype, |st| {
        let (bl, d, ts) = struct_args(st, count, array_of_blocklengths, array_of_displacements, array_of_types)?;
        Datatype::struct_integer(&bl, &d, &ts).map_err(type_err)
    })
}

fn order(o: c_int) -> R<Order> {
    Order::from_mpi(o).ok_or_else(|| err(MPI_ERR_ARG, format!("invalid order {o} (use MPI_ORDER_C or MPI_ORDER_FORTRAN)")))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_subarray(ndims: c_int, array_of_sizes: *const c_int, array_of_subsizes: *const c_int, array_of_starts: *const c_int, order_: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_create_subarray", newtype, |st| {
        if ndims <= 0 {
            return Err(err(MPI_ERR_DIMS, format!("invalid number of dimensions {ndims}")));
        }
        let s = ints(ndims, array_of_sizes, "array_of_sizes")?;
        let ss = ints(ndims, array_of_subsizes, "array_of_subsizes")?;
        let st_ = ints(ndims, array_of_starts, "array_of_starts")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::subarray(&s, &ss, &st_, order(order_)?, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_darray(size: c_int, rank: c_int, ndims: c_int, array_of_gsizes: *const c_int, array_of_distribs: *const c_int, array_of_dargs: *const c_int, array_of_psizes: *const c_int, order_: c_int, oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_create_darray", newtype, |st| {
        if ndims <= 0 {
            return Err(err(MPI_ERR_DIMS, format!("invalid number of dimensions {ndims}")));
        }
        let g = ints(ndims, array_of_gsizes, "array_of_gsizes")?;
        let dist = ints(ndims, array_of_distribs, "array_of_distribs")?
            .into_iter()
            .enumerate()
            .map(|(i, v)| Distrib::from_mpi(v as i32).ok_or_else(|| err(MPI_ERR_ARG, format!("array_of_distribs[{i}] = {v} is not a distribution"))))
            .collect::<R<Vec<_>>>()?;
        let da = ints(ndims, array_of_dargs, "array_of_dargs")?;
        let p = ints(ndims, array_of_psizes, "array_of_psizes")?;
        let old = st.dtype_any(oldtype, false)?;
        Datatype::darray(size as i64, rank as i64, &g, &dist, &da, &p, order(order_)?, &old).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_resized(oldtype: MPI_Datatype, lb: MPI_Aint, extent: MPI_Aint, newtype: *mut MPI_Datatype) -> c_int {
    construct("MPI_Type_create_resized", newtype, |st| {
        let old = st.dtype_any(oldtype, false)?;
        Datatype::resized(&old, lb as i64, extent as i64).map_err(type_err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_dup(oldtype: MPI_Datatype, newtype: *mut MPI_Datatype) -> c_int {
    api("MPI_Type_dup", Target::NoComm, || {
        check_ptr(newtype, "newtype")?;
        let (h, copies) = state::with(|st| {
            let old = st.dtype_any(oldtype, false)?;
            let committed = st.types.get(oldtype).is_none_or(|t| t.committed);
            let h = st.new_type(Datatype::dup(&old), committed);
            Ok((h, super::attr::type_attrs_of(st, oldtype)))
        })?;
        *newtype = h;
        super::attr::copy_type_attrs(oldtype, h, copies)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_integer(r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90("MPI_Type_create_f90_integer", newtype, Datatype::f90_integer(r))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90("MPI_Type_create_f90_real", newtype, Datatype::f90_real(p, r))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut MPI_Datatype) -> c_int {
    f90("MPI_Type_create_f90_complex", newtype, Datatype::f90_complex(p, r))
}

fn f90(name: &'static str, newtype: *mut MPI_Datatype, dt: Result<Datatype, TypeError>) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(newtype, "newtype")?;
        let dt = dt.map_err(type_err)?;
        // These are predefined-like: committed, and freeing them is an error
        // the standard allows us not to detect.
        let h = state::with(|st| Ok(st.new_type(dt, true)))?;
        // SAFETY: checked non-null.
        unsafe { *newtype = h };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_value_index(value_type: MPI_Datatype, index_type: MPI_Datatype, pair_type: *mut MPI_Datatype) -> c_int {
    api("MPI_Type_get_value_index", Target::NoComm, || {
        check_ptr(pair_type, "pair_type")?;
        let h = state::with(|st| {
            let v = st.dtype_any(value_type, false)?;
            let i = st.dtype_any(index_type, false)?;
            let (Some(vb), Some(ib)) = (v.basic_type(), i.basic_type()) else {
                return Ok(MPI_DATATYPE_NULL);
            };
            for &(h, _, p) in PREDEFINED_TYPES {
                if let Predef::Pair(pv, pi) = p {
                    if pv == vb && pi == ib {
                        return Ok(h);
                    }
                }
            }
            // Only the predefined pairs (as MPICH): other combinations give
            // MPI_DATATYPE_NULL.
            Ok(MPI_DATATYPE_NULL)
        })?;
        *pair_type = h;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_commit(datatype: *mut MPI_Datatype) -> c_int {
    api("MPI_Type_commit", Target::NoComm, || {
        check_ptr(datatype, "datatype")?;
        let h = *datatype;
        state::with(|st| {
            if st.predef.get(h).is_some() {
                return Ok(());
            }
            let t = st.types.get_mut(h).ok_or_else(|| err(MPI_ERR_TYPE, format!("invalid datatype handle {h:#x}")))?;
            t.committed = true;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_free(datatype: *mut MPI_Datatype) -> c_int {
    api("MPI_Type_free", Target::NoComm, || {
        check_ptr(datatype, "datatype")?;
        let h = *datatype;
        let is_predef = state::with(|st| {
            if st.predef.get(h).is_some() {
                return Ok(true);
            }
            st.types.get(h).ok_or_else(|| err(MPI_ERR_TYPE, format!("invalid datatype handle {h:#x}")))?;
            Ok(false)
        })?;
        if is_predef {
            return Err(err(MPI_ERR_TYPE, "predefined datatypes cannot be freed"));
        }
        super::attr::delete_all_type_attrs(h)?;
        // Pending operations hold their own reference to the type.
        state::with(|st| {
            st.types.remove(h);
            Ok(())
        })?;
        *datatype = MPI_DATATYPE_NULL;
        Ok(())
    })
}

fn with_type<T>(name: &'static str, h: MPI_Datatype, out: *mut T, f: impl FnOnce(&Datatype) -> R<T>) -> c_int {
    api(name, Target::NoComm, || {
        check_ptr(out, "output")?;
        let dt = state::with(|st| st.dtype_any(h, false))?;
        let v = f(&dt)?;
        // SAFETY: checked non-null.
        unsafe { *out = v };
        Ok(())
    })
}

fn fit_int(v: i64) -> c_int {
    if v > c_int::MAX as i64 || v < c_int::MIN as i64 {
        MPI_UNDEFINED
    } else {
        v as c_int
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size(datatype: MPI_Datatype, size: *mut c_int) -> c_int {
    with_type("MPI_Type_size", datatype, size, |d| Ok(fit_int(d.size() as i64)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size_x(datatype: MPI_Datatype, size: *mut MPI_Count) -> c_int {
    with_type("MPI_Type_size_x", datatype, size, |d| Ok(d.size() as MPI_Count))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_extent(datatype: MPI_Datatype, lb: *mut MPI_Aint, extent: *mut MPI_Aint) -> c_int {
    api("MPI_Type_get_extent", Target::NoComm, || {
        check_ptr(lb, "lb")?;
        check_ptr(extent, "extent")?;
        let d = state::with(|st| st.dtype_any(datatype, false))?;
        *lb = d.lb() as MPI_Aint;
        *extent = d.extent() as MPI_Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_extent_x(datatype: MPI_Datatype, lb: *mut MPI_Count, extent: *mut MPI_Count) -> c_int {
    api("MPI_Type_get_extent_x", Target::NoComm, || {
        check_ptr(lb, "lb")?;
        check_ptr(extent, "extent")?;
        let d = state::with(|st| st.dtype_any(datatype, false))?;
        *lb = d.lb();
        *extent = d.extent();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_true_extent(datatype: MPI_Datatype, true_lb: *mut MPI_Aint, true_extent: *mut MPI_Aint) -> c_int {
    api("MPI_Type_get_true_extent", Target::NoComm, || {
        check_ptr(true_lb, "true_lb")?;
        check_ptr(true_extent, "true_extent")?;
        let d = state::with(|st| st.dtype_any(datatype, false))?;
        *true_lb = d.true_lb() as MPI_Aint;
        *true_extent = d.true_extent() as MPI_Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_true_extent_x(datatype: MPI_Datatype, true_lb: *mut MPI_Count, true_extent: *mut MPI_Count) -> c_int {
    api("MPI_Type_get_true_extent_x", Target::NoComm, || {
        check_ptr(true_lb, "true_lb")?;
        check_ptr(true_extent, "true_extent")?;
        let d = state::with(|st| st.dtype_any(datatype, false))?;
        *true_lb = d.true_lb();
        *true_extent = d.true_extent();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_extent(datatype: MPI_Datatype, extent: *mut MPI_Aint) -> c_int {
    with_type("MPI_Type_extent", datatype, extent, |d| Ok(d.extent() as MPI_Aint))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_lb(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    with_type("MPI_Type_lb", datatype, displacement, |d| Ok(d.lb() as MPI_Aint))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_ub(datatype: MPI_Datatype, displacement: *mut MPI_Aint) -> c_int {
    with_type("MPI_Type_ub", datatype, displacement, |d| Ok(d.ub() as MPI_Aint))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_envelope(datatype: MPI_Datatype, num_integers: *mut c_int, num_addresses: *mut c_int, num_datatypes: *mut c_int, combiner: *mut c_int) -> c_int {
    api("MPI_Type_get_envelope", Target::NoComm, || {
        for (p, n) in [(num_integers, "num_integers"), (num_addresses, "num_addresses"), (num_datatypes, "num_datatypes"), (combiner, "combiner")] {
            check_ptr(p, n)?;
        }
        let d = state::with(|st| st.dtype_any(datatype, false))?;
        let e = d.envelope();
        if e.num_large_counts > 0 {
            return Err(err(MPI_ERR_TYPE, "this datatype has counts too large for MPI_Type_get_envelope (use MPI_Type_get_envelope_c)"));
        }
        *num_integers = e.num_integers as c_int;
        *num_addresses = e.num_addresses as c_int;
        *num_datatypes = e.num_datatypes as c_int;
        *combiner = e.combiner as i32;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents(datatype: MPI_Datatype, max_integers: c_int, max_addresses: c_int, max_datatypes: c_int, array_of_integers: *mut c_int, array_of_addresses: *mut MPI_Aint, array_of_datatypes: *mut MPI_Datatype) -> c_int {
    api("MPI_Type_get_contents", Target::NoComm, || {
        let handles = state::with(|st| {
            let d = st.dtype_any(datatype, false)?;
            if d.is_named() {
                return Err(err(MPI_ERR_TYPE, "MPI_Type_get_contents is not defined for named (predefined) datatypes"));
            }
            let c = d.contents();
            if (max_integers as usize) < c.integers.len() || (max_addresses as usize) < c.addresses.len() || (max_datatypes as usize) < c.datatypes.len() {
                return Err(err(
                    MPI_ERR_ARG,
                    format!(
                        "the arrays are too small: need {} integers, {} addresses, {} datatypes",
                        c.integers.len(),
                        c.addresses.len(),
                        c.datatypes.len()
                    ),
                ));
            }
            let hs: Vec<MPI_Datatype> = c.datatypes.iter().map(|t| st.handle_for_child(t)).collect();
            Ok((c.integers, c.addresses, hs))
        })?;
        let (is, ads, hs) = handles;
        for (i, v) in is.iter().enumerate() {
            *array_of_integers.add(i) = *v;
        }
        for (i, v) in ads.iter().enumerate() {
            *array_of_addresses.add(i) = *v as MPI_Aint;
        }
        for (i, v) in hs.iter().enumerate() {
            *array_of_datatypes.add(i) = *v;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_set_name(datatype: MPI_Datatype, type_name: *const c_char) -> c_int {
    api("MPI_Type_set_name", Target::NoComm, || {
        let name = read_cstr(type_name)?;
        let name: String = name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect();
        state::with(|st| {
            if st.predef.get(datatype).is_some() {
                st.predef.names.insert(datatype, name);
                return Ok(());
            }
            let t = st.types.get_mut(datatype).ok_or_else(|| err(MPI_ERR_TYPE, format!("invalid datatype handle {datatype:#x}")))?;
            t.name = name;
            Ok(())
        })
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_name(datatype: MPI_Datatype, type_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    api("MPI_Type_get_name", Target::NoComm, || {
        if datatype == MPI_DATATYPE_NULL {
            write_cstr(type_name, MPI_MAX_OBJECT_NAME as usize, "MPI_DATATYPE_NULL", resultlen);
            return Ok(());
        }
        let name = state::with(|st| {
            if let Some((_, n)) = st.predef.get(datatype) {
                return Ok(st.predef.names.get(&datatype).cloned().unwrap_or_else(|| n.to_string()));
            }
            let t = st.types.get(datatype).ok_or_else(|| err(MPI_ERR_TYPE, format!("invalid datatype handle {datatype:#x}")))?;
            Ok(t.name.clone())
        })?;
        write_cstr(type_name, MPI_MAX_OBJECT_NAME as usize, &name, resultlen);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut MPI_Datatype) -> c_int {
    api("MPI_Type_match_size", Target::NoComm, || {
        check_ptr(datatype, "datatype")?;
        let class = match typeclass {
            MPI_TYPECLASS_REAL => MatchClass::Real,
            MPI_TYPECLASS_INTEGER => MatchClass::Integer,
            MPI_TYPECLASS_COMPLEX => MatchClass::Complex,
            _ => return Err(err(MPI_ERR_ARG, format!("invalid type class {typeclass}"))),
        };
        let b = gridmpi_datatype::match_size(class, size.max(0) as usize).map_err(type_err)?;
        let h = PREDEFINED_TYPES
            .iter()
            .find(|(_, _, p)| matches!(p, Predef::Basic(x) if *x == b))
            .map(|(h, _, _)| *h)
            .ok_or_else(|| err(MPI_ERR_ARG, "no matching predefined type"))?;
        *datatype = h;
        Ok(())
    })
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
pub unsafe extern "C" fn PMPI_Address(location: *mut c_void, address: *mut MPI_Aint) -> c_int {
    PMPI_Get_address(location, address)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Aint_add(base: MPI_Aint, disp: MPI_Aint) -> MPI_Aint {
    base.wrapping_add(disp)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Aint_diff(addr1: MPI_Aint, addr2: MPI_Aint) -> MPI_Aint {
    addr1.wrapping_sub(addr2)
}
