//! The MPI-5.0 standard ABI: `mpi_abi.h` and the entry points of
//! `libmpi_abi.so.1` (crates/mpiabi), written from `abi/abi5.txt` (the
//! standard's values), `abi/mpi.h.in` (libmpi.so.12's values, by the same
//! names) and `abi/functions.txt` (the functions).
//!
//! libmpi_abi holds no MPI of its own: each `PMPI_X` it exports translates
//! its arguments to libmpi.so.12's (MPICH-ABI) values, calls libmpi's
//! `PMPI_X`, and translates what comes back. How an argument is translated
//! follows from its C type and, for integers, its name ([`conv_of`]):
//!
//! - a handle (`MPI_Comm`, ...): predefined ones by table, the others are
//!   libmpi's 32-bit handle widened to a pointer (so never one of the
//!   standard's small predefined values); `MPI_X *` is copied in and back,
//!   arrays of handles too (their length from [`array_len`]);
//! - `MPI_Status *` and arrays of statuses: field by field, count and
//!   cancelled flag kept in the standard status's `MPI_internal` words;
//! - integers that may carry a constant (ranks, tags, thread levels, error
//!   codes, keyvals, ...) through their class's table, in both directions;
//! - buffers (`MPI_IN_PLACE`, `MPI_BUFFER_AUTOMATIC`), weights
//!   (`MPI_UNWEIGHTED`), `MPI_DISPLACEMENT_CURRENT`;
//! - the returned error code.
//!
//! Functions taking user callbacks, and the functions only the standard
//! ABI has, are written by hand in crates/mpiabi ([`MANUAL`]); the
//! Fortran conversions (`MPI_Fint`, `MPI_F08_status`) are not part of the
//! standard ABI and are left out.

use crate::{c_prototypes, header_int_constants, parse_table, rust_ident, rust_type, Function, Param};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The handle kinds, as `MPI_<Kind>` C types.
pub const HANDLE_KINDS: &[&str] =
    &["Comm", "Datatype", "Errhandler", "File", "Group", "Info", "Message", "Op", "Request", "Session", "Win"];

/// Functions crates/mpiabi writes by hand: their callbacks need
/// trampolines, or a result needs more than a table (attributes whose
/// value is a constant, the constants among a datatype's contents), or
/// (MPI_Get_version) the standard ABI's answer is not libmpi's.
pub const MANUAL: &[&str] = &[
    "MPI_Op_create",
    "MPI_Op_create_c",
    "MPI_Comm_create_errhandler",
    "MPI_File_create_errhandler",
    "MPI_Win_create_errhandler",
    "MPI_Session_create_errhandler",
    "MPI_Comm_create_keyval",
    "MPI_Type_create_keyval",
    "MPI_Win_create_keyval",
    "MPI_Keyval_create",
    "MPI_Grequest_start",
    "MPI_Register_datarep",
    "MPI_Register_datarep_c",
    "MPI_Win_get_attr",
    "MPI_Comm_get_attr",
    "MPI_Attr_get",
    "MPI_Type_get_contents",
    "MPI_Type_get_contents_c",
    "MPI_Get_version",
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Const {
    /// `int`, `bits`, `handle` or `pointer`.
    pub form: String,
    /// The translation class (`-`: none), or for a handle its kind.
    pub class: String,
    pub name: String,
    /// For pointers, the C type.
    pub c_type: String,
    pub value: i64,
}

#[derive(Debug, Default)]
pub struct AbiTable {
    pub consts: Vec<Const>,
    pub aliases: Vec<(String, String)>,
    /// Prototypes of the functions only the standard ABI has.
    pub protos: Vec<Function>,
}

fn parse_value(v: &str) -> Option<i64> {
    let (neg, d) = match v.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, v),
    };
    let x = match d.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => d.parse().ok()?,
    };
    Some(if neg { -x } else { x })
}

