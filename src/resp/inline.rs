//! The one inline splitter, Redis's `sdssplitargs`: inline requests, config lines and compat case lines.

/// C's `isspace` in the C locale (Rust's `is_ascii_whitespace` leaves out `\v`).
pub fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Splits `line` into words exactly as Redis's `sdssplitargs` does, appending
/// each word's bytes to `out` and its range in `out` to `ranges`. False (and
/// nothing appended) on unbalanced quotes.
///
/// The rules, which are C's: blanks (`isspace`) separate words, but an
/// unquoted word ends only at space, tab, CR or LF (a form feed or vertical
/// tab inside a word belongs to it); a quote may open in the middle of a word
/// (`a"b c"` is `ab c`); a closing quote must be followed by a blank or the
/// end; `"..."` decodes `\n \r \t \b \a \xHH` and `\<any>`, `'...'` only `\'`;
/// and the line is a C string, so it ends at its first NUL byte.
pub fn split_into(line: &[u8], out: &mut Vec<u8>, ranges: &mut Vec<(usize, usize)>) -> bool {
    let (out_len, ranges_len) = (out.len(), ranges.len());
    let ok = split_c(line, out, ranges);
    if !ok {
        out.truncate(out_len);
        ranges.truncate(ranges_len);
    }
    ok
}

fn split_c(line: &[u8], out: &mut Vec<u8>, ranges: &mut Vec<(usize, usize)>) -> bool {
    let end = line.iter().position(|&b| b == 0).unwrap_or(line.len());
    let line = &line[..end];
    // The byte at `i`, or the terminating NUL past the end.
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut p = 0;
    loop {
        while at(p) != 0 && is_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return true;
        }
        let start = out.len();
        // The quote open in this word, if any.
        let mut quote: Option<u8> = None;
        loop {
            let (c, next) = (at(p), at(p + 1));
            match quote {
                Some(q) if c == q => {
                    // A closing quote must be followed by a blank or the end.
                    if next != 0 && !is_space(next) {
                        return false;
                    }
                    p += 1;
                    break;
                }
                Some(_) if c == 0 => return false,
                Some(b'"')
                    if c == b'\\'
                        && next == b'x'
                        && hex(at(p + 2)).is_some()
                        && hex(at(p + 3)).is_some() =>
                {
                    out.push(hex(at(p + 2)).unwrap_or(0) * 16 + hex(at(p + 3)).unwrap_or(0));
                    p += 3;
                }
                Some(b'"') if c == b'\\' && next != 0 => {
                    p += 1;
                    out.push(match next {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                }
                Some(_) if c == b'\\' && next == b'\'' => {
                    p += 1;
                    out.push(b'\'');
                }
                Some(_) => out.push(c),
                None => match c {
                    0 => break,
                    b' ' | b'\n' | b'\r' | b'\t' => {
                        p += 1;
                        break;
                    }
                    b'"' | b'\'' => quote = Some(c),
                    _ => out.push(c),
                },
            }
            p += 1;
        }
        ranges.push((start, out.len()));
    }
}

/// The words of `line` (see [`split_into`]), or None on unbalanced quotes.
pub fn split(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let (mut out, mut ranges) = (Vec::new(), Vec::new());
    if !split_into(line, &mut out, &mut ranges) {
        return None;
    }
    Some(ranges.iter().map(|&(s, e)| out[s..e].to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::split;

    fn words(line: &[u8]) -> Vec<Vec<u8>> {
        split(line).expect("balanced")
    }

    // Each expectation was checked against redis-server 7.0.15 with the same
    // bytes sent as an inline request (ECHO / SET), see tests/protocol.rs.
    #[test]
    fn quotes_and_escapes() {
        assert_eq!(
            words(b"set \"a b\" 'c\\'d' \"\\x41\\n\""),
            [&b"set"[..], b"a b", b"c'd", b"A\n"]
        );
        assert_eq!(
            words(b"\"\\x4g\" \"\\x\" \"\\\"\""),
            [&b"x4g"[..], b"x", b"\""]
        );
        assert_eq!(split(b"set \"abc"), None);
        assert_eq!(split(b"set \"abc\"x"), None);
        assert_eq!(split(b"a\"b"), None);
        assert_eq!(split(b"\"a\\"), None);
    }

    #[test]
    fn quotes_open_mid_word() {
        assert_eq!(words(b"ECHO a\"b c\""), [&b"ECHO"[..], b"ab c"]);
        assert_eq!(words(b"ECHO a'b c'"), [&b"ECHO"[..], b"ab c"]);
        assert_eq!(split(b"ECHO a\"b\"c"), None);
    }

    #[test]
    fn form_feed_and_vertical_tab_are_blanks_only_between_words() {
        assert_eq!(words(b"ECHO\x0ca"), [&b"ECHO\x0ca"[..]]);
        assert_eq!(words(b"\x0c\x0bPING"), [&b"PING"[..]]);
        assert_eq!(words(b"ECHO \x0ca"), [&b"ECHO"[..], b"a"]);
        assert_eq!(words(b"ECHO a\x0bb"), [&b"ECHO"[..], b"a\x0bb"]);
        // A closing quote may be followed by any blank.
        assert_eq!(words(b"ECHO \"a\"\x0cb"), [&b"ECHO"[..], b"a", b"b"]);
    }

    #[test]
    fn the_line_ends_at_nul() {
        assert_eq!(words(b"a\0b c"), [&b"a"[..]]);
        assert_eq!(split(b"\"a\0b\""), None);
        assert!(words(b"\0PING").is_empty());
    }
}
