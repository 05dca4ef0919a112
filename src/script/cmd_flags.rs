//! The command flags a script call really has (Redis's `evalGetCommandFlags`, `fcallGetCommandFlags`).

use super::function::NO_WRITES;
use crate::command::args::Args;
use crate::command::spec::{flags, CommandSpec};
use crate::server::Server;

/// `allow-oom` in a shebang or `register_function` flags.
pub const ALLOW_OOM: u32 = 1 << 1;
/// `allow-stale`.
const ALLOW_STALE: u32 = 1 << 2;

/// The flags of a request as checks before running it see them: for
/// EVAL/EVALSHA(_RO) and FCALL(_RO) of a script that declares flags, the
/// command's write/denyoom/stale/may-replicate flags give way to what the
/// script declared; for everything else, the spec's flags.
pub fn effective(srv: &Server, spec: &CommandSpec, args: &Args) -> u32 {
    let declared = match spec.name {
        "eval" | "eval_ro" => super::shebang_flags(args.at(1)).ok().and_then(|(f, _)| f),
        "evalsha" | "evalsha_ro" => {
            let given = args.at(1);
            if given.len() != 40 {
                return spec.flags;
            }
            let mut sha = [0u8; 40];
            for (d, c) in sha.iter_mut().zip(given) {
                *d = c.to_ascii_lowercase();
            }
            super::lookup(&srv.script, &sha).and_then(|(_, _, f)| f)
        }
        "fcall" | "fcall_ro" => srv.script.functions.get(args.at(1)).map(|f| f.flags),
        _ => None,
    };
    match declared {
        Some(script) => from_script(spec.flags, script),
        None => spec.flags,
    }
}

/// Redis's `scriptPrepareForRun` OOM check for a script that declares
/// `flags`: refused when the command running it started over `maxmemory`
/// with nothing left to evict, unless it declared `allow-oom` or `no-writes`.
pub fn verify_start_oom(srv: &Server, flags: u32) -> Result<(), crate::error::Error> {
    if srv.evict.oom && srv.config.maxmemory != 0 && flags & (ALLOW_OOM | NO_WRITES) == 0 {
        return Err(crate::error::Error::ScriptOom);
    }
    Ok(())
}

/// Redis's `scriptFlagsToCmdFlags`: a script that declares flags writes
/// unless `no-writes`, is denied on OOM unless `no-writes` or `allow-oom`,
/// runs on a stale replica only with `allow-stale`, and is no longer a
/// "may replicate" command (its flags say whether it writes).
fn from_script(cmd: u32, script: u32) -> u32 {
    let mut f = cmd & !(flags::STALE | flags::DENYOOM | flags::WRITE | flags::MAY_REPLICATE);
    if script & (ALLOW_OOM | NO_WRITES) == 0 {
        f |= flags::DENYOOM;
    }
    if script & NO_WRITES == 0 {
        f |= flags::WRITE;
    }
    if script & ALLOW_STALE != 0 {
        f |= flags::STALE;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_flags_replace_the_commands() {
        use crate::script::function::FLAG_NAMES;
        assert_eq!(FLAG_NAMES[0], "no-writes");
        assert_eq!(FLAG_NAMES[1], "allow-oom");
        assert_eq!(FLAG_NAMES[2], "allow-stale");
        let eval = flags::NOSCRIPT | flags::MAY_REPLICATE | flags::STALE;
        assert_eq!(from_script(eval, NO_WRITES), flags::NOSCRIPT);
        assert_eq!(
            from_script(eval, 0),
            flags::NOSCRIPT | flags::WRITE | flags::DENYOOM
        );
        assert_eq!(
            from_script(eval, ALLOW_OOM | ALLOW_STALE),
            flags::NOSCRIPT | flags::WRITE | flags::STALE
        );
    }
}
