//! `port-file`: the bound TCP port, for a harness that started the server with `port 0`.

/// Writes `port` and a newline to `path` atomically: a reader sees no file
/// or the whole number, never a partial one (a temporary file in the same
/// directory, then a rename over `path`).
pub fn write(path: &str, port: u16) -> std::io::Result<()> {
    let tmp = format!("{path}.tmp-{}", std::process::id());
    std::fs::write(&tmp, format!("{port}\n"))?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}
