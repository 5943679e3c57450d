//! The generated part of the C API shell: `PMPI_X` functions whose body is
//! only argument plumbing, written from `abi/functions.txt`.
//!
//! A prototype may end with a binding, `=> FORM IMPL[(EXTRA, ...)] [-> OUT, ...]`,
//! which says how its `PMPI_X` calls the library's implementation `IMPL` (a
//! function in scope of `crates/mpi/src/shell`):
//!
//! - `call IMPL(EXTRA)`: `IMPL("MPI_X", arg, ..., EXTRA)`; IMPL does the rest
//!   (entering `api`, taking the lock, waiting).
//! - `api IMPL(EXTRA)`: `api("MPI_X", target, || IMPL(arg, ..., EXTRA))`;
//!   IMPL returns `R<()>`, errors go to the handler of the first
//!   argument when it is a communicator, a window, a session or a file,
//!   else of MPI_COMM_SELF.
//! - `alias MPI_Y`: the deprecated name of `MPI_Y`, with the same arguments.
//! - `coll PLAN`: a collective. `MPI_X` starts PLAN's schedule and waits,
//!   `MPI_IX` returns its request, `MPI_X_init` makes a persistent request
//!   (`blocking`, `nonblocking`, `persistent` in `shell/coll.rs`); PLAN gets
//!   the state and the arguments the three forms share.
//!   `coll PLAN | FAST`: `MPI_X` (and `MPI_X_c`) first call
//!   `FAST("MPI_X", arg, ...)`, which returns `Some(code)` when it did the
//!   call itself, `None` to leave it to PLAN (shell/coll/fast.rs).
//! - `get IMPL -> OUT, ...`: a query. The generated body checks that every
//!   OUT pointer is not NULL, calls `IMPL(st, other args, EXTRA)` under the
//!   lock, and stores what it returns (one value, or a tuple in OUT order)
//!   through the OUT pointers. Errors go where `api`'s do. Without OUTs,
//!   IMPL's result is the call's. IMPL must not take the lock again
//!   (the lock is not reentrant): what waits, or reads MPI_INFO_ENV (whose
//!   entries come from the state), is an `api`.
//!
//! `api` may have outputs too: IMPL runs without the lock and returns
//! them, as `get`'s does.
//!
//! An OUT is a parameter name, and says how IMPL's value is stored:
//!
//! - `x`: through the pointer `x` (checked before IMPL runs).
//! - `x[LEN]`: IMPL returns a `Vec`; its first `min(LEN, len)` elements are
//!   copied to the array `x` (checked when one is copied).
//! - `x: str(CAP)` and `x: str(CAP, LEN_OUT)`: IMPL returns a string, copied
//!   into the caller's `CAP` bytes (truncated, NUL-terminated), its length
//!   stored through `LEN_OUT`.
//! - `x?`, first: a flag. IMPL returns an `Option` of the other outputs;
//!   the flag says whether it is `Some`, and only then are they stored.
//!
//! After the outputs, `where KIND, ...` says how an input parameter reaches
//! IMPL (the others are passed with `.into()`):
//!
//! - `x[LEN]`: an array of `LEN` elements (LEN a parameter), as a slice; a
//!   negative LEN is an `MPI_ERR_ARG` naming it, a NULL array one naming `x`.
//! - `x: str`: a C string, as `&str` (NULL is an error naming `x`).
//! - `*x`: the value `x` points to (NULL is an error). With `x` also an
//!   OUT, it is an in-out handle: `MPI_X_free` takes the handle and stores
//!   back what IMPL returns (the null handle).
//!
//! In EXTRA, `..` says where the C arguments go (by default, before EXTRA),
//! `LARGE` stands for whether this is the large-count (`_c`) binding and
//! `NAME` for the function's name (`"MPI_X"`).
//!
//! Every argument is passed with `.into()`, so one implementation serves
//! both C bindings: an `int` count widens to `MPI_Count`, an `int` or
//! `MPI_Count`/`MPI_Aint` array becomes the shell's `Ints`.
//!
//! Siblings need no binding of their own ([`resolve`]): `MPI_X_c` takes the
//! binding of `MPI_X`; with a `coll` binding, `MPI_IX` and `MPI_X_init` (and
//! their `_c` forms) take it in their nonblocking and persistent forms.

