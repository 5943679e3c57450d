//! The `mpi_f08` module (MPI 4.1 chapter 19), generated from the same
//! tables as mpif.h and the `mpi` module.
//!
//! Every routine is a module procedure behind a generic name (`MPI_Send`
//! resolves to `MPI_Send_f08` or, for INTEGER(KIND=MPI_COUNT_KIND) counts,
//! `MPI_Send_c_f08`) that calls libmpifort's wrapper of the same function in
//! the old Fortran calling convention (`mpi_send_`, or `gridmpi_f08_send_c`
//! for the large-count form; see [`crate::fortran::large_count_symbol`]).
//! That convention fits f08 arguments unchanged: a `TYPE(MPI_Comm)` is one
//! INTEGER, a `TYPE(MPI_Status)` is the INTEGER status array, LOGICALs,
//! strings (with their hidden lengths) and the f08 callback procedures are
//! passed as in the old bindings. So every conversion (sentinels, 1-based
//! indices, predefined attribute keys, callback trampolines, the sizes of
//! strings) is done in one place, `crates/fortran`, for all three Fortran
//! bindings. What the f08 procedure adds: the OPTIONAL `ierror`, and the
//! address of a `TYPE(*), DIMENSION(..)` choice buffer. A blocking call gets
//! a contiguous copy of a non-contiguous buffer. A call that keeps using the
//! buffer after it returns (nonblocking, persistent, one-sided) gets a
//! section as its first element, a count of 1 and a datatype that reaches
//! its items, where the buffer comes with its own count and datatype
//! ([`section_triples`]); where it does not (buffers sharing one count and
//! datatype, arrays of counts, partitions, attached buffers) it refuses one
//! with MPI_ERR_BUFFER. So `MPI_SUBARRAYS_SUPPORTED` stays `.FALSE.`.

use crate::fortran::{fortran_functions, large_count_functions, large_count_symbol, returns_address, FFunction, FParam, FortranTable, Kind, Width};
use crate::Function;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The handle types of the MPICH ABI, each a `TYPE(...)` with one INTEGER.
pub const HANDLE_TYPES: &[&str] = &[
    "MPI_Comm",
    "MPI_Datatype",
    "MPI_Errhandler",
    "MPI_File",
    "MPI_Group",
    "MPI_Info",
    "MPI_Message",
    "MPI_Op",
    "MPI_Request",
    "MPI_Session",
    "MPI_Win",
];

/// Functions of the old bindings that MPI-3 removed: the `mpi_f08` module
/// never had them.
const REMOVED: &[&str] = &[
    "MPI_Address",
    "MPI_Attr_delete",
    "MPI_Attr_get",
    "MPI_Attr_put",
    "MPI_Errhandler_create",
    "MPI_Errhandler_get",
    "MPI_Errhandler_set",
    "MPI_Keyval_create",
    "MPI_Keyval_free",
    "MPI_Type_extent",
    "MPI_Type_hindexed",
    "MPI_Type_hvector",
    "MPI_Type_lb",
    "MPI_Type_struct",
    "MPI_Type_ub",
];

/// How an f08 dummy reaches the old-convention wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// By reference, whatever its type (the wrapper's convention).
    Ref,
    /// `TYPE(*), DIMENSION(..)`: the address of its first element.
    Choice,
    /// A procedure: its address.
    Proc,
}

/// One dummy argument of an f08 procedure.
#[derive(Debug, Clone)]
struct Dummy {
    name: String,
    /// `INTEGER`, `TYPE(MPI_Comm)`, `PROCEDURE(MPI_User_function)`...
    ty: String,
    /// Array bounds (`*`, `3,*`), empty for a scalar.
    dims: String,
    intent_in: bool,
    pass: Pass,
    /// A CHARACTER argument whose length the wrapper takes as a hidden argument.
    hidden_len: bool,
}

impl Dummy {
    /// Type, kind and rank: what tells two specific procedures apart.
    /// `kinds` gives the value of each kind constant (MPI_ADDRESS_KIND...).
    fn tkr(&self, kinds: &[(String, String)]) -> String {
        let mut ty = self.ty.clone();
        for (name, value) in kinds {
            ty = ty.replace(name.as_str(), value);
        }
        match self.pass {
            Pass::Choice => "choice".into(),
            Pass::Proc => "procedure".into(),
            Pass::Ref => format!("{ty}:{}", self.dims.matches(',').count() + !self.dims.is_empty() as usize),
        }
    }

    fn declaration(&self) -> String {
        let mut attrs = vec![self.ty.clone()];
        if self.pass == Pass::Choice {
            attrs = vec!["TYPE(*)".into(), "DIMENSION(..)".into()];
        } else if !self.dims.is_empty() {
            attrs.push(format!("DIMENSION({})", self.dims));
        }
        if self.pass != Pass::Proc && self.intent_in {
            attrs.push("INTENT(IN)".into());
        }
        if self.pass == Pass::Choice {
            // Nonblocking and persistent operations use it after the call returns.
            attrs.push("ASYNCHRONOUS".into());
        }
        format!("{} :: {}", attrs.join(", "), self.name)
    }
}

