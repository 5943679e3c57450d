//! Every GridMPI knob is one entry in [`SETTINGS`]: its environment
//! variable name, type, default and one-line meaning. Values are resolved,
//! lowest precedence first, from the default, a config file
//! (`$GRIDMPI_CONFIG`, else `~/.gridmpi.conf`, else `/etc/gridmpi.conf`;
//! lines of `NAME = value`, `#` comments) and the environment.
//!
//! `gridmpirun --info` prints the registry with each value and its source.
//! Code reads a value through the typed getters of [`Config`]
//! (`get_size("GRIDMPI_EAGER_CREDIT")`), which parse the registry's default
//! when nothing else set it: a default is written once, in the registry.
//! Rates, sizes and durations are written as [`units`] says, here and in
//! every file GridMPI and its tools read.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod names;
mod registry;
pub mod units;
pub use registry::SETTINGS;

/// The type of a setting's value; values are validated against it. Rates,
/// sizes and durations are written as [`units`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// Bytes (or a count): a bare number, `64k` (x1024), `64kB` (x1000)...
    Size,
    /// Signed integer.
    Int,
    /// A duration with its unit (`5ms`, `30s`); a bare number only if 0.
    Duration,
    /// A duration whose setting's name ends in `_US`: a bare number is
    /// microseconds (`GRIDMPI_SPIN_US=200`); units are accepted too.
    Micros,
    /// Bits per second: `100mbit`, `2.5gbit`, `100M`.
    Rate,
    /// Floating point number.
    Float,
    /// Free text.
    Text,
    /// One of a fixed list of words.
    Choice(&'static [&'static str]),
}

/// A setting's value, parsed by its kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Size(u64),
    Int(i64),
    Duration(Duration),
    Rate(u64),
    Float(f64),
    /// Text and choices.
    Text(String),
}

impl Kind {
    /// Parse `text` as a value of this kind; the error names the text and
    /// the expected form.
    pub fn parse(self, text: &str) -> Result<Value, String> {
        match self {
            Kind::Bool => parse_bool(text)
                .map(Value::Bool)
                .ok_or_else(|| format!("{text:?}: expected yes/no/1/0/true/false/on/off")),
            Kind::Size => units::parse_size(text).map(Value::Size),
            Kind::Int => text.trim().parse().map(Value::Int).map_err(|_| format!("{text:?}: expected a whole number")),
            Kind::Duration => units::parse_duration(text, units::Bare::Refused).map(Value::Duration),
            Kind::Micros => units::parse_duration(text, units::Bare::Micros).map(Value::Duration),
            Kind::Rate => units::parse_rate(text).map(Value::Rate),
            Kind::Float => text.trim().parse().map(Value::Float).map_err(|_| format!("{text:?}: expected a number")),
            Kind::Text => Ok(Value::Text(text.to_string())),
            Kind::Choice(words) => {
                if words.contains(&text) {
                    Ok(Value::Text(text.to_string()))
                } else {
                    Err(format!("{text:?}: expected one of: {}", words.join(", ")))
                }
            }
        }
    }
}

/// Who reads a setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Read by the MPI library in every rank.
    Library,
    /// Read by the launcher.
    Launcher,
}

/// One knob.
#[derive(Debug)]
pub struct Setting {
    /// Environment variable name, `GRIDMPI_...`.
    pub name: &'static str,
    pub kind: Kind,
    /// Default, as text in the setting's syntax. `"auto"` means the code
    /// decides at run time (and says what it decided in the trace / --info);
    /// `""` (for text, rates and durations) that it is not set.
    pub default: &'static str,
    pub scope: Scope,
    /// One line: what it does.
    pub help: &'static str,
}

impl Setting {
    /// `value` says "not set, the code decides": `auto` or empty, where that
    /// is the default. Such a value is not of the setting's kind.
    pub fn is_unset(&self, value: &str) -> bool {
        matches!(self.default, "auto" | "") && value == self.default
    }

    /// Parse `value` by the setting's kind; `None` when it is unset.
    pub fn parse(&self, value: &str) -> Result<Option<Value>, String> {
        if self.is_unset(value) {
            return Ok(None);
        }
        self.kind.parse(value).map(Some)
    }
}

/// Where a resolved value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Env,
    /// Set by the launcher from its command line (passed down as env).
    CommandLine,
    /// Written through an MPI_T control variable (by a tool or the program).
    Tool,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Env => f.write_str("environment"),
            Source::CommandLine => f.write_str("command line"),
            Source::Tool => f.write_str("MPI_T"),
        }
    }
}

