//! DEBUG: the gate's check, HELP, SLEEP, and the dispatch to the other `debug_*` modules.

use crate::command::Args;
use crate::error::CmdResult;
use crate::server::Ctx;

/// The gate's check of a `PROTECTED` command (DEBUG; MODULE LOAD, LOADEX,
/// UNLOAD): refused unless its `enable-debug-command` /
/// `enable-module-command` is `yes`, or `local` on a local connection
/// (Redis's `allowProtectedAction`, checked before AUTH).
pub fn protected_refusal(
    srv: &crate::server::Server,
    c: &crate::server::client::Client,
    spec: &crate::command::CommandSpec,
) -> Option<crate::error::Rejection> {
    let module = spec.name.starts_with("module|");
    let option = match module {
        true => srv.config.enable_module,
        false => srv.config.enable_debug,
    };
    let allowed = option == 1 || (option == 2 && super::is_local(c));
    (!allowed).then_some(crate::error::Rejection::Protected { module })
}

/// DEBUG HELP: Redis 7.0's list (a jemalloc build: MALLCTL included).
const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "AOF-FLUSH-SLEEP <microsec>",
    "    Server will sleep before flushing the AOF, this is used for testing.",
    "ASSERT",
    "    Crash by assertion failed.",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "CONFIG-REWRITE-FORCE-ALL",
    "    Like CONFIG REWRITE but writes all configuration options, including",
    "    keywords not listed in original configuration file or default values.",
    "CRASH-AND-RECOVER [<milliseconds>]",
    "    Hard crash and restart after a <milliseconds> delay (default 0).",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "ERROR <string>",
    "    Return a Redis protocol error with <string> as message. Useful for clients",
    "    unit tests to simulate Redis errors.",
    "LEAK <string>",
    "    Create a memory leak of the input string.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "HTSTATS <dbid>",
    "    Return hash table statistics of the specified Redis database.",
    "HTSTATS-KEY <key>",
    "    Like HTSTATS but for the hash table stored at <key>'s value.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "REPLICATE <string>",
    "    Replicates the provided string to replicas, allowing data divergence.",
    "MALLCTL <key> [<val>]",
    "    Get or set a malloc tuning integer.",
    "MALLCTL-STR <key> [<val>]",
    "    Get or set a malloc tuning string.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "DROP-CLUSTER-PACKET-FILTER <packet-type>",
    "    Drop all packets that match the filtered type. Set to -1 allow all packets.",
    "OOM",
    "    Crash the server simulating an out-of-memory error.",
    "PANIC",
    "    Crash the server simulating a panic.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix. These are not propagated to",
    "    replicas. Cluster slots are not respected so keys not belonging to the",
    "    current node can be created in cluster mode.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    "    * MERGE: conflicting keys will be loaded from RDB.",
    "    * NOFLUSH: the existing database will not be removed before load, but",
    "      conflicting keys will generate an exception and kill the server.",
    "    * NOSAVE: the database will be loaded from an existing RDB file.",
    "    Examples:",
    "    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    "      the database.",
    "    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    "      existing RDB file.",
    "    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    "      file to the database.",
    "RESTART [<milliseconds>]",
    "    Graceful restart: save config, db, restart after a <milliseconds> delay (default 0).",
    "SDSLEN <key>",
    "    Show low level SDS string info representing `key` and value.",
    "SEGFAULT",
    "    Crash the server with sigsegv.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    "    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the stringmatchlen() function.",
    "STRUCTSIZE",
    "    Return the size of different Redis core C structures.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "CLIENT-EVICTION",
    "    Show low level client eviction pools info (maxmemory-clients).",
    "PAUSE-CRON <0|1>",
    "    Stop periodic cron job processing.",
    "REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    "    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    "    In case NEVER is provided the last observed peak will never be reset",
    "    In case RESET is provided the peak reset time will be restored to the default value",
    "REPLYBUFFER RESIZING <0|1>",
    "    Enable or disable the reply buffer resize cron job",
    "CLUSTERLINK KILL <to|from|all> <node-id>",
    "    Kills the link based on the direction to/from (both) with the provided node.",
    "HELP",
    "    Prints this help.",
];

/// A `debug_*` module's entry: the reply when it knows the subcommand.
type SubRunner = fn(&mut Ctx, &[u8], &Args) -> Option<CmdResult>;

/// ```text
/// DEBUG <subcommand> [arg ...]
/// ```
/// Every subcommand of Redis 7.0's `debugCommand`, each with the number of
/// arguments it takes there; anything else gets Redis's unknown subcommand
/// error. The gate refuses DEBUG unless `enable-debug-command` allows it
/// (see [`debug_allowed`]).
pub fn debug(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let sub = args.next().unwrap_or_default();
    let n = args.len();
    if sub.eq_ignore_ascii_case(b"help") && n == 2 {
        if cfg!(feature = "alloc-jemalloc") {
            return crate::cmd::help_reply(ctx, HELP);
        }
        // Redis built without jemalloc has no MALLCTL lines (4 of them).
        let at = HELP
            .iter()
            .position(|l| l.starts_with("MALLCTL "))
            .unwrap_or(0);
        let lines: Vec<&str> = [&HELP[..at], &HELP[at + 4..]].concat();
        return crate::cmd::help_reply(ctx, &lines);
    }
    if sub.eq_ignore_ascii_case(b"sleep") && n == 3 {
        // Redis's strtod then nanosleep: junk is 0 s, a negative time returns at once.
        let secs = crate::types::number::parse_f64(args.at(2)).unwrap_or(0.0);
        if secs > 0.0 && secs.is_finite() {
            std::thread::sleep(std::time::Duration::from_secs_f64(secs.min(3600.0)));
        }
        ctx.out().ok();
        return Ok(());
    }
    if sub.eq_ignore_ascii_case(b"reload") {
        return super::persistence::debug_reload(ctx, args);
    }
    let runs: [SubRunner; 5] = [
        super::debug_more::run,
        super::debug_data::run,
        super::debug_flags::run,
        super::debug_introspect::run,
        super::debug_crash::run,
    ];
    for run in runs {
        if let Some(r) = run(ctx, sub, args) {
            return r;
        }
    }
    Err(super::wrong_sub_args(args, "DEBUG"))
}
