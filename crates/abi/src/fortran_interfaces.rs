//! The explicit interfaces of the `mpi` module (MPI 4.1 section "Fortran
//! Support Through the mpi Module"): every routine of the old bindings, with
//! its arguments typed as the standard gives them and IERROR mandatory, so
//! that a wrong argument is a compile-time error instead of a crash.
//!
//! The interfaces name libmpifort's wrappers (an interface `MPI_SEND` is
//! the procedure `mpi_send_`), so they change nothing at run time. Choice
//! buffers, and the arguments a program may pass more than one way (a
//! weights array or MPI_UNWEIGHTED, a status as INTEGER array or
//! TYPE(MPI_Status)...), ignore type, kind and rank through gfortran's
//! `NO_ARG_CHECK`; other compilers read that directive as a comment and
//! then check them like any argument.

use crate::fortran::{fortran_functions, FFunction, FParam, FortranTable, Kind, Width};
use crate::fortran08::wrap;
use crate::Function;
use std::fmt::Write;

/// How one dummy argument is declared.
fn declaration(p: &FParam) -> Option<(String, bool)> {
    let t = p.c_type.trim();
    let base = t.trim_start_matches("const ").split(['*', '[']).next().unwrap().trim();
    let dims = if t.contains("[][3]") {
        "(3,*)"
    } else if t.contains('[') || p.name.starts_with("array_of_") {
        "(*)"
    } else {
        ""
    };
    let n = &p.name;
    let any = (format!("TYPE(*), DIMENSION(*) :: {n}"), true);
    let int_of = |base: &str| match base {
        "MPI_Aint" => "INTEGER(KIND=MPI_ADDRESS_KIND)",
        "MPI_Count" => "INTEGER(KIND=MPI_COUNT_KIND)",
        "MPI_Offset" => "INTEGER(KIND=MPI_OFFSET_KIND)",
        _ => "INTEGER",
    };
    let width = |w: &Width| match w {
        Width::Int => "INTEGER",
        Width::Aint => "INTEGER(KIND=MPI_ADDRESS_KIND)",
    };
    Some(match &p.kind {
        Kind::Omit => return None,
        // Stubs' arguments, addresses C returns, sentinels passed for arrays.
        Kind::Zero | Kind::Choice | Kind::AddressOut | Kind::Weights => any,
        Kind::Status if p.name.starts_with("array_of_") => (format!("INTEGER :: {n}(MPI_STATUS_SIZE,*)"), false),
        Kind::Status => (format!("INTEGER :: {n}(MPI_STATUS_SIZE)"), false),
        _ if base == "MPI_F08_status" => any,
        _ if base == "MPI_Status" => (format!("INTEGER :: {n}(MPI_STATUS_SIZE{})", if dims.is_empty() { "" } else { ",*" }), false),
        _ if base == "MPI_Fint" && p.name == "f_status" => (format!("INTEGER :: {n}(MPI_STATUS_SIZE)"), false),
        Kind::StringIn | Kind::StringInStripped | Kind::StringOut => (format!("CHARACTER(LEN=*) :: {n}"), false),
        Kind::Argv | Kind::Strings(_) => (format!("CHARACTER(LEN=*) :: {n}(*)"), false),
        Kind::Argvs(c) => (format!("CHARACTER(LEN=*) :: {n}({c},*)"), false),
        Kind::Logical | Kind::LogicalOut => (format!("LOGICAL :: {n}"), false),
        Kind::Logicals(_) | Kind::LogicalsOut(_) => (format!("LOGICAL :: {n}(*)"), false),
        Kind::IntAint | Kind::IntAintOut | Kind::Keyval | Kind::StrlenIn(_) | Kind::StrlenInout(_) | Kind::IndexOut => {
            (format!("INTEGER :: {n}"), false)
        }
        Kind::IntAints(_) | Kind::IndicesOut(_) | Kind::Errcodes => (format!("INTEGER :: {n}(*)"), false),
        Kind::AttrIn(w) | Kind::AttrOut { width: w, .. } | Kind::KeyvalExtra(w) => (format!("{} :: {n}", width(w)), false),
        Kind::GreqExtra => (format!("INTEGER(KIND=MPI_ADDRESS_KIND) :: {n}"), false),
        Kind::CopyFn(_) | Kind::DeleteFn(_) | Kind::GreqQuery | Kind::GreqFree | Kind::GreqCancel => (format!("EXTERNAL :: {n}"), false),
        _ if base.ends_with("_function") || base.ends_with("_function_c") => (format!("EXTERNAL :: {n}"), false),
        // Value, Pass (and a kind added later): INTEGER of the C type's width.
        _ => (format!("{} :: {n}{dims}", int_of(base)), false),
    })
}