use crate::{rust_ident, rust_params, rust_ret, Function, Status};
use std::fmt::Write;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    Call,
    Api,
    Alias,
    Coll,
    Get,
}

/// How IMPL's result reaches an output parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    /// `x`: stored through the pointer.
    Value(String),
    /// `x[LEN]`: a vector, at most LEN elements of it copied.
    Array { name: String, len: String },
    /// `x: str(CAP[, LEN_OUT])`: a string copied into CAP bytes.
    Str { name: String, cap: String, len_out: Option<String> },
    /// `x?`: whether IMPL's `Option` holds the other outputs.
    Flag(String),
}

impl Out {
    pub fn name(&self) -> &str {
        match self {
            Out::Value(n) | Out::Array { name: n, .. } | Out::Str { name: n, .. } | Out::Flag(n) => n,
        }
    }

    fn parse(text: &str) -> Result<Out, String> {
        let t = text.trim();
        if let Some((name, ty)) = t.split_once(':') {
            let ty = ty.trim();
            let inner = ty.strip_prefix("str(").and_then(|r| r.strip_suffix(')')).ok_or_else(|| format!("output {t:?}: expected NAME: str(CAP[, LEN_OUT])"))?;
            let parts = split_top_level(inner);
            let (cap, len_out) = match parts.as_slice() {
                [c] => (c.clone(), None),
                [c, l] => (c.clone(), Some(ident(l)?)),
                _ => return Err(format!("output {t:?}: str takes CAP and an optional LEN_OUT")),
            };
            return Ok(Out::Str { name: ident(name)?, cap, len_out });
        }
        if let Some((name, len)) = t.split_once('[') {
            let len = len.strip_suffix(']').ok_or_else(|| format!("output {t:?}: unclosed '['"))?;
            return Ok(Out::Array { name: ident(name)?, len: len.trim().to_string() });
        }
        if let Some(name) = t.strip_suffix('?') {
            return Ok(Out::Flag(ident(name)?));
        }
        Ok(Out::Value(ident(t)?))
    }
}

/// How an input parameter reaches IMPL (`where KIND, ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum In {
    /// `x[LEN]`: a slice of LEN elements, LEN a parameter.
    Array { name: String, len: String },
    /// `x: str`: a C string as `&str`.
    Str(String),
    /// `*x`: the value the pointer holds.
    Deref(String),
}

impl In {
    pub fn name(&self) -> &str {
        match self {
            In::Array { name, .. } | In::Str(name) | In::Deref(name) => name,
        }
    }

    fn parse(text: &str) -> Result<In, String> {
        let t = text.trim();
        if let Some(name) = t.strip_prefix('*') {
            return Ok(In::Deref(ident(name)?));
        }
        if let Some((name, ty)) = t.split_once(':') {
            if ty.trim() != "str" {
                return Err(format!("input {t:?}: the only typed input is NAME: str"));
            }
            return Ok(In::Str(ident(name)?));
        }
        if let Some((name, len)) = t.split_once('[') {
            let len = len.strip_suffix(']').ok_or_else(|| format!("input {t:?}: unclosed '['"))?;
            return Ok(In::Array { name: ident(name)?, len: ident(len)? });
        }
        Err(format!("input {t:?}: expected NAME[LEN], NAME: str or *NAME"))
    }
}

fn ident(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("{s:?} is not a parameter name"));
    }
    Ok(s.to_string())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub form: Form,
    /// The implementation's name (a Rust path).
    pub imp: String,
    /// Rust expressions passed after the C arguments.
    pub extra: Vec<String>,
    /// A collective's quick road (`coll PLAN | FAST`): its blocking form
    /// calls `FAST(NAME, args)` first, an `Option<c_int>`, and takes the
    /// plan only when that gives None.
    pub fast: Option<String>,
    /// What IMPL returns, stored through these parameters (`-> OUT, ...`).
    pub outs: Vec<Out>,
    /// Inputs passed otherwise than by `.into()` (`where KIND, ...`).
    pub ins: Vec<In>,
}