/// The f08 dummy of one parameter, `None` when the Fortran form omits it.
fn dummy(f: &FFunction, p: &FParam) -> Result<Option<Dummy>, String> {
    let t = p.c_type.trim();
    let base = t.trim_start_matches("const ").split(['*', '[']).next().unwrap().trim().to_string();
    let pointer = t.contains('*') || t.contains('[');
    let constant = t.starts_with("const");
    let mut dims = if t.contains("[][3]") {
        "3,*".to_string()
    } else if t.contains('[') || p.name.starts_with("array_of_") {
        "*".to_string()
    } else {
        String::new()
    };
    let mut d = Dummy {
        name: p.name.clone(),
        ty: String::new(),
        dims: String::new(),
        intent_in: !pointer || constant,
        pass: Pass::Ref,
        hidden_len: false,
    };
    let aint = "INTEGER(KIND=MPI_ADDRESS_KIND)".to_string();
    d.ty = match &p.kind {
        Kind::Omit => return Ok(None),
        Kind::IntAint | Kind::IntAintOut | Kind::IntAints(_) => {
            return Err(format!("{}: MPI-1 INTEGER addresses have no f08 form", f.func.name))
        }
        Kind::AttrIn(Width::Int) | Kind::AttrOut { width: Width::Int, .. } | Kind::CopyFn(Width::Int) | Kind::DeleteFn(Width::Int)
        | Kind::KeyvalExtra(Width::Int) => return Err(format!("{}: INTEGER attributes have no f08 form", f.func.name)),
        Kind::Logical | Kind::LogicalOut | Kind::Logicals(_) | Kind::LogicalsOut(_) => "LOGICAL".into(),
        Kind::AttrIn(_) | Kind::AttrOut { .. } | Kind::KeyvalExtra(_) | Kind::GreqExtra => aint,
        Kind::AddressOut => "TYPE(C_PTR)".into(),
        Kind::CopyFn(_) | Kind::DeleteFn(_) | Kind::GreqQuery | Kind::GreqFree | Kind::GreqCancel => {
            d.pass = Pass::Proc;
            format!("PROCEDURE({base})")
        }
        _ if base.ends_with("_function") || base.ends_with("_function_c") => {
            d.pass = Pass::Proc;
            format!("PROCEDURE({base})")
        }
        Kind::Choice if matches!(p.name.as_str(), "baseptr" | "buffer_addr") => "TYPE(C_PTR)".into(),
        Kind::Choice => {
            d.pass = Pass::Choice;
            String::new()
        }
        _ => match base.as_str() {
            "char" => {
                d.hidden_len = matches!(p.kind, Kind::StringIn | Kind::StringInStripped | Kind::StringOut | Kind::Argv | Kind::Strings(_) | Kind::Argvs(_));
                // One string (`char *name` or `char name[]`) is a scalar
                // of any length; an array of them (`char *argv[]`) is not.
                dims = if t.matches('*').count() + t.matches('[').count() > 1 { "*".into() } else { String::new() };
                if let Kind::Argvs(n) = &p.kind {
                    dims = format!("{n},*");
                }
                if matches!(p.kind, Kind::Argv | Kind::Strings(_) | Kind::Argvs(_)) {
                    d.intent_in = true;
                }
                "CHARACTER(LEN=*)".into()
            }
            "void" => {
                d.pass = Pass::Choice;
                String::new()
            }
            "MPI_Status" | "MPI_F08_status" => "TYPE(MPI_Status)".into(),
            "int" => "INTEGER".into(),
            "MPI_Fint" if p.name == "f_status" => {
                dims = "MPI_STATUS_SIZE".into();
                "INTEGER".into()
            }
            "MPI_Fint" => "INTEGER".into(),
            "MPI_Aint" => aint,
            "MPI_Count" => "INTEGER(KIND=MPI_COUNT_KIND)".into(),
            "MPI_Offset" => "INTEGER(KIND=MPI_OFFSET_KIND)".into(),
            h if HANDLE_TYPES.contains(&h) => format!("TYPE({h})"),
            other => return Err(format!("{} parameter {}: no f08 type for {other}", f.func.name, p.name)),
        },
    };
    if d.pass != Pass::Choice {
        d.dims = dims;
    }
    Ok(Some(d))
}

/// One f08 specific procedure.
struct Specific {
    /// The generic name it is found by (`MPI_Send`).
    generic: String,
    /// Its own (private) name.
    name: String,
    /// The wrapper it calls.
    symbol: String,
    dummies: Vec<Dummy>,
    ierror: bool,
    /// The Fortran result type of a function.
    result: Option<String>,
    /// Whether a non-contiguous choice buffer may be passed as a copy: the
    /// call is done with the buffer when it returns.
    copyable: bool,
}

/// Calls done with their buffers when they return: not those that start an
/// operation (they return a request), one-sided operations (completed by a
/// later synchronisation), split collectives, and calls about the buffer's
/// memory itself (attaching it, its address, freeing it).
fn copyable(f: &FFunction) -> bool {
    let uses_later = f.params.iter().any(|p| {
        let base = p.c_type.trim_start_matches("const ").split(['*', '[']).next().unwrap().trim().to_string();
        base == "MPI_Request" || base == "MPI_Win"
    });
    let stem = f.func.stem().trim_end_matches("_c");
    let memory = stem.ends_with("attach_buffer") || matches!(stem, "Buffer_attach" | "Free_mem" | "Get_address");
    !uses_later && !memory && !stem.ends_with("_begin") && !stem.ends_with("_end")
}

/// `name`: MPI_X, or PMPI_X for the profiling interface.
fn specific_named(f: &FFunction, generic: &str, name: &str, symbol: String) -> Result<Specific, String> {
    let mut dummies = Vec::new();
    for p in &f.params {
        if let Some(d) = dummy(f, p)? {
            dummies.push(d);
        }
    }
    let result = match f.func.ret.as_str() {
        "int" => None,
        "double" => Some("DOUBLE PRECISION".to_string()),
        "MPI_Aint" => Some("INTEGER(KIND=MPI_ADDRESS_KIND)".to_string()),
        r => return Err(format!("{}: no f08 result type for {r}", f.func.name)),
    };
    Ok(Specific { generic: generic.into(), name: format!("{name}_f08"), symbol, dummies, ierror: f.ierror, result, copyable: copyable(f) })
}

/// Every specific procedure of the module, grouped by generic name: the
/// MPI_X and, for the profiling interface, the PMPI_X ones (calling the
/// wrappers' pmpi forms).
fn specifics(funcs: &[Function], t: &FortranTable) -> Result<BTreeMap<String, Vec<Specific>>, String> {
    let mut by_generic = BTreeMap::new();
    for prefix in ["MPI_", "PMPI_"] {
        specifics_with(funcs, t, prefix, &mut by_generic)?;
    }
    Ok(by_generic)
}