/// Parse `abi/abi5.txt`.
pub fn parse_abi_table(text: &str) -> Result<AbiTable, String> {
    let mut t = AbiTable::default();
    let mut protos = String::from("## standard ABI\n");
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let bad = |m: &str| format!("abi5.txt:{}: {m}: {line:?}", i + 1);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(p) = line.strip_prefix("proto ") {
            protos.push_str(p);
            protos.push('\n');
            continue;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["alias", name, other] => t.aliases.push((name.to_string(), other.to_string())),
            [form @ ("int" | "bits" | "handle"), class, name, v] => t.consts.push(Const {
                form: form.to_string(),
                class: class.to_string(),
                name: name.to_string(),
                c_type: String::new(),
                value: parse_value(v).ok_or_else(|| bad("bad value"))?,
            }),
            ["pointer", class, name, ty, v] => t.consts.push(Const {
                form: "pointer".into(),
                class: class.to_string(),
                name: name.to_string(),
                c_type: ty.to_string(),
                value: parse_value(v).ok_or_else(|| bad("bad value"))?,
            }),
            _ => return Err(bad("expected handle, int, bits, pointer, alias or proto")),
        }
    }
    t.protos = parse_table(&protos).map_err(|e| format!("abi5.txt proto: {}", e.message))?;
    for c in &t.consts {
        if c.form == "handle" && !HANDLE_KINDS.contains(&c.class.as_str()) {
            return Err(format!("abi5.txt: {}: unknown handle kind {}", c.name, c.class));
        }
    }
    Ok(t)
}

/// Functions of functions.txt that MPI-3.0 removed: libmpi.so.12 keeps
/// them for old MPICH-ABI binaries, the standard ABI has none of them (a
/// program built with our mpi_abi.h must run on any libmpi_abi.so.1).
const REMOVED: &[&str] = &[
    "MPI_Address",
    "MPI_Errhandler_create",
    "MPI_Errhandler_get",
    "MPI_Errhandler_set",
    "MPI_Type_extent",
    "MPI_Type_hindexed",
    "MPI_Type_hvector",
    "MPI_Type_lb",
    "MPI_Type_struct",
    "MPI_Type_ub",
];

/// Whether the standard ABI has this function of functions.txt: not the
/// removed ones, nor the Fortran handle and status conversions (they
/// depend on MPI_Fint).
fn in_standard_abi(f: &Function) -> bool {
    let fortran = |t: &str| t.contains("MPI_Fint") || t.contains("MPI_F08_status");
    !REMOVED.contains(&f.name.as_str()) && !fortran(&f.ret) && !f.params.iter().any(|p| fortran(&p.c_type))
}

/// The functions of libmpi_abi: functions.txt's (those of the standard ABI)
/// and the table's own.
pub fn abi_functions(funcs: &[Function], table: &AbiTable) -> Vec<Function> {
    let mut out: Vec<Function> = funcs.iter().filter(|f| in_standard_abi(f)).cloned().collect();
    // Weights are pointers here: MPI_UNWEIGHTED is a fixed small address,
    // which compilers warn about when the parameter is declared an array.
    for p in out.iter_mut().flat_map(|f| f.params.iter_mut()) {
        if p.name.ends_with("weights") {
            if let Some(base) = p.c_type.strip_suffix(" []") {
                p.c_type = format!("{base} *");
            }
        }
    }
    out.extend(table.protos.iter().cloned());
    out
}

/// The complete mpi_abi.h.
pub fn render_abi_header(template: &str, table: &AbiTable, funcs: &[Function], version: &str) -> String {
    let mut consts = String::new();
    let mut kind = "";
    for c in &table.consts {
        match c.form.as_str() {
            "handle" => {
                if c.class != kind {
                    kind = &c.class;
                    consts.push('\n');
                }
                let _ = writeln!(consts, "#define {:<30} ((MPI_{})0x{:08x})", c.name, c.class, c.value);
            }
            "pointer" => {
                let _ = writeln!(consts, "#define {:<30} (({}){})", c.name, c.c_type.replace('*', " *").replace("  ", " "), c.value);
            }
            _ if c.name == "MPI_DISPLACEMENT_CURRENT" => {
                let _ = writeln!(consts, "#define {:<30} ((MPI_Offset){})", c.name, c.value);
            }
            _ => {
                let _ = writeln!(consts, "#define {:<30} ({})", c.name, c.value);
            }
        }
    }
    consts.push('\n');
    for (a, b) in &table.aliases {
        let _ = writeln!(consts, "#define {a:<30} {b}");
    }
    template
        .replace("@CONSTANTS@", consts.trim())
        .replace("@PROTOTYPES@", c_prototypes(&abi_functions(funcs, table)).trim())
        .replace("@GRIDMPI_VERSION@", version)
}

