//! Command errors with Redis's exact texts; the only place an error gets its code prefix.

use std::borrow::Cow;
use std::fmt;

/// An error a command answers with. The connection goes on afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// `ERR syntax error`
    Syntax,
    /// `WRONGTYPE Operation against a key holding the wrong kind of value`
    WrongType,
    /// `ERR value is not an integer or out of range`
    NotInteger,
    /// `ERR value is not a valid float`
    NotFloat,
    /// `ERR increment or decrement would overflow`
    Overflow,
    /// `ERR no such key`
    NoSuchKey,
    /// `ERR index out of range`
    IndexOutOfRange,
    /// `ERR value is out of range, must be positive`
    MustBePositive,
    /// `ERR invalid expire time in '<cmd>' command`
    InvalidExpire(String),
    /// `ERR wrong number of arguments for '<cmd>' command`
    Arity(String),
    /// `ERR unknown subcommand '<sub>'. Try <CMD> HELP.`
    UnknownSubcommand { sub: String, cmd: String },
    /// `NOAUTH Authentication required.`
    NoAuth,
    /// `WRONGPASS invalid username-password pair or user is disabled.`
    WrongPass,
    /// `ERR DB index is out of range`
    DbIndex,
    /// `ERR string exceeds maximum allowed size (proto-max-bulk-len)`
    StringTooLong,
    /// `OOM command not allowed when used memory > 'maxmemory'.`
    Oom,
    /// `OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'`
    /// (a script with a shebang, without `allow-oom` or `no-writes`)
    ScriptOom,
    /// `ERR max number of clients reached` (a connection over `maxclients`)
    MaxClients,
    /// `ERR numkeys should be greater than 0` (LMPOP, ZMPOP, SINTERCARD, ...)
    NumKeysPositive,
    /// `ERR count should be greater than 0` (LMPOP, ZMPOP COUNT)
    CountPositive,
    /// `ERR value is out of range` (HRANDFIELD, ZRANDMEMBER counts)
    OutOfRange,
    /// `ERR timeout is negative`
    TimeoutNegative,
    /// `ERR timeout is not a float or out of range` (timeouts in seconds)
    TimeoutNotFloat,
    /// `ERR timeout is not an integer or out of range` (timeouts in milliseconds)
    TimeoutNotInteger,
    /// `ERR invalid cursor` (SCAN family)
    InvalidCursor,
    /// `ERR` and nothing more (Redis's `shared.err`: a SAVE that failed; the log says why)
    Bare,
    /// Any other `ERR <message>`.
    Msg(Cow<'static, str>),
    /// A full error line that already carries its own code (`BUSYKEY ...`, `NOSCRIPT ...`).
    Coded(Cow<'static, str>),
}

pub type CmdResult = Result<(), Error>;

impl Error {
    pub fn msg(s: impl Into<Cow<'static, str>>) -> Self {
        Error::Msg(s.into())
    }

    pub fn coded(s: impl Into<Cow<'static, str>>) -> Self {
        Error::Coded(s.into())
    }

    /// `EXECABORT Transaction discarded because of: <rejection>`, the
    /// answer to an EXEC the gate rejected.
    pub fn exec_abort(rejection: &str) -> Self {
        Error::Coded(format!("EXECABORT Transaction discarded because of: {rejection}").into())
    }

    /// The wire text without the leading `-` (code included).
    pub fn text(&self) -> Cow<'static, str> {
        match self {
            Error::Syntax => "ERR syntax error".into(),
            Error::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value".into()
            }
            Error::NotInteger => "ERR value is not an integer or out of range".into(),
            Error::NotFloat => "ERR value is not a valid float".into(),
            Error::Overflow => "ERR increment or decrement would overflow".into(),
            Error::NoSuchKey => "ERR no such key".into(),
            Error::IndexOutOfRange => "ERR index out of range".into(),
            Error::MustBePositive => "ERR value is out of range, must be positive".into(),
            Error::InvalidExpire(cmd) => {
                format!("ERR invalid expire time in '{cmd}' command").into()
            }
            Error::Arity(cmd) => {
                format!("ERR wrong number of arguments for '{cmd}' command").into()
            }
            Error::UnknownSubcommand { sub, cmd } => {
                format!("ERR unknown subcommand '{sub}'. Try {cmd} HELP.").into()
            }
            Error::NoAuth => "NOAUTH Authentication required.".into(),
            Error::WrongPass => {
                "WRONGPASS invalid username-password pair or user is disabled.".into()
            }
            Error::DbIndex => "ERR DB index is out of range".into(),
            Error::StringTooLong => {
                "ERR string exceeds maximum allowed size (proto-max-bulk-len)".into()
            }
            Error::Oom => "OOM command not allowed when used memory > 'maxmemory'.".into(),
            Error::ScriptOom => "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'".into(),
            Error::MaxClients => "ERR max number of clients reached".into(),
            Error::NumKeysPositive => "ERR numkeys should be greater than 0".into(),
            Error::CountPositive => "ERR count should be greater than 0".into(),
            Error::OutOfRange => "ERR value is out of range".into(),
            Error::TimeoutNegative => "ERR timeout is negative".into(),
            Error::TimeoutNotFloat => "ERR timeout is not a float or out of range".into(),
            Error::TimeoutNotInteger => "ERR timeout is not an integer or out of range".into(),
            Error::InvalidCursor => "ERR invalid cursor".into(),
            Error::Bare => "ERR".into(),
            Error::Msg(m) => format!("ERR {m}").into(),
            Error::Coded(c) => c.clone(),
        }
    }

    /// The first word of the error (`ERR`, `WRONGTYPE`, ...), used for error stats.
    pub fn code(&self) -> String {
        self.text().split(' ').next().unwrap_or("ERR").to_string()
    }
}

