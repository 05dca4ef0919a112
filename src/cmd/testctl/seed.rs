//! OXIDIS SEED: seeds the server's random choices, so a test sees the same picks on every run.
//!
//! Every random choice a command makes draws from `Server::rng` (SPOP,
//! SRANDMEMBER, HRANDFIELD, ZRANDMEMBER, RANDOMKEY, eviction samples) or,
//! in scripts, from Lua's generator (`script::mathrand`); both are set here.
//! A pick also depends on the layout of the hash tables, which is fixed
//! when the server runs with test controls (`db::dict::fixed_hash_seeds`),
//! and the cron's active expiry draws from a generator of its own, so
//! background work does not shift the sequence.

use super::{word, wrong};
use crate::command::Args;
use crate::error::{CmdResult, Error};
use crate::server::{Ctx, Rng};

/// `OXIDIS SEED <u64>`
pub fn command(ctx: &mut Ctx, args: &mut Args) -> CmdResult {
    let arg = word(args)?;
    if args.has_more() {
        return Err(wrong(args));
    }
    let seed: u64 = std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(Error::NotInteger)?;
    ctx.srv.rng = Rng::new(mix(seed));
    crate::script::mathrand::seed(seed);
    ctx.out().ok();
    Ok(())
}

/// splitmix64's finaliser: neighbouring seeds give unrelated generators
/// (`Rng::new` sets the low bit, which would make 2 and 3 the same).
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
