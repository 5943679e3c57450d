//! MPI_T control variables: every setting of the registry
//! (gridmpi_config::SETTINGS), in registry order, under its own name.
//!
//! - Type: a yes/no setting is an MPI_INT (0 or 1); a choice an MPI_INT
//!   with an enumeration of its words; a number whose default is a number
//!   an MPI_UNSIGNED_LONG_LONG (sizes in bytes, durations in microseconds,
//!   rates in bits per second), an MPI_COUNT (integers) or an MPI_DOUBLE;
//!   free text, and every setting whose default is `auto` or empty (the
//!   library decides), an MPI_CHAR string in the setting's own syntax
//!   ("auto", "64k", "5ms"), of up to [`TEXT_COUNT`] bytes with its NUL.
//! - Binding: none (MPI_T_BIND_NO_OBJECT).
//! - Writing and scope: the library reads its settings once, when MPI
//!   starts. Before that (MPI_T_init_thread before MPI_Init or
//!   MPI_Session_init), every library setting may be written and takes
//!   effect when MPI starts; its scope is MPI_T_SCOPE_LOCAL, or
//!   MPI_T_SCOPE_ALL_EQ for those every process must agree on (the
//!   transport, the cluster map, the collective algorithms...). Once MPI
//!   runs they are MPI_T_SCOPE_READONLY (a write fails with
//!   MPI_T_ERR_CVAR_SET_NEVER), except the spin and yield times
//!   (MPI_T_SCOPE_LOCAL) and the collective algorithms (MPI_T_SCOPE_ALL_EQ:
//!   every process must write the same value before its next collective),
//!   which change at once. The launcher's settings mean nothing to the
//!   library: MPI_T_SCOPE_CONSTANT.
//! - Reading gives the value in force: the default, the config file, the
//!   environment, or the last write.

use super::*;
use crate::lifecycle::{self, Phase};
use gridmpi_config::{Config, ConfigError, Kind, Scope, Setting, Source, Value, SETTINGS};
use std::sync::Mutex;

/// Bytes of a string control variable's buffer (count), NUL included.
pub const TEXT_COUNT: c_int = 1024;

/// Settings a running library takes up again when written.
const LIVE: &[&str] = &["GRIDMPI_SPIN_US", "GRIDMPI_YIELD_US"];

/// Settings one process may set on its own (the others must be equal in
/// every process of the job, or they break it).
const LOCAL: &[&str] = &[
    "GRIDMPI_SPIN_US",
    "GRIDMPI_YIELD_US",
    "GRIDMPI_PROGRESS_THREAD",
    "GRIDMPI_EAGER_LIMIT",
    "GRIDMPI_TCP_ADDR",
    "GRIDMPI_TCP_SNDBUF",
    "GRIDMPI_TCP_RCVBUF",
    "GRIDMPI_TCP_CONNECT_TIMEOUT",
    "GRIDMPI_CLUSTER",
    "GRIDMPI_TCP_CC",
    "GRIDMPI_TCP_RTO_MIN",
    "GRIDMPI_TCP_RTO_MAX",
    "GRIDMPI_WAN_OUTAGE_BUDGET",
    "GRIDMPI_TCP_RESUME",
    "GRIDMPI_TCP_PORTS",
    "GRIDMPI_TCP_NOTSENT_LOWAT",
    "GRIDMPI_TCP_WAN_BUFFER",
    "GRIDMPI_DEBUG",
    "GRIDMPI_TRACE",
    "GRIDMPI_TRACE_INTERVAL",
    "GRIDMPI_TRACE_IDLE_INTERVAL",
    "GRIDMPI_TRACE_BUFFER",
    "GRIDMPI_PMI_VERSION",
    "GRIDMPI_PMI_TIMEOUT",
    "GRIDMPI_RENDEZVOUS",
    "GRIDMPI_RELAY",
    "GRIDMPI_RENDEZVOUS_TIMEOUT",
    "GRIDMPI_JOB_SECRET_FILE",
];

fn is_collective_choice(name: &str) -> bool {
    name.starts_with("GRIDMPI_COLL_")
}

