//! Redis's glob matching (`stringmatchlen`): `*`, `?`, `[...]` with ranges and `^`, `\` escapes.

/// True when `s` matches `pattern`, exactly as Redis's `stringmatchlen` decides.
pub fn matches(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let mut skip_longer = false;
    match_impl(pattern, s, nocase, &mut skip_longer, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

fn match_impl(
    mut p: &[u8],
    mut s: &[u8],
    nocase: bool,
    skip_longer: &mut bool,
    nesting: u32,
) -> bool {
    // Redis bounds recursion to protect against patterns like "a*a*a*...".
    if nesting > 1000 {
        return false;
    }
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                while !s.is_empty() {
                    if match_impl(&p[1..], s, nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    s = &s[1..];
                }
                *skip_longer = true;
                return false;
            }
            b'?' => {
                s = &s[1..];
            }
            b'[' => {
                p = &p[1..];
                let not = p.first() == Some(&b'^');
                if not {
                    p = &p[1..];
                }
                let mut matched = false;
                loop {
                    if p.is_empty() {
                        // Unterminated class: Redis steps back onto the last byte.
                        break;
                    }
                    if p[0] == b'\\' && p.len() >= 2 {
                        p = &p[1..];
                        if p[0] == s[0] {
                            matched = true;
                        }
                    } else if p[0] == b']' {
                        break;
                    } else if p.len() >= 3 && p[1] == b'-' {
                        let (mut start, mut end) = (p[0], p[2]);
                        let mut c = s[0];
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        if nocase {
                            start = start.to_ascii_lowercase();
                            end = end.to_ascii_lowercase();
                            c = c.to_ascii_lowercase();
                        }
                        p = &p[2..];
                        if c >= start && c <= end {
                            matched = true;
                        }
                    } else if eq(p[0], s[0], nocase) {
                        matched = true;
                    }
                    p = &p[1..];
                }
                if p.is_empty() {
                    // Redis: pattern--; the loop's pattern++ then ends the pattern.
                    if not {
                        matched = !matched;
                    }
                    if !matched {
                        return false;
                    }
                    s = &s[1..];
                    break;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                s = &s[1..];
            }
            b'\\' if p.len() >= 2 => {
                p = &p[1..];
                if !eq(p[0], s[0], nocase) {
                    return false;
                }
                s = &s[1..];
            }
            c => {
                if !eq(c, s[0], nocase) {
                    return false;
                }
                s = &s[1..];
            }
        }
        p = &p[1..];
        if s.is_empty() {
            while p.first() == Some(&b'*') {
                p = &p[1..];
            }
            break;
        }
    }
    p.is_empty() && s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs() {
        assert!(matches(b"*", b"anything", false));
        assert!(matches(b"h?llo", b"hello", false));
        assert!(matches(b"h*llo", b"heeeello", false));
        assert!(matches(b"h[ae]llo", b"hallo", false));
        assert!(!matches(b"h[^e]llo", b"hello", false));
        assert!(matches(b"h[a-b]llo", b"hbllo", false));
        assert!(matches(b"h\\*llo", b"h*llo", false));
        assert!(!matches(b"h\\*llo", b"hallo", false));
        assert!(matches(b"foo*", b"foo", false));
        assert!(matches(b"FOO", b"foo", true));
        assert!(!matches(b"a", b"", false));
        assert!(matches(b"", b"", false));
        assert!(!matches(b"*", b"", false)); // Redis special-cases "*" in KEYS and SCAN, not here
    }

    /// Random patterns made of the special bytes (unterminated classes,
    /// trailing escapes, ranges at the end) never panic.
    #[test]
    fn random_patterns_never_panic() {
        let mut next = crate::types::test_rng(0x2545_f491_4f6c_dd1du64);
        let alphabet = b"*?[]^-\\ab";
        for _ in 0..20000 {
            let p: Vec<u8> = (0..next() % 8)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let s: Vec<u8> = (0..next() % 5)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let _ = matches(&p, &s, next().is_multiple_of(2));
        }
    }
}
