//! Every GridMPI knob is one entry in [`SETTINGS`]: its environment
//! variable name, type, default and one-line meaning. Values are resolved,
//! lowest precedence first, from the default, a config file
//! (`$GRIDMPI_CONFIG`, else `~/.gridmpi.conf`, else `/etc/gridmpi.conf`;
//! lines of `NAME = value`, `#` comments) and the environment.
//!
//! `gridmpirun --info` prints the registry with each value and its source.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

mod registry;
pub use registry::SETTINGS;

/// The type of a setting's value; values are validated against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    /// Non-negative integer; accepts k/m/g (binary) suffixes.
    Size,
    /// Signed integer.
    Int,
    /// Microseconds; accepts `us`, `ms`, `s` suffixes (plain number = microseconds).
    Micros,
    /// Floating point number.
    Float,
    /// Free text.
    Text,
    /// One of a fixed list of words.
    Choice(&'static [&'static str]),
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
    /// decides at run time (and says what it decided in the trace / --info).
    pub default: &'static str,
    pub scope: Scope,
    /// One line: what it does.
    pub help: &'static str,
}

/// Where a resolved value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Env,
    /// Set by the launcher from its command line (passed down as env).
    CommandLine,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "file {}", p.display()),
            Source::Env => f.write_str("environment"),
            Source::CommandLine => f.write_str("command line"),
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
        if value != "auto" || setting.default != "auto" {
            validate(setting.kind, value).map_err(err)?;
        }
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

    /// `None` when the value is `auto`.
    pub fn bool(&self, name: &str) -> Option<bool> {
        parse_bool(self.text(name))
    }

    /// `None` when the value is `auto`.
    pub fn size(&self, name: &str) -> Option<u64> {
        parse_size(self.text(name)).ok()
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        self.text(name).parse().ok()
    }

    pub fn micros(&self, name: &str) -> Option<u64> {
        parse_micros(self.text(name)).ok()
    }

    pub fn float(&self, name: &str) -> Option<f64> {
        self.text(name).parse().ok()
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

pub fn parse_size(v: &str) -> Result<u64, String> {
    let v = v.trim();
    let (num, mult) = match v.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_lowercase() {
                'k' => 1u64 << 10,
                'm' => 1 << 20,
                'g' => 1 << 30,
                _ => return Err(format!("unknown suffix {c:?} (use k, m or g)")),
            };
            (&v[..i], m)
        }
        _ => (v, 1),
    };
    num.trim()
        .parse::<u64>()
        .map_err(|e| format!("not a size: {e}"))?
        .checked_mul(mult)
        .ok_or_else(|| "too large".to_string())
}

pub fn parse_micros(v: &str) -> Result<u64, String> {
    let v = v.trim();
    let (num, mult) = if let Some(n) = v.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e6)
    } else {
        (v, 1.0)
    };
    let x: f64 = num.trim().parse().map_err(|e| format!("not a duration: {e}"))?;
    if !(x >= 0.0) {
        return Err("must not be negative".into());
    }
    Ok((x * mult).round() as u64)
}

fn validate(kind: Kind, v: &str) -> Result<(), String> {
    match kind {
        Kind::Bool => parse_bool(v).map(|_| ()).ok_or_else(|| "expected yes/no/1/0/true/false/on/off".into()),
        Kind::Size => parse_size(v).map(|_| ()),
        Kind::Int => v.trim().parse::<i64>().map(|_| ()).map_err(|e| e.to_string()),
        Kind::Micros => parse_micros(v).map(|_| ()),
        Kind::Float => v.trim().parse::<f64>().map(|_| ()).map_err(|e| e.to_string()),
        Kind::Text => Ok(()),
        Kind::Choice(words) => {
            if words.contains(&v) {
                Ok(())
            } else {
                Err(format!("expected one of: {}", words.join(", ")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_valid() {
        for s in SETTINGS {
            if s.default != "auto" {
                validate(s.kind, s.default).unwrap_or_else(|e| panic!("{}: {e}", s.name));
            }
            assert!(s.name.starts_with("GRIDMPI_"), "{}", s.name);
            assert!(!s.help.is_empty());
        }
        let mut names: Vec<_> = SETTINGS.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SETTINGS.len(), "duplicate setting names");
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
    fn parsers() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_micros("1.5ms"), Ok(1500));
        assert_eq!(parse_micros("2s"), Ok(2_000_000));
        assert!(parse_micros("-1").is_err());
    }
}
