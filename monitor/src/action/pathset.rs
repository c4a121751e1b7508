//! A set of paths held as 128-bit keyed digests instead of copies of the
//! paths. The judge remembers every file a run creates or a build tool
//! writes (tens of thousands on a burst); as `String`s each entry cost about
//! 100 bytes of heap (the string's block and its slot), as a digest 16.
//!
//! The digest is two SipHash-1-3 values under keys drawn at random when
//! the set is made (`std`'s `RandomState`, two of them): the keys never
//! leave abm's memory, so a watched command cannot make up a path whose
//! digest equals that of a file the run created (and have its removal
//! judged as removing the run's own work), and two different paths share
//! a digest by chance with a probability of about n² / 2¹²⁹.

use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// Paths, by digest. Only membership is kept: the paths cannot be listed.
#[derive(Debug, Default)]
pub struct PathSet {
    keys: HashSet<u128, BuildHasherDefault<Spread>>,
    hi: std::hash::RandomState,
    lo: std::hash::RandomState,
}

impl PathSet {
    pub fn new() -> PathSet {
        PathSet::default()
    }

    fn key(&self, path: &str) -> u128 {
        (u128::from(self.hi.hash_one(path)) << 64) | u128::from(self.lo.hash_one(path))
    }

    /// Adds `path`; whether it was not there yet.
    pub fn insert(&mut self, path: &str) -> bool {
        let k = self.key(path);
        self.keys.insert(k)
    }

    pub fn contains(&self, path: &str) -> bool {
        self.keys.contains(&self.key(path))
    }

    /// Removes `path`; whether it was there.
    pub fn remove(&mut self, path: &str) -> bool {
        let k = self.key(path);
        self.keys.remove(&k)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The table's hash of a key that is already a keyed hash: its low 64 bits.
#[derive(Default)]
struct Spread(u64);

impl Hasher for Spread {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u128` keys are hashed; this keeps any other input correct.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u128(&mut self, v: u128) {
        self.0 = v as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::PathSet;

    #[test]
    fn holds_exactly_the_paths_inserted() {
        let mut s = PathSet::new();
        assert!(s.is_empty());
        for i in 0..5000 {
            assert!(s.insert(&format!("/w/dir{}/file{i}", i % 7)));
        }
        assert!(!s.insert("/w/dir0/file0"), "a second insert adds nothing");
        assert_eq!(s.len(), 5000);
        for i in 0..5000 {
            assert!(s.contains(&format!("/w/dir{}/file{i}", i % 7)));
            // Same name in another directory, a prefix, an extension.
            assert!(!s.contains(&format!("/w/dir{}/file{i}", (i + 1) % 7)));
            assert!(!s.contains(&format!("/w/dir{}/file{i}x", i % 7)));
        }
        assert!(!s.contains("/w/dir0/file"));
        assert!(!s.contains(""));
        assert!(s.remove("/w/dir3/file3"));
        assert!(!s.remove("/w/dir3/file3"), "removed once");
        assert!(!s.contains("/w/dir3/file3"));
        assert_eq!(s.len(), 4999);
    }

    #[test]
    fn two_sets_key_paths_differently() {
        let (a, b) = (PathSet::new(), PathSet::new());
        assert_ne!(a.key("/w/x"), b.key("/w/x"), "each set draws its own keys");
        assert_ne!(a.key("/w/x") >> 64, a.key("/w/x") & u128::from(u64::MAX));
    }
}