fn specifics_with(funcs: &[Function], t: &FortranTable, prefix: &str, by_generic: &mut BTreeMap<String, Vec<Specific>>) -> Result<(), String> {
    let kinds: Vec<(String, String)> =
        t.constants.iter().filter(|c| c.name.ends_with("_KIND")).map(|c| (c.name.clone(), c.value.clone())).collect();
    for f in fortran_functions(funcs, t)? {
        if REMOVED.contains(&f.func.name.as_str()) {
            continue;
        }
        let name = format!("{prefix}{}", f.func.stem());
        let symbol = if returns_address(&f) {
            // The f08-only wrapper, which returns the address.
            large_count_symbol(&format!("{}{}", &prefix[..prefix.len() - 4], f.func.stem()))
        } else {
            format!("{}_", name.to_ascii_lowercase())
        };
        let s = specific_named(&f, &name, &name, symbol)?;
        by_generic.entry(name).or_default().push(s);
    }
    for f in large_count_functions(funcs, t)? {
        let name = format!("{prefix}{}", f.func.stem());
        let base = name.strip_suffix("_c").unwrap().to_string();
        let stem = if prefix == "PMPI_" { format!("P{}", f.func.stem()) } else { f.func.stem().to_string() };
        let s = specific_named(&f, &base, &name, large_count_symbol(&stem))?;
        // MPI 4.1 overloads the generic name with the large-count form; where
        // the two cannot be told apart (MPI_ADDRESS_KIND and MPI_COUNT_KIND
        // are both 8, or only a procedure's interface differs), the form
        // keeps its own name MPI_X_c.
        let same = |a: &Specific| {
            a.dummies.len() == s.dummies.len() && a.dummies.iter().zip(&s.dummies).all(|(x, y)| x.tkr(&kinds) == y.tkr(&kinds))
        };
        match by_generic.get_mut(&base) {
            Some(v) if !v.iter().any(same) => v.push(s),
            _ => {
                let mut s = s;
                s.generic = name.clone();
                by_generic.entry(name).or_default().push(s);
            }
        }
    }
    Ok(())
}

/// Free-form lines of at most 132 characters: long ones are continued at a
/// comma or a space.
pub(crate) fn wrap(out: &mut String, indent: usize, line: &str) {
    let pad = " ".repeat(indent);
    let mut rest = line.to_string();
    let mut first = true;
    while pad.len() + rest.len() + if first { 0 } else { 2 } > 120 {
        let limit = 110usize.saturating_sub(pad.len());
        let cut = rest[..limit].rfind([',', ' ']).map(|i| i + 1).unwrap_or(limit);
        let (head, tail) = rest.split_at(cut);
        let _ = writeln!(out, "{pad}{}{} &", if first { "" } else { "& " }, head.trim_end());
        rest = tail.trim_start().to_string();
        first = false;
    }
    let _ = writeln!(out, "{pad}{}{}", if first { "" } else { "& " }, rest);
}

/// A choice buffer with the count and datatype that follow it: such a
/// buffer may be an array section (MPI_SUBARRAYS_SUPPORTED is .FALSE., as
/// routines whose buffers share counts or take arrays of them refuse one).
#[derive(Clone)]
struct Triple {
    buf: String,
    count: String,
    /// The count's declared type (INTEGER, or of MPI_COUNT_KIND).
    count_ty: String,
    datatype: String,
}

/// The triples of a specific, if every choice buffer of it starts one.
fn section_triples(s: &Specific) -> Option<Vec<Triple>> {
    let d = &s.dummies;
    let mut out = Vec::new();
    for (i, b) in d.iter().enumerate().filter(|(_, b)| b.pass == Pass::Choice) {
        let (c, t) = (d.get(i + 1)?, d.get(i + 2)?);
        let scalar_in = |x: &Dummy| x.pass == Pass::Ref && x.dims.is_empty() && x.intent_in;
        let count_ok = c.ty == "INTEGER" || c.ty == "INTEGER(KIND=MPI_COUNT_KIND)";
        if !(scalar_in(c) && scalar_in(t) && count_ok && t.ty == "TYPE(MPI_Datatype)") {
            return None;
        }
        out.push(Triple { buf: b.name.clone(), count: c.name.clone(), count_ty: c.ty.clone(), datatype: t.name.clone() });
    }
    Some(out)
}

/// The call of a routine whose buffers may be sections: a section goes as
/// its first element, a count of 1 and a datatype that reaches the items
/// in it (freed after the call; the request keeps what it needs).
fn render_sections(out: &mut String, triples: &[Triple], call: &str, routine: &str, code: i32, h: &str) {
    out.push_str("    ierr = MPI_SUCCESS\n");
    for t in triples {
        let _ = writeln!(out, "    {b}_n = {c}\n    {b}_t = {dt}\n    {b}_s = .NOT. IS_CONTIGUOUS({b})", b = t.buf, c = t.count, dt = t.datatype);
        let _ = writeln!(out, "    IF ({b}_s .AND. ierr == MPI_SUCCESS) THEN", b = t.buf);
        wrap(
            out,
            6,
            &format!("CALL f08_section_type({b}, INT({c}, MPI_COUNT_KIND), {dt}, {b}_t, '{routine}', {code}, {h}, ierr)", b = t.buf, c = t.count, dt = t.datatype),
        );
        let _ = writeln!(out, "      {}_n = 1\n    END IF", t.buf);
    }
    out.push_str("    IF (ierr == MPI_SUCCESS) THEN\n");
    wrap(out, 6, call);
    out.push_str("    END IF\n");
    for t in triples {
        let _ = writeln!(out, "    IF ({b}_s .AND. {b}_t%MPI_VAL /= {dt}%MPI_VAL) CALL f08_type_release({b}_t)", b = t.buf, dt = t.datatype);
    }
}