/// The interface of one routine under `name` (MPI_X or PMPI_X).
fn interface(out: &mut String, f: &FFunction, name: &str) {
    let mut args: Vec<String> = f.params.iter().filter(|p| p.kind != Kind::Omit).map(|p| p.name.clone()).collect();
    if f.ierror {
        args.push("ierror".into());
    }
    let upper = name.to_ascii_uppercase();
    let (head, end) = match f.func.ret.as_str() {
        "double" => (format!("DOUBLE PRECISION FUNCTION {upper}({})", args.join(", ")), "FUNCTION"),
        "MPI_Aint" => (format!("INTEGER(KIND=MPI_ADDRESS_KIND) FUNCTION {upper}({})", args.join(", ")), "FUNCTION"),
        _ => (format!("SUBROUTINE {upper}({})", args.join(", ")), "SUBROUTINE"),
    };
    wrap(out, 8, &head);
    out.push_str("          IMPORT\n");
    for p in &f.params {
        if let Some((decl, no_check)) = declaration(p) {
            if no_check {
                let _ = writeln!(out, "          !GCC$ ATTRIBUTES NO_ARG_CHECK :: {}", p.name);
            }
            let _ = writeln!(out, "          {decl}");
        }
    }
    if f.ierror {
        out.push_str("          INTEGER :: ierror\n");
    }
    let _ = writeln!(out, "        END {end} {upper}");
}

/// The INTERFACE block of every routine of the old bindings, MPI_X and PMPI_X.
pub fn mpi_module_interfaces(funcs: &[Function], t: &FortranTable) -> Result<String, String> {
    let mut out = String::from("      INTERFACE\n");
    for f in fortran_functions(funcs, t)? {
        for prefix in ["MPI_", "PMPI_"] {
            interface(&mut out, &f, &format!("{prefix}{}", f.func.stem()));
        }
    }
    out.push_str("      END INTERFACE\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fortran::parse_fortran_table;
    use crate::parse_table;

    #[test]
    fn interfaces() {
        let funcs = parse_table(include_str!("../../../abi/functions.txt")).unwrap();
        let t = parse_fortran_table(include_str!("../../../abi/fortran.txt")).unwrap();
        let i = mpi_module_interfaces(&funcs, &t).unwrap();
        assert!(i.contains("        SUBROUTINE MPI_SEND(buf, count, datatype, dest, tag, comm, ierror)\n          IMPORT\n          !GCC$ ATTRIBUTES NO_ARG_CHECK :: buf\n          TYPE(*), DIMENSION(*) :: buf\n          INTEGER :: count\n"));
        assert!(i.contains("        DOUBLE PRECISION FUNCTION MPI_WTIME()\n"));
        assert!(i.contains("          INTEGER :: array_of_statuses(MPI_STATUS_SIZE,*)\n"));
        assert!(i.contains("        SUBROUTINE MPI_INIT(ierror)\n"));
        assert!(i.contains("          LOGICAL :: periods(*)\n"));
        assert!(i.contains("          EXTERNAL :: comm_copy_attr_fn\n"));
        assert!(i.contains("        SUBROUTINE PMPI_PCONTROL(level)\n"));
    }
}
