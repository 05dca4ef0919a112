//! The background fsync thread (Redis's `bio` AOF job): `appendfsync everysec` fsyncs there, off the data thread.

use std::fs::File;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

enum Job {
    Fsync(Arc<File>),
    /// A file the AOF stopped appending to: fsynced, then closed (dropped).
    FsyncAndClose(Arc<File>),
}

/// Started on first use; jobs run in order. `pending` counts jobs queued or
/// running (INFO's `aof_pending_bio_fsync`, and the everysec "postpone" rule).
#[derive(Default)]
pub struct Bio {
    tx: Option<Sender<Job>>,
    pending: Arc<AtomicUsize>,
    /// 0 while fsyncs succeed, else the errno of the last failed one.
    errno: Arc<AtomicI32>,
}

impl Bio {
    pub fn fsync(&mut self, f: &Arc<File>) {
        self.submit(Job::Fsync(f.clone()));
    }

    pub fn fsync_and_close(&mut self, f: Arc<File>) {
        self.submit(Job::FsyncAndClose(f));
    }

    /// Jobs not finished yet.
    pub fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// The errno of a failed background fsync, until one succeeds again.
    pub fn error(&self) -> Option<i32> {
        match self.errno.load(Ordering::Acquire) {
            0 => None,
            e => Some(e),
        }
    }

    /// Forgets a background error (the AOF was turned on again).
    pub fn clear_error(&self) {
        self.errno.store(0, Ordering::Release);
    }

    fn submit(&mut self, job: Job) {
        if self.tx.is_none() {
            let (tx, rx) = channel::<Job>();
            let (pending, errno) = (self.pending.clone(), self.errno.clone());
            let spawned = std::thread::Builder::new()
                .name("bio_aof_fsync".into())
                .spawn(move || {
                    for job in rx {
                        let f = match &job {
                            Job::Fsync(f) | Job::FsyncAndClose(f) => f,
                        };
                        match f.sync_data() {
                            Ok(()) => errno.store(0, Ordering::Release),
                            Err(e) => {
                                let code = e.raw_os_error().unwrap_or(libc_eio());
                                if errno.swap(code, Ordering::AcqRel) == 0 {
                                    crate::log::warning(&format!(
                                        "Fail to fsync the AOF file: {}",
                                        super::manifest::os(&e)
                                    ));
                                }
                            }
                        }
                        drop(job);
                        pending.fetch_sub(1, Ordering::AcqRel);
                    }
                });
            match spawned {
                Ok(_) => self.tx = Some(tx),
                Err(e) => {
                    // No thread: fsync here rather than never.
                    crate::log::warning(&format!("Can't start the AOF fsync thread: {e}"));
                    let f = match &job {
                        Job::Fsync(f) | Job::FsyncAndClose(f) => f,
                    };
                    let _ = f.sync_data();
                    return;
                }
            }
        }
        self.pending.fetch_add(1, Ordering::AcqRel);
        if let Some(tx) = &self.tx {
            if tx.send(job).is_err() {
                self.pending.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
}

/// EIO, for an error without an errno.
fn libc_eio() -> i32 {
    5
}
