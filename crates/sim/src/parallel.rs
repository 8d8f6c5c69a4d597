//! Runs in parallel, results in order: the one place sweeps and paper reproductions fan out.
//!
//! Parallelism is across runs, never inside one (DESIGN.md), so a result never depends on how
//! many threads ran or in which order they finished.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Apply `f(index, item)` to every item on up to `jobs` threads (0 = one per core) and return
/// the results in input order. A panic in `f` propagates to the caller.
pub fn map_in_order<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let jobs = match jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(items.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(i, item);
                // NOTE(unwrap-free): a poisoned lock means another worker panicked, and scope
                // re-raises that panic when it joins.
                if let Ok(mut v) = slots.lock() {
                    v[i] = Some(r);
                }
            });
        }
    });
    slots
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_input_order_whatever_the_thread_count() {
        let items: Vec<u64> = (0..200).collect();
        // Uneven work so that threads finish out of order.
        let work = |i: usize, x: &u64| {
            let mut acc = *x;
            for k in 0..(i % 7) * 10_000 {
                acc = acc
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(k as u64);
            }
            (i, *x, acc)
        };
        let one = map_in_order(&items, 1, work);
        let many = map_in_order(&items, 8, work);
        assert_eq!(one, many);
        assert_eq!(one.len(), 200);
        assert!(one
            .iter()
            .enumerate()
            .all(|(i, r)| r.0 == i && r.1 == i as u64));
        assert!(map_in_order(&Vec::<u8>::new(), 0, |_, x| *x).is_empty());
    }
}