/// Why the gate (`command::gate`) refused a command, one variant per stage
/// of Redis's `processCommand` (and of `scriptCall` for `redis.call`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Lookup: no such command, or no such subcommand (the error says which).
    Unknown(Error),
    /// Arity: `wrong number of arguments for '<cmd>' command`.
    Arity(&'static str),
    /// Protected: DEBUG, or MODULE LOAD|LOADEX|UNLOAD (`module`), while its
    /// `enable-debug-command` / `enable-module-command` refuses it (before auth).
    Protected { module: bool },
    /// Auth: the connection has not authenticated.
    NoAuth,
    /// No-multi: a `no_multi` command inside MULTI.
    NoMulti,
    /// OOM: a `denyoom` command while used memory is over `maxmemory`.
    Oom,
    /// Disk error: a write while the AOF cannot be written (the OS's reason).
    MisconfAof(String),
    /// Read-only replica: a write on a replica with `replica-read-only yes`.
    ReadOnlyReplica,
    /// Stale replica: the link to the master is down and
    /// `replica-serve-stale-data` is `no`.
    MasterDown,
    /// `redis.call` on a stale replica: a command without the `stale` flag.
    ScriptStaleReplica,
    /// A replica client (after SYNC/PSYNC) sent a command that reads or
    /// writes the keyspace.
    ReplicaKeyspace,
    /// Min-replicas: a write while too few replicas are in good standing.
    NoReplicas,
    /// Pub/sub context (RESP2): only the (un)subscribe family, PING, QUIT, RESET.
    PubSubContext(&'static str),
    /// LOADING: a command without the `loading` flag while the dataset loads.
    Loading,
    /// MISCONF: a write (or PING) after a failed BGSAVE with save points set
    /// and `stop-writes-on-bgsave-error yes` (`persist::write_denied`).
    MisconfRdb,
    /// BUSY: a script runs past `busy-reply-threshold` (FUNCTION when `function`).
    Busy { function: bool },
    /// Test controls: OXIDIS while `enable-test-controls` is `no` (before
    /// arity and auth, so every form of it gets this one answer).
    TestControlsDisabled,
    /// `redis.call`: no such command.
    ScriptUnknown,
    /// `redis.call`: wrong number of arguments.
    ScriptArity,
    /// `redis.call`: a `noscript` command.
    ScriptNoScript,
    /// `redis.call`: a write (or may-replicate) command from a read-only script.
    ScriptWriteInReadOnly,
    /// ACL: the user may not run the command, or touch one of its keys or
    /// channels (the command's full name; the text depends on the stage).
    NoPerm(crate::acl::Denied, &'static str, PermStage),
    /// Cluster mode: the request's keys are not served here (MOVED, ASK,
    /// CROSSSLOT, TRYAGAIN, CLUSTERDOWN).
    Cluster(crate::cluster::redirect::Redirect),
    /// Cluster mode, `redis.call`: the same, in the script's words.
    ClusterScript(crate::cluster::redirect::Redirect),
    /// Cluster mode, `redis.call`: a key of another slot than the script's.
    ScriptCrossSlot,
}

/// Where an ACL denial happened: each answers with its own text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermStage {
    /// A request (run or queued).
    Request,
    /// A queued command at EXEC: the rules changed since it was queued.
    Exec,
    /// `redis.call` in a script or function.
    Script,
}

/// The ACL denial texts (Redis's `processCommand`, `execCommand`, `scriptVerifyACL`).
fn no_perm(d: crate::acl::Denied, cmd: &str, stage: PermStage) -> Error {
    use crate::acl::Denied;
    match stage {
        PermStage::Request => Error::coded(match d {
            Denied::Command => {
                format!("NOPERM this user has no permissions to run the '{cmd}' command")
            }
            Denied::Key(_) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .into()
            }
            Denied::Channel(_) => "NOPERM this user has no permissions to access one of the channels used as arguments".into(),
        }),
        PermStage::Exec => Error::coded(format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {}",
            match d {
                Denied::Command => "no permission to execute the command or subcommand",
                Denied::Key(_) => "no permission to touch the specified keys",
                Denied::Channel(_) => "no permission to access one of the channels used as arguments",
            }
        )),
        PermStage::Script => Error::msg(format!(
            "The user executing the script {}",
            match d {
                Denied::Command => "can't run this command or subcommand",
                Denied::Key(_) => {
                    "can't access at least one of the keys mentioned in the command arguments"
                }
                Denied::Channel(_) => "can't publish to the channel mentioned in the command",
            }
        )),
    }
}

