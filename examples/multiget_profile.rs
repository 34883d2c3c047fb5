//! Profile target: many `get_multi` calls of 100 keys (or, with `MODE=get`, single gets)
//! against the servers given as arguments, e.g.
//! `cargo run --release --example multiget_profile -- 127.0.0.1:11211 127.0.0.1:11212`.
//! Used with `perf record` / callgrind to see where a multi-get spends its CPU
//! (`perf/profile.sh` runs it so).

fn main() -> Result<(), memshard::Error> {
    let servers: Vec<String> = std::env::args().skip(1).collect();
    if servers.is_empty() {
        eprintln!("usage: [MODE=get|get_multi] [ROUNDS=n] multiget_profile HOST:PORT[ WEIGHT] ...");
        std::process::exit(2);
    }
    let client = memshard::Client::builder()
        .server_list(&servers.join("\n"))?
        .build()?;
    let keys: Vec<String> = (0..100).map(|i| format!("profile:{i}")).collect();
    for k in &keys {
        client.set(k, vec![b'x'; 32], memshard::Expiry::NEVER)?;
    }
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20_000);
    let single = std::env::var("MODE").is_ok_and(|m| m == "get");
    let mut hits = 0;
    for i in 0..rounds {
        if single {
            hits += usize::from(client.get(&keys[i % keys.len()])?.is_some());
        } else {
            hits += client
                .get_multi(&keys)
                .iter()
                .filter(|r| matches!(r, Ok(Some(_))))
                .count();
        }
    }
    println!("{hits} hits");
    Ok(())
}
