//! The C API table and what is generated from it.
//!
//! `abi/functions.txt` lists every exported function as a C prototype under
//! `## Section` headers. From it we generate
//! - the prototypes of `mpi.h` (MPI_X and PMPI_X),
//! - the Rust entry points of libmpi: `MPI_X`, which calls `PMPI_X` (the
//!   profiling interface: a tool may define its own MPI_X and call PMPI_X),
//! - for sections named `unavailable: WHAT` or `pending: WHAT`, both entry
//!   points, returning MPI_ERR_UNSUPPORTED_OPERATION with a clear message,
//! - integer constants of `mpi.h.in` as Rust `pub const`s, so the C header
//!   is the single source of every value.

#![forbid(unsafe_code)]

pub mod abi5;
pub mod fortran;
pub mod fortran08;
pub mod fortran_interfaces;
pub mod shell;

pub use shell::{Binding, Form};

use std::fmt::Write;

/// One parameter of a C prototype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The C type as written, without the name, e.g. `const int *` or `int [][3]`.
    pub c_type: String,
    pub name: String,
}

/// Whether the library implements a function or only exports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Implemented,
    /// Exported; every call fails with MPI_ERR_UNSUPPORTED_OPERATION naming the feature.
    Unavailable(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// `MPI_Send`
    pub name: String,
    pub ret: String,
    pub params: Vec<Param>,
    pub variadic: bool,
    pub section: String,
    pub status: Status,
    /// How its `PMPI_X` is generated (`=> ...` after the prototype); None
    /// when the library writes it by hand (or derives it from a sibling:
    /// see [`shell::resolve`]).
    pub binding: Option<Binding>,
}

impl Function {
    /// `Send` for `MPI_Send`.
    pub fn stem(&self) -> &str {
        self.name.strip_prefix("MPI_").unwrap_or(&self.name)
    }
}

#[derive(Debug)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "functions.txt:{}: {}", self.line, self.message)
    }
}

/// Parse the function table.
pub fn parse_table(text: &str) -> Result<Vec<Function>, ParseError> {
    let mut out = Vec::new();
    let mut section = String::from("(none)");
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        let err = |message: String| ParseError { line: i + 1, message };
        if let Some(s) = line.strip_prefix("## ") {
            section = s.trim().to_string();
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (line, binding) = match line.split_once("=>") {
            Some((proto, b)) => (proto.trim(), Some(Binding::parse(b).map_err(err)?)),
            None => (line, None),
        };
        let line = line.strip_suffix(';').ok_or_else(|| err("prototype must end with ';'".into()))?;
        let open = line.find('(').ok_or_else(|| err("no '('".into()))?;
        let close = line.rfind(')').ok_or_else(|| err("no ')'".into()))?;
        let head = line[..open].trim();
        let (ret, name) = split_type_and_name(head).ok_or_else(|| err(format!("cannot split {head:?}")))?;
        if !name.starts_with("MPI_") {
            return Err(err(format!("{name}: only MPI_ functions belong in the table")));
        }
        let mut params = Vec::new();
        let mut variadic = false;
        let args = line[open + 1..close].trim();
        if args != "void" && !args.is_empty() {
            for a in args.split(',') {
                let a = a.trim();
                if a == "..." {
                    variadic = true;
                    continue;
                }
                params.push(parse_param(a).ok_or_else(|| err(format!("cannot parse parameter {a:?}")))?);
            }
        }
        let status = match section.split_once(':') {
            Some((kind, what)) if kind == "unavailable" || kind == "pending" => {
                Status::Unavailable(what.trim().to_string())
            }
            _ => Status::Implemented,
        };
        if binding.is_some() && status != Status::Implemented {
            return Err(err(format!("{name}: an unavailable function has no binding")));
        }
        out.push(Function { name, ret, params, variadic, section: section.clone(), status, binding });
    }
    let mut names: Vec<&str> = out.iter().map(|f| f.name.as_str()).collect();
    names.sort();
    for w in names.windows(2) {
        if w[0] == w[1] {
            return Err(ParseError { line: 0, message: format!("{} is listed twice", w[0]) });
        }
    }
    Ok(out)
}

/// `const int *foo` -> (`const int *`, `foo`); `int ranges[][3]` -> (`int [][3]`, `ranges`).
fn parse_param(a: &str) -> Option<Param> {
    let (base, dims) = match a.find('[') {
        Some(i) => (&a[..i], a[i..].to_string()),
        None => (a, String::new()),
    };
    let (ty, name) = split_type_and_name(base.trim())?;
    let c_type = if dims.is_empty() { ty } else { format!("{ty} {dims}") };
    Some(Param { c_type, name })
}