/// MODULE LOAD / LOADEX that did not load (every one: Oxidis loads no modules).
/// `-LOADING`: a command without the `loading` flag, or CONFIG SET of a
/// parameter that must not change, while the dataset loads.
pub const LOADING: &str = "LOADING Redis is loading the dataset in memory";
pub const MODULE_LOAD_FAILED: &str = "Error loading the extension. Please check the server logs.";
/// MODULE UNLOAD of a name no module has.
pub const MODULE_UNLOAD_NO_SUCH: &str = "Error unloading module: no such module with that name";

/// OXIDIS (test controls, `cmd::testctl`) while the switch is off.
pub const TESTCTL_DISABLED: &str =
    "OXIDIS test controls are disabled: start the server with --enable-test-controls yes";
/// OXIDIS CHECKPOINT RESTORE / DEL of a name no checkpoint has.
pub const TESTCTL_NO_CHECKPOINT: &str = "no such checkpoint";
/// OXIDIS CLOCK SET before the epoch, or a move that leaves it.
pub const TESTCTL_CLOCK_RANGE: &str = "the clock must stay between the epoch and year 275000";
/// OXIDIS FAULT ADD ... DELAY beyond a day.
pub const TESTCTL_DELAY_RANGE: &str = "DELAY must be between 0 and 86400000 milliseconds";

/// Redis's `shared.bgsaveerr`.
/// BGSAVE while a BGSAVE runs (SAVE too).
pub const BGSAVE_IN_PROGRESS: &str = "Background save already in progress";
/// BGSAVE while another child (an AOF rewrite) runs, without SCHEDULE.
pub const BGSAVE_OTHER_CHILD: &str = "Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.";
pub const MISCONF_RDB: &str = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error.";