/// A setting's value was not valid for its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub name: String,
    pub value: String,
    pub reason: String,
    pub source: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid value {:?} for {} (from {}): {}",
            self.value, self.name, self.source, self.reason
        )
    }
}
impl std::error::Error for ConfigError {}

/// Resolved values of every setting.
#[derive(Clone, Debug)]
pub struct Config {
    values: HashMap<&'static str, (String, Source)>,
}

pub fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

impl Config {
    /// Defaults only.
    pub fn defaults() -> Config {
        let values = SETTINGS
            .iter()
            .map(|s| (s.name, (s.default.to_string(), Source::Default)))
            .collect();
        Config { values }
    }

    /// Defaults, then the config file, then the process environment.
    pub fn load() -> Result<Config, ConfigError> {
        let env: Vec<(String, String)> = std::env::vars().collect();
        Self::load_from(config_file_path(&env).as_deref(), &env)
    }

    /// Like [`Config::load`] with an explicit file and environment (for tests).
    pub fn load_from(file: Option<&Path>, env: &[(String, String)]) -> Result<Config, ConfigError> {
        let mut cfg = Config::defaults();
        if let Some(path) = file {
            if let Ok(text) = std::fs::read_to_string(path) {
                for (lineno, line) in text.lines().enumerate() {
                    let line = line.split('#').next().unwrap_or("").trim();
                    if line.is_empty() {
                        continue;
                    }
                    let Some((k, v)) = line.split_once('=') else {
                        return Err(ConfigError {
                            name: format!("line {}", lineno + 1),
                            value: line.to_string(),
                            reason: "expected NAME = value".into(),
                            source: path.display().to_string(),
                        });
                    };
                    cfg.set(k.trim(), v.trim(), Source::File(path.to_path_buf()))?;
                }
            }
        }
        for (k, v) in env {
            if k.starts_with("GRIDMPI_") && find(k).is_some() {
                let src = if env.iter().any(|(n, val)| n == "GRIDMPI_CMDLINE_SET" && val.split(',').any(|x| x == k)) {
                    Source::CommandLine
                } else {
                    Source::Env
                };
                cfg.set(k, v, src)?;
            }
        }
        Ok(cfg)
    }

    /// Set a value after checking it against the setting's kind. Unknown
    /// names are an error (a typo must not pass silently).
    pub fn set(&mut self, name: &str, value: &str, source: Source) -> Result<(), ConfigError> {
        let err = |reason: String| ConfigError {
            name: name.to_string(),
            value: value.to_string(),
            reason,
            source: source.to_string(),
        };
        let Some(setting) = find(name) else {
            return Err(err("no such setting (see gridmpirun --info)".into()));
        };
        setting.parse(value).map_err(err)?;
        self.values.insert(setting.name, (value.to_string(), source));
        Ok(())
    }

    /// Text value and its source. Panics if `name` is not registered: that is
    /// a bug in GridMPI, caught by the tests.
    pub fn raw(&self, name: &str) -> (&str, &Source) {
        let (v, s) = self
            .values
            .get(name)
            .unwrap_or_else(|| panic!("setting {name} is not in the registry"));
        (v.as_str(), s)
    }

    pub fn text(&self, name: &str) -> &str {
        self.raw(name).0
    }