/// Whether a running library takes a new value of `s`.
fn writable_while_running(s: &Setting) -> bool {
    LIVE.contains(&s.name) || is_collective_choice(s.name)
}

/// The settings in force: loaded when first needed, with MPI_T's writes.
/// The runtime starts from a copy ([`config_for_start`]); writes to live
/// settings later go to both.
static CONFIG: Mutex<Option<Config>> = Mutex::new(None);

fn with_config<T>(f: impl FnOnce(&mut Config) -> T) -> Result<T, ConfigError> {
    let mut g = CONFIG.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        *g = Some(Config::load()?);
    }
    Ok(f(g.as_mut().expect("loaded above")))
}

/// The settings MPI starts with (lifecycle.rs).
pub fn config_for_start() -> Result<Config, ConfigError> {
    with_config(|c| c.clone())
}

/// How a setting is seen through MPI_T.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CvarType {
    /// MPI_INT, 0 or 1.
    Bool,
    /// MPI_INT: the index of the word in the setting's choices.
    Choice,
    /// MPI_UNSIGNED_LONG_LONG in the given unit.
    Unsigned(Unit),
    /// MPI_COUNT.
    Signed,
    /// MPI_DOUBLE.
    Float,
    /// MPI_CHAR, the setting's own text.
    Text,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    /// A size setting that counts things, not bytes.
    Items,
    Micros,
    BitsPerSecond,
}

impl Unit {
    fn name(self) -> Option<&'static str> {
        match self {
            Unit::Bytes => Some("bytes"),
            Unit::Items => None,
            Unit::Micros => Some("microseconds"),
            Unit::BitsPerSecond => Some("bits per second"),
        }
    }
}

/// Size settings that are counts.
const COUNTS: &[&str] = &["GRIDMPI_COLL_ALLTOALL_INFLIGHT"];

pub fn cvar_type(s: &Setting) -> CvarType {
    if matches!(s.default, "auto" | "") && !matches!(s.kind, Kind::Choice(_)) {
        return CvarType::Text;
    }
    match s.kind {
        Kind::Bool => CvarType::Bool,
        Kind::Choice(_) => CvarType::Choice,
        Kind::Size if COUNTS.contains(&s.name) => CvarType::Unsigned(Unit::Items),
        Kind::Size => CvarType::Unsigned(Unit::Bytes),
        Kind::Duration | Kind::Micros => CvarType::Unsigned(Unit::Micros),
        Kind::Rate => CvarType::Unsigned(Unit::BitsPerSecond),
        Kind::Int => CvarType::Signed,
        Kind::Float => CvarType::Float,
        Kind::Text => CvarType::Text,
    }
}

impl CvarType {
    pub fn datatype(self) -> MPI_Datatype {
        match self {
            CvarType::Bool | CvarType::Choice => MPI_INT,
            CvarType::Unsigned(_) => MPI_UNSIGNED_LONG_LONG,
            CvarType::Signed => MPI_COUNT,
            CvarType::Float => MPI_DOUBLE,
            CvarType::Text => MPI_CHAR,
        }
    }

    pub fn count(self) -> c_int {
        if self == CvarType::Text {
            TEXT_COUNT
        } else {
            1
        }
    }
}

pub fn verbosity(s: &Setting) -> c_int {
    match super::categories::category_of_setting(s) {
        super::categories::Cat::Grid | super::categories::Cat::Launcher => MPI_T_VERBOSITY_USER_BASIC,
        super::categories::Cat::Tracing if s.name == "GRIDMPI_DEBUG" => MPI_T_VERBOSITY_MPIDEV_BASIC,
        super::categories::Cat::Tracing => MPI_T_VERBOSITY_USER_DETAIL,
        super::categories::Cat::Progress => MPI_T_VERBOSITY_TUNER_BASIC,
        _ => MPI_T_VERBOSITY_TUNER_DETAIL,
    }
}

