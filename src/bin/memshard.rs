//! `memshard`: which server owns a key, and (later) talk to the servers.
//!
//! Thin layer over the library: argument parsing (clap) and I/O only.

use clap::{Args, Parser, Subcommand};
use memshard::{Flavor, HashTag, KeyHash, Ring};
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "memshard",
    version,
    about = "Ketama-compatible memcached sharding"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print the server that owns each key: `KEY<TAB>HOST:PORT`, one line per key, in input order.
    Route(RouteArgs),
}

/// How to build the ring: shared by every command that routes keys.
#[derive(Args)]
struct RingArgs {
    /// Server list file: `HOST:PORT [WEIGHT] [NAME]` per line (also libketama, twemproxy and
    /// libmemcached spellings). `-` reads it from standard input.
    #[arg(long, value_name = "FILE")]
    servers: PathBuf,
    /// Placement flavour: the peer whose placement to match (see `memshard flavors`).
    #[arg(long, default_value = "libmemcached", value_name = "NAME")]
    flavor: String,
    /// Key hash, for flavours whose peer lets users pick one (libmemcached*, twemproxy).
    #[arg(long, value_name = "NAME")]
    hash: Option<String>,
    /// Two-character hash tag with twemproxy semantics, e.g. `{}`.
    #[arg(long, value_name = "XY")]
    hash_tag: Option<String>,
}

#[derive(Args)]
struct RouteArgs {
    #[command(flatten)]
    ring: RingArgs,
    /// Keys to route; when none are given, keys are read one per line from standard input.
    keys: Vec<std::ffi::OsString>,
}

/// An error with the exit status it deserves: 2 for bad arguments or input, 1 for the rest.
struct Failure {
    code: u8,
    msg: String,
}

fn usage(msg: impl std::fmt::Display) -> Failure {
    Failure {
        code: 2,
        msg: msg.to_string(),
    }
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure {
            code: 1,
            msg: format!("I/O error: {e}"),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Route(a) => route(a),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) if f.msg.contains("Broken pipe") => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("memshard: {}", f.msg);
            ExitCode::from(f.code)
        }
    }
}

impl RingArgs {
    fn build(&self) -> Result<Ring, Failure> {
        let flavor: Flavor = self.flavor.parse().map_err(usage)?;
        let hash: Option<KeyHash> = match &self.hash {
            Some(h) => Some(h.parse().map_err(usage)?),
            None => None,
        };
        let tag: Option<HashTag> = match &self.hash_tag {
            Some(t) => Some(t.parse().map_err(usage)?),
            None => None,
        };
        let text = if self.servers.as_os_str() == "-" {
            let mut s = String::new();
            io::stdin().read_to_string(&mut s)?;
            s
        } else {
            std::fs::read_to_string(&self.servers).map_err(|e| {
                usage(format!(
                    "cannot read server list {}: {e}",
                    self.servers.display()
                ))
            })?
        };
        let servers = memshard::parse_server_list(&text)
            .map_err(|e| usage(format!("{}: {e}", self.servers.display())))?;
        Ring::with_options(servers, flavor, hash, tag)
            .map_err(|e| usage(format!("{}: {e}", self.servers.display())))
    }
}

/// A command-line argument as the bytes the user typed (keys need not be UTF-8).
fn os_bytes(s: &std::ffi::OsStr) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes()
}

fn route(a: RouteArgs) -> Result<(), Failure> {
    let ring = a.ring.build()?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let emit = |key: &[u8], out: &mut BufWriter<io::StdoutLock>| -> io::Result<()> {
        // A ring that was built always has a point, so route() is Some.
        if let Some(s) = ring.server_for(key) {
            out.write_all(key)?;
            out.write_all(b"\t")?;
            out.write_all(s.addr.as_bytes())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    };
    if a.keys.is_empty() {
        if a.ring.servers.as_os_str() == "-" {
            return Err(usage(
                "--servers - reads the server list from standard input, so keys must be given as arguments",
            ));
        }
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            if line.last() == Some(&b'\n') {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
            }
            emit(&line, &mut out)?;
        }
    } else {
        for k in &a.keys {
            emit(os_bytes(k), &mut out)?;
        }
    }
    out.flush()?;
    Ok(())
}