/// Rust functions translating each class of value between the standard
/// ABI (`X_in`: from it, `X_out`: to it) and libmpi.so.12, from the table
/// and libmpi's header template. Integer classes translate as permutations
/// (a value one side uses for a constant and the other for nothing maps to
/// the other side's leftover value), so any int crosses and comes back
/// unchanged.
pub fn rust_translation(table: &AbiTable, internal_template: &str) -> Result<String, String> {
    let internal: BTreeMap<String, i64> = header_int_constants(internal_template).into_iter().collect();
    let lookup = |name: &str| internal.get(name).copied().ok_or_else(|| format!("{name}: not in abi/mpi.h.in"));
    let mut out = String::from("// Generated by crates/abi (abi5.rs) from abi/abi5.txt and abi/mpi.h.in. Do not edit.\n");
    // Handles.
    for kind in HANDLE_KINDS {
        let lower = kind.to_lowercase();
        let mut pairs = Vec::new();
        for c in table.consts.iter().filter(|c| c.form == "handle" && c.class == *kind) {
            pairs.push((c.name.clone(), c.value, lookup(&c.name)?));
            let _ = writeln!(out, "pub const ABI_{}: usize = 0x{:x};", c.name.trim_start_matches("MPI_"), c.value);
        }
        let (ity, widen, narrow) = if *kind == "File" {
            // libmpi's MPI_File is already pointer-sized.
            ("usize", "i", "a")
        } else {
            ("c_int", "i as u32 as usize", "a as u32 as c_int")
        };
        let _ = writeln!(out, "\n/// An MPI_{kind} of the standard ABI as libmpi's.\n#[inline]\npub fn {lower}_in(a: usize) -> {ity} {{\n    match a {{");
        for (n, a, i) in &pairs {
            let iv = if *kind == "File" { format!("{}", *i as usize) } else { format!("{}u32 as c_int", *i as u32) };
            let _ = writeln!(out, "        0x{a:x} => {iv}, // {n}");
        }
        let _ = writeln!(out, "        _ => {narrow},\n    }}\n}}");
        let _ = writeln!(out, "\n/// libmpi's MPI_{kind} as the standard ABI's.\n#[inline]\npub fn {lower}_out(i: {ity}) -> usize {{\n    match i {{");
        for (n, a, i) in &pairs {
            let iv = if *kind == "File" { format!("{}", *i as usize) } else { format!("{}", *i as i32) };
            if pairs.iter().take_while(|p| p.0 != *n).any(|p| p.2 == *i) {
                continue; // libmpi gives two names one value (MPI_REQUEST_NULL, MPI_MESSAGE_NULL): one arm
            }
            let _ = writeln!(out, "        {iv} => 0x{a:x}, // {n}");
        }
        let _ = writeln!(out, "        _ => {widen},\n    }}\n}}");
    }
    // Integer classes and bit sets.
    // (form, class) -> (name, the standard's value, libmpi's value)
    type Pairs = Vec<(String, i64, i64)>;
    let mut classes: BTreeMap<(String, String), Pairs> = BTreeMap::new();
    for c in table.consts.iter().filter(|c| (c.form == "int" || c.form == "bits") && c.class != "-") {
        let i = lookup(&c.name)?;
        classes.entry((c.form.clone(), c.class.clone())).or_default().push((c.name.clone(), c.value, i));
    }
    for ((form, class), pairs) in &classes {
        let ty = if class == "disp" { "i64" } else { "c_int" };
        if form == "bits" {
            for (dir, from, to) in [("in", 1, 2), ("out", 2, 1)] {
                let _ = writeln!(out, "\n/// The {class} flags {}.\npub fn {class}_{dir}(v: c_int) -> c_int {{", if dir == "in" { "of the standard ABI as libmpi's" } else { "of libmpi as the standard ABI's" });
                let pick = |p: &(String, i64, i64), k: i32| if k == 1 { p.1 } else { p.2 };
                let all: i64 = pairs.iter().map(|p| pick(p, from)).fold(0, |a, b| a | b);
                let _ = writeln!(out, "    let mut r = v & !{all};");
                for p in pairs {
                    let _ = writeln!(out, "    if v & {} != 0 {{ r |= {}; }} // {}", pick(p, from), pick(p, to), p.0);
                }
                let _ = writeln!(out, "    r\n}}");
            }
            continue;
        }
        // Complete the pairs to a permutation: a value that is a target but
        // not a source goes to a source that is not a target.
        let mut fwd: Vec<(i64, i64, String)> = pairs.iter().map(|p| (p.1, p.2, p.0.clone())).collect();
        let srcs: Vec<i64> = fwd.iter().map(|p| p.0).collect();
        let dsts: Vec<i64> = fwd.iter().map(|p| p.1).collect();
        let dangling: Vec<i64> = dsts.iter().filter(|d| !srcs.contains(d)).copied().collect();
        let free: Vec<i64> = srcs.iter().filter(|s| !dsts.contains(s)).copied().collect();
        for (d, f) in dangling.iter().zip(free.iter()) {
            fwd.push((*d, *f, "(unused)".into()));
        }
        for (dir, rev) in [("in", false), ("out", true)] {
            let _ = writeln!(out, "\n/// A {class} value {}.\n#[inline]\npub fn {class}_{dir}(v: {ty}) -> {ty} {{\n    match v {{", if rev { "of libmpi as the standard ABI's" } else { "of the standard ABI as libmpi's" });
            let mut seen = Vec::new();
            for (a, i, n) in &fwd {
                let (from, to) = if rev { (*i, *a) } else { (*a, *i) };
                if from == to || seen.contains(&from) {
                    continue;
                }
                seen.push(from);
                let _ = writeln!(out, "        {from} => {to}, // {n}");
            }
            let _ = writeln!(out, "        x => x,\n    }}\n}}");
        }
    }
    // Address constants: the standard's values of each class and libmpi's.
    for c in table.consts.iter().filter(|c| c.form == "pointer" && c.class != "-") {
        let _ = writeln!(out, "\npub const ABI_{}: usize = {};", c.name.trim_start_matches("MPI_"), c.value);
        if let Some(i) = internal_pointer(internal_template, &c.name) {
            let _ = writeln!(out, "pub const INT_{}: usize = {}i64 as usize;", c.name.trim_start_matches("MPI_"), i);
        }
    }
    Ok(out)
}

