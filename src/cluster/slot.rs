//! Hash slots: which of the 16384 slots a key belongs to (Redis's `keyHashSlot`).

/// Number of hash slots (Redis's CLUSTER_SLOTS).
pub const SLOTS: usize = 16384;

/// The slot of `key`: CRC16-XMODEM of the key, or of its hash tag (the
/// bytes between the first `{` and the next `}`, when not empty), modulo
/// 16384.
#[inline]
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16::State::<crc16::XMODEM>::calculate(hashed) & (SLOTS as u16 - 1)
}

/// Parses a slot argument as Redis's `getSlotOrReply` does: an integer in
/// 0..16384.
pub fn parse_slot(arg: &[u8]) -> Option<u16> {
    let n = crate::resp::decode::parse_i64(arg)?;
    (0..SLOTS as i64).contains(&n).then_some(n as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_follow_redis_rules() {
        // Values from Redis's cluster specification.
        assert_eq!(key_slot(b"123456789"), 0x31c3 & 16383);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        // An empty tag hashes the whole key; only the first `{` counts.
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
        assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
        assert_eq!(key_slot(b"{"), key_slot(b"{"));
    }
}
