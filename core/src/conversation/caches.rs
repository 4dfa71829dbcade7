//! Small in-process caches with a time to live.
//!
//! A warm Lambda answers bursts of comments on one PR; a permission or a guideline file
//! rarely changes within minutes, so each is asked of GitHub once per burst. Keys always
//! include the installation and repository, so one tenant's answers never serve another.
//! Nothing here must survive the process: a cold start just asks again.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Entries beyond this are dropped (expired first, then everything): a bound, not a policy.
const MAX_ENTRIES: usize = 1024;

pub struct TtlCache<K, V> {
    ttl: Duration,
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub fn new(ttl: Duration) -> Self {
        TtlCache {
            ttl,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, value) = entries.get(key)?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    pub fn put(&self, key: K, value: V) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= MAX_ENTRIES {
            let ttl = self.ttl;
            entries.retain(|_, (at, _)| at.elapsed() < ttl);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (Instant::now(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire() {
        let cache = TtlCache::new(Duration::from_millis(20));
        cache.put("a", 1);
        assert_eq!(cache.get(&"a"), Some(1));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(cache.get(&"a"), None);
    }
}