/// Split `const char *name` into (`const char *`, `name`).
fn split_type_and_name(s: &str) -> Option<(String, String)> {
    let s = s.trim();
    let name_start = s.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))? + 1;
    let name = &s[name_start..];
    let ty = s[..name_start].trim();
    if name.is_empty() || ty.is_empty() {
        return None;
    }
    // Normalise "int*" / "int *" spacing to "int *".
    let mut t = String::new();
    for part in ty.split_whitespace() {
        if !t.is_empty() && !part.starts_with('*') {
            t.push(' ');
        } else if part.starts_with('*') && !t.ends_with('*') {
            t.push(' ');
        }
        t.push_str(part);
    }
    Some((t, name.to_string()))
}

/// C prototypes for the header: each function as MPI_X and PMPI_X.
pub fn c_prototypes(funcs: &[Function]) -> String {
    let mut out = String::new();
    let mut section = "";
    for f in funcs {
        if f.section != section {
            section = &f.section;
            let _ = writeln!(out, "\n/* {} */", section);
        }
        for prefix in ["MPI_", "PMPI_"] {
            let _ = writeln!(out, "{} {}{}({});", f.ret, prefix, f.stem(), c_params(f));
        }
    }
    out
}

fn c_params(f: &Function) -> String {
    let mut ps: Vec<String> = f
        .params
        .iter()
        .map(|p| match p.c_type.find('[') {
            Some(i) => format!("{} {}{}", p.c_type[..i].trim(), p.name, &p.c_type[i..]),
            None if p.c_type.ends_with('*') => format!("{}{}", p.c_type, p.name),
            None => format!("{} {}", p.c_type, p.name),
        })
        .collect();
    if f.variadic {
        ps.push("...".into());
    }
    if ps.is_empty() {
        "void".into()
    } else {
        ps.join(", ")
    }
}

/// Callback typedefs that are passed as `T *fn` and become `Option<T>` in Rust.
const CALLBACK_TYPES: &[&str] = &[
    "MPI_User_function",
    "MPI_User_function_c",
    "MPI_Comm_copy_attr_function",
    "MPI_Comm_delete_attr_function",
    "MPI_Type_copy_attr_function",
    "MPI_Type_delete_attr_function",
    "MPI_Win_copy_attr_function",
    "MPI_Win_delete_attr_function",
    "MPI_Copy_function",
    "MPI_Delete_function",
    "MPI_Comm_errhandler_function",
    "MPI_File_errhandler_function",
    "MPI_Win_errhandler_function",
    "MPI_Session_errhandler_function",
    "MPI_Handler_function",
    "MPI_Grequest_cancel_function",
    "MPI_Grequest_free_function",
    "MPI_Grequest_query_function",
    "MPI_Datarep_conversion_function",
    "MPI_Datarep_extent_function",
    "MPI_Datarep_conversion_function_c",
    "MPI_T_event_cb_function",
    "MPI_T_event_free_cb_function",
    "MPI_T_event_dropped_cb_function",
];

/// The Rust type for a C parameter type.
pub fn rust_type(c_type: &str) -> Result<String, String> {
    let mut t = c_type.trim().to_string();
    // Arrays: `T []` is `T *`; `T [][3]` is a pointer to `[T; 3]`.
    let mut inner_array: Option<String> = None;
    if let Some(i) = t.find('[') {
        let dims = t[i..].to_string();
        t = t[..i].trim().to_string();
        let rest = dims.strip_prefix("[]").ok_or_else(|| format!("unsupported array {c_type}"))?;
        if !rest.is_empty() {
            let n = rest.trim_start_matches('[').trim_end_matches(']');
            inner_array = Some(n.to_string());
        }
        t.push_str(" *");
    }
    let is_const = t.starts_with("const ");
    let t = t.trim_start_matches("const ").trim();
    let stars = t.chars().filter(|&c| c == '*').count();
    let base = t.trim_end_matches(|c| c == '*' || c == ' ').trim();
    let base_rs = match base {
        "int" => "c_int".to_string(),
        "char" => "c_char".to_string(),
        "double" => "f64".to_string(),
        "void" => "c_void".to_string(),
        b if CALLBACK_TYPES.contains(&b) => {
            if stars != 1 {
                return Err(format!("callback {b} must be passed as a single pointer"));
            }
            return Ok(format!("Option<{b}>"));
        }
        b if b.starts_with("MPI_") => b.to_string(),
        b => return Err(format!("unknown C type {b:?} in {c_type:?}")),
    };
    if stars == 0 {
        if base == "void" {
            return Err("void parameter".into());
        }
        return Ok(base_rs);
    }
    let mut s = match inner_array {
        Some(n) => format!("[{base_rs}; {n}]"),
        None => base_rs,
    };
    for level in 0..stars {
        // `const` binds to the pointee of the outermost... in C it applies to
        // the base type: `const char **` is `*mut *const c_char`.
        let ptr = if level == 0 && is_const { "*const" } else { "*mut" };
        s = format!("{ptr} {s}");
    }
    Ok(s)
}

