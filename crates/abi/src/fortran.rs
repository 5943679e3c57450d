//! The Fortran side of the API, generated from the same table as the C side.
//!
//! `abi/fortran.txt` says what a C prototype alone does not: which
//! parameters are LOGICAL, strings, Fortran sentinels, MPI-1 INTEGER
//! addresses, callbacks in their Fortran form, and the constants whose
//! Fortran value or type differs from C. From it and `functions.txt` we
//! generate
//! - the Rust source of libmpifort's wrappers ([`rust_wrappers`]): every
//!   Fortran symbol (`mpi_send_`, `mpi_send__`, `mpi_send`, `MPI_SEND` and
//!   the `pmpi` forms) converting its arguments and calling `MPI_Send`
//!   (`PMPI_Send` for the `pmpi` forms),
//! - `mpif.h` ([`render_mpif_h`]) and the `mpi` module source
//!   ([`render_mpi_module`]): constants from `mpi.h.in`, sentinels in
//!   MPICH's COMMON blocks, and the predefined procedures,
//! - a C stub that defines every C symbol the wrappers use
//!   ([`link_stub_c`]), so libmpifort can be linked against `libmpi.so.12`
//!   before (or without) the real library being built.

use crate::{header_int_constants, rust_type, Function, ParseError, Status};
use std::collections::BTreeMap;
use std::fmt::Write;

/// How one attribute value or callback extra state is seen from Fortran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// INTEGER (MPI-1 attribute functions).
    Int,
    /// INTEGER(KIND=MPI_ADDRESS_KIND).
    Aint,
}

impl Width {
    fn parse(s: &str) -> Option<Width> {
        match s {
            "int" => Some(Width::Int),
            "aint" => Some(Width::Aint),
            _ => None,
        }
    }
    fn rust(self) -> &'static str {
        match self {
            Width::Int => "MPI_Fint",
            Width::Aint => "MPI_Aint",
        }
    }
    fn rt(self) -> &'static str {
        match self {
            Width::Int => "rt::Width::Int",
            Width::Aint => "rt::Width::Aint",
        }
    }
}

/// How a Fortran argument becomes a C argument. See abi/fortran.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Value,
    Pass,
    Choice,
    Status,
    StringIn,
    StringOut,
    Omit,
    Zero,
    Logical,
    LogicalOut,
    Logicals(String),
    LogicalsOut(String),
    IndexOut,
    IndicesOut(String),
    IntAint,
    IntAintOut,
    IntAints(String),
    Keyval,
    AttrIn(Width),
    AttrOut { width: Width, keyval: String, flag: String },
    CopyFn(Width),
    DeleteFn(Width),
    KeyvalExtra(Width),
    GreqQuery,
    GreqFree,
    GreqCancel,
    GreqExtra,
    Weights,
    Errcodes,
    AddressOut,
    StrlenIn(String),
    StrlenInout(String),
    /// An MPI_File: an INTEGER in Fortran (MPI_File_c2f's value), a
    /// pointer in C.
    File,
    /// An `MPI_File *` (open's output, close's in/out).
    FileInout,
}

impl Kind {
    fn parse(s: &str) -> Option<Kind> {
        let (name, arg) = match s.find('(') {
            Some(i) => (&s[..i], Some(s[i + 1..].strip_suffix(')')?)),
            None => (s, None),
        };
        let arg_s = || arg.map(str::to_string);
        Some(match (name, arg) {
            ("value", None) => Kind::Value,
            ("pass", None) => Kind::Pass,
            ("choice", None) => Kind::Choice,
            ("status", None) => Kind::Status,
            ("string_in", None) => Kind::StringIn,
            ("string_out", None) => Kind::StringOut,
            ("omit", None) => Kind::Omit,
            ("zero", None) => Kind::Zero,
            ("logical", None) => Kind::Logical,
            ("logical_out", None) => Kind::LogicalOut,
            ("logicals", Some(_)) => Kind::Logicals(arg_s()?),
            ("logicals_out", Some(_)) => Kind::LogicalsOut(arg_s()?),
            ("index_out", None) => Kind::IndexOut,
            ("indices_out", Some(_)) => Kind::IndicesOut(arg_s()?),
            ("int_aint", None) => Kind::IntAint,
            ("int_aint_out", None) => Kind::IntAintOut,
            ("int_aints", Some(_)) => Kind::IntAints(arg_s()?),
            ("keyval", None) => Kind::Keyval,
            ("attr_in", Some(w)) => Kind::AttrIn(Width::parse(w)?),
            ("attr_out", Some(a)) => {
                let parts: Vec<&str> = a.split(',').map(str::trim).collect();
                if parts.len() != 3 {
                    return None;
                }
                Kind::AttrOut { width: Width::parse(parts[0])?, keyval: parts[1].into(), flag: parts[2].into() }
            }
            ("copy_fn", Some(w)) => Kind::CopyFn(Width::parse(w)?),
            ("delete_fn", Some(w)) => Kind::DeleteFn(Width::parse(w)?),
            ("keyval_extra", Some(w)) => Kind::KeyvalExtra(Width::parse(w)?),
            ("greq_query", None) => Kind::GreqQuery,
            ("greq_free", None) => Kind::GreqFree,
            ("greq_cancel", None) => Kind::GreqCancel,
            ("greq_extra", None) => Kind::GreqExtra,
            ("weights", None) => Kind::Weights,
            ("errcodes", None) => Kind::Errcodes,
            ("address_out", None) => Kind::AddressOut,
            ("strlen_in", Some(_)) => Kind::StrlenIn(arg_s()?),
            ("strlen_inout", Some(_)) => Kind::StrlenInout(arg_s()?),
            _ => return None,
        })
    }
}

/// What a predefined attribute points to in C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrValue {
    Int,
    Aint,
    Address,
}

