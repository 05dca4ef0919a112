//! PFSELFTEST: Redis's HyperLogLog self-test, run against `types::hll` (register access, then estimate error).

use crate::command::Args;
use crate::error::{CmdResult, Error};
use crate::server::Ctx;
use crate::types::hll::{self, REGISTERS};

/// Elements added by the estimate test, as in Redis.
const ELEMENTS: u64 = 10_000_000;
/// Rounds of the register test, as in Redis (`HLL_TEST_CYCLES`).
const CYCLES: usize = 1000;

/// ```text
/// PFSELFTEST
/// ```
/// `OK`, or an `ERR TESTFAILED ...` error naming the first check that failed.
pub fn pfselftest(ctx: &mut Ctx, _args: &mut Args) -> CmdResult {
    let sparse_max = ctx.srv.config.hll_sparse_max_bytes;
    let rng = &mut ctx.srv.rng;
    selftest(|| rng.next_u64(), sparse_max, CYCLES, ELEMENTS).map_err(Error::msg)?;
    ctx.out().ok();
    Ok(())
}

/// The two checks of Redis's `pfselftestCommand`. First, registers written
/// with random 6-bit values read back the same (packing must not spill into
/// neighbours), `cycles` times. Second, the same `elements` are added to a dense and to a
/// sparse HLL; at every power of ten the sparse one is still sparse while
/// small, both estimate the same count, and the error stays under six
/// standard errors (one at cardinality 10, where collisions are likely).
fn selftest(
    mut rand: impl FnMut() -> u64,
    sparse_max: usize,
    cycles: usize,
    elements: u64,
) -> Result<(), String> {
    let mut empty_dense = hll::new_sparse();
    hll::to_dense(&mut empty_dense).map_err(|_| "TESTFAILED dense conversion")?;

    let mut want = [0u8; REGISTERS];
    for _ in 0..cycles {
        want.iter_mut().for_each(|r| *r = (rand() & 63) as u8);
        let mut d = empty_dense.clone();
        hll::store_registers(&mut d, &want, sparse_max);
        let got = hll::registers(&d);
        if let Some(i) = (0..REGISTERS).find(|&i| got[i] != want[i]) {
            return Err(format!(
                "TESTFAILED Register {i} should be {} but is {}",
                want[i], got[i]
            ));
        }
    }

    let count = |b: &[u8]| hll::histogram(b).map(|h| hll::estimate(&h));
    let mut dense = empty_dense;
    let mut sparse = hll::new_sparse();
    let relerr = 1.04 / (REGISTERS as f64).sqrt();
    let seed = rand();
    let mut checkpoint = 1u64;
    for j in 1..=elements {
        let ele = (j ^ seed).to_le_bytes();
        let added = hll::add_all(&mut dense, [&ele[..]], sparse_max)
            .and_then(|_| hll::add_all(&mut sparse, [&ele[..]], sparse_max));
        added.map_err(|_| "TESTFAILED corrupted while adding")?;
        if j != checkpoint {
            continue;
        }
        if (j as usize) < sparse_max / 2 && hll::is_dense(&sparse) {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let (d, s) = (count(&dense), count(&sparse));
        let d = d.map_err(|_| "TESTFAILED corrupted dense")?;
        if s != Ok(d) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let abserr = checkpoint.abs_diff(d);
        let maxerr = if j == 10 {
            1
        } else {
            (relerr * 6.0 * checkpoint as f64).ceil() as u64
        };
        if abserr > maxerr {
            return Err(format!(
                "TESTFAILED Too big error. card:{checkpoint} abserr:{abserr}"
            ));
        }
        checkpoint *= 10;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selftest_passes_on_the_real_representation() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Fewer rounds and elements than the command's keep it quick in
        // debug builds; the checkpoints up to 100,000 still cross the
        // sparse-to-dense promotion (3000 bytes).
        assert_eq!(selftest(rand, 3000, 20, 100_000), Ok(()));
    }
}