impl Rejection {
    /// The error the client (or the script) receives.
    pub fn error(&self) -> Error {
        match self {
            Rejection::Unknown(e) => e.clone(),
            Rejection::Arity(cmd) => Error::Arity((*cmd).into()),
            Rejection::Protected { module } => {
                let (cmd, opt) = match module {
                    false => ("DEBUG", "enable-debug-command"),
                    true => ("MODULE", "enable-module-command"),
                };
                Error::Msg(format!("{cmd} command not allowed. If the {opt} option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.").into())
            }
            Rejection::NoAuth => Error::NoAuth,
            Rejection::NoMulti => Error::msg("Command not allowed inside a transaction"),
            Rejection::Oom => Error::Oom,
            Rejection::MisconfAof(why) => {
                Error::coded(format!("MISCONF Errors writing to the AOF file: {why}"))
            }
            Rejection::ReadOnlyReplica => {
                Error::coded("READONLY You can't write against a read only replica.")
            }
            Rejection::MasterDown => Error::coded(
                "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            ),
            Rejection::ReplicaKeyspace => Error::msg("Replica can't interact with the keyspace"),
            Rejection::ScriptStaleReplica => {
                Error::msg("Can not execute the command on a stale replica")
            }
            Rejection::NoReplicas => Error::coded("NOREPLICAS Not enough good replicas to write."),
            Rejection::PubSubContext(cmd) => Error::Msg(
                format!(
                    "Can't execute '{cmd}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
                )
                .into(),
            ),
            Rejection::Loading => Error::coded(LOADING),
            Rejection::MisconfRdb => Error::coded(MISCONF_RDB),
            Rejection::Busy { function: false } => Error::coded(crate::script::busy::BUSY_EVAL),
            Rejection::Busy { function: true } => {
                Error::coded(crate::script::busy::BUSY_FUNCTION)
            }
            Rejection::TestControlsDisabled => Error::msg(TESTCTL_DISABLED),
            Rejection::ScriptUnknown => Error::msg("Unknown Redis command called from script"),
            Rejection::ScriptArity => {
                Error::msg("Wrong number of args calling Redis command from script")
            }
            Rejection::ScriptNoScript => {
                Error::msg("This Redis command is not allowed from script")
            }
            Rejection::ScriptWriteInReadOnly => {
                Error::msg("Write commands are not allowed from read-only scripts.")
            }
            Rejection::NoPerm(d, cmd, stage) => no_perm(*d, cmd, *stage),
            Rejection::Cluster(r) => r.error(),
            Rejection::ClusterScript(r) => r.script_error(),
            Rejection::ScriptCrossSlot => Error::msg(cluster::SCRIPT_CROSS_SLOT),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text())
    }
}

impl std::error::Error for Error {}

/// A malformed request: answered `-ERR Protocol error: ...`, then the
/// connection closes (Redis's `setProtocolError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    TooBigInline,
    UnbalancedQuotes,
    TooBigMbulkCount,
    InvalidMbulkCount,
    UnauthMbulkCount,
    TooBigBulkCount,
    /// The byte found where a `$` header must start.
    ExpectedDollar(u8),
    InvalidBulkLength,
    UnauthBulkLength,
}

impl ProtocolError {
    /// The reply without `-` (bytes: the offending byte goes out as it came, as C's `%c`).
    pub fn reply(&self) -> Vec<u8> {
        let detail: &str = match self {
            ProtocolError::TooBigInline => "too big inline request",
            ProtocolError::UnbalancedQuotes => "unbalanced quotes in request",
            ProtocolError::TooBigMbulkCount => "too big mbulk count string",
            ProtocolError::InvalidMbulkCount => "invalid multibulk length",
            ProtocolError::UnauthMbulkCount => "unauthenticated multibulk length",
            ProtocolError::TooBigBulkCount => "too big bulk count string",
            ProtocolError::ExpectedDollar(b) => {
                let mut v = b"ERR Protocol error: expected '$', got '".to_vec();
                v.push(*b);
                v.push(b'\'');
                return v;
            }
            ProtocolError::InvalidBulkLength => "invalid bulk length",
            ProtocolError::UnauthBulkLength => "unauthenticated bulk length",
        };
        format!("ERR Protocol error: {detail}").into_bytes()
    }

