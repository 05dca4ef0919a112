//! Reading configuration: redis.conf text (`load_text`) and redis-server's
//! command line (`from_args`), with Redis's fatal error texts.

use super::{find_param, os_error, Config, Kind};

impl Config {
    /// Loads config-file text (also what command-line flags turn into).
    /// Errors are the full fatal-error text redis-server prints before exiting.
    pub fn load_text(&mut self, text: &str) -> Result<(), String> {
        for (n, raw) in text.split('\n').enumerate() {
            let line = raw.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |msg: &str| {
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
                    crate::REDIS_VERSION,
                    n + 1,
                    line,
                    msg
                )
            };
            let words = split_config_line(line)
                .ok_or_else(|| fail("Unbalanced quotes in configuration line"))?;
            if words.is_empty() {
                continue;
            }
            let name = words[0].to_ascii_lowercase();
            let args = &words[1..];
            match name.as_str() {
                "include" => {
                    if args.len() != 1 {
                        return Err(fail("Bad directive or wrong number of arguments"));
                    }
                    let t = std::fs::read_to_string(&args[0]).map_err(|e| {
                        format!(
                            "Fatal error, can't open config file '{}': {}",
                            args[0],
                            os_error(&e)
                        )
                    })?;
                    self.load_text(&t)?;
                }
                "rename-command" | "user" | "loadmodule" | "sentinel" => {
                    self.warnings.push(format!(
                        "'{name}' is not supported by Oxidis and was ignored"
                    ));
                }
                "save" => {
                    // Several `save` lines accumulate, as in Redis; `save ""` clears.
                    let joined = args.join(" ");
                    if joined.trim().is_empty() && args.len() > 1 {
                        return Err(fail("Invalid save parameters"));
                    }
                    let cur = if self.save_seen {
                        self.get("save").unwrap_or("").to_string()
                    } else {
                        String::new()
                    };
                    self.save_seen = true;
                    let v = if joined.trim().is_empty() {
                        String::new()
                    } else if cur.is_empty() {
                        joined
                    } else {
                        format!("{cur} {joined}")
                    };
                    self.set("save", &v).map_err(|e| fail(&e))?;
                }
                _ => match find_param(&name) {
                    Some(prm) => {
                        let multi = matches!(prm.kind, Kind::Special)
                            && !matches!(
                                prm.name,
                                "dir" | "unixsocketperm" | "cluster-announce-hostname"
                            );
                        if !multi && args.len() != 1 {
                            return Err(fail("wrong number of arguments"));
                        }
                        if multi && args.is_empty() {
                            return Err(fail("wrong number of arguments"));
                        }
                        let v = args.join(" ");
                        self.set(prm.name, &v).map_err(|e| fail(&e))?;
                    }
                    None => return Err(fail("Bad directive or wrong number of arguments")),
                },
            }
        }
        Ok(())
    }
}

/// Splits a config line as Redis does (`sdssplitargs`).
pub fn split_config_line(line: &str) -> Option<Vec<String>> {
    let words = crate::resp::inline::split(line.as_bytes())?;
    Some(
        words
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect(),
    )
}

/// Turns `redis-server` command-line arguments into a Config, exactly as
/// `redis-server [config-file] [--name value ...] [-]` reads them: the file,
/// then stdin when `-` is given, then the options, one line per `--name`.
pub fn from_args(args: &[String]) -> Result<Config, String> {
    let mut cfg = Config::default();
    let mut j = 0;
    let mut file = None;
    if let Some(first) = args.first() {
        if !first.starts_with('-') {
            file = Some(first.clone());
            j = 1;
        }
    }
    let mut from_stdin = false;
    let mut options = String::new();
    let mut handled_last = true;
    while j < args.len() {
        let a = &args[j];
        if a == "-" && (j == 0 || j == args.len() - 1) {
            from_stdin = true;
        } else if handled_last && a.starts_with("--") {
            if !options.is_empty() {
                options.push('\n');
            }
            options.push_str(&a[2..]);
            options.push(' ');
            if split_config_line(a).is_some_and(|w| w.len() == 1) {
                handled_last = false;
                let next_is_opt = args.get(j + 1).is_some_and(|n| n.starts_with("--"));
                if a.eq_ignore_ascii_case("--save") && (next_is_opt || j == args.len() - 1) {
                    options.push_str("\"\"");
                    handled_last = true;
                }
            } else {
                handled_last = true;
            }
        } else {
            options.push_str(&quote(a));
            options.push(' ');
            handled_last = true;
        }
        j += 1;
    }
    let mut text = String::new();
    if let Some(path) = &file {
        let t = std::fs::read(path).map_err(|e| {
            format!(
                "Fatal error, can't open config file '{path}': {}",
                os_error(&e)
            )
        })?;
        text.push_str(&String::from_utf8_lossy(&t));
        cfg.config_file = std::fs::canonicalize(path)
            .ok()
            .map(|p| p.display().to_string());
    }
    if from_stdin {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(|e| e.to_string())?;
        text.push_str(&s);
    }
    if !options.is_empty() {
        text.push('\n');
        text.push_str(&options);
    }
    cfg.load_text(&text)?;
    Ok(cfg)
}

/// Quotes a word the way `sdscatrepr` does, so the config parser reads it back.
pub fn quote(s: &str) -> String {
    let mut out = Vec::new();
    crate::server::monitor::repr(&mut out, s.as_bytes());
    String::from_utf8_lossy(&out).into_owned()
}