/// The value of `#define NAME ((T *)V)` in libmpi's header template (None
/// for the address constants libmpi defines as variables).
fn internal_pointer(template: &str, name: &str) -> Option<i64> {
    template.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("#define ")?.strip_prefix(name)?;
        let expr = rest.trim().strip_prefix("((")?.strip_suffix(')')?;
        parse_value(expr.rsplit(')').next()?.trim())
    })
}

/// How one argument crosses.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Conv {
    Pass,
    /// A value of a class with `X_in`/`X_out` functions (handle kind in lower
    /// case, integer class, `err`).
    Value(String),
    /// A pointer to one such value, copied in and (unless const) back.
    Ptr(String, bool),
    /// An array of them, with its length expression.
    Array(String, String, bool),
    Status(bool),
    Statuses(String, bool),
    Buffer,
    /// Where a detach call stores the buffer's address (which may be
    /// MPI_BUFFER_AUTOMATIC).
    BufferAddr,
    Weights,
}

/// The class of an integer parameter, from its name.
fn int_class(func: &str, name: &str) -> Option<&'static str> {
    Some(match name {
        "source" | "dest" | "root" | "target_rank" | "remote_leader" | "local_leader" | "rank_source" | "rank_dest"
        | "rank" | "ranks1" | "ranks2" => "rank",
        "tag" | "sendtag" | "recvtag" => "tag",
        "required" | "provided" => "thread",
        "result" => "compare",
        "status" => "topo",
        "typeclass" => "typeclass",
        "combiner" => "combiner",
        "order" => "order",
        "array_of_distribs" => "distribute",
        "array_of_dargs" => "darg",
        "split_type" => "split_type",
        "lock_type" => "lock",
        "assert" => "assert",
        "amode" => "amode",
        "whence" => "seek",
        "keyval" | "comm_keyval" | "type_keyval" | "win_keyval" => "keyval",
        // MPI_Abort's errorcode is the exit status, not an MPI error code.
        "errorcode" if func == "MPI_Abort" => return None,
        "errorcode" | "errorclass" | "error" => "err",
        "verbosity" => "t_verbosity",
        "bind" => "t_bind",
        "scope" => "t_scope",
        "var_class" => "t_pvar_class",
        _ => return None,
    })
}

