//! The periodic task (Redis's `serverCron`): active expiry, stats sampling, idle memory release.

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
    let mut ticks = 0u32;
    let mut closed_at_trim = 0;
    // Its own generator: what the commands draw (`Server::rng`, which OXIDIS
    // SEED sets) does not depend on when the cron ran.
    let mut rng = super::Rng::new(crate::clock::system_us() as u64);
    loop {
        let hz = srv.borrow().config.hz.max(1);
        tokio::time::sleep(Duration::from_millis(1000 / hz as u64)).await;
        let mut s = srv.borrow_mut();
        if s.cron_paused {
            continue;
        }
        crate::clock::begin_command();
        // As in Redis, active expiry stops while clients are paused (CLIENT
        // PAUSE), so the dataset does not change under a paused replica/failover.
        let paused = s
            .pause
            .is_some_and(|p| p.until_ms > crate::clock::real_now_us() / 1000);
        // A replica leaves expiry to its master (its DELs arrive in the
        // stream), but for keys its own clients gave a TTL.
        if !paused && s.active_expire {
            if !crate::repl::replica::i_am_master(&s) {
                crate::db::expire_replica_keys(&mut s.ks.dbs);
            } else {
                active_expire(&mut s, &mut rng);
            }
            let lazy = super::lazy_expire(&s);
            s.prop.flush_expired(lazy);
        }
        let now = crate::clock::now_ms();
        s.stats.sample_ops(now);
        // The peak follows used_memory here too; RSS and the allocator's
        // statistics are read when asked for (memory::sampled).
        super::memory::used_memory();
        crate::persist::cron(&mut s);
        crate::script::ldb_fork::reap(&mut s);
        if s.cluster.is_some() {
            crate::cluster::cron(&mut s);
        }
        crate::net::shutdown::cron(&mut s);
        ticks += 1;
        if ticks >= hz {
            ticks = 0;
            release_idle_memory(&mut s, &mut closed_at_trim);
            super::client_mem::cron(&mut s);
            crate::cmd::keyspace::migrate::close_timed_out();
            crate::repl::master::cron(&mut s);
        }
        crate::persist::aof::cron(&mut s);
        crate::command::dispatch::after_command(&mut s, &mut internal);
        super::tracking::before_sleep(&mut s, &mut internal);
        crate::repl::master::distribute(&mut s, None);
        internal.reply.buf.clear();
    }
}

/// Clients closed since the last trim that make the cron return freed heap
/// to the OS (each left a few KiB behind in the allocator's free lists).
const CLOSED_BEFORE_TRIM: u64 = 1000;
/// Clients idle this long give back their empty output buffer (as Redis's
/// clientsCron resizes the buffers of clients idle for more than 2 s).
const IDLE_BUFFER_SECS: u64 = 2;

/// Once a second: idle clients' empty output buffers are freed, and after
/// many clients have gone the heap they left is returned to the OS, so
/// resident memory comes back down after a burst of connections.
fn release_idle_memory(s: &mut Server, closed_at_trim: &mut u64) {
    let idle_before = crate::clock::now_ms() - IDLE_BUFFER_SECS as i64 * 1000;
    for cell in s.clients.values() {
        if let Ok(mut c) = cell.state.try_borrow_mut() {
            if s.reply_buffer_resizing
                && c.reply.buf.is_empty()
                && c.reply.buf.capacity() > 0
                && c.last_interaction < idle_before
            {
                c.reply.buf = bytes::BytesMut::new();
            }
        }
    }
    // Refused connections stay registered until their error is sent.
    let accepted = s.stats.connections_received + s.stats.rejected_connections;
    let closed = accepted.saturating_sub(s.clients.len() as u64);
    if closed.saturating_sub(*closed_at_trim) >= CLOSED_BEFORE_TRIM {
        *closed_at_trim = closed;
        release_free_memory();
    }
}

/// Hands free heap pages back to the OS at once (after FLUSHALL, or after
/// many clients left), so resident memory comes down without waiting for
/// the allocator's own decay.
pub fn release_free_memory() {
    super::memory::purge();
}

/// Samples keys with a TTL in every database and deletes expired ones,
/// repeating while more than a quarter of a sample was expired and the time
/// budget lasts. Never blocks the loop for long.
fn active_expire(s: &mut Server, rng: &mut super::Rng) {
    let start = Instant::now();
    for db in s.ks.dbs.iter_mut() {
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