    /// Redis's shorter reason, for the log line.
    pub fn reason(&self) -> &'static str {
        match self {
            ProtocolError::TooBigInline => "too big inline request",
            ProtocolError::UnbalancedQuotes => "unbalanced quotes in inline request",
            ProtocolError::TooBigMbulkCount => "too big mbulk count string",
            ProtocolError::InvalidMbulkCount => "invalid mbulk count",
            ProtocolError::UnauthMbulkCount => "unauth mbulk count",
            ProtocolError::TooBigBulkCount => "too big bulk count string",
            ProtocolError::ExpectedDollar(_) => "expected $ but got something else",
            ProtocolError::InvalidBulkLength => "invalid bulk length",
            ProtocolError::UnauthBulkLength => "unauth bulk length",
        }
    }
}

impl Error {
    /// A command that panicked (a bug) and was stopped (see `server::fault`).
    /// Redis has no such reply: it would have crashed.
    pub fn internal(cmd: &str) -> Error {
        Error::Msg(
            format!(
                "internal error in '{cmd}' command, the command was not completed (see the server log)"
            )
            .into(),
        )
    }
}

/// The geo commands' `ERR` texts (`cmd::geo`, Redis's geo.c).
pub mod geo {
    use super::Error;

    pub const NEED_RADIUS: &str = "need numeric radius";
    pub const NEED_WIDTH: &str = "need numeric width";
    pub const NEED_HEIGHT: &str = "need numeric height";
    pub const RADIUS_NEGATIVE: &str = "radius cannot be negative";
    pub const BOX_NEGATIVE: &str = "height or width cannot be negative";
    pub const UNIT: &str = "unsupported unit provided. please use M, KM, FT, MI";
    pub const NO_MEMBER: &str = "could not decode requested zset member";
    pub const COUNT_POSITIVE: &str = "COUNT must be > 0";
    pub const ANY_NEEDS_COUNT: &str = "the ANY argument requires COUNT argument";

    /// A position outside longitude ±180 or the Mercator latitudes (C's `%f`).
    pub fn invalid_lonlat(lon: f64, lat: f64) -> Error {
        Error::msg(format!("invalid longitude,latitude pair {lon:.6},{lat:.6}"))
    }