/// The scope of `s` now (it changes when MPI starts: see the module doc).
pub fn scope(s: &Setting) -> c_int {
    if s.scope == Scope::Launcher {
        return MPI_T_SCOPE_CONSTANT;
    }
    let local = if LOCAL.contains(&s.name) { MPI_T_SCOPE_LOCAL } else { MPI_T_SCOPE_ALL_EQ };
    match lifecycle::phase() {
        Phase::NotStarted => local,
        Phase::Running if writable_while_running(s) => local,
        _ => MPI_T_SCOPE_READONLY,
    }
}

/// One line for a tool: the registry's help, with the unit of a number.
pub fn description(s: &Setting) -> String {
    match cvar_type(s) {
        CvarType::Unsigned(u) if u.name().is_some() => format!("{} [{}]", s.help, u.name().unwrap_or_default()),
        _ => s.help.to_string(),
    }
}

pub fn index_of(name: &str) -> Option<usize> {
    SETTINGS.iter().position(|s| s.name == name)
}

/// A control variable handle.
pub struct CvarHandle {
    pub index: usize,
}

/// The value of `s` in MPI_T's representation, written to `buf`.
///
/// # Safety
/// `buf` holds `cvar_type(s).count()` items of its datatype.
pub unsafe fn read(s: &'static Setting, buf: *mut c_void) -> TR<()> {
    let text = with_config(|c| c.text(s.name).to_string()).map_err(|_| INVALID)?;
    match cvar_type(s) {
        CvarType::Text => {
            let mut len = TEXT_COUNT;
            put_string(&text, buf as *mut c_char, &mut len);
        }
        // "auto" is one of the words of a choice, not an unset value here.
        CvarType::Choice => {
            let Kind::Choice(words) = s.kind else { return Err(INVALID) };
            *(buf as *mut c_int) = words.iter().position(|x| *x == text).ok_or(INVALID)? as c_int;
        }
        t => {
            let v = s.parse(&text).map_err(|_| INVALID)?.ok_or(INVALID)?;
            match (t, v) {
                (CvarType::Bool, Value::Bool(b)) => *(buf as *mut c_int) = b as c_int,
                (CvarType::Unsigned(_), Value::Size(n) | Value::Rate(n)) => *(buf as *mut u64) = n,
                (CvarType::Unsigned(_), Value::Duration(d)) => *(buf as *mut u64) = d.as_micros().min(u64::MAX as u128) as u64,
                (CvarType::Signed, Value::Int(n)) => *(buf as *mut i64) = n,
                (CvarType::Float, Value::Float(f)) => *(buf as *mut f64) = f,
                _ => return Err(INVALID),
            }
        }
    }
    Ok(())
}

/// The setting's text for a value in MPI_T's representation.
///
/// # Safety
/// `buf` holds a value of the variable's datatype (a NUL-terminated string
/// of at most TEXT_COUNT bytes for MPI_CHAR).
unsafe fn text_of(s: &Setting, buf: *const c_void) -> TR<String> {
    Ok(match cvar_type(s) {
        CvarType::Text => {
            let bytes = std::slice::from_raw_parts(buf as *const u8, TEXT_COUNT as usize);
            let end = bytes.iter().position(|&b| b == 0).ok_or(INVALID)?;
            String::from_utf8(bytes[..end].to_vec()).map_err(|_| INVALID)?
        }
        CvarType::Bool => if *(buf as *const c_int) != 0 { "yes" } else { "no" }.to_string(),
        CvarType::Choice => {
            let Kind::Choice(words) = s.kind else { return Err(INVALID) };
            let i = *(buf as *const c_int);
            words.get(usize::try_from(i).map_err(|_| INVALID)?).ok_or(INVALID)?.to_string()
        }
        CvarType::Unsigned(Unit::Bytes | Unit::Items) => (*(buf as *const u64)).to_string(),
        CvarType::Unsigned(Unit::Micros) => format!("{}us", *(buf as *const u64)),
        CvarType::Unsigned(Unit::BitsPerSecond) => format!("{}bit", *(buf as *const u64)),
        CvarType::Signed => (*(buf as *const i64)).to_string(),
        CvarType::Float => (*(buf as *const f64)).to_string(),
    })
}