/// The length of an array argument that needs translating, as a Rust
/// expression over the (standard ABI) arguments.
fn array_len(f: &Function, name: &str) -> Option<String> {
    let has = |n: &str| f.params.iter().any(|p| p.name == n);
    let neighbor = f.name.to_lowercase().contains("neighbor");
    Some(match name {
        "array_of_requests" | "array_of_statuses" if has("count") => "count as isize".into(),
        "array_of_requests" | "array_of_statuses" if has("incount") => "incount as isize".into(),
        "array_of_types" | "array_of_info" => "count as isize".into(),
        "array_of_datatypes" if has("max_datatypes") => "max_datatypes as isize".into(),
        // MPI_T_event_get_info: in, the arrays' length; out, the count.
        "array_of_datatypes" if has("num_elements") => "conv::len_at(num_elements)".into(),
        "ranks1" | "ranks2" => "n as isize".into(),
        "array_of_distribs" | "array_of_dargs" => "ndims as isize".into(),
        "sendtypes" => format!("crate::conv::peers(comm, {neighbor}, true)"),
        "recvtypes" => format!("crate::conv::peers(comm, {neighbor}, false)"),
        _ => return None,
    })
}

fn conv_of(f: &Function, p: &Param) -> Result<Conv, String> {
    let t = p.c_type.trim();
    let is_const = t.starts_with("const ");
    let is_array = t.contains('[');
    let bare = t.trim_start_matches("const ").split('[').next().unwrap().trim();
    let stars = bare.matches('*').count() + usize::from(is_array);
    let base = bare.trim_end_matches(['*', ' ']);
    let need_len = || array_len(f, &p.name).ok_or_else(|| format!("{}: no length known for array {}", f.name, p.name));
    if let Some(kind) = base.strip_prefix("MPI_").filter(|k| HANDLE_KINDS.contains(k)) {
        let class = kind.to_lowercase();
        return Ok(match (stars, is_array) {
            (0, _) => Conv::Value(class),
            (1, false) => Conv::Ptr(class, !is_const),
            (1, true) => Conv::Array(class, need_len()?, !is_const),
            _ => return Err(format!("{}: {t} not supported", f.name)),
        });
    }
    if base == "MPI_Status" {
        // functions.txt writes some arrays of statuses as pointers.
        let array = is_array || p.name == "array_of_statuses";
        return Ok(if array { Conv::Statuses(need_len()?, !is_const) } else { Conv::Status(!is_const) });
    }
    if base == "MPI_T_cb_safety" {
        return Ok(Conv::Value("t_cb_safety".into()));
    }
    if base == "MPI_T_pvar_handle" && stars == 0 {
        return Ok(Conv::Value("pvar_handle".into())); // MPI_T_PVAR_ALL_HANDLES
    }
    if base == "void" && stars == 1 && p.name == "buffer_addr" {
        return Ok(Conv::BufferAddr);
    }
    if base == "MPI_T_source_order" && stars == 1 {
        return Ok(Conv::Ptr("t_source_order".into(), true));
    }
    if base == "int" {
        if matches!(p.name.as_str(), "weights" | "sourceweights" | "destweights") {
            return Ok(Conv::Weights);
        }
        if let Some(class) = int_class(&f.name, &p.name) {
            return Ok(match (stars, is_array) {
                (0, _) => Conv::Value(class.into()),
                (1, false) => Conv::Ptr(class.into(), !is_const),
                (1, true) => Conv::Array(class.into(), need_len()?, !is_const),
                _ => return Err(format!("{}: {t} {} not supported", f.name, p.name)),
            });
        }
        return Ok(Conv::Pass);
    }
    if base == "MPI_Offset" && p.name == "disp" && stars == 0 && f.name == "MPI_File_set_view" {
        return Ok(Conv::Value("disp".into()));
    }
    if base == "void"
        && stars == 1
        && matches!(
            p.name.as_str(),
            "buf" | "sendbuf" | "recvbuf" | "buffer" | "inbuf" | "outbuf" | "inoutbuf" | "origin_addr" | "result_addr" | "compare_addr"
        )
    {
        return Ok(Conv::Buffer);
    }
    if crate::CALLBACK_TYPES.contains(&base) && !base.starts_with("MPI_T_") {
        return Err(format!("{}: callback {base} needs a hand-written wrapper (abi5::MANUAL)", f.name));
    }
    Ok(Conv::Pass)
}

