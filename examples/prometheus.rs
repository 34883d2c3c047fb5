//! Expose memshard's metrics to Prometheus: run some traffic against the servers given as
//! arguments and print the text exposition format a Prometheus scrape would read.
//!
//!     cargo run --example prometheus --features metrics -- 127.0.0.1:11211 127.0.0.1:11212
//!
//! In a service, keep the handle and serve `handle.render()` on `/metrics` (or enable the
//! exporter's own HTTP listener).

use metrics_exporter_prometheus::PrometheusBuilder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let servers: Vec<String> = std::env::args().skip(1).collect();
    if servers.is_empty() {
        eprintln!("usage: prometheus HOST:PORT [HOST:PORT ...]");
        std::process::exit(2);
    }
    let handle = PrometheusBuilder::new().install_recorder()?;
    let client = memshard::Client::builder()
        .server_list(&servers.join("\n"))?
        .build()?;
    for i in 0..1000 {
        client.set(
            format!("prom:{i}"),
            "value",
            std::time::Duration::from_secs(60),
        )?;
        client.get(format!("prom:{}", i * 2))?;
    }
    print!("{}", handle.render());
    Ok(())
}
