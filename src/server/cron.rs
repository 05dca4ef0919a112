//! The periodic task (Redis's `serverCron`): active expiry and stats sampling.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::client::{Client, ConnKind};
use super::Server;

/// Keys sampled per database per round (Redis's ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP).
const SAMPLES: usize = 20;
/// Longest one expiry pass may hold the thread.
const BUDGET: Duration = Duration::from_millis(1);

pub async fn run(srv: Rc<RefCell<Server>>) {
    // Events raised by the cron (expired keys) are published as this client.
    let mut internal = Client::new(0, String::new(), String::new(), ConnKind::Script, false);
    loop {
        let hz = srv.borrow().config.hz.max(1);
        tokio::time::sleep(Duration::from_millis(1000 / hz as u64)).await;
        let mut s = srv.borrow_mut();
        crate::clock::begin_command();
        // As in Redis, active expiry stops while clients are paused (CLIENT
        // PAUSE), so the dataset does not change under a paused replica/failover.
        let paused = s
            .pause
            .is_some_and(|p| p.until_ms > crate::clock::real_now_us() / 1000);
        if !paused && s.active_expire {
            active_expire(&mut s);
            let lazy = super::lazy_expire(&s);
            s.prop.flush_expired(lazy);
        }
        let now = crate::clock::now_ms();
        s.stats.sample_ops(now);
        crate::command::dispatch::after_command(&mut s, &mut internal);
        super::tracking::before_sleep(&mut s, &mut internal);
        internal.reply.buf.clear();
    }
}

/// Samples keys with a TTL in every database and deletes expired ones,
/// repeating while more than a quarter of a sample was expired and the time
/// budget lasts. Never blocks the loop for long.
fn active_expire(s: &mut Server) {
    let start = Instant::now();
    let Server { ks, rng, .. } = s;
    for db in ks.dbs.iter_mut() {
        loop {
            if db.expires_len() == 0 {
                break;
            }
            let (sampled, deleted) = db.expire_sample(SAMPLES, || rng.next_u64());
            if sampled == 0 || deleted * 4 <= sampled || start.elapsed() > BUDGET {
                break;
            }
        }
        if start.elapsed() > BUDGET {
            break;
        }
    }
    let ms = start.elapsed().as_millis() as u64;
    crate::cmd::server::latency::monitor_sample(s, "expire-cycle", ms);
}
