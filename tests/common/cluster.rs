//! Cluster-mode helpers: nodes.conf lines written by hand, and commands whose errors are compared as text.

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

/// Runs `words`; an error reply comes back as `CODE detail` (what the
/// tests compare between Redis and Oxidis).
#[allow(dead_code)]
pub fn try_cmd(c: &mut redis::Connection, words: &[&str]) -> Result<redis::Value, String> {
    let mut cmd = redis::cmd(words[0]);
    for w in &words[1..] {
        cmd.arg(*w);
    }
    cmd.query::<redis::Value>(c).map_err(|e| {
        let code = e.code().unwrap_or("");
        let detail = e.detail().unwrap_or("");
        format!("{code} {detail}").trim().to_string()
    })
}