impl Binding {
    /// Parse what follows `=>` on a table line.
    pub fn parse(text: &str) -> Result<Binding, String> {
        let (text, ins) = match text.split_once(" where ") {
            Some((t, w)) => (t, split_top_level(w).iter().map(|k| In::parse(k)).collect::<Result<Vec<_>, _>>()?),
            None => (text, Vec::new()),
        };
        let (head, outs) = match text.split_once("->") {
            Some((h, o)) => (h.trim(), Some(o)),
            None => (text.trim(), None),
        };
        let (form, rest) = head.split_once(char::is_whitespace).ok_or_else(|| format!("binding {text:?}: expected FORM IMPL"))?;
        let (rest, fast) = match rest.split_once('|') {
            Some((r, f)) => (r, Some(f.trim().to_string())),
            None => (rest, None),
        };
        let rest = rest.trim();
        let (imp, extra) = match rest.find('(') {
            Some(open) => {
                let inner = rest[open + 1..].strip_suffix(')').ok_or_else(|| format!("binding {text:?}: unclosed '('"))?;
                (rest[..open].trim(), split_top_level(inner))
            }
            None => (rest, Vec::new()),
        };
        if imp.is_empty() || !imp.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            return Err(format!("binding {text:?}: bad implementation name {imp:?}"));
        }
        let outs: Vec<Out> = match outs {
            Some(o) => split_top_level(o).iter().map(|o| Out::parse(o)).collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let form = match form {
            "call" => Form::Call,
            "api" => Form::Api,
            "alias" => Form::Alias,
            "coll" => Form::Coll,
            "get" => Form::Get,
            f => return Err(format!("binding {text:?}: unknown form {f:?} (call, api, alias, coll, get)")),
        };
        if outs.iter().skip(1).any(|o| matches!(o, Out::Flag(_))) || matches!(outs.as_slice(), [Out::Flag(_)]) {
            return Err(format!("binding {text:?}: a flag comes first, before what it flags"));
        }
        if (!outs.is_empty() || !ins.is_empty()) && !matches!(form, Form::Get | Form::Api) {
            return Err(format!("binding {text:?}: only get and api have outputs and 'where'"));
        }
        if let Some(f) = &fast {
            if form != Form::Coll || f.is_empty() || !f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                return Err(format!("binding {text:?}: '| FAST' names a collective's quick road"));
            }
        }
        Ok(Binding { form, imp: imp.to_string(), extra, fast, outs, ins })
    }
}

/// Split `a, f(b, c), d` at the commas outside parentheses.
fn split_top_level(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in s.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Which form of a collective a function is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `MPI_X`: start and wait (or whatever `call`/`get` do).
    Plain,
    /// `MPI_IX`: start and return the request.
    Nonblocking,
    /// `MPI_X_init`: a persistent request.
    Persistent,
}

/// A function's generated binding: its own or a sibling's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved<'a> {
    pub binding: &'a Binding,
    pub variant: Variant,
    /// The large-count (`_c`) binding.
    pub large: bool,
}

/// The binding each function's `PMPI_X` is generated from; None for the
/// hand-written ones (and unavailable functions, generated elsewhere).
pub fn resolve(funcs: &[Function]) -> Vec<Option<Resolved<'_>>> {
    let own = |name: &str| funcs.iter().find(|f| f.name == name).and_then(|f| f.binding.as_ref());
    funcs
        .iter()
        .map(|f| {
            if f.status != Status::Implemented {
                return None;
            }
            let (base, large) = match f.name.strip_suffix("_c") {
                Some(b) => (b, true),
                None => (f.name.as_str(), false),
            };
            if let Some(b) = own(&f.name).or_else(|| if large { own(base) } else { None }) {
                return Some(Resolved { binding: b, variant: Variant::Plain, large });
            }
            let coll = |name: &str| own(name).filter(|b| b.form == Form::Coll);
            if let Some(b) = base.strip_suffix("_init").and_then(coll) {
                return Some(Resolved { binding: b, variant: Variant::Persistent, large });
            }
            // MPI_Igather -> MPI_Gather
            let blocking = base.strip_prefix("MPI_I").map(|rest| {
                let mut c = rest.chars();
                c.next().map(|first| format!("MPI_{}{}", first.to_ascii_uppercase(), c.as_str())).unwrap_or_default()
            });
            blocking.as_deref().and_then(coll).map(|b| Resolved { binding: b, variant: Variant::Nonblocking, large })
        })
        .collect()
}