    /// STORE/STOREDIST (or GEOSEARCHSTORE) with WITHDIST, WITHHASH or WITHCOORD.
    pub fn store_with(searchstore: bool) -> Error {
        let what = if searchstore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        Error::msg(format!(
            "{what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        ))
    }

    /// GEOSEARCH* without FROMMEMBER or FROMLONLAT; `cmd` as the client spelled it.
    pub fn need_from(cmd: &str) -> Error {
        Error::msg(format!(
            "exactly one of FROMMEMBER or FROMLONLAT can be specified for {cmd}"
        ))
    }

    /// GEOSEARCH* without BYRADIUS or BYBOX; `cmd` as the client spelled it.
    pub fn need_by(cmd: &str) -> Error {
        Error::msg(format!(
            "exactly one of BYRADIUS and BYBOX can be specified for {cmd}"
        ))
    }
}

/// Texts of `ERR` errors raised from one place each, for `Error::msg`.
pub mod text {
    /// DEBUG PROTOCOL with an unknown type name.
    pub const DEBUG_PROTOCOL_TYPE: &str = "Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false";
    /// A reply that exists only in RESP3 (DEBUG PROTOCOL PUSH) asked for over RESP2.
    pub const RESP2_NOT_SUPPORTED: &str = "RESP2 is not supported by this command";
    /// DEBUG QUICKLIST-PACKED-THRESHOLD with a size it refuses.
    pub const DEBUG_PACKED_THRESHOLD: &str =
        "argument must be a memory value bigger than 1 and smaller than 4gb";
    /// DEBUG CLUSTERLINK on a server that is not a cluster node.
    pub const DEBUG_CLUSTER_ONLY: &str =
        "Debug option only available for cluster mode enabled setup!";
    /// DEBUG CONFIG-REWRITE-FORCE-ALL that failed (the OS error follows).
    pub const DEBUG_REWRITE_FAILED: &str = "CONFIG-REWRITE-FORCE-ALL failed: ";
    /// DEBUG SDSLEN on a value that is not an sds string.
    pub const DEBUG_NOT_SDS: &str = "Not an sds encoded string.";
    /// DEBUG LISTPACK on a value that is not a listpack.
    pub const DEBUG_NOT_LISTPACK: &str = "Not a listpack encoded object.";
    /// DEBUG QUICKLIST on a value that is not a quicklist.
    pub const DEBUG_NOT_QUICKLIST: &str = "Not a quicklist encoded object.";
    /// DEBUG HTSTATS with a database number out of range.
    pub const DEBUG_DB_RANGE: &str = "Out of range database";
    /// DEBUG HTSTATS-KEY on a value without a hash table.
    pub const DEBUG_NOT_HT: &str =
        "The value stored at the specified key is not represented using an hash table";
    /// DEBUG CLIENT-EVICTION with `maxmemory-clients` 0.
    pub const DEBUG_NO_CLIENT_EVICTION: &str = "maxmemory-clients is disabled.";
    /// DEBUG RESTART / CRASH-AND-RECOVER when the restart could not happen.
    pub const DEBUG_RESTART_FAILED: &str = "failed to restart the server. Check server logs.";
}

/// Stream command errors (t_stream.c, blocked.c), with Redis's texts.
pub mod stream {
    use super::Error;

    pub const INVALID_ID: &str = "Invalid stream ID specified as stream command argument";
    pub const XADD_ID_ZERO: &str = "The ID specified in XADD must be greater than 0-0";
    pub const XADD_EXHAUSTED: &str =
        "The stream has exhausted the last possible ID, unable to add more items";
    pub const XADD_ID_SMALL: &str =
        "The ID specified in XADD is equal or smaller than the target stream top item";
    pub const TOO_LARGE: &str = "Elements are too large to be stored";
    pub const MAXLEN_AND_MINID: &str =
        "syntax error, MAXLEN and MINID options at the same time are not compatible";
    pub const MAXLEN_NEGATIVE: &str = "The MAXLEN argument must be >= 0.";
    pub const LIMIT_NEGATIVE: &str = "The LIMIT argument must be >= 0.";
    pub const LIMIT_WITHOUT_STRATEGY: &str =
        "syntax error, LIMIT cannot be used without specifying a trimming strategy";
    pub const XTRIM_WITHOUT_STRATEGY: &str =
        "syntax error, XTRIM must be called with a trimming strategy";
    pub const LIMIT_WITHOUT_APPROX: &str =
        "syntax error, LIMIT cannot be used without the special ~ option";
    pub const START_INVALID: &str = "invalid start ID for the interval";
    pub const END_INVALID: &str = "invalid end ID for the interval";
    pub const UNBALANCED: &str =
        "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";
    pub const GROUP_IN_XREAD: &str =
        "The GROUP option is only supported by XREADGROUP. You called XREAD instead.";
    pub const NOACK_IN_XREAD: &str =
        "The NOACK option is only supported by XREADGROUP. You called XREAD instead.";
    pub const MISSING_GROUP: &str = "Missing GROUP option for XREADGROUP";
    pub const DOLLAR_IN_GROUP: &str = "The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.";
    pub const GT_WITHOUT_GROUP: &str = "The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.";
    pub const ENTRIESREAD_INVALID: &str = "value for ENTRIESREAD must be positive or -1";
    pub const XGROUP_NO_KEY: &str = "The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";
    pub const BUSYGROUP: &str = "BUSYGROUP Consumer Group name already exists";
    pub const ENTRIES_ADDED_NEGATIVE: &str = "entries_added must be positive";
    pub const XSETID_BELOW_MAXDELETED: &str =
        "The ID specified in XSETID is smaller than the provided max_deleted_entry_id";
    pub const XSETID_BELOW_TOP: &str =
        "The ID specified in XSETID is smaller than the target stream top item";
    pub const XSETID_ADDED_BELOW_LEN: &str =
        "The entries_added specified in XSETID is smaller than the target stream length";
    pub const XCLAIM_MINIDLE: &str = "Invalid min-idle-time argument for XCLAIM";
    pub const XCLAIM_IDLE: &str = "Invalid IDLE option argument for XCLAIM";
    pub const XCLAIM_TIME: &str = "Invalid TIME option argument for XCLAIM";
    pub const XCLAIM_RETRYCOUNT: &str = "Invalid RETRYCOUNT option argument for XCLAIM";
    pub const XAUTOCLAIM_MINIDLE: &str = "Invalid min-idle-time argument for XAUTOCLAIM";
    pub const XAUTOCLAIM_COUNT: &str = "COUNT must be > 0";
    pub const UNBLOCKED_DELETED: &str = "UNBLOCKED the stream key no longer exists";
    pub const GROUP_DESTROYED: &str =
        "NOGROUP the consumer group this client was blocked on no longer exists";

    fn s(b: &[u8]) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(b)
    }

    /// `NOGROUP No such key '<key>' or consumer group '<group>'` (XPENDING, XCLAIM, XAUTOCLAIM).
    pub fn no_key_or_group(key: &[u8], group: &[u8]) -> Error {
        Error::coded(format!(
            "NOGROUP No such key '{}' or consumer group '{}'",
            s(key),
            s(group)
        ))
    }

    /// The same for XREADGROUP.
    pub fn no_key_or_group_read(key: &[u8], group: &[u8]) -> Error {
        Error::coded(format!(
            "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
            s(key),
            s(group)
        ))
    }

    /// `NOGROUP No such consumer group '<group>' for key name '<key>'` (XGROUP, XINFO).
    pub fn no_group(group: &[u8], key: &[u8]) -> Error {
        Error::coded(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            s(group),
            s(key)
        ))
    }