/// The module procedure of one specific.
fn render_specific(out: &mut String, s: &Specific) {
    let mut names: Vec<String> = s.dummies.iter().map(|d| d.name.clone()).collect();
    if s.ierror {
        names.push("ierror".into());
    }
    let head = match &s.result {
        Some(_) => format!("FUNCTION {}({}) RESULT(res)", s.name, names.join(", ")),
        None => format!("SUBROUTINE {}({})", s.name, names.join(", ")),
    };
    wrap(out, 2, &head);
    for d in &s.dummies {
        wrap(out, 4, &d.declaration());
    }
    if s.ierror {
        out.push_str("    INTEGER, OPTIONAL, INTENT(OUT) :: ierror\n");
    }
    if let Some(r) = &s.result {
        let _ = writeln!(out, "    {r} :: res");
    }
    // The wrapper in the old convention.
    let mut cnames: Vec<String> = s.dummies.iter().map(|d| d.name.clone()).collect();
    if s.ierror {
        cnames.push("ierror".into());
    }
    let lens: Vec<String> = s.dummies.iter().filter(|d| d.hidden_len).map(|d| format!("{}_len", d.name)).collect();
    cnames.extend(lens.iter().cloned());
    out.push_str("    INTERFACE\n");
    let chead = match &s.result {
        Some(_) => format!("FUNCTION wrapper({}) BIND(C, NAME='{}') RESULT(res)", cnames.join(", "), s.symbol),
        None => format!("SUBROUTINE wrapper({}) BIND(C, NAME='{}')", cnames.join(", "), s.symbol),
    };
    wrap(out, 6, &chead);
    out.push_str("        IMPORT\n");
    for d in &s.dummies {
        let decl = match d.pass {
            Pass::Choice => format!("TYPE(C_PTR), VALUE :: {}", d.name),
            Pass::Proc => format!("TYPE(C_FUNPTR), VALUE :: {}", d.name),
            Pass::Ref if d.dims.is_empty() => format!("TYPE(*) :: {}", d.name),
            Pass::Ref => format!("TYPE(*) :: {}(*)", d.name),
        };
        let _ = writeln!(out, "        {decl}");
    }
    if s.ierror {
        out.push_str("        INTEGER :: ierror\n");
    }
    for l in &lens {
        let _ = writeln!(out, "        INTEGER(C_SIZE_T), VALUE :: {l}");
    }
    if let Some(r) = &s.result {
        let _ = writeln!(out, "        {r} :: res");
    }
    let _ = writeln!(out, "      END {} wrapper", if s.result.is_some() { "FUNCTION" } else { "SUBROUTINE" });
    out.push_str("    END INTERFACE\n");
    if s.ierror {
        out.push_str("    INTEGER :: ierr\n");
    }
    if s.ierror && !(s.copyable && s.dummies.iter().any(|d| d.pass == Pass::Choice)) {
        for t in section_triples(s).unwrap_or_default() {
            let _ = writeln!(out, "    {} :: {}_n\n    TYPE(MPI_Datatype) :: {}_t\n    LOGICAL :: {}_s", t.count_ty, t.buf, t.buf, t.buf);
        }
    }
    let choices: Vec<&Dummy> = s.dummies.iter().filter(|d| d.pass == Pass::Choice).collect();
    let copy = s.copyable && s.ierror && !choices.is_empty();
    if copy {
        let names: Vec<String> = choices.iter().map(|d| format!("{}_p", d.name)).collect();
        wrap(out, 4, &format!("TYPE(C_PTR) :: {}", names.join(", ")));
        for d in &choices {
            let _ = writeln!(out, "    {0}_p = f08_buffer_in({0})", d.name);
        }
    }
    // A routine that keeps its buffers, each with its own count and
    // datatype, takes sections: locals stand for the three.
    let triples = if copy || !s.ierror { None } else { section_triples(s) };
    let local = |name: &str| -> Option<String> {
        triples.as_ref()?.iter().find_map(|t| {
            if t.count == name {
                Some(format!("{}_n", t.buf))
            } else if t.datatype == name {
                Some(format!("{}_t", t.buf))
            } else {
                None
            }
        })
    };
    let mut args: Vec<String> = s
        .dummies
        .iter()
        .map(|d| match d.pass {
            Pass::Choice if copy => format!("{}_p", d.name),
            Pass::Choice => format!("f08_address({})", d.name),
            Pass::Proc => format!("C_FUNLOC({})", d.name),
            Pass::Ref => local(&d.name).unwrap_or_else(|| d.name.clone()),
        })
        .collect();
    if s.ierror {
        args.push("ierr".into());
    }
    for d in s.dummies.iter().filter(|d| d.hidden_len) {
        args.push(format!("LEN({}, KIND=C_SIZE_T)", d.name));
    }
    let call = match &s.result {
        Some(_) => format!("res = wrapper({})", args.join(", ")),
        None => format!("CALL wrapper({})", args.join(", ")),
    };
    if copy {
        wrap(out, 4, &call);
        for d in &choices {
            let _ = writeln!(out, "    CALL f08_buffer_out({0}, {0}_p, {1})", d.name, if d.intent_in { 0 } else { 1 });
        }
    } else if choices.is_empty() || !s.ierror {
        wrap(out, 4, &call);
    } else {
        // Errors go to the handler of the object the call is about.
        let on = s
            .dummies
            .iter()
            .find(|d| d.intent_in && d.dims.is_empty() && matches!(d.ty.as_str(), "TYPE(MPI_Comm)" | "TYPE(MPI_Win)" | "TYPE(MPI_File)"));
        let (what, h) = match on {
            Some(d) => (&d.ty[9..d.ty.len() - 1], format!("{}%MPI_VAL", d.name)),
            None => ("", "0".into()),
        };
        let code = match what {
            "Comm" => 1,
            "Win" => 2,
            "File" => 3,
            _ => 0,
        };
        let routine = s.generic.to_ascii_uppercase();
        match section_triples(s) {
            Some(triples) => render_sections(out, &triples, &call, &routine, code, &h),
            None => {
                let cond: Vec<String> = choices.iter().map(|d| format!("IS_CONTIGUOUS({})", d.name)).collect();
                wrap(out, 4, &format!("IF ({}) THEN", cond.join(" .AND. ")));
                wrap(out, 6, &call);
                out.push_str("    ELSE\n");
                let _ = writeln!(out, "      CALL f08_noncontiguous('{routine}', {code}, {h}, ierr)");
                out.push_str("    END IF\n");
            }
        }
    }
    if s.ierror {
        out.push_str("    IF (PRESENT(ierror)) ierror = ierr\n");
    }
    let _ = writeln!(out, "  END {} {}", if s.result.is_some() { "FUNCTION" } else { "SUBROUTINE" }, s.name);
}

/// The handle type of each handle constant of mpi.h.in (`MPI_COMM_WORLD` ->
/// `MPI_Comm`), following `#define A B` aliases.
fn handle_constants(template: &str) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for line in template.lines() {
        let Some(rest) = line.trim().strip_prefix("#define ") else { continue };
        let mut it = rest.split_whitespace();
        let (Some(name), Some(expr)) = (it.next(), it.next()) else { continue };
        let cast = expr.trim_start_matches('(');
        if let Some(h) = HANDLE_TYPES.iter().find(|h| cast.starts_with(&format!("{h})"))) {
            out.insert(name.to_string(), h.to_string());
        } else if let Some(h) = out.get(expr).cloned() {
            out.insert(name.to_string(), h);
        }
    }
    out
}