/// Rust source of every generated `PMPI_X`. The including module must have
/// in scope the types of `mpi.h`, the implementations named by the
/// bindings, `api`, `Target`, `state`, `check_ptr` and the collective forms
/// `blocking`, `nonblocking`, `persistent`.
pub fn rust_shell(funcs: &[Function]) -> Result<String, String> {
    let mut out = String::from("// Generated by crates/abi from abi/functions.txt. Do not edit.\n");
    for (f, r) in funcs.iter().zip(resolve(funcs)) {
        let Some(r) = r else { continue };
        let body = body(f, &r).map_err(|e| format!("{}: {e}", f.name))?;
        let params = rust_params(f)?;
        let ret = rust_ret(&f.ret).map_err(|e| format!("{}: {e}", f.name))?;
        let _ = writeln!(out, "#[no_mangle]\npub unsafe extern \"C\" fn P{}({}){ret} {{\n    {body}\n}}", f.name, params.join(", "));
    }
    Ok(out)
}

fn body(f: &Function, r: &Resolved) -> Result<String, String> {
    let b = r.binding;
    let name = &f.name;
    let large = if r.large { "true" } else { "false" };
    let extra: Vec<String> = b.extra.iter().map(|e| e.replace("LARGE", large).replace("NAME", &format!("{name:?}"))).collect();
    for k in &b.ins {
        if !f.params.iter().any(|p| p.name == k.name()) {
            return Err(format!("no parameter {}", k.name()));
        }
    }
    // The C arguments (but `skip`), converted, placed among EXTRA.
    let args = |skip: &[&str]| -> Vec<String> {
        let c = f.params.iter().filter(|p| !skip.contains(&p.name.as_str())).map(|p| match b.ins.iter().find(|k| k.name() == p.name) {
            Some(In::Str(_)) => format!("&{}_in", p.name),
            Some(_) => format!("{}_in", p.name),
            None => format!("{}.into()", rust_ident(&p.name)),
        });
        let mut out = Vec::new();
        if !extra.iter().any(|e| e == "..") {
            out.extend(c);
            out.extend(extra.iter().cloned());
            return out;
        }
        let mut c = Some(c);
        for e in &extra {
            match (e.as_str(), c.take()) {
                ("..", Some(c)) => out.extend(c),
                (_, c2) => {
                    c = c2;
                    out.push(e.clone());
                }
            }
        }
        out
    };
    let target = match f.params.first() {
        Some(p) if p.c_type == "MPI_Comm" => format!("Target::Comm({})", rust_ident(&p.name)),
        Some(p) if p.c_type == "MPI_Win" => format!("Target::Win({})", rust_ident(&p.name)),
        Some(p) if p.c_type == "MPI_Session" => format!("Target::Session({})", rust_ident(&p.name)),
        Some(p) if p.c_type == "MPI_File" => format!("Target::File(file_id({}))", rust_ident(&p.name)),
        _ => "Target::NoComm".into(),
    };
    let has = |n: &str| f.params.iter().any(|p| p.name == n);
    let last_are = |names: &[&str]| {
        let k = f.params.len();
        k >= names.len() && f.params[k - names.len()..].iter().zip(names).all(|(p, n)| p.name == *n)
    };
    Ok(match &b.form {
        Form::Call => {
            let mut a = vec![format!("{name:?}")];
            a.extend(args(&[]));
            format!("{}({})", b.imp, a.join(", "))
        }
        Form::Api if b.outs.is_empty() && b.ins.is_empty() => {
            if f.ret != "int" {
                return Err("api returns an error code".into());
            }
            format!("api({name:?}, {target}, || {}({}))", b.imp, args(&[]).join(", "))
        }
        Form::Api | Form::Get => {
            if f.ret != "int" {
                return Err("api and get return an error code".into());
            }
            let outs = &b.outs;
            let mut skip: Vec<&str> = outs.iter().map(|o| o.name()).collect();
            // An output that is also an input (`*x`, an in-out array) is passed.
            skip.retain(|o| !b.ins.iter().any(|k| k.name() == *o));
            skip.extend(outs.iter().filter_map(|o| match o {
                Out::Str { len_out: Some(l), .. } => Some(l.as_str()),
                _ => None,
            }));
            let mut pre = String::new();
            for o in outs {
                let p = f.params.iter().find(|p| p.name == o.name()).ok_or_else(|| format!("no parameter {}", o.name()))?;
                if !(p.c_type.ends_with('*') || p.c_type.ends_with("[]")) || p.c_type.starts_with("const") {
                    return Err(format!("output {} must be a non-const pointer", o.name()));
                }
                match o {
                    // A new communicator's handle is MPI_COMM_NULL unless the
                    // call succeeds (as MPICH gives it), not what the
                    // program's variable held.
                    Out::Value(n) if b.form == Form::Api && p.c_type.trim() == "MPI_Comm *" && !b.ins.iter().any(|k| k.name() == n) => {
                        pre += &format!("check_ptr({0}, {n:?})?; *{0} = MPI_COMM_NULL; ", rust_ident(n))
                    }
                    Out::Value(n) | Out::Flag(n) => pre += &format!("check_ptr({}, {n:?})?; ", rust_ident(n)),
                    Out::Str { name: n, len_out, .. } => {
                        pre += &format!("check_ptr({}, {n:?})?; ", rust_ident(n));
                        if let Some(l) = len_out {
                            pre += &format!("check_ptr({}, {l:?})?; ", rust_ident(l));
                        }
                    }
                    Out::Array { .. } => {}
                }
            }
            for k in &b.ins {
                let n = k.name();
                pre += &match k {
                    In::Array { len, .. } => format!("let {n}_in = in_array({}, {}, {n:?}, {len:?})?; ", rust_ident(n), rust_ident(len)),
                    In::Str(_) => format!("let {n}_in = in_str({}, {n:?})?; ", rust_ident(n)),
                    In::Deref(_) if matches!(outs.iter().find(|o| o.name() == n), Some(Out::Value(_))) => format!("let {n}_in = *{}; ", rust_ident(n)),
                    In::Deref(_) => format!("check_ptr({}, {n:?})?; let {n}_in = *{}; ", rust_ident(n), rust_ident(n)),
                };
            }
            let call = if b.form == Form::Get {
                let mut a = vec!["st".to_string()];
                a.extend(args(&skip));
                format!("state::with(|st| {}({}))", b.imp, a.join(", "))
            } else {
                format!("{}({})", b.imp, args(&skip).join(", "))
            };
            if outs.is_empty() {
                // No outputs: IMPL's result is the call's.
                format!("api({name:?}, {target}, || {{ {pre}{call} }})")
            } else {
                let (flag, outs) = match outs.split_first() {
                    Some((Out::Flag(n), rest)) => (Some(rust_ident(n)), rest),
                    _ => (None, outs.as_slice()),
                };
                let vs: Vec<String> = (0..outs.len()).map(|i| format!("v{i}")).collect();
                let pat = if outs.len() == 1 { vs[0].clone() } else { format!("({})", vs.join(", ")) };
                let stores: String = outs
                    .iter()
                    .zip(&vs)
                    .map(|(o, v)| match o {
                        Out::Value(n) => format!("*{} = {v}; ", rust_ident(n)),
                        Out::Array { name: n, len } => format!("put_array({}, {len}, &{v}, {n:?})?; ", rust_ident(n)),
                        Out::Str { name: n, cap, len_out } => {
                            let l = len_out.as_deref().map(rust_ident).unwrap_or_else(|| "std::ptr::null_mut()".into());
                            format!("write_cstr({}, ({cap}) as usize, &{v}, {l}); ", rust_ident(n))
                        }
                        Out::Flag(_) => unreachable!("parse keeps a flag first"),
                    })
                    .collect();
                match flag {
                    None => format!("api({name:?}, {target}, || {{ {pre}let {pat} = {call}?; {stores}Ok(()) }})"),
                    Some(flag) => format!(
                        "api({name:?}, {target}, || {{ {pre}let found = {call}?; *{flag} = found.is_some() as c_int; if let Some({pat}) = found {{ {stores}}} Ok(()) }})"
                    ),
                }
            }
        }
        Form::Alias => {
            if !b.imp.starts_with("MPI_") || !b.extra.is_empty() {
                return Err("alias names the MPI function it stands for".into());
            }
            let a: Vec<String> = f.params.iter().map(|p| rust_ident(&p.name)).collect();
            format!("P{}({})", b.imp, a.join(", "))
        }
        Form::Coll => {
            if !has("comm") {
                return Err("a collective needs a 'comm' parameter".into());
            }
            let (call, skip): (String, &[&str]) = match r.variant {
                Variant::Plain => (format!("blocking({name:?}, comm"), &[]),
                Variant::Nonblocking if last_are(&["request"]) => (format!("nonblocking({name:?}, comm, request"), &["request"]),
                Variant::Persistent if last_are(&["info", "request"]) => {
                    (format!("persistent({name:?}, comm, info, request"), &["info", "request"])
                }
                v => return Err(format!("the {v:?} form of a collective must end with its request arguments")),
            };
            let mut a = vec!["st".to_string()];
            a.extend(args(skip));
            let general = format!("{call}, |st| {}({}))", b.imp, a.join(", "));
            match (&b.fast, r.variant) {
                (Some(fast), Variant::Plain) => {
                    let mut a = vec![format!("{name:?}")];
                    a.extend(args(&[]));
                    format!("match {fast}({}) {{ Some(rc) => rc, None => {general} }}", a.join(", "))
                }
                _ => general,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_table;

    const TABLE: &str = "## Collectives
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int root, MPI_Comm comm); => coll plan_gather
int MPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int root, MPI_Comm comm);
int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int root, MPI_Comm comm, MPI_Request *request);
int MPI_Gather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request);
int MPI_Send(const void *buf, int count, MPI_Comm comm); => call blocking_send(SendMode::Standard, LARGE)
int MPI_Send_c(const void *buf, MPI_Count count, MPI_Comm comm);
int MPI_Isend(const void *buf, int count, MPI_Comm comm, MPI_Request *request);
int MPI_Comm_size(MPI_Comm comm, int *size); => get comm_size -> size
int MPI_Topo_test(MPI_Comm comm, int *a, int *b); => get two -> b, a
int MPI_Attr_put(MPI_Comm comm, int keyval, void *val); => api set_attr(Kind::Comm, .., NAME)
int MPI_Keyval_free(int *keyval); => alias MPI_Comm_free_keyval
int MPI_Session_flush_buffer(MPI_Session session); => api session_flush
int MPI_Barrier(MPI_Comm comm); => coll plan_barrier | fast::barrier
int MPI_Ibarrier(MPI_Comm comm, MPI_Request *request);
int MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int coords[]); => get cart_get -> dims[maxdims], coords[maxdims]
int MPI_Dims_create(int nnodes, int ndims, int dims[]); => api dims_create -> dims[ndims] where dims[ndims]
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag); => api info_get -> flag?, value: str(valuelen as usize + 1) where key: str
int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen); => get name -> comm_name: str(MPI_MAX_OBJECT_NAME, resultlen)
int MPI_Group_free(MPI_Group *group); => get group_free -> group where *group
int MPI_Type_commit(MPI_Datatype *datatype); => get type_commit where *datatype
## unavailable: later
int MPI_Win_free(MPI_Win *win);
";

    #[test]
    fn siblings_take_the_binding() {
        let f = parse_table(TABLE).unwrap();
        let r = resolve(&f);
        let v: Vec<Option<(Variant, bool)>> = r.iter().map(|r| r.as_ref().map(|r| (r.variant, r.large))).collect();
        assert_eq!(
            v,
            vec![
                Some((Variant::Plain, false)),
                Some((Variant::Plain, true)),
                Some((Variant::Nonblocking, false)),
                Some((Variant::Persistent, true)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, true)),
                None, // MPI_Isend: a call binding has no nonblocking sibling
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Nonblocking, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                Some((Variant::Plain, false)),
                None,
            ]
        );
    }

    #[test]
    fn bodies() {
        let f = parse_table(TABLE).unwrap();
        let rs = rust_shell(&f).unwrap();
        for want in [
            "blocking(\"MPI_Gather\", comm, |st| plan_gather(st, sendbuf.into(), sendcount.into(), sendtype.into(), root.into(), comm.into()))",
            "nonblocking(\"MPI_Igather\", comm, request, |st| plan_gather(st, sendbuf.into(), sendcount.into(), sendtype.into(), root.into(), comm.into()))",
            "persistent(\"MPI_Gather_init_c\", comm, info, request, |st| plan_gather(st, sendbuf.into(), sendcount.into(), sendtype.into(), root.into(), comm.into()))",
            "blocking_send(\"MPI_Send_c\", buf.into(), count.into(), comm.into(), SendMode::Standard, true)",
            "api(\"MPI_Comm_size\", Target::Comm(comm), || { check_ptr(size, \"size\")?; let v0 = state::with(|st| comm_size(st, comm.into()))?; *size = v0; Ok(()) })",
            "let (v0, v1) = state::with(|st| two(st, comm.into()))?; *b = v0; *a = v1; Ok(())",
            "api(\"MPI_Attr_put\", Target::Comm(comm), || set_attr(Kind::Comm, comm.into(), keyval.into(), val.into(), \"MPI_Attr_put\"))",
            "fn PMPI_Keyval_free(keyval: *mut c_int) -> c_int {\n    PMPI_Comm_free_keyval(keyval)\n}",
            "api(\"MPI_Session_flush_buffer\", Target::Session(session), || session_flush(session.into()))",
            "match fast::barrier(\"MPI_Barrier\", comm.into()) { Some(rc) => rc, None => blocking(\"MPI_Barrier\", comm, |st| plan_barrier(st, comm.into())) }",
            "nonblocking(\"MPI_Ibarrier\", comm, request, |st| plan_barrier(st, comm.into()))",
            // Output arrays: as many as the caller has room for.
            "let (v0, v1) = state::with(|st| cart_get(st, comm.into(), maxdims.into()))?; put_array(dims, maxdims, &v0, \"dims\")?; put_array(coords, maxdims, &v1, \"coords\")?; Ok(())",
            // An in-out array is read, then written.
            "let dims_in = in_array(dims, ndims, \"dims\", \"ndims\")?; let v0 = dims_create(nnodes.into(), ndims.into(), dims_in)?; put_array(dims, ndims, &v0, \"dims\")?;",
            // A flag says whether the value was there; strings both ways.
            "check_ptr(flag, \"flag\")?; check_ptr(value, \"value\")?; let key_in = in_str(key, \"key\")?; let found = info_get(info.into(), &key_in, valuelen.into())?; *flag = found.is_some() as c_int; if let Some(v0) = found { write_cstr(value, (valuelen as usize + 1) as usize, &v0, std::ptr::null_mut()); } Ok(())",
            "check_ptr(comm_name, \"comm_name\")?; check_ptr(resultlen, \"resultlen\")?; let v0 = state::with(|st| name(st, comm.into()))?; write_cstr(comm_name, (MPI_MAX_OBJECT_NAME) as usize, &v0, resultlen);",
            // An in-out handle: read, freed, the null handle stored back.
            "check_ptr(group, \"group\")?; let group_in = *group; let v0 = state::with(|st| group_free(st, group_in))?; *group = v0; Ok(())",
            "check_ptr(datatype, \"datatype\")?; let datatype_in = *datatype; state::with(|st| type_commit(st, datatype_in)) })",
        ] {
            assert!(rs.contains(want), "missing {want}\nin\n{rs}");
        }
        assert!(!rs.contains("PMPI_Win_free") && !rs.contains("PMPI_Isend("));
    }

    #[test]
    fn bad_bindings_are_errors() {
        for bad in ["call", "send x", "call f -> x", "get f -> x?", "api f -> x, y?", "get f where x", "get f -> x: int", "call f where x[n]", "api f where x[n", "call f(a", "call f | g", "coll f |", "coll f | g h"] {
            assert!(Binding::parse(bad).is_err(), "{bad}");
        }
        let t = "## C\nint MPI_Ibarrier(MPI_Comm comm);\nint MPI_Barrier(MPI_Comm comm); => coll plan_barrier\n";
        assert!(rust_shell(&parse_table(t).unwrap()).unwrap_err().contains("request"));
        let t = "## C\nint MPI_Comm_size(MPI_Comm comm, const int *size); => get f -> size\n";
        assert!(rust_shell(&parse_table(t).unwrap()).is_err());
        let t = "## C\nint MPI_Comm_size(MPI_Comm comm, int *size); => get f -> size where nope[size]\n";
        assert!(rust_shell(&parse_table(t).unwrap()).unwrap_err().contains("no parameter nope"));
    }

    #[test]
    fn the_real_table_generates() {
        let f = parse_table(include_str!("../../../abi/functions.txt")).unwrap();
        rust_shell(&f).unwrap();
    }
}
