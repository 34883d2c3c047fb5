//! Servers that never answer, and error kinds by name: shared by the test binaries that count
//! connection attempts or tally errors.

use memshard::Error;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};

/// A server that never answers: a listening socket nobody accepts on. The kernel completes each
/// connection and keeps it in the accept queue, so the queue's length is the exact number of
/// connection attempts made.
pub struct Silent {
    listener: TcpListener,
}

impl Silent {
    pub fn start() -> Silent {
        Silent {
            listener: TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind"),
        }
    }

    pub fn addr(&self) -> String {
        self.listener.local_addr().unwrap().to_string()
    }

    /// Connections made to it so far (the accept queue's length: for a listening socket,
    /// /proc/net/tcp's rx_queue).
    pub fn attempts(&self) -> u64 {
        let SocketAddr::V4(a) = self.listener.local_addr().unwrap() else {
            unreachable!("bound on 127.0.0.1")
        };
        let want = format!(
            "{:08X}:{:04X}",
            u32::from_le_bytes(a.ip().octets()),
            a.port()
        );
        let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
        let line = table
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.len() > 4 && f[1] == want && f[3] == "0A")
            .unwrap_or_else(|| panic!("no listening socket {want} in /proc/net/tcp"));
        let rx = line[4].split(':').nth(1).expect("tx_queue:rx_queue");
        u64::from_str_radix(rx, 16).expect("hex rx_queue")
    }
}

/// The error kind's name.
pub fn error_kind(e: &Error) -> &'static str {
    match e {
        Error::Io { .. } => "Io",
        Error::Timeout { .. } => "Timeout",
        Error::Protocol { .. } => "Protocol",
        Error::Server { .. } => "Server",
        Error::Pool { .. } => "Pool",
        Error::ServerDown { .. } => "ServerDown",
        Error::InvalidKey { .. } => "InvalidKey",
        Error::ValueTooLarge { .. } => "ValueTooLarge",
        _ => "other",
    }
}