/// A Fortran-only constant or a C constant with another Fortran type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FConstant {
    pub name: String,
    /// `integer`, `logical` or `integer(KIND_CONSTANT)`.
    pub ty: String,
    pub value: String,
}

/// One member of a sentinel COMMON block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommonMember {
    pub name: String,
    /// Fortran dimensions as written, e.g. `MPI_STATUS_SIZE,1`.
    pub dims: Vec<String>,
    pub character: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommonBlock {
    /// Lower case, as in `COMMON /mpipriv1/` (the symbol is `mpipriv1_`).
    pub name: String,
    pub members: Vec<CommonMember>,
}

/// A predefined procedure such as MPI_COMM_DUP_FN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackForm {
    CopyNull(Width),
    CopyDup(Width),
    DeleteNull(Width),
    ConversionNull,
}

#[derive(Debug, Clone, Default)]
pub struct FortranTable {
    pub c_only: Vec<String>,
    pub no_ierror: Vec<String>,
    pub params: BTreeMap<(String, String), Kind>,
    pub keyvals: Vec<(String, AttrValue)>,
    pub string_max: Vec<String>,
    pub constants: Vec<FConstant>,
    pub constant_types: Vec<(String, String)>,
    pub commons: Vec<CommonBlock>,
    pub callbacks: Vec<(String, CallbackForm)>,
    /// (name, is_function)
    pub c_symbols: Vec<(String, bool)>,
}

impl FortranTable {
    pub fn is_c_only(&self, name: &str) -> bool {
        self.c_only.iter().any(|p| {
            if let Some(suffix) = p.strip_prefix('*') {
                name.ends_with(suffix)
            } else if let Some(prefix) = p.strip_suffix('*') {
                name.starts_with(prefix)
            } else {
                p == name
            }
        })
    }
}

/// Parse abi/fortran.txt.
pub fn parse_fortran_table(text: &str) -> Result<FortranTable, ParseError> {
    let mut t = FortranTable::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let err = |message: String| ParseError { line: i + 1, message: format!("fortran.txt: {message}") };
        let words: Vec<&str> = line.split_whitespace().collect();
        let rest = &words[1..];
        match words[0] {
            "c_only" => t.c_only.extend(rest.iter().map(|s| s.to_string())),
            "no_ierror" => t.no_ierror.extend(rest.iter().map(|s| s.to_string())),
            "param" => {
                let (func, specs) = rest.split_first().ok_or_else(|| err("param needs a function".into()))?;
                for spec in specs {
                    let (p, k) = spec.split_once('=').ok_or_else(|| err(format!("{spec}: expected NAME=KIND")))?;
                    let kind = Kind::parse(k).ok_or_else(|| err(format!("{spec}: unknown kind {k:?}")))?;
                    if t.params.insert((func.to_string(), p.to_string()), kind).is_some() {
                        return Err(err(format!("{func} {p} is given twice")));
                    }
                }
            }
            "keyval" => {
                let [name, w] = rest else { return Err(err("keyval NAME int|aint|address".into())) };
                let v = match *w {
                    "int" => AttrValue::Int,
                    "aint" => AttrValue::Aint,
                    "address" => AttrValue::Address,
                    _ => return Err(err(format!("{w}: expected int, aint or address"))),
                };
                t.keyvals.push((name.to_string(), v));
            }
            "string_max" => t.string_max.extend(rest.iter().map(|s| s.to_string())),
            "constant" => {
                let [name, ty, value] = rest else { return Err(err("constant NAME TYPE VALUE".into())) };
                t.constants.push(FConstant { name: name.to_string(), ty: ty.to_string(), value: value.to_string() });
            }
            "constant_type" => {
                let [name, ty] = rest else { return Err(err("constant_type NAME TYPE".into())) };
                t.constant_types.push((name.to_string(), ty.to_string()));
            }
            "common" => {
                let (block, decls) = rest.split_first().ok_or_else(|| err("common BLOCK DECL...".into()))?;
                let mut members = Vec::new();
                let mut character = false;
                for d in decls {
                    if *d == "character" {
                        character = true;
                        continue;
                    }
                    let (name, dims) = match d.find('(') {
                        Some(i) => {
                            let inner = d[i + 1..].strip_suffix(')').ok_or_else(|| err(format!("{d}: bad dimensions")))?;
                            (&d[..i], inner.split(',').map(|s| s.to_string()).collect())
                        }
                        None => (*d, Vec::new()),
                    };
                    members.push(CommonMember { name: name.to_string(), dims, character });
                    character = false;
                }
                t.commons.push(CommonBlock { name: block.to_lowercase(), members });
            }
            "callback" => {
                let [name, form] = rest else { return Err(err("callback NAME FORM".into())) };
                let f = match Kind::parse(form) {
                    _ if *form == "conversion_null" => CallbackForm::ConversionNull,
                    _ => {
                        let (n, w) = form
                            .split_once('(')
                            .and_then(|(n, w)| Some((n, Width::parse(w.strip_suffix(')')?)?)))
                            .ok_or_else(|| err(format!("{form}: unknown callback form")))?;
                        match n {
                            "copy_null" => CallbackForm::CopyNull(w),
                            "copy_dup" => CallbackForm::CopyDup(w),
                            "delete_null" => CallbackForm::DeleteNull(w),
                            _ => return Err(err(format!("{form}: unknown callback form"))),
                        }
                    }
                };
                t.callbacks.push((name.to_string(), f));
            }
            "c_symbol" => {
                let [name, what] = rest else { return Err(err("c_symbol NAME function|data".into())) };
                t.c_symbols.push((name.to_string(), *what == "function"));
            }
            other => return Err(err(format!("unknown line kind {other:?}"))),
        }
    }
    Ok(t)
}

// ---------------------------------------------------------------------------
// Parameter kinds

