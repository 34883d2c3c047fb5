//! Profile target: many get_multi calls of 100 keys against servers given as arguments, e.g.
//! `cargo run --release --example multiget_profile -- 127.0.0.1:11211 127.0.0.1:11212`.
//! Used with `perf record` / callgrind to see where a multi-get spends its CPU.

fn main() -> Result<(), memshard::Error> {
    let servers: Vec<String> = std::env::args().skip(1).collect();
    if servers.is_empty() {
        eprintln!("usage: multiget_profile HOST:PORT [HOST:PORT ...]");
        std::process::exit(2);
    }
    let client = memshard::Client::builder()
        .server_list(&servers.join("\n"))?
        .build()?;
    let keys: Vec<String> = (0..100).map(|i| format!("profile:{i}")).collect();
    for k in &keys {
        client.set(k, vec![b'x'; 100], memshard::Expiry::NEVER)?;
    }
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20_000);
    let mut hits = 0;
    for _ in 0..rounds {
        hits += client
            .get_multi(&keys)
            .iter()
            .filter(|r| matches!(r, Ok(Some(_))))
            .count();
    }
    println!("{hits} hits");
    Ok(())
}