    /// The parsed value, `None` when unset (`auto`, or empty where that is
    /// the default). Every value was checked when it was set and every
    /// default by the tests, so a value that does not parse is a bug in
    /// GridMPI (as is an unregistered name): it panics.
    pub fn value(&self, name: &str) -> Option<Value> {
        let setting = find(name).unwrap_or_else(|| panic!("setting {name} is not in the registry"));
        setting.parse(self.text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// `None` when the value is `auto`.
    pub fn bool(&self, name: &str) -> Option<bool> {
        match self.value(name)? {
            Value::Bool(b) => Some(b),
            v => wrong_kind(name, "a yes/no", v),
        }
    }

    /// Bytes; `None` when the value is `auto`.
    pub fn size(&self, name: &str) -> Option<u64> {
        match self.value(name)? {
            Value::Size(n) => Some(n),
            v => wrong_kind(name, "a size", v),
        }
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        match self.value(name)? {
            Value::Int(n) => Some(n),
            v => wrong_kind(name, "an integer", v),
        }
    }

    /// `None` when the value is `auto` (or empty where that is the default).
    pub fn duration(&self, name: &str) -> Option<Duration> {
        match self.value(name)? {
            Value::Duration(d) => Some(d),
            v => wrong_kind(name, "a duration", v),
        }
    }

    /// [`Config::duration`] in whole microseconds.
    pub fn micros(&self, name: &str) -> Option<u64> {
        self.duration(name).map(|d| d.as_micros().min(u64::MAX as u128) as u64)
    }

    /// Bits per second; `None` when the value is `auto` (or empty where that
    /// is the default).
    pub fn rate(&self, name: &str) -> Option<u64> {
        match self.value(name)? {
            Value::Rate(r) => Some(r),
            v => wrong_kind(name, "a rate", v),
        }
    }

    pub fn float(&self, name: &str) -> Option<f64> {
        match self.value(name)? {
            Value::Float(x) => Some(x),
            v => wrong_kind(name, "a number", v),
        }
    }

    /// The value of a setting whose default is not `auto`: what was set, else
    /// the registry's default. Panics for an `auto` setting (a bug in
    /// GridMPI: use [`Config::bool`]).
    pub fn get_bool(&self, name: &str) -> bool {
        self.bool(name).unwrap_or_else(|| has_no_default(name))
    }

    /// Like [`Config::get_bool`], for a size.
    pub fn get_size(&self, name: &str) -> u64 {
        self.size(name).unwrap_or_else(|| has_no_default(name))
    }

    /// Like [`Config::get_bool`], for a duration.
    pub fn get_duration(&self, name: &str) -> Duration {
        self.duration(name).unwrap_or_else(|| has_no_default(name))
    }

    /// Like [`Config::get_bool`], for a number.
    pub fn get_float(&self, name: &str) -> f64 {
        self.float(name).unwrap_or_else(|| has_no_default(name))
    }

    /// Every setting with its value and source, in registry order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Setting, &str, &Source)> {
        SETTINGS.iter().map(move |s| {
            let (v, src) = self.raw(s.name);
            (s, v, src)
        })
    }

    /// A table for `--info`.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let w = SETTINGS.iter().map(|s| s.name.len()).max().unwrap_or(0);
        let vw = self.iter().map(|(_, v, _)| v.len()).max().unwrap_or(0).clamp(5, 24);
        for (s, v, src) in self.iter() {
            out.push_str(&format!(
                "{:w$}  {:vw$}  {:12}  {}\n",
                s.name,
                v,
                src.to_string(),
                s.help,
                w = w,
                vw = vw
            ));
        }
        out
    }
}

fn config_file_path(env: &[(String, String)]) -> Option<PathBuf> {
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if let Some(p) = get("GRIDMPI_CONFIG") {
        return Some(PathBuf::from(p));
    }
    if let Some(home) = get("HOME") {
        let p = Path::new(&home).join(".gridmpi.conf");
        if p.exists() {
            return Some(p);
        }
    }
    let p = PathBuf::from("/etc/gridmpi.conf");
    p.exists().then_some(p)
}

pub fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Some(true),
        "0" | "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// Parse `value` as setting `name` would be: for code that reads a setting
/// before (or without) loading a [`Config`], such as the PMI client. `None`
/// when it is unset.
pub fn parse_setting(name: &str, value: &str) -> Result<Option<Value>, String> {
    find(name).ok_or_else(|| format!("{name}: no such setting"))?.parse(value)
}

fn wrong_kind(name: &str, wanted: &str, got: Value) -> ! {
    panic!("setting {name} is read as {wanted} but its kind gives {got:?}")
}