/// The kind of one parameter: the table's, else derived from its C type.
/// `None` when neither says (an error unless the function is a stub).
fn default_kind(c_type: &str, name: &str) -> Option<Kind> {
    let t = c_type.trim();
    let is_ptr = t.contains('*') || t.contains('[');
    let base = t
        .trim_start_matches("const ")
        .split(['*', '['])
        .next()
        .unwrap()
        .trim();
    let stars = t.matches('*').count() + t.matches('[').count().min(1);
    if name == "flag" && base == "int" {
        return Some(if is_ptr { Kind::LogicalOut } else { Kind::Logical });
    }
    match base {
        "void" if stars == 1 => Some(Kind::Choice),
        "char" if stars == 1 => Some(if t.starts_with("const") { Kind::StringIn } else { Kind::StringOut }),
        "char" => None,
        "MPI_Status" if stars == 1 => Some(if t.starts_with("const") { Kind::Pass } else { Kind::Status }),
        "MPI_File" => Some(if is_ptr { Kind::FileInout } else { Kind::File }),
        "MPI_User_function" | "MPI_Comm_errhandler_function" | "MPI_Handler_function" | "MPI_File_errhandler_function"
        | "MPI_Win_errhandler_function" | "MPI_Session_errhandler_function" => Some(Kind::Pass),
        b if b.ends_with("_function") || b.ends_with("_function_c") => None,
        "int" | "MPI_Fint" | "MPI_Aint" | "MPI_Count" | "MPI_Offset" | "MPI_F08_status" => {
            Some(if is_ptr { Kind::Pass } else { Kind::Value })
        }
        b if b.starts_with("MPI_") => Some(if is_ptr { Kind::Pass } else { Kind::Value }),
        _ => None,
    }
}

/// One parameter of a Fortran binding, resolved.
#[derive(Debug, Clone)]
pub struct FParam {
    pub name: String,
    pub c_type: String,
    pub kind: Kind,
}

/// A function as Fortran sees it.
#[derive(Debug, Clone)]
pub struct FFunction {
    pub func: Function,
    pub params: Vec<FParam>,
    /// Subroutine with a trailing IERROR.
    pub ierror: bool,
}

impl FFunction {
    /// Whether Fortran calls this as a function (MPI_WTIME, MPI_AINT_ADD).
    pub fn is_function(&self) -> bool {
        self.func.ret != "int"
    }
}

/// The Fortran form of every function of the table that has one.
pub fn fortran_functions(funcs: &[Function], t: &FortranTable) -> Result<Vec<FFunction>, String> {
    let mut out = Vec::new();
    for key in t.params.keys() {
        let Some(f) = funcs.iter().find(|f| f.name == key.0) else {
            return Err(format!("fortran.txt: param for unknown function {}", key.0));
        };
        if !f.params.iter().any(|p| p.name == key.1) {
            return Err(format!("fortran.txt: {} has no parameter {}", key.0, key.1));
        }
    }
    for f in funcs {
        if t.is_c_only(&f.name) {
            continue;
        }
        let stub = matches!(f.status, Status::Unavailable(_)) && f.section.starts_with("unavailable");
        let mut params = Vec::new();
        for p in &f.params {
            let kind = match t.params.get(&(f.name.clone(), p.name.clone())) {
                Some(k) => k.clone(),
                None => match default_kind(&p.c_type, &p.name) {
                    Some(k) => k,
                    None if stub => Kind::Zero,
                    None => {
                        return Err(format!(
                            "{} parameter {} ({}): no Fortran mapping; say how Fortran sees it in abi/fortran.txt",
                            f.name, p.name, p.c_type
                        ))
                    }
                },
            };
            params.push(FParam { name: p.name.clone(), c_type: p.c_type.clone(), kind });
        }
        let ierror = f.ret == "int" && !t.no_ierror.contains(&f.name);
        if f.ret != "int" && !matches!(f.ret.as_str(), "double" | "MPI_Aint") {
            return Err(format!("{}: Fortran cannot return {}; list it under c_only", f.name, f.ret));
        }
        out.push(FFunction { func: f.clone(), params, ierror });
    }
    Ok(out)
}

