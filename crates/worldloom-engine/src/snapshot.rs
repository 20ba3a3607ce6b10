//! Decode-state snapshots keyed by token prefix, in an LRU with a byte budget.
//!
//! A snapshot is the model's state after reading exactly `tokens` (for
//! Qwen3.5-MoE: the KV cache of attention layers up to that position and
//! the conv and recurrent states of DeltaNet layers at that position). A new
//! prompt that starts with `tokens` resumes from the snapshot and reads only
//! the rest. The runtime stores one at every turn boundary of a prompt and at
//! its end, so stepping turn k+1 after turn k, or branching at an earlier
//! turn, re-reads only the new tokens.
//!
//! Lookup returns the **longest** cached key that is a prefix of the prompt.
//! When the cache holds more than its byte budget, the least recently used
//! snapshots (inserted or returned by a lookup) are evicted first.

/// One cached snapshot.
#[derive(Debug, Clone)]
struct Entry<V> {
    tokens: Vec<u32>,
    value: V,
    size_bytes: usize,
    last_used: u64,
}

/// A snapshot found by [`SnapshotCache::lookup`].
#[derive(Debug)]
pub struct SnapshotHit<'a, V> {
    /// How many leading prompt tokens the snapshot covers.
    pub prefix_len: usize,
    /// The cached value (state, and whatever the caller stored with it).
    pub value: &'a V,
}

/// Snapshots of type `V` keyed by the token prefix they were taken after.
#[derive(Debug, Clone)]
pub struct SnapshotCache<V> {
    entries: Vec<Entry<V>>,
    budget_bytes: usize,
    used_bytes: usize,
    clock: u64,
}

impl<V> SnapshotCache<V> {
    /// An empty cache holding at most `budget_bytes` of snapshots (0 keeps
    /// nothing).
    pub fn new(budget_bytes: usize) -> Self {
        Self {
            entries: Vec::new(),
            budget_bytes,
            used_bytes: 0,
            clock: 0,
        }
    }

    /// The byte budget.
    pub fn budget_bytes(&self) -> usize {
        self.budget_bytes
    }

    /// Bytes of all cached snapshots (as given to [`SnapshotCache::insert`]).
    pub fn used_bytes(&self) -> usize {
        self.used_bytes
    }

    /// Number of cached snapshots.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether a snapshot for exactly `tokens` is cached (does not touch the
    /// LRU order).
    pub fn contains(&self, tokens: &[u32]) -> bool {
        self.entries.iter().any(|e| e.tokens == tokens)
    }

    /// Caches `value`, the state after `tokens`, occupying `size_bytes`.
    /// Replaces an entry with the same key, then evicts least recently used
    /// entries until the budget holds. Returns `false` (and caches nothing)
    /// when `size_bytes` alone exceeds the budget.
    pub fn insert(&mut self, tokens: Vec<u32>, value: V, size_bytes: usize) -> bool {
        self.remove(&tokens);
        if size_bytes > self.budget_bytes {
            return false;
        }
        self.clock += 1;
        self.entries.push(Entry {
            tokens,
            value,
            size_bytes,
            last_used: self.clock,
        });
        self.used_bytes += size_bytes;
        while self.used_bytes > self.budget_bytes {
            let oldest = self
                .entries
                .iter()
                .enumerate()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(i, _)| i);
            match oldest {
                Some(i) => {
                    let e = self.entries.swap_remove(i);
                    self.used_bytes -= e.size_bytes;
                }
                None => break,
            }
        }
        true
    }

    /// Removes the snapshot for exactly `tokens`; returns whether one was cached.
    pub fn remove(&mut self, tokens: &[u32]) -> bool {
        match self.entries.iter().position(|e| e.tokens == tokens) {
            Some(i) => {
                let e = self.entries.swap_remove(i);
                self.used_bytes -= e.size_bytes;
                true
            }
            None => false,
        }
    }

    /// Drops every snapshot.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.used_bytes = 0;
    }

    /// The snapshot with the longest key that is a prefix of `prompt` and
    /// satisfies `usable` (e.g. "has logits" for a key equal to the whole
    /// prompt); marks it most recently used.
    pub fn lookup_where(
        &mut self,
        prompt: &[u32],
        usable: impl Fn(usize, &V) -> bool,
    ) -> Option<SnapshotHit<'_, V>> {
        let best = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| prompt.starts_with(&e.tokens) && usable(e.tokens.len(), &e.value))
            .max_by_key(|(_, e)| e.tokens.len())
            .map(|(i, _)| i)?;
        self.clock += 1;
        let entry = &mut self.entries[best];
        entry.last_used = self.clock;
        Some(SnapshotHit {
            prefix_len: entry.tokens.len(),
            value: &entry.value,
        })
    }

    /// The snapshot with the longest key that is a prefix of `prompt`
    /// (possibly all of it); marks it most recently used.
    pub fn lookup(&mut self, prompt: &[u32]) -> Option<SnapshotHit<'_, V>> {
        self.lookup_where(prompt, |_, _| true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_returns_the_longest_cached_prefix() {
        let mut cache = SnapshotCache::new(1000);
        cache.insert(vec![1, 2], "ab", 10);
        cache.insert(vec![1, 2, 3, 4], "abcd", 10);
        cache.insert(vec![1, 9], "a9", 10);
        cache.insert(vec![1, 2, 3, 4, 5, 6, 7], "too long", 10);
        let hit = cache.lookup(&[1, 2, 3, 4, 5, 6]).expect("hit");
        assert_eq!((hit.prefix_len, *hit.value), (4, "abcd"));
        let hit = cache.lookup(&[1, 2, 3]).expect("hit");
        assert_eq!((hit.prefix_len, *hit.value), (2, "ab"));
        assert!(cache.lookup(&[2, 1]).is_none());
        // whole-prompt matches can be excluded
        let hit = cache
            .lookup_where(&[1, 2, 3, 4], |len, _| len < 4)
            .expect("hit");
        assert_eq!(hit.prefix_len, 2);
    }

    #[test]
    fn eviction_is_least_recently_used_by_bytes() {
        let mut cache = SnapshotCache::new(100);
        assert!(cache.insert(vec![1], 'a', 40));
        assert!(cache.insert(vec![2], 'b', 40));
        assert_eq!(cache.used_bytes(), 80);
        // touch [1]: [2] becomes the least recently used
        assert!(cache.lookup(&[1, 5]).is_some());
        assert!(cache.insert(vec![3], 'c', 30));
        assert_eq!(cache.len(), 2);
        assert!(cache.contains(&[1]) && cache.contains(&[3]) && !cache.contains(&[2]));
        assert_eq!(cache.used_bytes(), 70);
        // a big entry pushes out both older ones
        assert!(cache.insert(vec![4], 'd', 90));
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.used_bytes(), 90);
        // larger than the whole budget: refused, nothing else lost
        assert!(!cache.insert(vec![5], 'e', 101));
        assert!(cache.contains(&[4]));
        // same key replaces and re-counts
        assert!(cache.insert(vec![4], 'D', 50));
        assert_eq!((cache.len(), cache.used_bytes()), (1, 50));
        assert_eq!(*cache.lookup(&[4]).expect("hit").value, 'D');
        assert!(cache.remove(&[4]));
        assert_eq!((cache.len(), cache.used_bytes()), (0, 0));
    }
}
