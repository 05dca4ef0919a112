//! `math.random` and `math.randomseed` as Redis has them: Lua's algorithm on Redis's `redisLrand48`, one generator per server.
//!
//! Redis replaces Lua's functions (which call libc's `rand()`, shared by the
//! whole process) with its own 48-bit generator, so a script draws the same
//! numbers on every machine: the same sequence from a fresh server as Redis
//! 7.0 gives. The state lives on the server's data thread, so each server
//! in a process has its own; OXIDIS SEED sets it (`cmd::testctl::seed`).

use std::cell::Cell;
use std::ffi::c_int;

use super::lua::{self, ffi, State};

/// drand48's initial state (Redis's `X2 X1 X0`).
const INITIAL: u64 = 0x1234_ABCD_330E;
const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK48: u64 = (1 << 48) - 1;
/// Redis's `REDIS_LRAND48_MAX`.
const LRAND48_MAX: i64 = i32::MAX as i64;

thread_local! {
    static STATE: Cell<u64> = const { Cell::new(INITIAL) };
}

/// Redis's `redisLrand48`: the next 31-bit value.
fn lrand48() -> i64 {
    STATE.with(|s| {
        let x = (A.wrapping_mul(s.get()).wrapping_add(C)) & MASK48;
        s.set(x);
        (x >> 17) as i64
    })
}

/// Redis's `redisSrand48`: the seed's 32 bits above drand48's fixed low word.
fn srand48(seed: i32) {
    STATE.with(|s| s.set(((seed as u32 as u64) << 16) | 0x330E));
}

/// Sets this server's generator from a 64-bit seed (OXIDIS SEED): its low
/// 48 bits, as drand48's whole state.
pub fn seed(seed: u64) {
    STATE.with(|s| s.set(seed & MASK48));
}

/// Replaces `math.random` and `math.randomseed` (the math library is open).
pub unsafe fn install(l: State) {
    ffi::lua_getfield(l, ffi::LUA_GLOBALSINDEX, c"math".as_ptr());
    lua::set_funcs(l, &[("random", random), ("randomseed", randomseed)]);
    ffi::lua_settop(l, -2);
}

/// Lua 5.1's `math.random` with `rand()` replaced by [`lrand48`].
unsafe extern "C-unwind" fn random(l: State) -> c_int {
    if super::run_ctx().is_none() {
        return lua::raise_msg(
            l,
            "math.random can only be called inside a script invocation",
        );
    }
    let r = (lrand48() % LRAND48_MAX) as f64 / LRAND48_MAX as f64;
    match ffi::lua_gettop(l) {
        0 => ffi::lua_pushnumber(l, r),
        1 => {
            let u = ffi::luaL_checkinteger(l, 1) as c_int;
            if u < 1 {
                return ffi::luaL_argerror(l, 1, c"interval is empty".as_ptr());
            }
            ffi::lua_pushnumber(l, (r * u as f64).floor() + 1.0);
        }
        2 => {
            let lo = ffi::luaL_checkinteger(l, 1) as c_int;
            let up = ffi::luaL_checkinteger(l, 2) as c_int;
            if lo > up {
                return ffi::luaL_argerror(l, 2, c"interval is empty".as_ptr());
            }
            ffi::lua_pushnumber(l, (r * (up as f64 - lo as f64 + 1.0)).floor() + lo as f64);
        }
        _ => return lua::raise_msg(l, "wrong number of arguments"),
    }
    1
}

unsafe extern "C-unwind" fn randomseed(l: State) -> c_int {
    if super::run_ctx().is_none() {
        return lua::raise_msg(
            l,
            "math.randomseed can only be called inside a script invocation",
        );
    }
    srand48(ffi::luaL_checkinteger(l, 1) as c_int);
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `math.random(n)` as Lua computes it from the generator.
    fn draw(u: i64) -> i64 {
        let r = (lrand48() % LRAND48_MAX) as f64 / LRAND48_MAX as f64;
        (r * u as f64).floor() as i64 + 1
    }

    /// What a fresh redis-server 7.0.15 answered to `EVAL "return
    /// {math.random(2147483647), math.random(2147483647), math.random(1000)}" 0`
    /// and then to `math.randomseed(42); return math.random(2147483647)`.
    #[test]
    fn sequence_is_redis_lrand48() {
        std::thread::spawn(|| {
            let max = LRAND48_MAX;
            assert_eq!(
                [draw(max), draw(max), draw(1000)],
                [851401619, 1804928588, 354]
            );
            srand48(42);
            assert_eq!(draw(max), 1598855264);
        })
        .join()
        .unwrap();
    }
}
