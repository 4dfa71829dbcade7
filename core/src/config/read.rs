//! Typed, forgiving reads from the parsed YAML tree: each getter returns the value or the
//! default, recording a warning for anything present but wrong, and remembers which keys
//! it saw so unknown keys (usually typos) can be reported too.

use super::ConfigWarning;
use serde_json::Value;
use std::collections::BTreeSet;
use std::ops::RangeInclusive;

pub(super) struct Reader<'a> {
    root: &'a Value,
    known: BTreeSet<String>,
    /// Keys present in the file and accepted.
    present: BTreeSet<String>,
    warnings: Vec<ConfigWarning>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(root: &'a Value) -> Self {
        let mut reader = Reader {
            root,
            known: BTreeSet::new(),
            present: BTreeSet::new(),
            warnings: Vec::new(),
        };
        if !root.is_null() && !root.is_object() {
            reader.warn(
                "(top level)",
                "must be a mapping of sections; using defaults".into(),
            );
        }
        reader
    }

    pub(super) fn bool(&mut self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(other) => self.reject(key, other, "true or false", default),
        }
    }

    pub(super) fn number<T>(&mut self, key: &str, default: T, range: RangeInclusive<T>) -> T
    where
        T: Copy + PartialOrd + TryFrom<u64> + std::fmt::Display,
    {
        let Some(value) = self.get(key) else {
            return default;
        };
        let allowed = format!("a whole number from {} to {}", range.start(), range.end());
        match value.as_u64().and_then(|n| T::try_from(n).ok()) {
            Some(n) if range.contains(&n) => n,
            _ => self.reject(key, value, &allowed, default),
        }
    }

    pub(super) fn strings(&mut self, key: &str, default: &[String]) -> Vec<String> {
        let Some(value) = self.get(key) else {
            return default.to_vec();
        };
        match string_list(value) {
            Some(list) => list,
            None => self.reject(key, value, "a list of strings", default.to_vec()),
        }
    }

    /// A list of glob patterns; an invalid pattern rejects the whole key.
    pub(super) fn globs(&mut self, key: &str, default: &[String]) -> Vec<String> {
        let list = self.strings(key, default);
        if let Some(bad) = list.iter().find(|g| globset::Glob::new(g).is_err()) {
            let message = format!("{bad:?} is not a valid glob; using the defaults");
            self.warn(key, message);
            return default.to_vec();
        }
        list
    }

    /// A list drawn from `allowed`; unknown entries reject the whole key.
    pub(super) fn subset(
        &mut self,
        key: &str,
        default: &[String],
        allowed: &[&str],
    ) -> Vec<String> {
        let Some(value) = self.get(key) else {
            return default.to_vec();
        };
        let expected = format!("a list drawn from {}", allowed.join(", "));
        match string_list(value) {
            Some(list) if list.iter().all(|s| allowed.contains(&s.as_str())) => list,
            _ => self.reject(key, value, &expected, default.to_vec()),
        }
    }

    pub(super) fn parsed<T: Copy>(
        &mut self,
        key: &str,
        default: T,
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> T {
        let Some(value) = self.get(key) else {
            return default;
        };
        match value.as_str().and_then(&parse) {
            Some(parsed) => parsed,
            None => self.reject(key, value, expected, default),
        }
    }

    pub(super) fn list_of<T: Clone>(
        &mut self,
        key: &str,
        default: &[T],
        expected: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Vec<T> {
        let Some(value) = self.get(key) else {
            return default.to_vec();
        };
        let parsed: Option<Vec<T>> =
            string_list(value).and_then(|list| list.iter().map(|s| parse(s)).collect());
        match parsed {
            Some(list) => list,
            None => self.reject(
                key,
                value,
                &format!("a list of {expected}"),
                default.to_vec(),
            ),
        }
    }

    /// A value of a shape the getters above do not cover, read by `parse`, which says
    /// why it rejects one (the whole key then keeps its default).
    pub(super) fn shaped<T>(
        &mut self,
        key: &str,
        default: T,
        parse: impl Fn(&Value) -> Result<T, String>,
    ) -> T {
        let Some(value) = self.get(key) else {
            return default;
        };
        match parse(value) {
            Ok(parsed) => parsed,
            Err(why) => {
                self.present.remove(key);
                self.warn(key, format!("{why}; using the default"));
                default
            }
        }
    }

    /// Report unknown keys and hand back every warning.
    pub(super) fn finish(mut self) -> Vec<ConfigWarning> {
        let mut unknown = Vec::new();
        collect_leaves(self.root, String::new(), &mut unknown);
        for key in unknown {
            let is_known = self.known.iter().any(|k| {
                k == &key || k.starts_with(&format!("{key}.")) || key.starts_with(&format!("{k}."))
            });
            if !is_known {
                self.warn(&key, "is not a Parley setting; ignored".into());
            }
        }
        self.warnings
    }

    /// Every key asked for so far.
    pub(super) fn known(&self) -> &BTreeSet<String> {
        &self.known
    }

    /// The keys the file set to values that were accepted.
    pub(super) fn explicit(&self) -> BTreeSet<String> {
        self.present.clone()
    }

    fn get(&mut self, key: &str) -> Option<&'a Value> {
        self.known.insert(key.to_string());
        let mut current = self.root;
        for part in key.split('.') {
            current = current.as_object()?.get(part)?;
        }
        if current.is_null() {
            return None;
        }
        self.present.insert(key.to_string());
        Some(current)
    }

    fn reject<T>(&mut self, key: &str, value: &Value, expected: &str, default: T) -> T {
        self.present.remove(key);
        let shown = match value {
            Value::String(s) => format!("{s:?}"),
            other => other.to_string(),
        };
        self.warn(key, format!("{shown} is not {expected}; using the default"));
        default
    }

    fn warn(&mut self, key: &str, message: String) {
        self.warnings.push(ConfigWarning {
            key: key.to_string(),
            message,
        });
    }
}

fn string_list(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(|s| s.trim().to_string()))
        .collect()
}

fn collect_leaves(value: &Value, prefix: String, out: &mut Vec<String>) {
    match value.as_object() {
        Some(map) if !map.is_empty() => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                collect_leaves(v, key, out);
            }
        }
        _ if !prefix.is_empty() => out.push(prefix),
        _ => {}
    }
}