    /// `<CMD> command is not allowed with BLOCK option from scripts`.
    pub fn block_in_script(cmd: &[u8]) -> Error {
        Error::msg(format!(
            "{} command is not allowed with BLOCK option from scripts",
            s(cmd)
        ))
    }

    /// `Unrecognized XCLAIM option '<opt>'`.
    pub fn xclaim_option(opt: &[u8]) -> Error {
        Error::msg(format!("Unrecognized XCLAIM option '{}'", s(opt)))
    }
}

/// CONFIG SET / config file `activedefrag yes`: Redis's answer when built
/// without its patched jemalloc (Debian's 7.0.15, the reference).
pub const NO_ACTIVE_DEFRAG: &str = "Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution";
/// Cluster mode's texts (Redis's cluster.c): the redirections a client gets
/// (`cluster::redirect`), what `redis.call` raises instead, and the CLUSTER
/// subcommands' `ERR` texts (`cmd::cluster`).
pub mod cluster {
    use super::Error;

    /// The answer of CLUSTER, READONLY, READWRITE and ASKING while cluster
    /// mode is off (`ERR` is added by `Error::msg`).
    pub const DISABLED: &str = "This instance has cluster support disabled";

    pub const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
    pub const TRYAGAIN: &str = "TRYAGAIN Multiple keys request during rehashing of slot";
    pub const DOWN: &str = "CLUSTERDOWN The cluster is down";
    pub const DOWN_READONLY: &str =
        "CLUSTERDOWN The cluster is down and only accepts read commands";
    pub const UNBOUND: &str = "CLUSTERDOWN Hash slot not served";

    /// `MOVED <slot> <ip:port>`: the slot is served by that node.
    pub fn moved(slot: u16, addr: &str) -> Error {
        Error::coded(format!("MOVED {slot} {addr}"))
    }

    /// `ASK <slot> <ip:port>`: that node imports the slot; ask it once.
    pub fn ask(slot: u16, addr: &str) -> Error {
        Error::coded(format!("ASK {slot} {addr}"))
    }

    pub const SCRIPT_DOWN_READONLY: &str =
        "Script attempted to execute a write command while the cluster is down and readonly";
    pub const SCRIPT_DOWN: &str = "Script attempted to execute a command while the cluster is down";
    /// `redis.call` on a key of another slot than the script's.
    pub const SCRIPT_CROSS_SLOT: &str =
        "Script attempted to access keys that do not hash to the same slot";
    pub const SCRIPT_NON_LOCAL: &str =
        "Script attempted to access a non local key in a cluster node";

