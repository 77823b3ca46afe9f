//! Maps keyed by the library's own ids (endpoints, ranks, handles, registration names) on hot
//! paths: `HashMap` with a multiply-rotate hasher (the Fx hash) instead of SipHash. The keys
//! come from this process, never from an adversary, so hash flooding is no concern; a look-up
//! costs a few nanoseconds instead of a SipHash's tens. Imports nothing of the crate.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` keyed by ids of this process.
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The Fx hash: each word rotated in and multiplied by a constant.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl IdHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut last = [0u8; 8];
        let rest = chunks.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
    }
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::IdMap;

    #[test]
    fn ids_and_names_are_found_and_told_apart() {
        let mut m: IdMap<u64, u64> = IdMap::default();
        for i in 0..10_000u64 {
            m.insert(i * 4096, i);
        }
        assert!((0..10_000u64).all(|i| m[&(i * 4096)] == i));
        assert!(!m.contains_key(&1));
        let mut n: IdMap<String, usize> = IdMap::default();
        for name in ["", "a", "dram", "dram\0", "slot", "a-longer-name-of-17"] {
            let k = n.len();
            n.insert(name.to_string(), k);
        }
        assert_eq!(n.len(), 6);
        assert_eq!(n["dram"], 2);
        assert_eq!(n["dram\0"], 3);
    }
}
