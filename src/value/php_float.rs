//! PHP's three spellings of a double. All start from the same digits: the shortest decimal string
//! that reads back as the same double (`zend_dtoa` mode 0), which is what Rust's `{:e}` prints;
//! they differ in where they switch to an exponent and how they write it.
//!
//! | spelling | used by | 0.5 | 2.0 | 1e6 | 1e25 | 1e-5 | inf / nan |
//! |---|---|---|---|---|---|---|---|
//! | [`g_fmt`] | php-memcached type 2 (`g_fmt.c`) | `.5` | `2` | `1e+06` | `1e+25` | `1e-05` | `Infinity`, `-Infinity`, `NaN` |
//! | [`gcvt`] `E` | `serialize()` (`d:…;`) | `0.5` | `2` | `1000000` | `1.0E+25` | `1.0E-5` | `INF`, `-INF`, `NAN` |
//! | [`gcvt`] `e` | `json_encode` | `0.5` | `2` | `1000000` | `1.0e+25` | `1.0e-5` | — (not JSON) |
//!
//! Checked against php-memcached 3.2.0 / PHP 8.2 output: `value-vectors/php-memcached.json`
//! (`float-*`) and `testdata/php-extra.json` (`float-*`, `float-list-php`, `float-list-json`).

/// Sign, shortest round-trip digits (no leading or trailing zeros, `"0"` for zero) and the
/// decimal point's position (`zend_dtoa`'s `decpt`: the value is `0.DIGITS × 10^decpt`).
/// `f` must be finite.
fn shortest(f: f64) -> (bool, String, i32) {
    // `{:e}` of a finite double is `D[.DDD]e[-]X` with the shortest digits that round-trip.
    let text = format!("{:e}", f.abs());
    let (mantissa, exp) = text.split_once('e').unwrap_or((text.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (f.is_sign_negative(), digits, exp + 1)
}

/// `php_memcached_g_fmt` (php-memcached `g_fmt.c`, David Gay's `g_fmt` with a sign on the
/// exponent): an exponent once `decpt <= -4 || decpt > digits + 5`, written with at least two
/// digits; no leading zero before the point; `-0` for negative zero.
///
/// NaN is always `NaN`: `g_fmt` prints `zend_dtoa`'s sign first, so a NaN with the sign bit set
/// would be `-NaN`, which php-memcached's own reader does not recognise (`php_memcached.c:3760`
/// accepts exactly `NaN`) and reads as 0. Writing `NaN` keeps the value a NaN for PHP.
pub(super) fn g_fmt(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    if f.is_infinite() {
        out.push_str("Infinity");
        return out;
    }
    let (_, digits, decpt) = shortest(f);
    let n = digits.len() as i32;
    if decpt <= -4 || decpt > n + 5 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        out.push_str(if e < 0 { "e-" } else { "e+" });
        out.push_str(&format!("{:02}", e.unsigned_abs()));
    } else if decpt <= 0 {
        out.push('.');
        out.extend(std::iter::repeat_n('0', decpt.unsigned_abs() as usize));
        out.push_str(&digits);
    } else {
        let d = decpt as usize;
        if d >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', d - digits.len()));
        } else {
            out.push_str(&digits[..d]);
            out.push('.');
            out.push_str(&digits[d..]);
        }
    }
    out
}

/// `zend_gcvt(value, 17, '.', exp_char)` in mode 0, which `serialize()` (`exp_char` `E`) and
/// `json_encode` (`e`) use with the default `serialize_precision = -1`: an exponent once
/// `decpt < -3 || decpt > 17`, written as `D.DDD` (`1.0` for one digit), the sign, and the
/// exponent without padding; `0.` before fractions; `-0` for negative zero; `INF`, `-INF`, `NAN`.
pub(super) fn gcvt(f: f64, exp_char: char) -> String {
    if f.is_nan() {
        return "NAN".to_owned();
    }
    if f.is_infinite() {
        return if f < 0.0 { "-INF" } else { "INF" }.to_owned();
    }
    let (neg, digits, decpt) = shortest(f);
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-3..=17).contains(&decpt) {
        out.push_str(&digits[..1]);
        out.push('.');
        out.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
        out.push(exp_char);
        let e = decpt - 1;
        out.push(if e < 0 { '-' } else { '+' });
        out.push_str(&e.unsigned_abs().to_string());
    } else if decpt < 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', decpt.unsigned_abs() as usize));
        out.push_str(&digits);
    } else {
        let d = decpt as usize;
        if d >= digits.len() {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', d - digits.len()));
        } else {
            if d == 0 {
                out.push('0');
            } else {
                out.push_str(&digits[..d]);
            }
            out.push('.');
            out.push_str(&digits[d..]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What PHP 8.2 printed: `json_encode([0.00001, 1.5e25, -2.5e-10, 1e17, 1e18, 0.0001])` is
    /// `[1.0e-5,1.5e+25,-2.5e-10,1.0e+17,1.0e+18,0.0001]`, and `serialize` of 0.00001 and
    /// 1.5e25 writes `d:1.0E-5;` and `d:1.5E+25;`.
    #[test]
    fn exponents_carry_their_sign() {
        for (f, json) in [
            (0.00001, "1.0e-5"),
            (1.5e25, "1.5e+25"),
            (-2.5e-10, "-2.5e-10"),
            (1e17, "1.0e+17"),
            (1e18, "1.0e+18"),
            (0.0001, "0.0001"),
        ] {
            assert_eq!(gcvt(f, 'e'), json, "{f}");
        }
        assert_eq!(gcvt(0.00001, 'E'), "1.0E-5");
        assert_eq!(gcvt(1.5e25, 'E'), "1.5E+25");
    }

    /// `serialize([INF, -INF, NAN])` in PHP 8.2: `a:3:{i:0;d:INF;i:1;d:-INF;i:2;d:NAN;}`.
    #[test]
    fn infinities_and_nan_as_serialize_writes_them() {
        assert_eq!(gcvt(f64::INFINITY, 'E'), "INF");
        assert_eq!(gcvt(f64::NEG_INFINITY, 'E'), "-INF");
        assert_eq!(gcvt(f64::NAN, 'E'), "NAN");
    }
}