    pub const BAD_SLOT: &str = "Invalid or out of range slot";
    /// COUNTKEYSINSLOT out of range.
    pub const INVALID_SLOT: &str = "Invalid slot";
    /// GETKEYSINSLOT out of range, or a negative count.
    pub const INVALID_SLOT_OR_COUNT: &str = "Invalid slot or number of keys";
    pub const FLUSHSLOTS_NOT_EMPTY: &str = "DB must be empty to perform CLUSTER FLUSHSLOTS.";
    pub const SETSLOT_ON_REPLICA: &str = "Please use SETSLOT only with masters.";
    pub const SETSLOT_SYNTAX: &str =
        "Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP";
    pub const TARGET_NOT_MASTER: &str = "Target node is not a master";
    /// CLUSTER REPLICAS / SLAVES of a replica.
    pub const NOT_A_MASTER: &str = "The specified node is not a master";
    pub const RESET_WITH_KEYS: &str =
        "CLUSTER RESET can't be called with master nodes containing keys";
    pub const EPOCH_WITH_OTHERS: &str =
        "The user can assign a config epoch only when the node does not know any other node.";
    pub const EPOCH_NOT_ZERO: &str = "Node config epoch is already non-zero";
    pub const FORGET_MYSELF: &str = "I tried hard but I can't forget myself...";
    pub const FORGET_MASTER: &str = "Can't forget my master!";
    pub const REPLICATE_MYSELF: &str = "Can't replicate myself";
    pub const REPLICATE_REPLICA: &str = "I can only replicate a master, not a replica.";
    pub const REPLICATE_NOT_EMPTY: &str =
        "To set a master the node must be empty and without assigned slots.";
    pub const FAILOVER_ON_MASTER: &str = "You should send CLUSTER FAILOVER to a replica";

    fn s(b: &[u8]) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(b)
    }

    /// `Unknown node <id>` (SETSLOT NODE, FORGET, REPLICATE, COUNT-FAILURE-REPORTS, ...).
    pub fn unknown_node(id: &[u8]) -> Error {
        Error::msg(format!("Unknown node {}", s(id)))
    }

    /// SETSLOT IMPORTING / MIGRATING to a node this one does not know.
    pub fn dont_know_node(id: &[u8]) -> Error {
        Error::msg(format!("I don't know about node {}", s(id)))
    }

    pub fn slot_unassigned(slot: u16) -> Error {
        Error::msg(format!("Slot {slot} is already unassigned"))
    }

    pub fn slot_busy(slot: u16) -> Error {
        Error::msg(format!("Slot {slot} is already busy"))
    }

    pub fn slot_repeated(slot: u16) -> Error {
        Error::msg(format!("Slot {slot} specified multiple times"))
    }

    pub fn range_reversed(start: u16, end: u16) -> Error {
        Error::msg(format!(
            "start slot number {start} is greater than end slot number {end}"
        ))
    }

    /// SETSLOT MIGRATING of a slot another node serves.
    pub fn not_owner(slot: u16) -> Error {
        Error::msg(format!("I'm not the owner of hash slot {slot}"))
    }

    /// SETSLOT IMPORTING of a slot this node serves.
    pub fn already_owner(slot: u16) -> Error {
        Error::msg(format!("I'm already the owner of hash slot {slot}"))
    }

    /// SETSLOT NODE giving away a slot that still has keys here.
    pub fn still_has_keys(slot: u16) -> Error {
        Error::msg(format!("Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."))
    }

    pub fn bad_epoch(epoch: i64) -> Error {
        Error::msg(format!("Invalid config epoch specified: {epoch}"))
    }

    /// CLUSTER SAVECONFIG that could not write (the OS's reason).
    pub fn save_failed(why: &str) -> Error {
        Error::msg(format!("error saving the cluster node config: {why}"))
    }

    /// CLUSTER MEET with a port that is not a number (`bus`: the bus port).
    pub fn bad_meet_port(port: &[u8], bus: bool) -> Error {
        let what = if bus { "bus" } else { "base" };
        Error::msg(format!("Invalid TCP {what} port specified: {}", s(port)))
    }
}
