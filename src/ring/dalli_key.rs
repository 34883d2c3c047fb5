//! dalli's key rewrite before hashing (`Dalli::KeyManager#validate_key`, dalli 3.0.6): a key
//! longer than 250 *characters* (Ruby `String#length`) becomes
//! `key[0, 212] + ":md5:" + md5hex(key)`.

use crate::hash::md5;

const MAX_CHARS: usize = 250;
const PREFIX_CHARS: usize = 212;
/// 212 characters of at most 4 UTF-8 bytes, ":md5:" and 32 hex digits.
const BUF: usize = PREFIX_CHARS * 4 + 5 + 32;

/// Call `f` with the key dalli hashes. Short keys pass through; long ones are rewritten in a
/// stack buffer, so routing still allocates nothing.
pub(crate) fn with_hashed_key<R>(key: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    // Ruby counts characters; a byte that is not valid UTF-8 counts as one.
    if key.len() <= MAX_CHARS || char_count(key) <= MAX_CHARS {
        return f(key);
    }
    let prefix_len = byte_len_of_chars(key, PREFIX_CHARS);
    let mut buf = [0u8; BUF];
    buf[..prefix_len].copy_from_slice(&key[..prefix_len]);
    let mut n = prefix_len;
    buf[n..n + 5].copy_from_slice(b":md5:");
    n += 5;
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for b in md5(key) {
        buf[n] = HEX[(b >> 4) as usize];
        buf[n + 1] = HEX[(b & 15) as usize];
        n += 2;
    }
    f(&buf[..n])
}

fn char_count(key: &[u8]) -> usize {
    key.utf8_chunks()
        .map(|c| c.valid().chars().count() + c.invalid().len())
        .sum()
}

/// Bytes taken by the first `chars` characters of `key`.
fn byte_len_of_chars(key: &[u8], mut chars: usize) -> usize {
    let mut len = 0;
    for c in key.utf8_chunks() {
        for ch in c.valid().chars() {
            if chars == 0 {
                return len;
            }
            chars -= 1;
            len += ch.len_utf8();
        }
        for _ in c.invalid() {
            if chars == 0 {
                return len;
            }
            chars -= 1;
            len += 1;
        }
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_multibyte_keys_pass_through() {
        let k = "é".repeat(250);
        assert_eq!(with_hashed_key(k.as_bytes(), |b| b.to_vec()), k.as_bytes());
    }

    #[test]
    fn long_keys_are_rewritten() {
        let k = "é".repeat(251);
        let out = with_hashed_key(k.as_bytes(), |b| String::from_utf8(b.to_vec()).unwrap());
        assert!(out.starts_with(&"é".repeat(212)));
        assert_eq!(out.chars().count(), 212 + 5 + 32);
        assert!(out[212 * 2..].starts_with(":md5:"));
    }

    /// Ruby counts each byte that is not valid UTF-8 as one character, in the length and in
    /// the 212-character prefix.
    #[test]
    fn invalid_bytes_count_as_one_character_each() {
        let mut k = vec![0xff; 200];
        k.extend_from_slice("é".repeat(51).as_bytes());
        let out = with_hashed_key(&k, |b| b.to_vec());
        let hex: String = md5(&k).iter().map(|b| format!("{b:02x}")).collect();
        let mut want = vec![0xff; 200];
        want.extend_from_slice("é".repeat(12).as_bytes());
        want.extend_from_slice(format!(":md5:{hex}").as_bytes());
        assert_eq!(out, want);
        // 250 characters, of them 200 invalid bytes: not rewritten
        assert_eq!(with_hashed_key(&k[..300], |b| b.len()), 300);
    }

    /// The longest rewrite: 212 characters of four UTF-8 bytes each fill the stack buffer.
    #[test]
    fn four_byte_characters_fill_the_buffer_exactly() {
        let k = "😀".repeat(251);
        let out = with_hashed_key(k.as_bytes(), |b| b.to_vec());
        let hex: String = md5(k.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let want = format!("{}:md5:{hex}", "😀".repeat(212));
        assert_eq!(out.len(), BUF);
        assert_eq!(out, want.as_bytes());
    }
}
