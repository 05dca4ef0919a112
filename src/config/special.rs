//! Validation and canonical forms of the parameters with their own syntax
//! (save, notify-keyspace-events, client-output-buffer-limit, ...).

use super::{notify, parse_int, parse_memory, Config};

impl Config {
    /// Validation and canonical form for parameters with their own syntax.
    pub(super) fn special(&self, name: &str, value: &str) -> Result<String, String> {
        let words: Vec<&str> = value.split_whitespace().collect();
        match name {
            "notify-keyspace-events" => notify::parse_flags(value.as_bytes())
                .map(notify::flags_to_string)
                .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()),
            "save" => {
                if !words.len().is_multiple_of(2)
                    || words.iter().any(|p| parse_int(p).is_none_or(|n| n < 0))
                {
                    return Err("Invalid save parameters".into());
                }
                Ok(words.join(" "))
            }
            "unixsocketperm" => u32::from_str_radix(value, 8)
                .ok()
                .filter(|n| *n <= 0o777)
                .map(|n| format!("{n:o}"))
                .ok_or_else(|| "argument couldn't be parsed as an octal number".to_string()),
            "client-output-buffer-limit" => {
                if !words.len().is_multiple_of(4) {
                    return Err("Wrong number of arguments in buffer limit configuration.".into());
                }
                let mut classes = [
                    ("normal", ["0", "0", "0"].map(String::from)),
                    ("slave", ["268435456", "67108864", "60"].map(String::from)),
                    ("pubsub", ["33554432", "8388608", "60"].map(String::from)),
                ];
                let current: Vec<&str> = self
                    .get("client-output-buffer-limit")
                    .map(|s| s.split_whitespace().collect())
                    .unwrap_or_default();
                for (i, c) in current.chunks(4).enumerate() {
                    if c.len() == 4 && i < 3 {
                        classes[i].1 = [c[1], c[2], c[3]].map(String::from);
                    }
                }
                for c in words.chunks(4) {
                    let class = match c[0].to_ascii_lowercase().as_str() {
                        "normal" => 0,
                        "slave" | "replica" => 1,
                        "pubsub" => 2,
                        _ => {
                            return Err(
                                "Invalid client class specified in buffer limit configuration."
                                    .into(),
                            )
                        }
                    };
                    let hard = parse_memory(c[1]);
                    let soft = parse_memory(c[2]);
                    let secs = parse_int(c[3]).filter(|n| *n >= 0);
                    match (hard, soft, secs) {
                        (Some(h), Some(s), Some(t)) => {
                            classes[class].1 = [h.to_string(), s.to_string(), t.to_string()]
                        }
                        _ => return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into()),
                    }
                }
                Ok(classes
                    .iter()
                    .map(|(n, v)| format!("{n} {}", v.join(" ")))
                    .collect::<Vec<_>>()
                    .join(" "))
            }
            "oom-score-adj-values" => {
                if words.len() != 3 {
                    return Err("wrong number of arguments".into());
                }
                let mut out = Vec::new();
                for w in &words {
                    match parse_int(w) {
                        Some(n) if (-2000..=2000).contains(&n) => out.push(n.to_string()),
                        _ => return Err("Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into()),
                    }
                }
                Ok(out.join(" "))
            }
            "latency-tracking-info-percentiles" => {
                let mut out = Vec::new();
                for w in &words {
                    match w.parse::<f64>() {
                        Ok(f) if (0.0..=100.0).contains(&f) => {
                            // Redis prints "%f" and trims the trailing zeros.
                            let six = format!("{f:.6}");
                            out.push(six.trim_end_matches('0').trim_end_matches('.').to_string())
                        }
                        Ok(_) => return Err("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into()),
                        _ => return Err("Invalid latency-tracking-info-percentiles parameters".into()),
                    }
                }
                Ok(out.join(" "))
            }
            "cluster-announce-hostname" => {
                // Redis's NET_HOST_STR_LEN.
                if value.len() >= 256 {
                    Err("Hostnames must be less than 256 characters".into())
                } else if value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
                {
                    Ok(value.to_string())
                } else {
                    Err(
                        "Hostnames may only contain alphanumeric characters, hyphens or dots"
                            .into(),
                    )
                }
            }
            "replicaof" => {
                if words.is_empty()
                    || (words.len() == 2
                        && words[0].eq_ignore_ascii_case("no")
                        && words[1].eq_ignore_ascii_case("one"))
                {
                    Ok(String::new())
                } else if words.len() == 2 {
                    let port = strtol_port(words[1]).ok_or("Invalid master port")?;
                    Ok(format!("{} {port}", words[0]))
                } else {
                    Err("wrong number of arguments".into())
                }
            }
            _ => Ok(words.join(" ")),
        }
    }
}

/// `shutdown-on-sigint` / `shutdown-on-sigterm`: several of `save`, `nosave`,
/// `now`, `force` together (Redis's multi-argument flag enum), shown in that
/// order, or `default` for none; SAVE with NOSAVE is refused.
pub(super) fn shutdown_flags(words: &[&str], value: &str) -> Result<String, String> {
    let mut set = vec![false; words.len()];
    let given: Vec<String> = value
        .split_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    for w in &given {
        match words.iter().position(|k| k == w) {
            Some(i) => set[i] = true,
            None => {
                return Err(
                    "argument(s) must be one of the following: ".to_string() + &words.join(", ")
                )
            }
        }
    }
    if given.is_empty() {
        return Err("argument(s) must be one of the following: ".to_string() + &words.join(", "));
    }
    let on = |name: &str| {
        words
            .iter()
            .position(|k| *k == name)
            .is_some_and(|i| set[i])
    };
    if on("save") && on("nosave") {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    // `default` is no flag: it only counts when nothing else is given.
    let names: Vec<&str> = words
        .iter()
        .zip(&set)
        .filter(|(k, on)| **on && **k != "default")
        .map(|(k, _)| *k)
        .collect();
    Ok(if names.is_empty() {
        "default".to_string()
    } else {
        names.join(" ")
    })
}

/// The master port as Redis reads it (`strtol`, then 0..=65535 with
/// nothing left over): a sign is allowed, anything else fails.
fn strtol_port(s: &str) -> Option<i64> {
    let (neg, digits) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Past 5 digits (leading zeros aside) it is out of range either way.
    let n = digits.trim_start_matches('0');
    let v: i64 = if n.len() > 5 {
        i64::MAX
    } else {
        n.parse().unwrap_or(0)
    };
    let v = if neg { -v } else { v };
    (0..=65535).contains(&v).then_some(v)
}