fn has_no_default(name: &str) -> ! {
    panic!("setting {name} is auto (or empty): read it with the getter that returns an Option")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the registry promises of a setting's default.
    fn check_default(s: &Setting) -> Result<(), String> {
        if s.default.is_empty() && !matches!(s.kind, Kind::Text | Kind::Rate | Kind::Duration) {
            return Err("only text, rates and durations may default to empty (unset)".into());
        }
        s.parse(s.default)?;
        // Where the name carries the unit, a bare number is in it; elsewhere
        // a duration needs its unit.
        if s.name.ends_with("_US") != (s.kind == Kind::Micros) {
            return Err("a duration setting is Kind::Micros exactly when its name ends in _US".into());
        }
        if !s.name.starts_with("GRIDMPI_") || s.help.is_empty() {
            return Err("a setting is named GRIDMPI_* and says what it does".into());
        }
        Ok(())
    }

    #[test]
    fn every_default_parses_with_its_kind() {
        for s in SETTINGS {
            check_default(s).unwrap_or_else(|e| panic!("{} (default {:?}): {e}", s.name, s.default));
            // ... and reads back through the getters.
            let _ = Config::defaults().value(s.name);
        }
        let mut names: Vec<_> = SETTINGS.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SETTINGS.len(), "duplicate setting names");
    }

    /// Where the docs restate a default (a table row `| GRIDMPI_X | 1ms |`,
    /// or `GRIDMPI_X (1 ms)` in a sentence), they must say the registry's:
    /// the registry is where a default is written, the docs follow it.
    #[test]
    fn the_docs_restate_defaults_as_the_registry_has_them() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = vec![root.join("README.md")];
        let docs = std::fs::read_dir(root.join("docs")).expect("the docs directory");
        files.extend(docs.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "md")));
        let numeric = |k: Kind| matches!(k, Kind::Size | Kind::Int | Kind::Duration | Kind::Micros | Kind::Rate | Kind::Float);
        let mut checked = 0;
        for path in &files {
            let text = std::fs::read_to_string(path).unwrap();
            for s in SETTINGS.iter().filter(|s| numeric(s.kind) && !s.is_unset(s.default)) {
                let quoted = format!("`{}`", s.name);
                for (at, _) in text.match_indices(&quoted) {
                    let after = &text[at + quoted.len()..];
                    let stated = match (after.strip_prefix(" ("), after.strip_prefix(" | ")) {
                        (Some(sentence), _) => sentence.split([')', ',', ';']).next(),
                        (_, Some(cell)) => cell.split('|').next(),
                        _ => None,
                    };
                    let Some(stated) = stated.map(|v| v.trim().trim_matches('`')) else { continue };
                    // Not a value of the kind: a description, not a default.
                    let Ok(value) = s.kind.parse(stated) else { continue };
                    let default = s.kind.parse(s.default).unwrap();
                    assert_eq!(value, default, "{}: {} is said to be {stated:?}, the registry's default is {:?}", path.display(), s.name, s.default);
                    checked += 1;
                }
            }
        }
        assert!(checked > 0, "no default found in the docs: has their form changed?");
    }

    #[test]
    fn a_typo_in_a_default_is_caught() {
        let typo = |kind, default| Setting { name: "GRIDMPI_X", kind, default, scope: Scope::Library, help: "x" };
        assert!(check_default(&typo(Kind::Size, "32x")).is_err());
        assert!(check_default(&typo(Kind::Size, "")).is_err());
        assert!(check_default(&typo(Kind::Duration, "100")).is_err(), "a bare duration");
        assert!(check_default(&typo(Kind::Micros, "100")).is_err(), "Micros without _US in the name");
        assert!(check_default(&typo(Kind::Rate, "100mbps")).is_err());
        assert!(check_default(&typo(Kind::Bool, "maybe")).is_err());
        assert!(check_default(&typo(Kind::Choice(&["a", "b"]), "c")).is_err());
        assert!(check_default(&typo(Kind::Duration, "100ms")).is_ok());
    }

    #[test]
    fn getters_give_the_registry_default_when_unset() {
        let c = Config::defaults();
        let default_of = |name: &str| find(name).unwrap().default;
        assert_eq!(c.get_size("GRIDMPI_EAGER_CREDIT"), units::parse_size(default_of("GRIDMPI_EAGER_CREDIT")).unwrap());
        assert_eq!(c.get_size("GRIDMPI_EAGER_CREDIT"), 1 << 20);
        assert_eq!(c.get_duration("GRIDMPI_YIELD_US"), Duration::from_millis(1), "a bare default of a _US setting");
        assert_eq!(c.get_duration("GRIDMPI_KILL_GRACE"), Duration::from_secs(3));
        assert_eq!(c.get_duration("GRIDMPI_PMI_TIMEOUT"), Duration::ZERO);
        assert!(!c.get_bool("GRIDMPI_SINGLE_COPY"), "no: messages go through the rings");
        assert_eq!(c.get_float("GRIDMPI_PACE_SHARE"), 0.95);
        // auto and empty are None: the code decides.
        assert_eq!(c.size("GRIDMPI_EAGER_LIMIT"), None);
        assert_eq!(c.duration("GRIDMPI_TCP_RTO_MIN"), None);
        assert_eq!(c.rate("GRIDMPI_WAN_BANDWIDTH"), None);
        assert_eq!(c.duration("GRIDMPI_WAN_DELAY"), None);
    }

    #[test]
    #[should_panic(expected = "GRIDMPI_EAGER_LIMIT is auto")]
    fn an_auto_setting_has_no_default_to_get() {
        Config::defaults().get_size("GRIDMPI_EAGER_LIMIT");
    }

    #[test]
    #[should_panic(expected = "read as a size")]
    fn reading_a_setting_as_another_kind_is_a_bug() {
        Config::defaults().size("GRIDMPI_KILL_GRACE");
    }

    #[test]
    fn precedence_env_over_file_over_default() {
        let dir = std::env::temp_dir().join(format!("gridmpi-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("conf");
        std::fs::write(&f, "# comment\nGRIDMPI_EAGER_LIMIT = 32k\nGRIDMPI_SPIN_US=7\n").unwrap();
        let env = vec![("GRIDMPI_SPIN_US".to_string(), "9ms".to_string())];
        let c = Config::load_from(Some(&f), &env).unwrap();
        assert_eq!(c.size("GRIDMPI_EAGER_LIMIT"), Some(32 * 1024));
        assert!(matches!(c.raw("GRIDMPI_EAGER_LIMIT").1, Source::File(_)));
        assert_eq!(c.micros("GRIDMPI_SPIN_US"), Some(9000));
        assert_eq!(c.raw("GRIDMPI_SPIN_US").1, &Source::Env);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn bad_values_are_rejected_with_the_name() {
        let env = vec![("GRIDMPI_EAGER_LIMIT".to_string(), "lots".to_string())];
        let e = Config::load_from(None, &env).unwrap_err();
        assert!(e.to_string().contains("GRIDMPI_EAGER_LIMIT"), "{e}");
        let mut c = Config::defaults();
        assert!(c.set("GRIDMPI_NO_SUCH_THING", "1", Source::Env).is_err());
    }

    #[test]
    fn bare_durations_only_where_the_name_carries_the_unit() {
        let mut c = Config::defaults();
        c.set("GRIDMPI_SPIN_US", "200", Source::Env).unwrap();
        assert_eq!(c.duration("GRIDMPI_SPIN_US"), Some(Duration::from_micros(200)));
        // Read as 5000 us before; a bare number is refused now, naming the form.
        let e = c.set("GRIDMPI_TCP_RTO_MIN", "5000", Source::Env).unwrap_err().to_string();
        assert!(e.contains("GRIDMPI_TCP_RTO_MIN") && e.contains("\"5000\"") && e.contains("unit"), "{e}");
        c.set("GRIDMPI_TCP_RTO_MIN", "5ms", Source::Env).unwrap();
        assert_eq!(c.duration("GRIDMPI_TCP_RTO_MIN"), Some(Duration::from_millis(5)));
        c.set("GRIDMPI_PMI_TIMEOUT", "0", Source::Env).unwrap();
        assert!(c.set("GRIDMPI_YIELD_US", "auto", Source::Env).is_err(), "auto only where it is the default");
    }

    #[test]
    fn the_wan_is_described_by_a_rate_and_a_duration() {
        let mut c = Config::defaults();
        c.set("GRIDMPI_WAN_BANDWIDTH", "2gbit", Source::Env).unwrap();
        c.set("GRIDMPI_WAN_DELAY", "100us", Source::Env).unwrap();
        assert_eq!(c.rate("GRIDMPI_WAN_BANDWIDTH"), Some(2_000_000_000));
        assert_eq!(c.duration("GRIDMPI_WAN_DELAY"), Some(Duration::from_micros(100)));
        assert!(c.set("GRIDMPI_WAN_BANDWIDTH", "100mbps", Source::Env).is_err());
        assert!(c.set("GRIDMPI_WAN_DELAY", "5", Source::Env).is_err());
        c.set("GRIDMPI_WAN_BANDWIDTH", "", Source::Env).unwrap();
        assert_eq!(c.rate("GRIDMPI_WAN_BANDWIDTH"), None);
    }

    #[test]
    fn settings_parse_without_a_config() {
        assert_eq!(parse_setting("GRIDMPI_PMI_TIMEOUT", "30s"), Ok(Some(Value::Duration(Duration::from_secs(30)))));
        assert!(parse_setting("GRIDMPI_PMI_TIMEOUT", "30").is_err());
        assert!(parse_setting("GRIDMPI_NOPE", "1").is_err());
        assert_eq!(parse_setting("GRIDMPI_TCP_RTO_MIN", "auto"), Ok(None));
    }
}