fn rust_ret(ret: &str) -> Result<String, String> {
    if ret == "void" {
        Ok(String::new())
    } else {
        Ok(format!(" -> {}", rust_type(ret)?))
    }
}

/// Rust source of the library's entry points. The including module must have
/// in scope the types of `mpi.h` (`c_int`, `MPI_Comm`, callback types...), the
/// implemented `PMPI_X` functions, and `unsupported(name: &str, what: &str) -> c_int`.
pub fn rust_entry_points(funcs: &[Function]) -> Result<String, String> {
    let mut out = String::new();
    out.push_str("// Generated by crates/abi from abi/functions.txt. Do not edit.\n");
    for f in funcs {
        let params = rust_params(f)?;
        let args: Vec<String> = f.params.iter().map(|p| rust_ident(&p.name)).collect();
        let ret = rust_ret(&f.ret).map_err(|e| format!("{}: {e}", f.name))?;
        let stem = f.stem();
        match &f.status {
            Status::Implemented => {
                let _ = writeln!(
                    out,
                    "#[no_mangle]\npub unsafe extern \"C\" fn MPI_{stem}({}){ret} {{ PMPI_{stem}({}) }}",
                    params.join(", "),
                    args.join(", ")
                );
            }
            Status::Unavailable(what) => {
                let unused: Vec<String> = f.params.iter().map(|p| format!("_{}", rust_ident(&p.name))).collect();
                let typed: Vec<String> = unused
                    .iter()
                    .zip(&f.params)
                    .map(|(n, p)| format!("{n}: {}", rust_type(&p.c_type).unwrap()))
                    .collect();
                // Functions returning a value rather than an error code report
                // through the error handler and return a zero value.
                let body = if f.ret == "int" {
                    format!("unsupported(\"MPI_{stem}\", {what:?})")
                } else {
                    format!("unsupported(\"MPI_{stem}\", {what:?}); Default::default()")
                };
                for prefix in ["MPI_", "PMPI_"] {
                    let _ = writeln!(
                        out,
                        "#[no_mangle]\npub unsafe extern \"C\" fn {prefix}{stem}({}){ret} {{ {body} }}",
                        typed.join(", "),
                    );
                }
            }
        }
    }
    Ok(out)
}

/// `name: Type` for each parameter of `f`.
fn rust_params(f: &Function) -> Result<Vec<String>, String> {
    f.params
        .iter()
        .map(|p| Ok(format!("{}: {}", rust_ident(&p.name), rust_type(&p.c_type)?)))
        .collect::<Result<_, String>>()
        .map_err(|e| format!("{}: {e}", f.name))
}

fn rust_ident(name: &str) -> String {
    match name {
        "type" | "ref" | "in" | "fn" | "match" | "loop" | "mod" | "move" | "self" | "where" => format!("r#{name}"),
        n => n.to_string(),
    }
}

/// `#define NAME <integer>` or `#define NAME ((Type)0x...)` lines of the
/// header template, as (name, value). Aliases (`#define A B`) resolve.
pub fn header_int_constants(template: &str) -> Vec<(String, i64)> {
    let mut out: Vec<(String, i64)> = Vec::new();
    for line in template.lines() {
        let Some(rest) = line.trim().strip_prefix("#define ") else { continue };
        let mut it = rest.splitn(2, char::is_whitespace);
        let (Some(name), Some(expr)) = (it.next(), it.next()) else { continue };
        if name.contains('(') {
            continue;
        }
        let expr = expr.split("/*").next().unwrap().trim();
        if let Some(v) = parse_int_expr(expr) {
            out.push((name.to_string(), v));
        } else if let Some((_, v)) = out.iter().find(|(n, _)| n == expr).cloned() {
            out.push((name.to_string(), v));
        }
    }
    out
}