/// MPI_T_cvar_write.
///
/// # Safety
/// As [`text_of`].
pub unsafe fn write(s: &'static Setting, buf: *const c_void) -> TR<()> {
    if s.scope == Scope::Launcher {
        return Err(TError(MPI_T_ERR_CVAR_SET_NEVER));
    }
    // The phase first, then the settings' lock (lifecycle.rs takes them
    // the other way round when it starts MPI).
    let phase = lifecycle::phase();
    match phase {
        Phase::NotStarted => {}
        Phase::Running if writable_while_running(s) => {}
        _ => return Err(TError(MPI_T_ERR_CVAR_SET_NEVER)),
    }
    let text = text_of(s, buf)?;
    // A value that is not of the setting's kind is refused (MPI_T has no
    // more precise error for it than MPI_T_ERR_INVALID).
    s.parse(&text).map_err(|_| INVALID)?;
    with_config(|c| c.set(s.name, &text, Source::Tool)).map_err(|_| INVALID)?.map_err(|_| INVALID)?;
    if phase == Phase::Running {
        apply_to_runtime(s, &text)?;
    }
    Ok(())
}

/// A running library takes a written value.
fn apply_to_runtime(s: &Setting, text: &str) -> TR<()> {
    crate::state::with(|st| {
        st.rt.config.set(s.name, text, Source::Tool).map_err(|e| crate::errors::err(MPI_ERR_ARG, e.to_string()))?;
        match s.name {
            "GRIDMPI_SPIN_US" => (st.rt.spin, st.rt.spin_alone) = crate::runtime::spin_time(&st.rt.config, st.rt.oversubscribed),
            "GRIDMPI_YIELD_US" => st.rt.yield_for = st.rt.config.get_duration("GRIDMPI_YIELD_US"),
            n if is_collective_choice(n) => st.coll_selector = crate::shell::coll_select::build_selector(&st.rt.config),
            _ => {}
        }
        Ok(())
    })
    .map_err(|_| INVALID)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_a_type_and_live_ones_exist() {
        for s in SETTINGS.iter() {
            let t = cvar_type(s);
            assert!(t.count() >= 1);
            // Numbers only where the default is one.
            if !matches!(t, CvarType::Text | CvarType::Choice) {
                assert!(s.parse(s.default).unwrap().is_some(), "{}", s.name);
            }
            if let Kind::Choice(words) = s.kind {
                assert!(words.contains(&s.default), "{}", s.name);
            }
        }
        for n in LIVE.iter().chain(LOCAL).chain(COUNTS) {
            assert!(index_of(n).is_some(), "{n} is not a setting");
        }
    }

    #[test]
    fn values_go_through_the_mpi_t_representation_and_back() {
        let s = SETTINGS.iter().find(|s| s.name == "GRIDMPI_EAGER_CREDIT").unwrap();
        assert_eq!(cvar_type(s), CvarType::Unsigned(Unit::Bytes));
        let v: u64 = 3 << 20;
        // SAFETY: a u64 for an MPI_UNSIGNED_LONG_LONG variable.
        let t = unsafe { text_of(s, &v as *const u64 as *const c_void) }.unwrap();
        assert_eq!(s.parse(&t).unwrap(), Some(Value::Size(3 << 20)));
        let d = SETTINGS.iter().find(|s| s.name == "GRIDMPI_YIELD_US").unwrap();
        let us: u64 = 250;
        // SAFETY: as above.
        let t = unsafe { text_of(d, &us as *const u64 as *const c_void) }.unwrap();
        assert_eq!(d.parse(&t).unwrap(), Some(Value::Duration(std::time::Duration::from_micros(250))));
        let c = SETTINGS.iter().find(|s| s.name == "GRIDMPI_COLL_ALLREDUCE").unwrap();
        let i: c_int = 3;
        // SAFETY: an int for an MPI_INT variable.
        let t = unsafe { text_of(c, &i as *const c_int as *const c_void) }.unwrap();
        let Kind::Choice(words) = c.kind else { panic!() };
        assert_eq!(t, words[3]);
        let bad: c_int = 99;
        // SAFETY: as above.
        assert_eq!(unsafe { text_of(c, &bad as *const c_int as *const c_void) }, Err(INVALID));
    }
}