/// The Rust entry points of libmpi_abi: `PMPI_X` translating and calling
/// libmpi's `PMPI_X` (through `crate::real`), and `MPI_X` calling `PMPI_X`.
/// Functions in [`MANUAL`] and the table's own are left to the crate.
pub fn rust_abi_entry_points(funcs: &[Function]) -> Result<String, String> {
    let mut out = String::from("// Generated by crates/abi (abi5.rs) from abi/functions.txt. Do not edit.\n");
    for f in funcs.iter().filter(|f| in_standard_abi(f) && !MANUAL.contains(&f.name.as_str())) {
        let stem = f.stem();
        let mut params = Vec::new();
        let (mut pre, mut args, mut post) = (Vec::new(), Vec::new(), Vec::new());
        for p in &f.params {
            let n = rust_ident(&p.name);
            let ty = rust_type(&p.c_type).map_err(|e| format!("{}: {e}", f.name))?;
            params.push(format!("{n}: {ty}"));
            let t = format!("t_{}", p.name);
            match conv_of(f, p)? {
                Conv::Pass => args.push(n.clone()),
                Conv::Value(c) => args.push(format!("{c}_in({n})")),
                Conv::Ptr(c, back) => {
                    pre.push(format!("let mut {t} = conv::ptr_in({n}, {c}_in);"));
                    args.push(format!("conv::ptr_arg({n}, &mut {t})"));
                    if back {
                        post.push(format!("conv::ptr_out({n}, {t}, {c}_out);"));
                    }
                }
                Conv::Array(c, len, back) => {
                    pre.push(format!("let mut {t} = conv::array_in({n}, {len}, {c}_in);"));
                    args.push(format!("conv::array_arg({n}, &mut {t})"));
                    if back {
                        post.push(format!("conv::array_out({n}, &{t}, {c}_out);"));
                    }
                }
                Conv::Status(back) => {
                    pre.push(format!("let mut {t} = conv::status_in({n});"));
                    args.push(format!("conv::status_arg({n}, &mut {t})"));
                    if back {
                        post.push(format!("conv::status_out({n}, &{t});"));
                    }
                }
                Conv::Statuses(len, back) => {
                    pre.push(format!("let mut {t} = conv::statuses_in({n}, {len});"));
                    args.push(format!("conv::statuses_arg({n}, &mut {t})"));
                    if back {
                        post.push(format!("conv::statuses_out({n}, &{t});"));
                    }
                }
                Conv::Buffer => args.push(format!("conv::buffer_in({n})")),
                Conv::BufferAddr => {
                    args.push(n.clone());
                    post.push(format!("conv::buffer_addr_out({n});"));
                }
                Conv::Weights => args.push(format!("conv::weights_in({n})")),
            }
        }
        let ret = match f.ret.as_str() {
            "void" => String::new(),
            r => format!(" -> {}", rust_type(r)?),
        };
        let call = format!("real::PMPI_{stem}({})", args.join(", "));
        let mut body = String::new();
        for s in &pre {
            let _ = writeln!(body, "    {s}");
        }
        let _ = writeln!(body, "    let rc_ = {call};");
        for s in &post {
            let _ = writeln!(body, "    {s}");
        }
        let _ = writeln!(body, "    {}", if f.ret == "int" { "err_out(rc_)" } else { "rc_" });
        let ps = params.join(", ");
        let names: Vec<String> = f.params.iter().map(|p| rust_ident(&p.name)).collect();
        let _ = writeln!(out, "\n#[no_mangle]\npub unsafe extern \"C\" fn PMPI_{stem}({ps}){ret} {{\n{body}}}");
        let _ = writeln!(out, "#[no_mangle]\npub unsafe extern \"C\" fn MPI_{stem}({ps}){ret} {{ PMPI_{stem}({}) }}", names.join(", "));
    }
    Ok(out)
}

