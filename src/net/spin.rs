//! Brief busy-polling after activity, so clients rarely have to wake a sleeping server.
//!
//! A request that reaches a server asleep in `epoll_wait` costs the client a
//! wake-up in the kernel; with many pipelined-at-1 clients that cost lands on
//! the client and lowers throughput. After each burst of requests this task
//! keeps the runtime polling the sockets (zero-timeout) for a few
//! microseconds before letting it park. Idle servers do not spin.

use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long to keep polling after the last request.
const WINDOW: Duration = Duration::from_micros(40);

pub async fn run(activity: Rc<Notify>) {
    loop {
        activity.notified().await;
        let mut until = Instant::now() + WINDOW;
        let mut busy = false;
        loop {
            // yield_now lets the runtime poll its IO driver without blocking
            // before this task runs again. The clock is read once every few
            // turns: under load this loop shares the thread with real work.
            for _ in 0..8 {
                tokio::task::yield_now().await;
                busy |= activity_since(&activity);
            }
            let now = Instant::now();
            if busy {
                until = now + WINDOW;
                busy = false;
            } else if now >= until {
                break;
            }
        }
    }
}

/// True when requests ran since the last check (consumes the permit).
fn activity_since(activity: &Notify) -> bool {
    use std::future::Future;
    let n = activity.notified();
    let mut n = std::pin::pin!(n);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    n.as_mut().poll(&mut cx).is_ready()
}