fn parse_int_expr(e: &str) -> Option<i64> {
    let mut e = e.trim();
    // Strip one or two layers of parentheses and a leading cast `(Type)`.
    loop {
        if let Some(inner) = e.strip_prefix('(').and_then(|x| x.strip_suffix(')')) {
            if balanced(inner) {
                e = inner.trim();
                continue;
            }
        }
        if e.starts_with('(') {
            if let Some(close) = e.find(')') {
                let cast = &e[1..close];
                if cast.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !cast.is_empty() && !cast.chars().next().unwrap().is_ascii_digit() {
                    e = e[close + 1..].trim();
                    continue;
                }
            }
        }
        break;
    }
    let (neg, digits) = match e.strip_prefix('-') {
        Some(d) => (true, d.trim()),
        None => (false, e),
    };
    let v = if let Some(h) = digits.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else {
        digits.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

/// Rust `pub const` items for the header's integer constants. Handle-typed
/// values become `i32` (wrapping, as in C), the rest `i64` unless they fit in `i32`.
pub fn rust_constants(template: &str) -> String {
    let mut out = String::from("// Generated by crates/abi from abi/mpi.h.in. Do not edit.\n");
    for (name, v) in header_int_constants(template) {
        if name.starts_with("MPICH") || name.starts_with("GRIDMPI_VERSION") || name == "MPI_INCLUDED" || name == "GRIDMPI_MPI_H" {
            continue;
        }
        if v >= i32::MIN as i64 && v <= u32::MAX as i64 {
            let _ = writeln!(out, "pub const {name}: i32 = {}i64 as i32;", v);
        } else {
            let _ = writeln!(out, "pub const {name}: i64 = {v};");
        }
    }
    out
}

/// The complete mpi.h.
pub fn render_header(template: &str, funcs: &[Function], version: &str) -> String {
    template
        .replace("@PROTOTYPES@", c_prototypes(funcs).trim())
        .replace("@GRIDMPI_VERSION@", version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_prototypes() {
        let t = "## P2P\nint MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);\ndouble MPI_Wtime(void);\nint MPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);\nint MPI_Pcontrol(const int level, ...);\n## unavailable: one-sided\nint MPI_Win_free(MPI_Win *win);\n";
        let f = parse_table(t).unwrap();
        assert_eq!(f.len(), 5);
        assert_eq!(f[0].params[0].c_type, "const void *");
        assert_eq!(rust_type(&f[0].params[0].c_type).unwrap(), "*const c_void");
        assert_eq!(f[1].params.len(), 0);
        assert_eq!(rust_type(&f[2].params[2].c_type).unwrap(), "*mut [c_int; 3]");
        assert!(f[3].variadic);
        assert_eq!(f[4].status, Status::Unavailable("one-sided".into()));
        let h = c_prototypes(&f);
        assert!(h.contains("int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup);"), "{h}");
        assert!(h.contains("double MPI_Wtime(void);"));
        assert!(h.contains("int MPI_Pcontrol(const int level, ...);"));
        let rs = rust_entry_points(&f).unwrap();
        assert!(rs.contains("pub unsafe extern \"C\" fn PMPI_Win_free(_win: *mut MPI_Win) -> c_int { unsupported(\"MPI_Win_free\", \"one-sided\") }"), "{rs}");
    }

    #[test]
    fn rust_types() {
        assert_eq!(rust_type("char ***").unwrap(), "*mut *mut *mut c_char");
        assert_eq!(rust_type("const char *").unwrap(), "*const c_char");
        assert_eq!(rust_type("MPI_User_function *").unwrap(), "Option<MPI_User_function>");
        assert_eq!(rust_type("const MPI_Datatype []").unwrap(), "*const MPI_Datatype");
        assert_eq!(rust_type("const int").unwrap(), "c_int");
    }

    #[test]
    fn constants() {
        let c = header_int_constants("#define MPI_INT ((MPI_Datatype)0x4c000405)\n#define MPI_UNDEFINED (-32766)\n#define MPI_LONG_LONG MPI_INT\n#define MPI_BOTTOM ((void *)0)\n#define X 5 /* five */\n");
        assert_eq!(c, vec![("MPI_INT".into(), 0x4c000405), ("MPI_UNDEFINED".into(), -32766), ("MPI_LONG_LONG".into(), 0x4c000405), ("X".into(), 5)]);
    }

    #[test]
    fn the_real_table_parses_and_maps() {
        let text = include_str!("../../../abi/functions.txt");
        let f = parse_table(text).unwrap();
        assert!(f.len() > 300);
        rust_entry_points(&f).unwrap();
    }
}
