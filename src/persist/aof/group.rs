//! `appendfsync always` as Redis's event loop does it: one write + fsync per round covers every client whose commands ran in it, and no reply leaves before.

use std::cell::RefCell;
use std::rc::Rc;

use tokio::sync::Notify;

use super::{Fsync, State};
use crate::server::Server;

/// The sync task's two signals: `kick` asks for a round, `round` tells the
/// connections waiting to reply that their commands are on disk.
pub struct Group {
    kick: Rc<Notify>,
    round: Rc<Notify>,
}

/// Called by a connection before it writes replies. Without the AOF, or
/// with `everysec`/`no`, the buffer is written at once (a write(2), so a
/// crash of the process loses nothing acknowledged). With `always` the
/// connection waits for the sync task's next round instead of fsyncing on
/// its own: that task runs after every connection ready now has run its
/// requests (Redis's beforeSleep after the epoll batch), so one fsync
/// serves them all.
pub async fn before_reply(srv: &Rc<RefCell<Server>>) {
    // The bytes this reply depends on: everything appended so far. Commands
    // other clients run meanwhile append more, which a later round covers.
    let mut target = None;
    loop {
        let round = {
            let Ok(mut s) = srv.try_borrow_mut() else {
                return;
            };
            if s.aof.state == State::Off {
                return;
            }
            if s.aof.fsync != Fsync::Always || super::writer::skip_fsync(&s) {
                super::writer::flush(&mut s, false);
                return;
            }
            let t = *target.get_or_insert_with(|| super::writer::appended_total(&s));
            if s.aof.synced_total >= t {
                return;
            }
            let g = s.aof.group.get_or_insert_with(|| start(srv));
            g.kick.notify_one();
            g.round.clone()
        };
        round.notified().await;
    }
}

fn start(srv: &Rc<RefCell<Server>>) -> Group {
    let (kick, round) = (Rc::new(Notify::new()), Rc::new(Notify::new()));
    tokio::task::spawn_local(run(Rc::downgrade(srv), kick.clone(), round.clone()));
    Group { kick, round }
}

async fn run(srv: std::rc::Weak<RefCell<Server>>, kick: Rc<Notify>, round: Rc<Notify>) {
    loop {
        kick.notified().await;
        // Every connection already woken runs its requests first.
        tokio::task::yield_now().await;
        let Some(srv) = srv.upgrade() else {
            return;
        };
        if let Ok(mut s) = srv.try_borrow_mut() {
            super::writer::flush(&mut s, false);
        }
        round.notify_waiters();
    }
}