/// libmpi's `PMPI_X` as Rust functions of libmpi's types, each found once
/// in libmpi.so.12 by `crate::real::resolve` (not by the dynamic linker,
/// which would find libmpi_abi's own `PMPI_X` of the same name first).
pub fn rust_real_functions(funcs: &[Function]) -> Result<String, String> {
    let mut out = String::from("// Generated by crates/abi (abi5.rs) from abi/functions.txt. Do not edit.\n");
    for f in funcs {
        let stem = f.stem();
        let mut params = Vec::new();
        let mut tys = Vec::new();
        for p in &f.params {
            let ty = rust_type(&p.c_type).map_err(|e| format!("{}: {e}", f.name))?;
            params.push(format!("{}: {ty}", rust_ident(&p.name)));
            tys.push(ty);
        }
        let ret = match f.ret.as_str() {
            "void" => String::new(),
            r => format!(" -> {}", rust_type(r)?),
        };
        let names: Vec<String> = f.params.iter().map(|p| rust_ident(&p.name)).collect();
        let _ = writeln!(
            out,
            "pub unsafe fn PMPI_{stem}({}){ret} {{\n    static P: AtomicUsize = AtomicUsize::new(0);\n    let f: unsafe extern \"C\" fn({}){ret} = std::mem::transmute(resolve(&P, c\"PMPI_{stem}\"));\n    f({})\n}}",
            params.join(", "),
            tys.join(", "),
            names.join(", ")
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> AbiTable {
        parse_abi_table(include_str!("../../../abi/abi5.txt")).unwrap()
    }

    #[test]
    fn the_table_parses_and_every_translated_name_is_in_mpi_h_in() {
        let t = table();
        assert!(t.consts.iter().any(|c| c.name == "MPI_COMM_WORLD" && c.value == 0x101));
        let rs = rust_translation(&t, include_str!("../../../abi/mpi.h.in")).unwrap();
        assert!(rs.contains("0x101 => 1140850688u32 as c_int, // MPI_COMM_WORLD"), "{rs}");
        assert!(rs.contains("pub const INT_IN_PLACE: usize = -1i64 as usize;"), "{rs}");
    }

    #[test]
    fn rank_constants_translate_as_a_permutation() {
        let rs = rust_translation(&table(), include_str!("../../../abi/mpi.h.in")).unwrap();
        let f = rs.split("pub fn rank_in").nth(1).unwrap().split("x => x").next().unwrap();
        // ANY_SOURCE -1 -> -2, PROC_NULL -3 -> -1, ROOT -4 -> -3, and the
        // standard's unused -2 onto libmpi's unused -4.
        for arm in ["-1 => -2", "-3 => -1", "-4 => -3", "-2 => -4"] {
            assert!(f.contains(arm), "{arm} in {f}");
        }
    }

    #[test]
    fn header_and_entry_points_from_the_real_tables() {
        let t = table();
        let funcs = parse_table(include_str!("../../../abi/functions.txt")).unwrap();
        let h = render_abi_header(include_str!("../../../abi/mpi_abi.h.in"), &t, &funcs, "0");
        assert!(h.contains("#define MPI_COMM_WORLD                 ((MPI_Comm)0x00000101)"), "{h}");
        assert!(h.contains("int MPI_Abi_get_version(int *abi_major, int *abi_minor);"));
        assert!(h.contains("#define MPI_IN_PLACE                   ((void *)1)"));
        assert!(!h.contains("MPI_Comm_f2c") && !h.contains("MPI_Type_struct"));
        assert!(h.contains("const int sources[], const int *sourceweights, int outdegree"), "{h}");
        let rs = rust_abi_entry_points(&funcs).unwrap();
        assert!(rs.contains("pub unsafe extern \"C\" fn PMPI_Recv("), "{rs}");
        let recv = rs.split("fn PMPI_Recv(").nth(1).unwrap().split("\n}").next().unwrap();
        assert!(recv.contains("rank_in(source)") && recv.contains("tag_in(tag)") && recv.contains("conv::status_out(status"), "{recv}");
        assert!(!rs.contains("fn PMPI_Op_create("));
        rust_real_functions(&funcs).unwrap();
    }

    #[test]
    fn arrays_of_handles_know_their_length() {
        let funcs = parse_table(include_str!("../../../abi/functions.txt")).unwrap();
        let rs = rust_abi_entry_points(&funcs).unwrap();
        let w = rs.split("fn PMPI_Waitall(").nth(1).unwrap().split("\n}").next().unwrap();
        assert!(w.contains("conv::array_in(array_of_requests, count as isize, request_in)"), "{w}");
        assert!(w.contains("conv::statuses_in(array_of_statuses, count as isize)"), "{w}");
        let n = rs.split("fn PMPI_Neighbor_alltoallw(").nth(1).unwrap().split("\n}").next().unwrap();
        assert!(n.contains("crate::conv::peers(comm, true, true)"), "{n}");
    }
}
