//! Parameters Oxidis has that Redis 7.0 does not (CONFIG GET shows them only when named).

use super::Kind::*;
use super::*;

pub static OXIDIS: &[Param] = &[Param {
    // Written with the bound TCP port once the server is ready (with
    // `port 0` and no unix socket, an ephemeral port: see `net::listener`).
    name: "port-file",
    alias: None,
    kind: Str,
    default: "",
    flags: IMMUTABLE | HIDDEN,
}];