/// The abstract interfaces of the callbacks (MPI 4.1 chapter 19 and the
/// chapters defining each callback): called by reference, as the old
/// bindings' callbacks, except the buffers of a user function (C pointers by
/// value), so libmpifort's trampolines serve both.
const ABSTRACT_INTERFACES: &str = r#"  ABSTRACT INTERFACE
    SUBROUTINE MPI_User_function(invec, inoutvec, len, datatype)
      IMPORT
      TYPE(C_PTR), VALUE :: invec, inoutvec
      INTEGER :: len
      TYPE(MPI_Datatype) :: datatype
    END SUBROUTINE MPI_User_function
    SUBROUTINE MPI_User_function_c(invec, inoutvec, len, datatype)
      IMPORT
      TYPE(C_PTR), VALUE :: invec, inoutvec
      INTEGER(KIND=MPI_COUNT_KIND) :: len
      TYPE(MPI_Datatype) :: datatype
    END SUBROUTINE MPI_User_function_c
    SUBROUTINE MPI_Comm_copy_attr_function(oldcomm, comm_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
      IMPORT
      TYPE(MPI_Comm) :: oldcomm
      INTEGER :: comm_keyval, ierror
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
      LOGICAL :: flag
    END SUBROUTINE MPI_Comm_copy_attr_function
    SUBROUTINE MPI_Comm_delete_attr_function(comm, comm_keyval, attribute_val, extra_state, ierror)
      IMPORT
      TYPE(MPI_Comm) :: comm
      INTEGER :: comm_keyval, ierror
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    END SUBROUTINE MPI_Comm_delete_attr_function
    SUBROUTINE MPI_Type_copy_attr_function(oldtype, type_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
      IMPORT
      TYPE(MPI_Datatype) :: oldtype
      INTEGER :: type_keyval, ierror
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
      LOGICAL :: flag
    END SUBROUTINE MPI_Type_copy_attr_function
    SUBROUTINE MPI_Type_delete_attr_function(datatype, type_keyval, attribute_val, extra_state, ierror)
      IMPORT
      TYPE(MPI_Datatype) :: datatype
      INTEGER :: type_keyval, ierror
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    END SUBROUTINE MPI_Type_delete_attr_function
    SUBROUTINE MPI_Win_copy_attr_function(oldwin, win_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)
      IMPORT
      TYPE(MPI_Win) :: oldwin
      INTEGER :: win_keyval, ierror
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
      LOGICAL :: flag
    END SUBROUTINE MPI_Win_copy_attr_function
    SUBROUTINE MPI_Win_delete_attr_function(win, win_keyval, attribute_val, extra_state, ierror)
      IMPORT
      TYPE(MPI_Win) :: win
      INTEGER :: win_keyval, ierror
      INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    END SUBROUTINE MPI_Win_delete_attr_function
    SUBROUTINE MPI_Comm_errhandler_function(comm, error_code)
      IMPORT
      TYPE(MPI_Comm) :: comm
      INTEGER :: error_code
    END SUBROUTINE MPI_Comm_errhandler_function
    SUBROUTINE MPI_Win_errhandler_function(win, error_code)
      IMPORT
      TYPE(MPI_Win) :: win
      INTEGER :: error_code
    END SUBROUTINE MPI_Win_errhandler_function
    SUBROUTINE MPI_File_errhandler_function(file, error_code)
      IMPORT
      TYPE(MPI_File) :: file
      INTEGER :: error_code
    END SUBROUTINE MPI_File_errhandler_function
    SUBROUTINE MPI_Session_errhandler_function(session, error_code)
      IMPORT
      TYPE(MPI_Session) :: session
      INTEGER :: error_code
    END SUBROUTINE MPI_Session_errhandler_function
    SUBROUTINE MPI_Grequest_query_function(extra_state, status, ierror)
      IMPORT
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
      TYPE(MPI_Status) :: status
      INTEGER :: ierror
    END SUBROUTINE MPI_Grequest_query_function
    SUBROUTINE MPI_Grequest_free_function(extra_state, ierror)
      IMPORT
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
      INTEGER :: ierror
    END SUBROUTINE MPI_Grequest_free_function
    SUBROUTINE MPI_Grequest_cancel_function(extra_state, complete, ierror)
      IMPORT
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
      LOGICAL :: complete
      INTEGER :: ierror
    END SUBROUTINE MPI_Grequest_cancel_function
    SUBROUTINE MPI_Datarep_extent_function(datatype, extent, extra_state, ierror)
      IMPORT
      TYPE(MPI_Datatype) :: datatype
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extent, extra_state
      INTEGER :: ierror
    END SUBROUTINE MPI_Datarep_extent_function
    SUBROUTINE MPI_Datarep_conversion_function(userbuf, datatype, count, filebuf, position, extra_state, ierror)
      IMPORT
      TYPE(C_PTR), VALUE :: userbuf, filebuf
      TYPE(MPI_Datatype) :: datatype
      INTEGER :: count, ierror
      INTEGER(KIND=MPI_OFFSET_KIND) :: position
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
    END SUBROUTINE MPI_Datarep_conversion_function
    SUBROUTINE MPI_Datarep_conversion_function_c(userbuf, datatype, count, filebuf, position, extra_state, ierror)
      IMPORT
      TYPE(C_PTR), VALUE :: userbuf, filebuf
      TYPE(MPI_Datatype) :: datatype
      INTEGER(KIND=MPI_COUNT_KIND) :: count
      INTEGER(KIND=MPI_OFFSET_KIND) :: position
      INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state
      INTEGER :: ierror
    END SUBROUTINE MPI_Datarep_conversion_function_c
  END INTERFACE
"#;

/// The interface of the callback a predefined procedure stands for.
fn callback_interface(name: &str) -> Option<&'static str> {
    Some(match name {
        "MPI_COMM_NULL_COPY_FN" | "MPI_COMM_DUP_FN" => "MPI_Comm_copy_attr_function",
        "MPI_COMM_NULL_DELETE_FN" => "MPI_Comm_delete_attr_function",
        "MPI_TYPE_NULL_COPY_FN" | "MPI_TYPE_DUP_FN" => "MPI_Type_copy_attr_function",
        "MPI_TYPE_NULL_DELETE_FN" => "MPI_Type_delete_attr_function",
        "MPI_WIN_NULL_COPY_FN" | "MPI_WIN_DUP_FN" => "MPI_Win_copy_attr_function",
        "MPI_WIN_NULL_DELETE_FN" => "MPI_Win_delete_attr_function",
        "MPI_CONVERSION_FN_NULL" => "MPI_Datarep_conversion_function",
        "MPI_CONVERSION_FN_NULL_C" => "MPI_Datarep_conversion_function_c",
        _ => return None,
    })
}

/// MPI_SIZEOF: one specific per intrinsic type and kind (gfortran's), each
/// answered by libmpifort's `gridmpi_sizeof_N` (N the size in bytes).
pub fn sizeof_interfaces(optional_ierror: bool) -> String {
    let mut kinds: Vec<(String, String, usize)> = Vec::new();
    for k in [1, 2, 4, 8, 16] {
        kinds.push((format!("INTEGER(KIND={k})"), format!("i{k}"), k));
    }
    for k in [4, 8, 16] {
        kinds.push((format!("REAL(KIND={k})"), format!("r{k}"), k));
        kinds.push((format!("COMPLEX(KIND={k})"), format!("c{k}"), 2 * k));
    }
    for k in [1, 2, 4, 8] {
        kinds.push((format!("LOGICAL(KIND={k})"), format!("l{k}"), k));
    }
    kinds.push(("CHARACTER(LEN=1)".into(), "ch".into(), 1));
    let opt = if optional_ierror { ", OPTIONAL" } else { "" };
    let mut out = String::from("  INTERFACE MPI_SIZEOF\n");
    for (ty, suffix, size) in &kinds {
        let _ = writeln!(out, "    SUBROUTINE MPI_Sizeof_{suffix}(x, size, ierror) BIND(C, NAME='gridmpi_sizeof_{size}')");
        let _ = writeln!(out, "      {ty}, DIMENSION(..) :: x");
        out.push_str("      INTEGER :: size\n");
        let _ = writeln!(out, "      INTEGER{opt} :: ierror");
        let _ = writeln!(out, "    END SUBROUTINE MPI_Sizeof_{suffix}");
    }
    out.push_str("  END INTERFACE MPI_SIZEOF\n");
    out
}

/// The source of the `mpi_f08` module.
pub fn render_mpi_f08_module(template: &str, funcs: &[Function], t: &FortranTable, version: &str) -> Result<String, String> {
    let mut out = String::new();
    out.push_str("! The `mpi_f08` module of GridMPI (MPI 4.1 chapter 19, MPICH ABI).\n");
    let _ = writeln!(out, "! GridMPI {version}. Generated from abi/functions.txt, abi/fortran.txt and");
    out.push_str("! abi/mpi.h.in by crates/abi/src/fortran08.rs; do not edit.\n");
    out.push_str("! MPI_SUBARRAYS_SUPPORTED is .FALSE.: blocking calls copy a non-contiguous\n");
    out.push_str("! buffer in and out; the others (nonblocking, persistent, one-sided) take\n");
    out.push_str("! a section through a datatype where the buffer has its own count and\n");
    out.push_str("! datatype, and refuse one with MPI_ERR_BUFFER elsewhere.\n");
    out.push_str("MODULE MPI_F08\n");
    out.push_str("  USE, INTRINSIC :: ISO_C_BINDING, ONLY: C_PTR, C_FUNPTR, C_SIZE_T, C_FUNLOC, C_NULL_PTR\n");
    out.push_str("  IMPLICIT NONE\n");
    out.push_str("  PRIVATE :: C_PTR, C_FUNPTR, C_SIZE_T, C_FUNLOC, C_NULL_PTR\n\n");

    // Kinds first: the types and interfaces below use them.
    let consts = crate::fortran::fortran_constants(template, t);
    let kinds: Vec<&(String, String, String)> = consts.iter().filter(|(_, n, _)| n.ends_with("_KIND")).collect();
    for (ty, name, value) in &kinds {
        let _ = writeln!(out, "  {ty}, PARAMETER :: {name} = {value}");
    }
    out.push('\n');
    for h in HANDLE_TYPES {
        let _ = writeln!(out, "  TYPE, BIND(C) :: {h}\n    INTEGER :: MPI_VAL\n  END TYPE {h}");
    }
    // The C MPI_Status of the MPICH ABI, field for field.
    out.push_str("  TYPE, BIND(C) :: MPI_Status\n    INTEGER :: count_lo, count_hi_and_cancelled\n");
    out.push_str("    INTEGER :: MPI_SOURCE, MPI_TAG, MPI_ERROR\n  END TYPE MPI_Status\n\n");

    let handles = handle_constants(template);
    for (ty, name, value) in &consts {
        // MPI_SOURCE, MPI_TAG and MPI_ERROR stay: they index an INTEGER
        // status (MPI_Status_f082f's); the type's components of the same
        // names live in its own scope.
        if name.ends_with("_KIND") {
            continue;
        }
        match handles.get(name) {
            Some(h) => wrap(&mut out, 2, &format!("TYPE({h}), PARAMETER :: {name} = {h}({value})")),
            None => wrap(&mut out, 2, &format!("{ty}, PARAMETER :: {name} = {value}")),
        }
    }
    out.push('\n');

    // Sentinels: the old bindings' COMMON blocks, so libmpifort recognises
    // them by address whichever binding passes them.
    for b in &t.commons {
        let mut names = Vec::new();
        for m in &b.members {
            let (ty, dims): (&str, Vec<String>) = if m.dims.first().map(String::as_str) == Some("MPI_STATUS_SIZE") {
                ("TYPE(MPI_Status)", m.dims[1..].to_vec())
            } else if m.character {
                ("CHARACTER(LEN=1)", m.dims.clone())
            } else if m.dims.is_empty() {
                // MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are passed for arrays.
                ("INTEGER", vec!["1".to_string()])
            } else {
                ("INTEGER", m.dims.clone())
            };
            if dims.is_empty() {
                let _ = writeln!(out, "  {ty} :: {}", m.name);
            } else {
                let _ = writeln!(out, "  {ty} :: {}({})", m.name, dims.join(","));
            }
            names.push(m.name.clone());
        }
        let _ = writeln!(out, "  COMMON /{}/ {}", b.name.to_ascii_uppercase(), names.join(", "));
        let _ = writeln!(out, "  SAVE /{}/", b.name.to_ascii_uppercase());
    }
    out.push('\n');
    out.push_str(ABSTRACT_INTERFACES);
    out.push('\n');
    // Predefined callback procedures: libmpifort's, under the old names.
    for (name, _) in &t.callbacks {
        if let Some(i) = callback_interface(name) {
            let _ = writeln!(out, "  PROCEDURE({i}) :: {name}");
        }
    }
    out.push('\n');

    // Comparison of handles.
    out.push_str("  INTERFACE OPERATOR(==)\n");
    for h in HANDLE_TYPES {
        let _ = writeln!(out, "    MODULE PROCEDURE f08_eq_{h}");
    }
    out.push_str("  END INTERFACE\n  INTERFACE OPERATOR(/=)\n");
    for h in HANDLE_TYPES {
        let _ = writeln!(out, "    MODULE PROCEDURE f08_ne_{h}");
    }
    out.push_str("  END INTERFACE\n");
    for h in HANDLE_TYPES {
        let _ = writeln!(out, "  PRIVATE :: f08_eq_{h}, f08_ne_{h}");
    }
    out.push_str(&sizeof_interfaces(true));
    out.push_str("  INTERFACE MPI_F_sync_reg\n    MODULE PROCEDURE MPI_F_sync_reg_f08\n  END INTERFACE\n");
    out.push_str("  PRIVATE :: MPI_F_sync_reg_f08, f08_address, f08_noncontiguous, f08_buffer_in, f08_buffer_out, f08_section_type, f08_type_release\n\n");

    let by_generic = specifics(funcs, t)?;
    for (generic, specs) in &by_generic {
        let _ = writeln!(out, "  INTERFACE {generic}");
        for s in specs {
            let _ = writeln!(out, "    MODULE PROCEDURE {}", s.name);
        }
        let _ = writeln!(out, "  END INTERFACE {generic}");
        for s in specs {
            let _ = writeln!(out, "  PRIVATE :: {}", s.name);
        }
    }

    out.push_str("\nCONTAINS\n\n");
    for h in HANDLE_TYPES {
        let _ = writeln!(
            out,
            "  ELEMENTAL LOGICAL FUNCTION f08_eq_{h}(a, b)\n    TYPE({h}), INTENT(IN) :: a, b\n    f08_eq_{h} = a%MPI_VAL == b%MPI_VAL\n  END FUNCTION f08_eq_{h}"
        );
        let _ = writeln!(
            out,
            "  ELEMENTAL LOGICAL FUNCTION f08_ne_{h}(a, b)\n    TYPE({h}), INTENT(IN) :: a, b\n    f08_ne_{h} = a%MPI_VAL /= b%MPI_VAL\n  END FUNCTION f08_ne_{h}"
        );
    }
    out.push_str(HELPERS);
    for specs in by_generic.values() {
        for s in specs {
            render_specific(&mut out, s);
        }
    }
    out.push_str("END MODULE MPI_F08\n");
    Ok(out)
}

/// Module procedures the generated ones use.
const HELPERS: &str = r#"
  ! The address of a choice buffer's first element (MPI_BOTTOM and
  ! MPI_IN_PLACE included: libmpifort recognises their addresses).
  FUNCTION f08_address(buf) RESULT(p)
    TYPE(*), DIMENSION(..), INTENT(IN) :: buf
    TYPE(C_PTR) :: p
    INTERFACE
      FUNCTION base_address(buf) BIND(C, NAME='gridmpi_f08_base_address') RESULT(p)
        IMPORT
        TYPE(*), DIMENSION(..) :: buf
        TYPE(C_PTR) :: p
      END FUNCTION base_address
    END INTERFACE
    p = base_address(buf)
  END FUNCTION f08_address

  ! A blocking call's buffer: the array itself when contiguous, else a
  ! contiguous copy, written back (unless write_back is 0) and freed by
  ! f08_buffer_out.
  FUNCTION f08_buffer_in(buf) RESULT(p)
    TYPE(*), DIMENSION(..), INTENT(IN) :: buf
    TYPE(C_PTR) :: p
    INTERFACE
      FUNCTION buffer_in(buf) BIND(C, NAME='gridmpi_f08_buffer_in') RESULT(p)
        IMPORT
        TYPE(*), DIMENSION(..) :: buf
        TYPE(C_PTR) :: p
      END FUNCTION buffer_in
    END INTERFACE
    p = buffer_in(buf)
  END FUNCTION f08_buffer_in

  SUBROUTINE f08_buffer_out(buf, p, write_back)
    TYPE(*), DIMENSION(..) :: buf
    TYPE(C_PTR), INTENT(IN) :: p
    INTEGER, INTENT(IN) :: write_back
    INTERFACE
      SUBROUTINE buffer_out(buf, p, write_back) BIND(C, NAME='gridmpi_f08_buffer_out')
        IMPORT
        TYPE(*), DIMENSION(..) :: buf
        TYPE(C_PTR), VALUE :: p
        TYPE(*) :: write_back
      END SUBROUTINE buffer_out
    END INTERFACE
    CALL buffer_out(buf, p, write_back)
  END SUBROUTINE f08_buffer_out

  ! A non-contiguous buffer given to a call that keeps using it after it
  ! returns: no copy would do and the module has MPI_SUBARRAYS_SUPPORTED =
  ! .FALSE., so it is an MPI_ERR_BUFFER error, raised on the object the call
  ! is about (what: 1 communicator, 2 window, 3 file, 0 none: MPI_COMM_SELF).
  SUBROUTINE f08_noncontiguous(routine, what, handle, ierr)
    CHARACTER(LEN=*), INTENT(IN) :: routine
    INTEGER, INTENT(IN) :: what, handle
    INTEGER, INTENT(OUT) :: ierr
    INTERFACE
      SUBROUTINE report(routine, what, handle, ierr, routine_len) BIND(C, NAME='gridmpi_f08_noncontiguous')
        IMPORT
        TYPE(*) :: routine, what, handle, ierr
        INTEGER(C_SIZE_T), VALUE :: routine_len
      END SUBROUTINE report
    END INTERFACE
    CALL report(routine, what, handle, ierr, LEN(routine, KIND=C_SIZE_T))
  END SUBROUTINE f08_noncontiguous

  ! A section given to a call that keeps its buffer: a datatype that
  ! reaches the call's count items in it as if it were contiguous, or the
  ! call's MPI_ERR_BUFFER, raised as by f08_noncontiguous.
  SUBROUTINE f08_section_type(buf, count, datatype, newtype, routine, what, handle, ierr)
    TYPE(*), DIMENSION(..), INTENT(IN) :: buf
    INTEGER(KIND=MPI_COUNT_KIND), INTENT(IN) :: count
    TYPE(MPI_Datatype), INTENT(IN) :: datatype
    TYPE(MPI_Datatype), INTENT(OUT) :: newtype
    CHARACTER(LEN=*), INTENT(IN) :: routine
    INTEGER, INTENT(IN) :: what, handle
    INTEGER, INTENT(OUT) :: ierr
    INTERFACE
      SUBROUTINE section(buf, count, datatype, newtype, routine, what, handle, ierr, routine_len) &
        & BIND(C, NAME='gridmpi_f08_section_type')
        IMPORT
        TYPE(*), DIMENSION(..) :: buf
        TYPE(*) :: count, datatype, newtype, routine, what, handle, ierr
        INTEGER(C_SIZE_T), VALUE :: routine_len
      END SUBROUTINE section
    END INTERFACE
    newtype = datatype
    CALL section(buf, count, datatype, newtype, routine, what, handle, ierr, LEN(routine, KIND=C_SIZE_T))
  END SUBROUTINE f08_section_type

  SUBROUTINE f08_type_release(datatype)
    TYPE(MPI_Datatype), INTENT(INOUT) :: datatype
    INTERFACE
      SUBROUTINE release(datatype) BIND(C, NAME='gridmpi_f08_type_release')
        IMPORT
        TYPE(*) :: datatype
      END SUBROUTINE release
    END INTERFACE
    CALL release(datatype)
  END SUBROUTINE f08_type_release

  ! The buffer is passed to a procedure the compiler cannot see into, so
  ! it must assume the buffer was read and changed (MPI_F_SYNC_REG in MPI 4.1).
  SUBROUTINE MPI_F_sync_reg_f08(buf)
    TYPE(*), DIMENSION(..), ASYNCHRONOUS :: buf
    INTERFACE
      SUBROUTINE sync_reg(buf) BIND(C, NAME='mpi_f_sync_reg_')
        IMPORT
        TYPE(C_PTR), VALUE :: buf
      END SUBROUTINE sync_reg
    END INTERFACE
    CALL sync_reg(f08_address(buf))
  END SUBROUTINE MPI_F_sync_reg_f08

