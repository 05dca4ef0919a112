//! Reading configuration: redis.conf text (`load_text`) and redis-server's
//! command line (`from_args`), with Redis's fatal error texts.

use super::{bytes_path, find_param, os_error, Config};

impl Config {
    /// Loads config-file text (also what command-line flags turn into).
    /// Errors are the full fatal-error text redis-server prints before exiting.
    /// The text is bytes, as Redis reads it: a value may hold any byte.
    pub fn load_text(&mut self, text: &[u8]) -> Result<(), String> {
        for (n, raw) in text.split(|&c| c == b'\n').enumerate() {
            let line = trim_line(raw);
            if line.is_empty() || line.starts_with(b"#") {
                continue;
            }
            let shown = String::from_utf8_lossy(line);
            let fail = |msg: &str| {
                format!(
                    "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
                    crate::REDIS_VERSION,
                    n + 1,
                    shown,
                    msg
                )
            };
            let words = split_config_line(line)
                .ok_or_else(|| fail("Unbalanced quotes in configuration line"))?;
            if words.is_empty() {
                continue;
            }
            let name = String::from_utf8_lossy(&words[0]).to_ascii_lowercase();
            let args = &words[1..];
            match name.as_str() {
                "include" => {
                    if args.len() != 1 {
                        return Err(fail("Bad directive or wrong number of arguments"));
                    }
                    let t = std::fs::read(bytes_path(&args[0])).map_err(|e| {
                        format!(
                            "Fatal error, can't open config file '{}': {}",
                            String::from_utf8_lossy(&args[0]),
                            os_error(&e)
                        )
                    })?;
                    self.load_text(&t)?;
                }
                "user" if !args.is_empty() => {
                    let all = self.get("acl-pubsub-default") == Some("allchannels");
                    let user = crate::acl::file::check_config_user(&words, &self.acl_users, all)
                        .map_err(|e| fail(&e))?;
                    self.acl_users.push(user);
                }
                "rename-command" if args.len() == 2 => {
                    self.names.rename(&args[0], &args[1]).map_err(fail)?;
                }
                "loadmodule" if !args.is_empty() => self.loadmodules.push(args[0].clone()),
                // Oxidis has no sentinel mode: Redis outside it skips a bare
                // `sentinel` line and refuses one with arguments.
                "sentinel" if args.is_empty() => {}
                "sentinel" => return Err(fail("sentinel directive while not in sentinel mode")),
                "save" => {
                    // Several `save` lines accumulate, as in Redis; `save ""` clears.
                    let joined = String::from_utf8_lossy(&args.join(&b' ')).into_owned();
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
                    self.set("save", v.as_bytes()).map_err(|e| fail(&e))?;
                }
                _ => match find_param(&name) {
                    Some(prm) => {
                        // Redis's MULTI_ARG_CONFIG parameters take any number of
                        // words and check the count themselves; the others one.
                        let multi = MULTI_ARG.contains(&prm.name);
                        if !multi && args.len() != 1 {
                            return Err(fail("wrong number of arguments"));
                        }
                        // With no words: these two count them (as Redis's setters);
                        // the others take none as an empty value.
                        if args.is_empty()
                            && matches!(prm.name, "oom-score-adj-values" | "replicaof")
                        {
                            return Err(fail("wrong number of arguments"));
                        }
                        let v = args.join(&b' ');
                        self.set(prm.name, &v).map_err(|e| fail(&e))?;
                    }
                    // `module.option value`: for a module loaded later (Redis's
                    // module_configs_queue); no module ever loads here.
                    None if name.contains('.') => {
                        if args.is_empty() {
                            return Err(fail("Module config specified without value"));
                        }
                        self.module_configs = true;
                    }
                    None => return Err(fail("Bad directive or wrong number of arguments")),
                },
            }
        }
        Ok(())
    }
}

/// A config line without the spaces, tabs and CRs around it.
fn trim_line(raw: &[u8]) -> &[u8] {
    let blank = |c: &u8| matches!(c, b' ' | b'\t' | b'\r');
    let start = raw.iter().position(|c| !blank(c)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|c| !blank(c)).map_or(start, |e| e + 1);
    raw.get(start..end).unwrap_or_default()
}

/// Parameters given as several words (Redis's MULTI_ARG_CONFIG).
const MULTI_ARG: &[&str] = &[
    "save",
    "client-output-buffer-limit",
    "oom-score-adj-values",
    "bind",
    "replicaof",
    "latency-tracking-info-percentiles",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
];

/// Splits a config line as Redis does (`sdssplitargs`; `"\xff"` escapes
/// give any byte).
pub fn split_config_line(bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    crate::resp::inline::split(bytes)
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
    let mut options: Vec<u8> = Vec::new();
    let mut handled_last = true;
    while j < args.len() {
        let a = &args[j];
        if a == "-" && (j == 0 || j == args.len() - 1) {
            from_stdin = true;
        } else if handled_last && a.starts_with("--") {
            if !options.is_empty() {
                options.push(b'\n');
            }
            options.extend_from_slice(&a.as_bytes()[2..]);
            options.push(b' ');
            if split_config_line(a.as_bytes()).is_some_and(|w| w.len() == 1) {
                handled_last = false;
                let next_is_opt = args.get(j + 1).is_some_and(|n| n.starts_with("--"));
                if a.eq_ignore_ascii_case("--save") && (next_is_opt || j == args.len() - 1) {
                    options.extend_from_slice(b"\"\"");
                    handled_last = true;
                }
            } else {
                handled_last = true;
            }
        } else {
            options.extend_from_slice(quote(a.as_bytes()).as_bytes());
            options.push(b' ');
            handled_last = true;
        }
        j += 1;
    }
    let mut text: Vec<u8> = Vec::new();
    if let Some(path) = &file {
        let t = std::fs::read(path).map_err(|e| {
            format!(
                "Fatal error, can't open config file '{path}': {}",
                os_error(&e)
            )
        })?;
        text.extend_from_slice(&t);
        cfg.config_file = std::fs::canonicalize(path)
            .ok()
            .map(|p| p.display().to_string());
    }
    if from_stdin {
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut text).map_err(|e| e.to_string())?;
    }
    if !options.is_empty() {
        text.push(b'\n');
        text.extend_from_slice(&options);
    }
    cfg.load_text(&text)?;
    Ok(cfg)
}

/// Quotes a word the way `sdscatrepr` does, so the config parser reads it
/// back (the result is ASCII: other bytes become `\xNN`).
pub fn quote(s: &[u8]) -> String {
    let mut out = Vec::new();
    crate::server::monitor::repr(&mut out, s);
    String::from_utf8_lossy(&out).into_owned()
}
