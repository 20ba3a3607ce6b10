//! The worker pool: items worked on by a bounded number of threads, the
//! results handed back on the calling thread. Studio runs and judging
//! (`worldloom-api` `run_jobs`), `eval` and `judge` (`worldloom-eval`) all
//! use it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

/// Runs `work` on every item of `items` with up to `concurrency` threads
/// (at least one, never more than there are items), taking the items in
/// order, and hands each `Some` result to `done` on the calling thread, in
/// completion order. Once `stop` is set no new item starts (the items in
/// flight finish and are handed on); `done` may set it too (a write that
/// failed). Returns when every worker has ended.
pub fn for_each<T: Sync, R: Send>(
    items: &[T],
    concurrency: usize,
    stop: &AtomicBool,
    work: impl Fn(&T) -> Option<R> + Sync,
    mut done: impl FnMut(R),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<R>();
    std::thread::scope(|scope| {
        for _ in 0..concurrency.max(1).min(items.len().max(1)) {
            let tx = tx.clone();
            let (next, work) = (&next, &work);
            scope.spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let Some(item) = items.get(next.fetch_add(1, Ordering::SeqCst)) else {
                        break;
                    };
                    if let Some(result) = work(item)
                        && tx.send(result).is_err()
                    {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for result in rx {
            done(result);
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_item_once_with_at_most_the_concurrency_in_flight() {
        let items: Vec<u32> = (0..40).collect();
        let in_flight = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let mut seen = Vec::new();
        for_each(
            &items,
            3,
            &stop,
            |&i| {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(2));
                in_flight.fetch_sub(1, Ordering::SeqCst);
                (i % 2 == 0).then_some(i)
            },
            |i| seen.push(i),
        );
        seen.sort();
        assert_eq!(seen, (0..40).step_by(2).collect::<Vec<_>>());
        let most = most.load(Ordering::SeqCst);
        assert!((1..=3).contains(&most), "{most} in flight");
    }

    #[test]
    fn no_item_starts_after_stop() {
        let items: Vec<u32> = (0..100).collect();
        let stop = AtomicBool::new(false);
        let started = Mutex::new(Vec::new());
        let mut handed = Vec::new();
        for_each(
            &items,
            1,
            &stop,
            |&i| {
                started.lock().expect("lock").push(i);
                if i == 4 {
                    stop.store(true, Ordering::SeqCst);
                }
                Some(i)
            },
            |i| handed.push(i),
        );
        let mut started = started.into_inner().expect("lock");
        started.sort();
        // Item 4 set the flag: nothing after it started.
        assert_eq!(started, [0, 1, 2, 3, 4]);
        // What started was handed on.
        handed.sort();
        assert_eq!(handed, started);
    }
}
