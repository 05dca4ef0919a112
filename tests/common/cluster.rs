//! Cluster-mode helpers: nodes.conf lines written by hand (nodes learn each other without a bus).

/// A node line for a hand-made nodes.conf: a master at 127.0.0.1:`port`
/// (bus port +10000) with `epoch` and `slots`; `myself` marks this node's own line.
pub fn conf_line(id: &str, port: u16, myself: bool, epoch: u64, slots: &str) -> String {
    let flags = if myself { "myself,master" } else { "master" };
    let link = if myself { "connected" } else { "disconnected" };
    format!(
        "{id} 127.0.0.1:{port}@{} {flags} - 0 0 {epoch} {link} {slots}\n",
        port as u32 + 10000
    )
}