/// `mpi_send` for `MPI_Send`.
pub fn fortran_lower(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// The four link names of a Fortran procedure: `mpi_send_`, `mpi_send__`,
/// `mpi_send`, `MPI_SEND` (gfortran, g77/f2c, -fno-underscoring, upper-case
/// compilers).
pub fn link_names(name: &str) -> [String; 4] {
    let l = fortran_lower(name);
    [format!("{l}_"), format!("{l}__"), l.clone(), name.to_ascii_uppercase()]
}

fn ident(name: &str) -> String {
    match name {
        "type" | "ref" | "in" | "fn" | "match" | "loop" | "mod" | "move" | "self" | "where" => format!("r#{name}"),
        n => n.to_string(),
    }
}

// ---------------------------------------------------------------------------
// Rust wrappers

struct Gen {
    /// Parameters of the exported functions, `name: type`.
    fparams: Vec<String>,
    /// Names passed from an export to the implementation.
    fargs: Vec<String>,
    hidden: Vec<String>,
    pre: Vec<String>,
    cargs: Vec<String>,
    post: Vec<String>,
}

fn gen_param(f: &FFunction, p: &FParam, g: &mut Gen) -> Result<(), String> {
    let n = ident(&p.name);
    let rty = rust_type(&p.c_type).map_err(|e| format!("{}: {e}", f.func.name))?;
    let local = format!("{}_c", p.name);
    let ok = "r == MPI_SUCCESS";
    let mut fparam = |ty: &str| {
        g.fparams.push(format!("{n}: {ty}"));
        g.fargs.push(n.clone());
    };
    // A length parameter `N` of another parameter is read through its reference.
    let count = |s: &str| -> String {
        if let Some(comm) = s.strip_prefix("cartdim(").and_then(|x| x.strip_suffix(')')) {
            format!("rt::cartdim(*{})", ident(comm))
        } else {
            format!("*{}", ident(s))
        }
    };
    match &p.kind {
        Kind::Value => {
            fparam(&format!("*const {rty}"));
            g.cargs.push(format!("*{n}"));
        }
        Kind::Pass => {
            fparam(&rty);
            g.cargs.push(n.clone());
        }
        Kind::Choice => {
            fparam(&rty);
            g.cargs.push(format!("rt::choice({n} as *const c_void) as {rty}"));
        }
        Kind::Status => {
            fparam("*mut MPI_Status");
            g.cargs.push(format!("rt::status({n})"));
        }
        Kind::StringIn => {
            fparam("*const c_char");
            g.hidden.push(format!("{}_len", p.name));
            g.pre.push(format!("let {local} = rt::FString::input({n}, {}_len);", p.name));
            g.cargs.push(format!("{local}.as_ptr() as {rty}"));
        }
        Kind::StringOut => {
            fparam("*mut c_char");
            g.hidden.push(format!("{}_len", p.name));
            g.pre.push(format!("let mut {local} = rt::FString::output({}_len);", p.name));
            g.cargs.push(format!("{local}.as_mut_ptr()"));
            g.post.push(format!("if {ok} {{ {local}.copy_out({n}, {}_len); }}", p.name));
        }
        Kind::Omit => g.cargs.push("std::mem::zeroed()".into()),
        Kind::File => {
            fparam("*const MPI_Fint");
            g.cargs.push(format!("*{n} as u32 as usize as MPI_File"));
        }
        Kind::FileInout => {
            fparam("*mut MPI_Fint");
            g.pre.push(format!("let mut {local}: MPI_File = *{n} as u32 as usize as MPI_File;"));
            g.cargs.push(format!("&mut {local}"));
            g.post.push(format!("if {ok} {{ *{n} = {local} as usize as MPI_Fint; }}"));
        }
        Kind::Zero => {
            fparam("*mut c_void");
            g.cargs.push("std::mem::zeroed()".into());
        }
        Kind::Logical => {
            fparam("*const MPI_Fint");
            g.cargs.push(format!("rt::logical_f2c(*{n})"));
        }
        Kind::LogicalOut => {
            fparam("*mut MPI_Fint");
            g.pre.push(format!("let mut {local}: c_int = 0;"));
            g.cargs.push(format!("&mut {local}"));
            g.post.push(format!("if {ok} {{ *{n} = rt::logical_c2f({local}); }}"));
        }
        Kind::Logicals(len) => {
            fparam("*const MPI_Fint");
            g.pre.push(format!("let {local} = rt::logicals_f2c({n}, {});", count(len)));
            g.cargs.push(format!("{local}.as_ptr() as {rty}"));
        }
        Kind::LogicalsOut(len) => {
            fparam("*mut MPI_Fint");
            g.pre.push(format!("let mut {local} = vec![0 as c_int; rt::len({})];", count(len)));
            g.cargs.push(format!("{local}.as_mut_ptr()"));
            g.post.push(format!("if {ok} {{ rt::logicals_c2f(&{local}, {n}); }}"));
        }
        Kind::IndexOut => {
            fparam(&rty);
            g.cargs.push(n.clone());
            g.post.push(format!("if {ok} {{ rt::index_c2f({n}); }}"));
        }
        Kind::IndicesOut(c) => {
            fparam(&rty);
            g.cargs.push(n.clone());
            g.post.push(format!("if {ok} {{ rt::indices_c2f({n}, *{}); }}", ident(c)));
        }
        Kind::IntAint => {
            fparam("*const MPI_Fint");
            g.cargs.push(format!("*{n} as MPI_Aint"));
        }
        Kind::IntAintOut => {
            fparam("*mut MPI_Fint");
            g.pre.push(format!("let mut {local}: MPI_Aint = 0;"));
            g.cargs.push(format!("&mut {local}"));
            g.post.push(format!("if {ok} {{ *{n} = {local} as MPI_Fint; }}"));
        }
        Kind::IntAints(len) => {
            fparam("*const MPI_Fint");
            g.pre.push(format!("let {local} = rt::ints_to_aints({n}, {});", count(len)));
            g.cargs.push(format!("{local}.as_ptr() as {rty}"));
        }
        Kind::Keyval => {
            fparam("*const c_int");
            g.cargs.push(format!("rt::keyval_f2c(*{n})"));
        }
        Kind::AttrIn(w) => {
            fparam(&format!("*const {}", w.rust()));
            g.cargs.push(format!("*{n} as isize as *mut c_void"));
        }
        Kind::AttrOut { width, keyval, flag } => {
            fparam(&format!("*mut {}", width.rust()));
            g.pre.push(format!("let mut {local}: *mut c_void = std::ptr::null_mut();"));
            g.cargs.push(format!("&mut {local} as *mut *mut c_void as *mut c_void"));
            g.post.push(format!(
                "if {ok} && {flag}_c != 0 {{ *{n} = rt::attr_value(rt::keyval_f2c(*{}), {local}) as {}; }}",
                ident(keyval),
                width.rust()
            ));
        }
        Kind::CopyFn(w) => {
            fparam("*const c_void");
            g.cargs.push(format!("rt::copy_fn_c({n}, {})", w.rt()));
        }
        Kind::DeleteFn(w) => {
            fparam("*const c_void");
            g.cargs.push(format!("rt::delete_fn_c({n}, {})", w.rt()));
        }
        Kind::KeyvalExtra(w) => {
            fparam(&format!("*const {}", w.rust()));
            let fns: Vec<&FParam> = f.params.iter().filter(|q| matches!(q.kind, Kind::CopyFn(_) | Kind::DeleteFn(_))).collect();
            let [copy, delete] = fns.as_slice() else {
                return Err(format!("{}: keyval_extra needs one copy_fn and one delete_fn", f.func.name));
            };
            g.cargs.push(format!(
                "rt::keyval_extra({}, {}, *{n} as MPI_Aint, {})",
                ident(&copy.name),
                ident(&delete.name),
                w.rt()
            ));
        }
        Kind::GreqQuery | Kind::GreqFree | Kind::GreqCancel => {
            fparam("*const c_void");
            let tramp = match p.kind {
                Kind::GreqQuery => "greq_query_trampoline",
                Kind::GreqFree => "greq_free_trampoline",
                _ => "greq_cancel_trampoline",
            };
            g.cargs.push(format!("Some(rt::{tramp})"));
        }
        Kind::GreqExtra => {
            fparam("*const MPI_Aint");
            let find = |k: Kind| f.params.iter().find(|q| q.kind == k).map(|q| ident(&q.name));
            let (Some(q), Some(fr), Some(c)) = (find(Kind::GreqQuery), find(Kind::GreqFree), find(Kind::GreqCancel)) else {
                return Err(format!("{}: greq_extra needs greq_query, greq_free and greq_cancel", f.func.name));
            };
            g.cargs.push(format!("rt::greq_extra({q}, {fr}, {c}, *{n})"));
        }
        Kind::Weights => {
            fparam(&rty);
            g.cargs.push(format!("rt::weights({n} as *const c_int) as {rty}"));
        }
        Kind::Errcodes => {
            fparam(&rty);
            g.cargs.push(format!("rt::errcodes({n} as *const c_int) as {rty}"));
        }
        Kind::AddressOut => {
            fparam("*mut c_void");
            g.pre.push(format!("let mut {local}: *mut c_void = std::ptr::null_mut();"));
            g.cargs.push(format!("&mut {local} as *mut *mut c_void as {rty}"));
        }
        Kind::StrlenIn(s) => {
            fparam("*const c_int");
            g.cargs.push(format!("rt::strlen_in(*{n}, {s}_len)"));
        }
        Kind::StrlenInout(s) => {
            fparam("*mut c_int");
            g.pre.push(format!("let mut {local} = rt::buflen_f2c(*{n}, {s}_len);"));
            g.cargs.push(format!("&mut {local}"));
            g.post.push(format!("if {ok} {{ *{n} = rt::buflen_c2f({local}); }}"));
        }
    }
    Ok(())
}

/// `extern "C"` declarations of the C functions the wrappers call.
fn extern_decls(ff: &[FFunction]) -> Result<String, String> {
    let mut out = String::from("extern \"C\" {\n");
    for f in ff {
        let mut ps: Vec<String> = f
            .func
            .params
            .iter()
            .map(|p| Ok(format!("{}: {}", ident(&p.name), rust_type(&p.c_type)?)))
            .collect::<Result<_, String>>()
            .map_err(|e| format!("{}: {e}", f.func.name))?;
        if f.func.variadic {
            ps.push("...".into());
        }
        let ret = if f.func.ret == "void" { String::new() } else { format!(" -> {}", rust_type(&f.func.ret)?) };
        for prefix in ["MPI_", "PMPI_"] {
            let _ = writeln!(out, "    pub fn {prefix}{}({}){ret};", f.func.stem(), ps.join(", "));
        }
    }
    out.push_str("}\n");
    Ok(out)
}

/// Rust source of libmpifort's wrappers. The including module must have in
/// scope the C types (`c_int`, `MPI_Comm`, `MPI_Status`, callback types...),
/// the constants (`MPI_SUCCESS`) and the runtime helpers as `rt`.
pub fn rust_wrappers(funcs: &[Function], t: &FortranTable) -> Result<String, String> {
    let ff = fortran_functions(funcs, t)?;
    let mut out = String::from("// Generated by crates/abi from abi/functions.txt and abi/fortran.txt. Do not edit.\n\n");
    out.push_str(&extern_decls(&ff)?);
    for f in &ff {
        let mut g = Gen { fparams: vec![], fargs: vec![], hidden: vec![], pre: vec![], cargs: vec![], post: vec![] };
        for p in &f.params {
            gen_param(f, p, &mut g)?;
        }
        if f.ierror {
            g.fparams.push("ierror: *mut MPI_Fint".into());
            g.fargs.push("ierror".into());
        }
        for h in &g.hidden {
            g.fparams.push(format!("{h}: usize"));
            g.fargs.push(h.clone());
        }
        let ret = match f.func.ret.as_str() {
            "int" => String::new(),
            r => format!(" -> {}", rust_type(r)?),
        };
        let stem = f.func.stem();
        let imp = format!("fortran_{}", stem.to_ascii_lowercase());
        let _ = writeln!(out, "\nunsafe fn {imp}(profiling: bool, {}){ret} {{", g.fparams.join(", "));
        for s in &g.pre {
            let _ = writeln!(out, "    {s}");
        }
        let cargs = g.cargs.join(", ");
        let _ = writeln!(out, "    let r = if profiling {{ PMPI_{stem}({cargs}) }} else {{ MPI_{stem}({cargs}) }};");
        for s in &g.post {
            let _ = writeln!(out, "    {s}");
        }
        if f.ierror {
            out.push_str("    rt::set_ierror(ierror, r);\n");
        } else if !f.is_function() {
            out.push_str("    let _ = r;\n");
        } else {
            out.push_str("    r\n");
        }
        out.push_str("}\n");
        for (prefix, profiling) in [("MPI_", false), ("PMPI_", true)] {
            for sym in link_names(&format!("{prefix}{stem}")) {
                let _ = writeln!(
                    out,
                    "#[no_mangle] pub unsafe extern \"C\" fn {sym}({}){ret} {{ {imp}({profiling}, {}) }}",
                    g.fparams.join(", "),
                    g.fargs.join(", ")
                );
            }
        }
    }
    out.push_str(&rust_commons(t));
    out.push_str(&rust_callbacks(t));
    out.push_str(&rust_keyvals(t)?);
    Ok(out)
}

/// The sentinel COMMON blocks as exported statics, and their addresses.
fn rust_commons(t: &FortranTable) -> String {
    let consts: BTreeMap<String, String> = t.constants.iter().map(|c| (c.name.clone(), c.value.clone())).collect();
    let dim = |d: &str| consts.get(d).cloned().unwrap_or_else(|| d.to_string());
    let mut out = String::from("\n// Sentinels: MPICH's COMMON blocks. A program's own block (the executable's\n// definition wins at dynamic link time) is where Fortran passes them from.\n");
    for b in &t.commons {
        let ty = format!("Common_{}", b.name);
        let _ = writeln!(out, "#[repr(C)] pub struct {ty} {{");
        for m in &b.members {
            let elem = if m.character { "u8" } else { "MPI_Fint" };
            let n: usize = m.dims.iter().map(|d| dim(d).parse::<usize>().unwrap_or(1)).product();
            if m.dims.is_empty() {
                let _ = writeln!(out, "    pub {}: {elem},", m.name);
            } else {
                let _ = writeln!(out, "    pub {}: [{elem}; {n}],", m.name);
            }
        }
        out.push_str("}\n");
        let zero: Vec<String> = b
            .members
            .iter()
            .map(|m| {
                let n: usize = m.dims.iter().map(|d| dim(d).parse::<usize>().unwrap_or(1)).product();
                if m.dims.is_empty() {
                    format!("{}: 0", m.name)
                } else {
                    format!("{}: [0; {n}]", m.name)
                }
            })
            .collect();
        let _ = writeln!(out, "#[no_mangle] pub static mut {}_: {ty} = {ty} {{ {} }};", b.name, zero.join(", "));
        for m in &b.members {
            let _ = writeln!(
                out,
                "/// Address of the Fortran `{}`.\n#[allow(dead_code)] #[inline] pub fn addr_{}() -> usize {{ unsafe {{ std::ptr::addr_of!({}_.{}) as usize }} }}",
                m.name, m.name, b.name, m.name
            );
        }
    }
    out
}

/// The predefined procedures (MPI_COMM_DUP_FN...) and their recognition.
fn rust_callbacks(t: &FortranTable) -> String {
    let mut out = String::from("\n// Predefined callback procedures.\n");
    let mut copy_match = String::new();
    let mut delete_match = String::new();
    for (name, form) in &t.callbacks {
        let (params, body) = match form {
            CallbackForm::CopyNull(w) | CallbackForm::CopyDup(w) => {
                let ty = w.rust();
                let dup = matches!(form, CallbackForm::CopyDup(_));
                (
                    format!("oldobj: *const MPI_Fint, keyval: *const MPI_Fint, extra_state: *const {ty}, attribute_val_in: *const {ty}, attribute_val_out: *mut {ty}, flag: *mut MPI_Fint, ierror: *mut MPI_Fint"),
                    format!("rt::predefined_copy({dup}, oldobj, keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror)"),
                )
            }
            CallbackForm::DeleteNull(w) => {
                let ty = w.rust();
                (
                    format!("obj: *const MPI_Fint, keyval: *const MPI_Fint, attribute_val: *const {ty}, extra_state: *const {ty}, ierror: *mut MPI_Fint"),
                    "rt::predefined_delete(obj, keyval, attribute_val, extra_state, ierror)".to_string(),
                )
            }
            CallbackForm::ConversionNull => (
                "userbuf: *mut c_void, datatype: *const MPI_Fint, count: *const MPI_Fint, filebuf: *mut c_void, position: *const MPI_Offset, extra_state: *const MPI_Aint, ierror: *mut MPI_Fint".to_string(),
                "rt::predefined_conversion(userbuf, datatype, count, filebuf, position, extra_state, ierror)".to_string(),
            ),
        };
        let mut syms = Vec::new();
        for prefix_name in [name.clone(), format!("P{name}")] {
            for sym in link_names(&prefix_name) {
                let _ = writeln!(out, "#[no_mangle] pub unsafe extern \"C\" fn {sym}({params}) {{ {body} }}");
                syms.push(sym);
            }
        }
        let cond = syms.iter().map(|s| format!("f == {s} as *const () as usize")).collect::<Vec<_>>().join(" || ");
        match form {
            CallbackForm::CopyNull(_) => {
                let _ = writeln!(copy_match, "    if {cond} {{ return Some(rt::PredefinedCopy::Null); }}");
            }
            CallbackForm::CopyDup(_) => {
                let _ = writeln!(copy_match, "    if {cond} {{ return Some(rt::PredefinedCopy::Dup); }}");
            }
            CallbackForm::DeleteNull(_) => {
                let _ = writeln!(delete_match, "    if {cond} {{ return true; }}");
            }
            CallbackForm::ConversionNull => {}
        }
    }
    let _ = writeln!(
        out,
        "/// Which predefined copy procedure `f` is, if any.\npub fn predefined_copy_kind(f: usize) -> Option<rt::PredefinedCopy> {{\n{copy_match}    None\n}}"
    );
    let _ = writeln!(
        out,
        "/// Whether `f` is a predefined null delete procedure.\npub fn is_predefined_delete(f: usize) -> bool {{\n{delete_match}    false\n}}"
    );
    out
}

/// Predefined attribute keys: (Fortran value, C value, what C points to).
fn rust_keyvals(t: &FortranTable) -> Result<String, String> {
    let mut out = String::from("\n/// Predefined attribute keys: (Fortran key, C key, what the C attribute points to).\npub const PREDEFINED_KEYVALS: &[(c_int, c_int, rt::AttrValue)] = &[\n");
    for (name, v) in &t.keyvals {
        let kind = match v {
            AttrValue::Int => "rt::AttrValue::Int",
            AttrValue::Aint => "rt::AttrValue::Aint",
            AttrValue::Address => "rt::AttrValue::Address",
        };
        let _ = writeln!(out, "    ({name} + 1, {name}, {kind}),");
    }
    out.push_str("];\n");
    Ok(out)
}

// ---------------------------------------------------------------------------
// C link stub

/// C source defining every C symbol the wrappers reference, for linking
/// libmpifort against a stand-in `libmpi.so.12` (the real library provides
/// them at run time). The bodies trap: the stub is never meant to run.
pub fn link_stub_c(funcs: &[Function], t: &FortranTable) -> Result<String, String> {
    let ff = fortran_functions(funcs, t)?;
    let mut out = String::from("/* Generated by crates/abi: link-time stand-in for libmpi.so.12. Never loaded. */\n");
    for f in &ff {
        for prefix in ["MPI_", "PMPI_"] {
            let _ = writeln!(out, "void {prefix}{}(void) {{ __builtin_trap(); }}", f.func.stem());
        }
    }
    for (name, is_fn) in &t.c_symbols {
        if *is_fn {
            let _ = writeln!(out, "void {name}(void) {{ __builtin_trap(); }}");
        } else {
            let _ = writeln!(out, "void *{name} = 0;");
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// mpif.h and the mpi module

/// The Fortran constant declarations, as (type, name, value) in order.
fn fortran_constants(template: &str, t: &FortranTable) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for c in &t.constants {
        out.push((fortran_type(&c.ty), c.name.clone(), c.value.clone()));
    }
    let keyval_names: Vec<&str> = t.keyvals.iter().map(|(n, _)| n.as_str()).collect();
    for (name, v) in header_int_constants(template) {
        if !(name.starts_with("MPI_") || name.starts_with("MPIX_") || name.starts_with("GRIDMPI_COMM_TYPE_")) {
            continue;
        }
        // C-only: the Fortran status indices and size are MPI_SOURCE etc. above.
        if name.starts_with("MPI_F_") || name == "MPI_INCLUDED" || name == "MPI_FILE_DEFINED" {
            continue;
        }
        if out.iter().any(|(_, n, _)| n.eq_ignore_ascii_case(&name)) {
            continue;
        }
        let mut v = v;
        if keyval_names.contains(&name.as_str()) {
            v += 1;
        }
        if t.string_max.contains(&name) {
            v -= 1;
        }
        let ty = match t.constant_types.iter().find(|(n, _)| *n == name) {
            Some((_, ty)) => fortran_type(ty),
            None if v >= i32::MIN as i64 && v <= u32::MAX as i64 => "INTEGER".to_string(),
            None => "INTEGER(KIND=8)".to_string(),
        };
        // Handles above 2^31 are negative INTEGERs, as in C.
        let v = if ty == "INTEGER" && v > i32::MAX as i64 { v as u32 as i32 as i64 } else { v };
        let value = if ty.starts_with("INTEGER(KIND=") && !ty.ends_with("=8)") {
            format!("{v}_{}", ty.trim_start_matches("INTEGER(KIND=").trim_end_matches(')'))
        } else {
            v.to_string()
        };
        out.push((ty, name, value));
    }
    out
}

fn fortran_type(ty: &str) -> String {
    match ty {
        "integer" => "INTEGER".into(),
        "logical" => "LOGICAL".into(),
        t => match t.strip_prefix("integer(").and_then(|k| k.strip_suffix(')')) {
            Some(kind) => format!("INTEGER(KIND={kind})"),
            None => t.to_ascii_uppercase(),
        },
    }
}

/// The declarations shared by mpif.h and the module: one Fortran statement a
/// line, each fitting in fixed form (columns 7-72).
fn fortran_declarations(template: &str, funcs: &[Function], t: &FortranTable) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for (ty, name, value) in fortran_constants(template, t) {
        lines.push(format!("{ty} {name}"));
        lines.push(format!("PARAMETER ({name}={value})"));
    }
    // Sentinels in COMMON blocks.
    for b in &t.commons {
        for m in &b.members {
            let ty = if m.character { "CHARACTER*1" } else { "INTEGER" };
            if m.dims.is_empty() {
                lines.push(format!("{ty} {}", m.name));
            } else {
                lines.push(format!("{ty} {}({})", m.name, m.dims.join(",")));
            }
        }
        let names: Vec<&str> = b.members.iter().map(|m| m.name.as_str()).collect();
        lines.push(format!("COMMON /{}/ {}", b.name.to_ascii_uppercase(), names.join(", ")));
        lines.push(format!("SAVE /{}/", b.name.to_ascii_uppercase()));
    }
    // Predefined procedures and functions.
    for (name, _) in &t.callbacks {
        lines.push(format!("EXTERNAL {name}"));
    }
    for f in funcs.iter().filter(|f| f.ret == "double" && !t.is_c_only(&f.name)) {
        for p in ["MPI_", "PMPI_"] {
            let n = format!("{p}{}", f.stem()).to_ascii_uppercase();
            lines.push(format!("DOUBLE PRECISION {n}"));
            lines.push(format!("EXTERNAL {n}"));
        }
    }
    for l in &lines {
        if l.len() + 6 > 72 {
            return Err(format!("mpif.h line too long for fixed form: {l}"));
        }
    }
    Ok(lines)
}

/// The complete mpif.h: valid in fixed and free source form.
pub fn render_mpif_h(template: &str, funcs: &[Function], t: &FortranTable, version: &str) -> Result<String, String> {
    let mut out = String::new();
    out.push_str("! mpif.h: GridMPI's Fortran definitions (MPICH ABI).\n");
    let _ = writeln!(out, "! GridMPI {version}. Generated from abi/mpi.h.in and");
    out.push_str("! abi/fortran.txt; do not edit. Fixed and free source form.\n");
    for l in fortran_declarations(template, funcs, t)? {
        let _ = writeln!(out, "      {l}");
    }
    Ok(out)
}

/// The source of the `mpi` module: the declarations of mpif.h, and the
/// functions Fortran calls by value (MPI_WTIME, MPI_AINT_ADD...) typed.
pub fn render_mpi_module(template: &str, funcs: &[Function], t: &FortranTable, version: &str) -> Result<String, String> {
    let mut out = String::new();
    out.push_str("! The `mpi` module of GridMPI (MPICH ABI).\n");
    let _ = writeln!(out, "! GridMPI {version}. Generated from abi/mpi.h.in and");
    out.push_str("! abi/fortran.txt; do not edit. Build: FC -c mpi.f90\n");
    out.push_str("      MODULE MPI\n      IMPLICIT NONE\n");
    for l in fortran_declarations(template, funcs, t)? {
        let _ = writeln!(out, "      {l}");
    }
    for f in funcs.iter().filter(|f| f.ret == "MPI_Aint" && !t.is_c_only(&f.name)) {
        for p in ["MPI_", "PMPI_"] {
            let n = format!("{p}{}", f.stem()).to_ascii_uppercase();
            let _ = writeln!(out, "      INTEGER(KIND=MPI_ADDRESS_KIND) {n}\n      EXTERNAL {n}");
        }
    }
    out.push_str("      END MODULE MPI\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_table;

    fn real() -> (Vec<Function>, FortranTable, String) {
        let funcs = parse_table(include_str!("../../../abi/functions.txt")).unwrap();
        let t = parse_fortran_table(include_str!("../../../abi/fortran.txt")).unwrap();
        (funcs, t, include_str!("../../../abi/mpi.h.in").to_string())
    }

    #[test]
    fn kinds_parse() {
        assert_eq!(Kind::parse("logicals(cartdim(comm))"), Some(Kind::Logicals("cartdim(comm)".into())));
        assert_eq!(
            Kind::parse("attr_out(aint,comm_keyval,flag)"),
            Some(Kind::AttrOut { width: Width::Aint, keyval: "comm_keyval".into(), flag: "flag".into() })
        );
        assert_eq!(Kind::parse("nonsense"), None);
        assert_eq!(default_kind("const void *", "buf"), Some(Kind::Choice));
        assert_eq!(default_kind("int *", "flag"), Some(Kind::LogicalOut));
        assert_eq!(default_kind("MPI_Status *", "status"), Some(Kind::Status));
        assert_eq!(default_kind("const MPI_Status *", "status"), Some(Kind::Pass));
        assert_eq!(default_kind("const char *", "key"), Some(Kind::StringIn));
        assert_eq!(default_kind("const char []", "datarep"), Some(Kind::StringIn));
        assert_eq!(default_kind("char *", "name"), Some(Kind::StringOut));
        assert_eq!(default_kind("char ***", "argv"), None);
        assert_eq!(default_kind("int [][3]", "ranges"), Some(Kind::Pass));
        assert_eq!(default_kind("MPI_Comm_copy_attr_function *", "f"), None);
        assert_eq!(default_kind("MPI_File", "fh"), Some(Kind::File));
    }

    #[test]
    fn the_real_tables_generate() {
        let (funcs, t, template) = real();
        let ff = fortran_functions(&funcs, &t).unwrap();
        assert!(ff.len() > 300);
        assert!(!ff.iter().any(|f| f.func.name == "MPI_Comm_c2f"));
        assert!(ff.iter().any(|f| f.func.name == "MPI_Status_f2f08"));
        let rs = rust_wrappers(&funcs, &t).unwrap();
        assert!(rs.contains("pub unsafe extern \"C\" fn mpi_send_(buf: *const c_void"), "send");
        assert!(rs.contains("fn PMPI_SENDRECV("));
        assert!(rs.contains("fn mpi_comm_dup_fn_("));
        let h = render_mpif_h(&template, &funcs, &t, "0").unwrap();
        assert!(h.contains("      PARAMETER (MPI_TAG_UB=1681915906)"), "Fortran keyvals are C's + 1");
        assert!(h.contains("PARAMETER (MPI_MAX_ERROR_STRING=511)"));
        assert!(h.contains("PARAMETER (MPI_STATUS_SIZE=5)"));
        assert!(h.contains("COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE"));
        assert!(h.contains("INTEGER(KIND=MPI_OFFSET_KIND) MPI_DISPLACEMENT_CURRENT"));
        assert!(h.contains("PARAMETER (MPI_DISPLACEMENT_CURRENT=-54278278_MPI_OFFSET_KIND)"));
        // Handles above 2^31 wrap to negative INTEGERs.
        assert!(h.contains("PARAMETER (MPI_FLOAT_INT=-1946157056)"), "{}", h.lines().find(|l| l.contains("MPI_FLOAT_INT=")).unwrap_or(""));
        for l in h.lines() {
            assert!(l.len() <= 72, "too long for fixed form: {l}");
        }
        let m = render_mpi_module(&template, &funcs, &t, "0").unwrap();
        assert!(m.contains("INTEGER(KIND=MPI_ADDRESS_KIND) MPI_AINT_ADD"));
        let stub = link_stub_c(&funcs, &t).unwrap();
        assert!(stub.contains("void PMPI_Send(void)"));
        assert!(stub.contains("void *MPI_UNWEIGHTED = 0;"));
    }

    #[test]
    fn unknown_parameter_types_are_errors_outside_stubs() {
        let funcs = parse_table("## Environment\nint MPI_X(char ***argv);\n").unwrap();
        let t = FortranTable::default();
        let e = fortran_functions(&funcs, &t).unwrap_err();
        assert!(e.contains("MPI_X parameter argv"), "{e}");
        let funcs = parse_table("## unavailable: things\nint MPI_X(char ***argv);\n").unwrap();
        assert_eq!(fortran_functions(&funcs, &t).unwrap()[0].params[0].kind, Kind::Zero);
    }
}
