//! A small least-recently-used map (the cache of live session actors).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

pub struct Lru<K, V> {
    cap: usize,
    tick: u64,
    map: HashMap<K, (V, u64)>,
    order: BTreeMap<u64, K>,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    pub fn new(cap: usize) -> Self {
        Lru {
            cap: cap.max(1),
            tick: 0,
            map: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// Look up and mark as most recently used.
    pub fn get(&mut self, key: &K) -> Option<&V> {
        self.tick += 1;
        let tick = self.tick;
        let (_, used) = self.map.get_mut(key)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, key.clone());
        self.map.get(key).map(|(v, _)| v)
    }

    /// Insert; returns the entries evicted to stay within the cap.
    pub fn insert(&mut self, key: K, value: V) -> Vec<(K, V)> {
        self.tick += 1;
        if let Some((_, used)) = self.map.insert(key.clone(), (value, self.tick)) {
            self.order.remove(&used);
        }
        self.order.insert(self.tick, key);
        let mut evicted = Vec::new();
        while self.map.len() > self.cap {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some((v, _)) = self.map.remove(&oldest) {
                evicted.push((oldest, v));
            }
        }
        evicted
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (v, used) = self.map.remove(key)?;
        self.order.remove(&used);
        Some(v)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_least_recently_used() {
        let mut l = Lru::new(2);
        assert!(l.insert("a", 1).is_empty());
        assert!(l.insert("b", 2).is_empty());
        assert_eq!(l.get(&"a"), Some(&1));
        let ev = l.insert("c", 3);
        assert_eq!(ev, vec![("b", 2)]);
        assert_eq!(l.len(), 2);
        assert_eq!(l.remove(&"a"), Some(1));
    }
}
