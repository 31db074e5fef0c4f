//! A small seeded PRNG (SplitMix64): workloads need cheap, reproducible
//! choices per worker, not cryptographic randomness, and no dependency.

use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A seed from the clock, for runs that do not ask for one (the run
    /// reports it, so a failure can be replayed with the same choices).
    pub fn seed_from_clock() -> u64 {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        nanos ^ (u64::from(std::process::id()) << 32)
    }

    /// An independent stream for worker `index` of a run seeded `seed`.
    pub fn for_worker(seed: u64, index: usize) -> Rng {
        let mut mixer = Rng::new(seed ^ (index as u64).wrapping_mul(0xA24B_AED4_963E_E407));
        Rng::new(mixer.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (multiply-shift: the bias is below 2^-32 for the
    /// small `n` a workload uses). Panics when `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: i64, hi: i64) -> i64 {
        assert!(lo <= hi, "Rng::between({lo}, {hi})");
        lo + self.below((hi - lo) as u64 + 1) as i64
    }

    /// Two different values in `1..=n` (n >= 2), in random order.
    pub fn two_distinct(&mut self, n: u32) -> (u32, u32) {
        assert!(n >= 2, "two_distinct needs n >= 2, got {n}");
        let a = self.below(n as u64) as u32;
        // Skip over `a` so `b` is uniform over the other n - 1 values.
        let b = self.below(n as u64 - 1) as u32;
        let b = if b >= a { b + 1 } else { b };
        (a + 1, b + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_workers_differ() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(
            Rng::for_worker(7, 0).next_u64(),
            Rng::for_worker(7, 1).next_u64()
        );
    }

    #[test]
    fn ranges_hold_and_cover() {
        let mut rng = Rng::new(1);
        let mut seen = [false; 5];
        for _ in 0..1000 {
            let (a, b) = rng.two_distinct(5);
            assert!(a != b && (1..=5).contains(&a) && (1..=5).contains(&b));
            seen[a as usize - 1] = true;
            let x = rng.between(-2, 2);
            assert!((-2..=2).contains(&x));
        }
        assert!(seen.iter().all(|s| *s));
    }
}
