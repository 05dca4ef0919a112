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
            Error::Msg(m) => format!("ERR {m}").into(),
            Error::Coded(c) => c.clone(),
        }
    }

    /// The first word of the error (`ERR`, `WRONGTYPE`, ...), used for error stats.
    pub fn code(&self) -> String {
        self.text().split(' ').next().unwrap_or("ERR").to_string()
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
    /// EXEC refused by the gate (Redis's `execCommandAbort`): the reason
    /// follows, with its code unless it is ERR.
    pub fn exec_abort(reason: &Error) -> Error {
        let text = reason.text();
        let why = text.strip_prefix("ERR ").unwrap_or(&text);
        Error::Coded(format!("EXECABORT Transaction discarded because of: {why}").into())
    }

    pub fn internal(cmd: &str) -> Error {
        Error::Msg(
            format!(
                "internal error in '{cmd}' command, the command was not completed (see the server log)"
            )
            .into(),
        )
    }
}