"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fortran::parse_fortran_table;
    use crate::parse_table;

    #[test]
    fn the_module_generates() {
        let funcs = parse_table(include_str!("../../../abi/functions.txt")).unwrap();
        let t = parse_fortran_table(include_str!("../../../abi/fortran.txt")).unwrap();
        let m = render_mpi_f08_module(include_str!("../../../abi/mpi.h.in"), &funcs, &t, "0").unwrap();
        assert!(m.contains("TYPE(MPI_Comm), PARAMETER :: MPI_COMM_WORLD = MPI_Comm(1140850688)"));
        assert!(m.contains("  INTERFACE MPI_Send\n    MODULE PROCEDURE MPI_Send_f08\n    MODULE PROCEDURE MPI_Send_c_f08\n"));
        assert!(m.contains("BIND(C, NAME='gridmpi_f08_send_c')"));
        assert!(m.contains("  INTERFACE PMPI_Send\n    MODULE PROCEDURE PMPI_Send_f08\n    MODULE PROCEDURE PMPI_Send_c_f08\n"));
        assert!(m.contains("BIND(C, NAME='pmpi_send_')") && m.contains("BIND(C, NAME='gridmpi_f08_psend_c')"));
        // Indistinguishable from MPI_Op_create: keeps its own name.
        assert!(m.contains("  INTERFACE MPI_Op_create_c\n"));
        assert!(m.contains("  INTERFACE MPI_Type_get_extent_c\n"));
        assert!(!m.contains("MPI_Keyval_create"), "removed in MPI-3");
        assert!(m.contains("PROCEDURE(MPI_Comm_copy_attr_function) :: MPI_COMM_DUP_FN"));
        assert!(m.contains("TYPE(MPI_Status) :: MPI_STATUSES_IGNORE(1)"));
        for l in m.lines() {
            assert!(l.len() <= 132, "too long for free form: {l}");
        }
    }

    #[test]
    fn dummies() {
        let funcs = parse_table(
            "## X\nint MPI_Y(const void *buf, int ranges[][3], MPI_Comm comm, MPI_Status *array_of_statuses, const char *key, int *flag);\n",
        )
        .unwrap();
        let ff = fortran_functions(&funcs, &FortranTable::default()).unwrap();
        let s = specific_named(&ff[0], "MPI_Y", "MPI_Y", "mpi_y_".into()).unwrap();
        let d: Vec<String> = s.dummies.iter().map(|d| d.declaration()).collect();
        assert_eq!(d[0], "TYPE(*), DIMENSION(..), INTENT(IN), ASYNCHRONOUS :: buf");
        assert_eq!(d[1], "INTEGER, DIMENSION(3,*) :: ranges");
        assert_eq!(d[2], "TYPE(MPI_Comm), INTENT(IN) :: comm");
        assert_eq!(d[3], "TYPE(MPI_Status), DIMENSION(*) :: array_of_statuses");
        assert_eq!(d[4], "CHARACTER(LEN=*), INTENT(IN) :: key");
        assert_eq!(d[5], "LOGICAL :: flag");
        assert!(s.dummies[4].hidden_len);
    }
}
