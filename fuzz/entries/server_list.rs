//! Server-list parser: never panics; every server it returns is usable (weight >= 1,
//! port >= 1, a non-empty host, a non-empty address); an error names a real line.
//!
//! Input: the bytes as (lossy) UTF-8 text.

use memshard::{Server, parse_server_list};

pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match parse_server_list(&text) {
        Ok(servers) => {
            for s in &servers {
                assert!(s.weight >= 1, "weight 0: {s:?}");
                assert!(s.port >= 1, "port 0: {s:?}");
                assert!(!s.host.is_empty(), "empty host: {s:?}");
                assert!(!s.addr.is_empty(), "empty addr: {s:?}");
                if let Some(n) = &s.name {
                    assert!(!n.is_empty(), "empty name: {s:?}");
                }
                let _ = s.socket_addr();
                let _ = s.to_string();
            }
        }
        Err(e) => {
            let lines = text.lines().count();
            assert!(
                (1..=lines).contains(&e.line),
                "error line {} of {lines}: {e}",
                e.line
            );
            let _ = e.to_string();
        }
    }
    // The single-server form goes through the same parser.
    if let Ok(s) = text.parse::<Server>() {
        assert!(s.weight >= 1 && s.port >= 1 && !s.host.is_empty(), "{s:?}");
    }
}
