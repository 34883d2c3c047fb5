//! `memshard`: which server owns a key, what a server change moves, and the servers' keys and
//! values (get, set, delete, bench, demo).
//!
//! A user of the `memshard` library's public API, like any other: argument parsing (clap),
//! output and I/O only; every decision is the library's.

mod bench;
mod demo;
mod detect;
mod plan_cmd;
mod plan_html;
mod plan_view;
mod routed;
mod security;
mod stats_cmd;
mod values;

use clap::builder::RangedU64ValueParser;
use clap::{Args, Parser, Subcommand, value_parser};
use memshard::Expiry;
use memshard::{Client, Flavor, HashTag, KeyHash, Ring, StoreOutcome};
use std::io::{self, BufRead, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

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
    /// Print `KEY<TAB>VALUE` for each key found (like memccat); misses print nothing and are
    /// counted on standard error.
    Get(GetArgs),
    /// Set `KEY VALUE`, or with no KEY every `KEY<TAB>VALUE` line of standard input (batched
    /// per server, like memccp).
    Set(SetArgs),
    /// Delete keys (like memcrm).
    Delete(DeleteArgs),
    /// Mixed get/set load over real servers (like memcslap): ops/s, latency percentiles,
    /// errors by kind and server, and with --verify the count of wrong values. With
    /// --route-only: nanoseconds per route, no network.
    Bench(BenchArgs),
    /// What moves when the server list changes, how even the load is, and how ketama compares
    /// with modulo, jump, rendezvous and 16384 slots; or (--vs-flavor) how two clients disagree.
    Plan(PlanArgs),
    /// Start memcached servers on loopback, load keys through memshard, show keys per server,
    /// then add a server and compare the hit ratio of ketama against modulo placement.
    Demo(DemoArgs),
    /// Which placement put the keys that are on these servers: every flavor with every key
    /// hash its peer offers, against where each key is (each server's `lru_crawler metadump`,
    /// or --key-file looked up on every server), best first; and the codecs that read a sample
    /// of the values.
    Detect(detect::DetectArgs),
    /// Each server's `stats` and `stats settings` in one table (like memstat and
    /// memcached-tool): version, uptime, items, bytes, memory limit, hit ratio, evictions,
    /// connections, item size limit, then totals; each server's share of the items against its
    /// share of the ring, flagging one that holds far more. With --watch, again every few
    /// seconds with rates. A server that does not answer within the timeout shows as `down:`
    /// (one that refuses `stats` as `error:`); the exit status is then 1 (0 when every server
    /// answered).
    Stats(stats_cmd::StatsArgs),
}

#[derive(Args)]
struct DemoArgs {
    /// Keys to load (`demo:<i>`).
    #[arg(long, default_value_t = 20_000)]
    keys: usize,
    /// memcached servers to start before one more is added.
    #[arg(long, default_value_t = 4)]
    servers: usize,
    /// Only the offline part (placement by the ring, no servers started); also what runs
    /// when memcached is not installed.
    #[arg(long)]
    offline: bool,
}

#[derive(Args)]
struct PlanArgs {
    #[command(flatten)]
    ring: RingArgs,
    /// The server list after the change.
    #[arg(long, value_name = "FILE2")]
    to: Option<PathBuf>,
    /// Compare --flavor with this flavor on the same server list.
    #[arg(long, value_name = "FLAVOR")]
    vs_flavor: Option<String>,
    /// Key hash for --vs-flavor (default: that flavor's).
    #[arg(long, value_name = "NAME")]
    vs_hash: Option<String>,
    /// Synthetic keys `key:<i>`.
    #[arg(long, default_value_t = 1_000_000, value_name = "N")]
    keys: u64,
    /// The user's own key sample, one key per line (instead of --keys). A line may repeat: an
    /// access log (one key per request) gives request-weighted shares, and the keys that carry
    /// the requests are listed.
    #[arg(long, value_name = "F", conflicts_with = "keys")]
    key_file: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// What switching to another ring costs on the keys: the misses of a cold switch against
    /// a warm-up route (memshard get/set --warm-from): the old ring is --warm-from (the new one
    /// --servers), or --servers with --to FILE2 as the new list (same flavor and hash).
    #[arg(long)]
    migrate: bool,
    /// With --migrate: the old ring's server list (--servers is the new ring's).
    #[arg(
        long,
        value_name = "OLD_FILE",
        requires = "migrate",
        conflicts_with = "to"
    )]
    warm_from: Option<PathBuf>,
    /// The old ring's placement flavor (default libmemcached).
    #[arg(long, value_name = "F", requires = "warm_from")]
    warm_from_flavor: Option<String>,
    /// The old ring's key hash (default: its flavor's).
    #[arg(long, value_name = "H", requires = "warm_from")]
    warm_from_hash: Option<String>,
    /// Also write an SVG picture of the plan (key share and weight share per server, share
    /// moved per method).
    #[arg(long, value_name = "OUT")]
    svg: Option<PathBuf>,
    /// Also write a self-contained HTML report (no network, no scripts): key share against
    /// weight share per server, who moves to whom, what each method moves, the tag audit, the
    /// keys that carry an access log's requests.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
    /// Print one table as CSV instead of text: servers (weights, shares, ratios) or moves
    /// (method, from, to, keys).
    #[arg(long, value_name = "TABLE", value_parser = ["servers", "moves"], conflicts_with = "json")]
    csv: Option<String>,
    /// Worker threads (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Also print the classic imbalance table of a textbook ring: unweighted md5 ketama with
    /// these points per server (comma-separated, e.g. 1,10,100,1000) over the --servers
    /// addresses (not the cluster's own ring: its weights and flavor are what the plan shows).
    #[arg(long, value_delimiter = ',', value_name = "N,...",
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_POINTS_PER_SERVER))]
    points: Vec<usize>,
    /// Audit hash tags in the --key-file sample (the tag from --hash-tag, or the one the
    /// flavor's peer applies: twemproxy's hash_tag; without either, no tag is applied and
    /// there is nothing to audit): keys per tag, the server each tag piles onto, per-server
    /// share, warnings.
    #[arg(long, requires = "key_file")]
    tag_audit: bool,
    /// With --tag-audit: warn about tags holding more than this share of the keys.
    #[arg(long, default_value_t = 0.1, value_name = "SHARE", value_parser = parse_share)]
    warn_share: f64,
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    ring: RingArgs,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    routes: routed::RouteFlags,
    /// Worker threads (1 to 1024).
    #[arg(long, default_value_t = 2,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_BENCH_THREADS))]
    threads: usize,
    /// Total operations (default 100000 unless --seconds is given).
    #[arg(long, conflicts_with = "seconds")]
    ops: Option<u64>,
    /// Run for this many seconds instead of a number of operations (above 0, at most a year).
    #[arg(long, value_parser = parse_seconds)]
    seconds: Option<f64>,
    /// Distinct keys (`memshard-bench:<run>:<i>`; with --route-only, `user:<i>`).
    #[arg(long, default_value_t = 10_000)]
    keys: u64,
    /// Value size in bytes (at most 1048576, memcached's default item size).
    #[arg(long, default_value_t = 100,
          value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_BENCH_VALUE))]
    value_size: usize,
    /// Share of operations that are gets (0 to 1).
    #[arg(long, default_value_t = 0.9, value_parser = parse_share)]
    get_ratio: f64,
    /// Check every value read against what this run wrote for that key.
    #[arg(long)]
    verify: bool,
    /// With --seconds: also report, per server, the operations that start in the last S
    /// seconds (ops, hits, values checked, wrong values, errors by kind), and exit 1 when
    /// that window saw any error. Shows a run recovered from faults in the same process.
    #[arg(long, value_name = "S", requires = "seconds", value_parser = parse_seconds)]
    recover_window: Option<f64>,
    /// Only time routing (ns per key), no network.
    #[arg(long)]
    route_only: bool,
    /// Count the keys read (hot-key detection, Space-Saving) and print the N hottest at the
    /// end (0: off).
    #[arg(long, default_value_t = 10, value_name = "N",
          value_parser = RangedU64ValueParser::<usize>::new().range(0..=10_000))]
    hot_keys: usize,
    /// Share of operations (0 to 1) on the first 10 keys, the rest spread over all --keys:
    /// a skewed load whose hot keys the report should find.
    #[arg(long, default_value_t = 0.0, value_parser = parse_share)]
    hot_share: f64,
}

/// Connection settings for the commands that talk to servers.
#[derive(Args)]
struct NetArgs {
    /// Connect / read / write timeout in milliseconds (1 to 86400000, a day).
    #[arg(long, default_value_t = 1000, value_name = "MS",
          value_parser = value_parser!(u64).range(1..=MAX_TIMEOUT_MS))]
    timeout_ms: u64,
    /// Consecutive failures that mark a server down (0: never).
    #[arg(long, default_value_t = 2)]
    failure_limit: u32,
    /// Milliseconds before a down server is probed again (at most 86400000, a day).
    #[arg(long, default_value_t = 2000, value_name = "MS",
          value_parser = value_parser!(u64).range(0..=MAX_TIMEOUT_MS))]
    retry_timeout_ms: u64,
    /// Move a down server's keys to the ring over the live servers (libmemcached
    /// REMOVE_FAILED_SERVERS, twemproxy auto_eject_hosts).
    #[arg(long)]
    auto_eject: bool,
    /// text (every memcached and proxy) or meta (memcached 1.6 and later: mg, ms, md, ma, mn).
    #[arg(long, default_value = "text", value_name = "PROTOCOL")]
    protocol: memshard::Protocol,
    /// Most keys in one `get` line; more keys are split over several lines (endpoints that cap
    /// a request, e.g. ElastiCache Serverless).
    #[arg(long, default_value_t = 100, value_name = "N",
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    max_keys_per_request: usize,
    /// Most bytes in one `get` line (its CR LF included; at least 32); a longer key goes alone.
    #[arg(long, value_name = "BYTES",
          value_parser = RangedU64ValueParser::<usize>::new().range(32..))]
    max_request_bytes: Option<usize>,
    /// Store values over CHUNK bytes (default 1000000, which fits memcached's default -I) as
    /// chunks under keys of their own and an index written last; read, touch and delete them
    /// whole. Every memshard that reads these keys needs it too (any CHUNK).
    #[arg(long, value_name = "CHUNK", num_args = 0..=1, require_equals = true,
          default_missing_value = "1000000",
          value_parser = RangedU64ValueParser::<usize>::new().range(1024..))]
    large_values: Option<usize>,
    #[command(flatten)]
    security: security::SecurityArgs,
}

#[derive(Args)]
struct GetArgs {
    #[command(flatten)]
    ring: RingArgs,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    routes: routed::RouteFlags,
    /// Decode each value as this peer stores it: raw, memshard (the library's own layout),
    /// php-memcached, pylibmc, dalli, spymemcached, node-memcached (default: print the stored
    /// bytes).
    #[arg(long, value_name = "CODEC", value_parser = values::parse_codec)]
    codec: Option<memshard::value::Codec>,
    /// Print one JSON object per hit: {"key","flags","type","value"} (bytes and serialized
    /// values in hex, with "encoding" for the latter).
    #[arg(long)]
    json: bool,
    /// Write the value of the one KEY alone to standard output, byte for byte (no key, tab or
    /// newline); a miss writes nothing and exits 1.
    #[arg(long, conflicts_with_all = ["json", "codec"])]
    raw: bool,
    /// Keys to get; when none are given, keys are read one per line from standard input.
    keys: Vec<std::ffi::OsString>,
}

#[derive(Args)]
struct SetArgs {
    #[command(flatten)]
    ring: RingArgs,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    routes: routed::RouteFlags,
    /// Expiry in seconds (0: never).
    #[arg(long, default_value_t = 0, value_name = "S")]
    ttl: u32,
    /// Client flags stored with the values.
    #[arg(long, default_value_t = 0, conflicts_with_all = ["codec", "value_type"])]
    flags: u32,
    /// Store each value as this peer stores a value of --type: raw (the default), memshard (the
    /// library's own layout), php-memcached, pylibmc, dalli, spymemcached, node-memcached (flags
    /// and bytes from the codec).
    #[arg(long, value_name = "CODEC", value_parser = values::parse_codec)]
    codec: Option<memshard::value::Codec>,
    /// The type of VALUE (with --codec; default string): bytes are given in hex, floats also
    /// as Infinity, -Infinity, NaN, json as any JSON text.
    #[arg(long = "type", value_name = "TYPE", value_enum)]
    value_type: Option<values::ValueType>,
    /// The key; without it, `KEY<TAB>VALUE` lines are read from standard input.
    key: Option<std::ffi::OsString>,
    /// The value (required with KEY); may start with `-` (`-42`, `-Infinity`); `-` alone
    /// reads it, any size and any bytes, from standard input.
    #[arg(allow_hyphen_values = true)]
    value: Option<std::ffi::OsString>,
}

#[derive(Args)]
struct DeleteArgs {
    #[command(flatten)]
    ring: RingArgs,
    #[command(flatten)]
    net: NetArgs,
    #[command(flatten)]
    routes: routed::RouteFlags,
    /// Keys to delete.
    #[arg(required = true)]
    keys: Vec<std::ffi::OsString>,
}

/// How to build the ring: shared by every command that routes keys.
#[derive(Args)]
struct RingArgs {
    /// Server list file: `HOST:PORT [WEIGHT] [NAME]` per line (also libketama, twemproxy and
    /// libmemcached spellings). `-` reads it from standard input.
    /// (Required unless --twemproxy-config, --libmemcached-config or, where taken, --route
    /// gives the servers.)
    #[arg(long, value_name = "FILE")]
    servers: Option<PathBuf>,
    /// Read servers, hash, hash_tag and failure settings from this twemproxy nutcracker.yml
    /// (placement equals nutcracker's for that pool).
    #[arg(long, value_name = "YML", conflicts_with_all = ["servers", "libmemcached_config", "flavor", "hash", "hash_tag"])]
    twemproxy_config: Option<PathBuf>,
    /// The pool of --twemproxy-config (needed when the file has several).
    #[arg(long, value_name = "NAME", requires = "twemproxy_config")]
    pool: Option<String>,
    /// Read servers and distribution from a libmemcached configuration string, e.g.
    /// "--SERVER=10.0.0.1:11211/?2 --DISTRIBUTION=consistent --HASH=MD5".
    #[arg(long, value_name = "STRING", allow_hyphen_values = true, conflicts_with_all = ["servers", "flavor", "hash", "hash_tag"])]
    libmemcached_config: Option<String>,
    /// Placement flavor: the peer whose placement to match (default libmemcached).
    /// `php-memcached` and `pylibmc` are those peers' ketama modes; at their defaults they
    /// place as `libmemcached-modula` (or give --peer).
    #[arg(long, value_name = "NAME")]
    flavor: Option<String>,
    /// The client the cache is shared with, at its defaults: php-memcached, pylibmc,
    /// spymemcached, dalli, pymemcache, gomemcache, node-memcached, aws-php, aws-java. Sets
    /// the flavor, key hash, key prefix and codec as that client has them; an explicit
    /// --flavor, --hash or --codec with it is an error (change them with --peer-option).
    #[arg(long, value_name = "NAME", value_parser = parse_peer,
          conflicts_with_all = ["flavor", "hash", "twemproxy_config", "libmemcached_config"])]
    peer: Option<memshard::peer::Peer>,
    /// One of --peer's own options, spelled as that client spells it (repeatable, applied in
    /// order), e.g. OPT_LIBKETAMA_COMPATIBLE=true, OPT_PREFIX_KEY=app: (php-memcached),
    /// ketama=true (pylibmc), ConnectionFactory=KetamaConnectionFactory (spymemcached).
    #[arg(long, value_name = "KEY=VALUE", requires = "peer")]
    peer_option: Vec<String>,
    /// Key hash, for flavors whose peer lets users pick one (libmemcached*, twemproxy).
    #[arg(long, value_name = "NAME")]
    hash: Option<String>,
    /// Two-character hash tag with twemproxy semantics, e.g. `{}`.
    #[arg(long, value_name = "XY")]
    hash_tag: Option<String>,
    /// Find the servers through cluster auto discovery: an ElastiCache configuration endpoint
    /// (or, with --discover-kind memorystore, a Memorystore discovery endpoint). The nodes are
    /// placed with --flavor in the order the endpoint lists them (libmemcached-modula: the AWS
    /// PHP client's default; spymemcached-modula: the AWS Java client's).
    #[arg(long, value_name = "HOST:PORT", conflicts_with_all = ["servers", "twemproxy_config", "libmemcached_config"])]
    discover: Option<String>,
    /// Seconds between discovery polls (1 to 86400).
    #[arg(long, value_name = "SECONDS", default_value_t = 60, requires = "discover",
          value_parser = value_parser!(u64).range(1..=86_400))]
    discover_interval: u64,
    /// elasticache (data nodes answer discovery too) or memorystore (only the endpoint does).
    #[arg(long, value_name = "KIND", default_value = "elasticache", requires = "discover",
          value_parser = ["elasticache", "memorystore"])]
    discover_kind: String,
}

#[derive(Args)]
struct RouteArgs {
    #[command(flatten)]
    ring: RingArgs,
    /// Keys to route; when none are given, keys are read one per line from standard input.
    keys: Vec<std::ffi::OsString>,
}

/// `--ttl S`: 0 never expires; more than 30 days is sent as the time it ends at.
fn ttl_expiry(ttl: u32) -> memshard::Expiry {
    match ttl {
        0 => Expiry::NEVER,
        s => memshard::Expiry::after(Duration::from_secs(u64::from(s))),
    }
}

/// Longest `--timeout-ms` / `--retry-timeout-ms`: the library's longest timeout, a day.
const MAX_TIMEOUT_MS: u64 = memshard::MAX_TIMEOUT.as_millis() as u64;
/// Longest `bench --seconds`: a year.
const MAX_BENCH_SECONDS: f64 = 365.0 * 24.0 * 3600.0;
/// Most `bench --threads`.
const MAX_BENCH_THREADS: u64 = 1024;
/// Largest `bench --value-size`: memcached's default item size (`-I 1m`), the client's limit.
const MAX_BENCH_VALUE: u64 = 1024 * 1024;
/// Most `plan --points` per server; servers times points is bounded too (`plan`).
const MAX_POINTS_PER_SERVER: u64 = 1_000_000;
/// Most points of the `plan --points` table in all.
const MAX_TABLE_POINTS: usize = 8_000_000;

/// A finite float, or why not (clap rejects the argument with exit status 2).
fn parse_finite(s: &str, what: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of {what}"))?;
    if !v.is_finite() {
        return Err(format!("{s:?} is not a finite number of {what}"));
    }
    Ok(v)
}

/// `--seconds`: above 0 and at most a year.
fn parse_seconds(s: &str) -> Result<f64, String> {
    let v = parse_finite(s, "seconds")?;
    if v > 0.0 && v <= MAX_BENCH_SECONDS {
        Ok(v)
    } else {
        Err(format!(
            "{s} s is out of range: give more than 0 and at most {MAX_BENCH_SECONDS} s (a year)"
        ))
    }
}

/// A share: from 0 to 1.
fn parse_share(s: &str) -> Result<f64, String> {
    let v = parse_finite(s, "a share")?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s} is out of range: a share is from 0 to 1"))
    }
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
        Cmd::Get(a) => get(a),
        Cmd::Set(a) => set(a),
        Cmd::Delete(a) => delete(a),
        Cmd::Bench(a) => bench_cmd(a),
        Cmd::Plan(a) => plan(a),
        Cmd::Demo(a) => demo::run(a),
        Cmd::Detect(a) => detect::run(a),
        Cmd::Stats(a) => stats_cmd::run(a),
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
    fn client(&self, net: &NetArgs, pool_size: u32) -> Result<Client, Failure> {
        self.client_with(net, pool_size, |b| b)
    }

    /// `client`, with `more` settings (`memshard bench`'s hot-key detection).
    fn client_with(
        &self,
        net: &NetArgs,
        pool_size: u32,
        more: impl FnOnce(memshard::Builder<memshard::Client>) -> memshard::Builder<memshard::Client>,
    ) -> Result<Client, Failure> {
        if self.discover.is_some() {
            // the build asks the endpoint itself (with the client's timeouts and login)
            let (flavor, hash, tag) = self.placement()?;
            let mut b = net.builder(pool_size).discover(self.discovery()?);
            if let Some(profile) = self.profile()? {
                b = b.peer(profile);
            }
            let mut b = b.flavor(flavor);
            if let Some(h) = hash {
                b = b.hash(h);
            }
            if let Some(tag) = tag {
                b = b.hash_tag(tag);
            }
            return net.security.apply(more(b))?.build().map_err(usage);
        }
        let (ring, peer) = self.resolve()?;
        // a peer configuration brings its own timeout, failure settings and namespace
        let t = peer
            .as_ref()
            .and_then(|p| p.timeout)
            .unwrap_or(Duration::from_millis(net.timeout_ms));
        let policy =
            peer.as_ref()
                .map(|p| p.failure_policy)
                .unwrap_or(memshard::FailurePolicy::new(
                    net.failure_limit,
                    Duration::from_millis(net.retry_timeout_ms),
                    net.auto_eject,
                ));
        let mut b = Client::builder()
            .servers(ring.servers().iter().cloned())
            .flavor(ring.flavor())
            .hash(ring.key_hash())
            .connect_timeout(t)
            .read_timeout(t)
            .write_timeout(t)
            .checkout_timeout(t)
            .failure_policy(policy)
            .protocol(net.protocol)
            .request_caps(
                net.max_keys_per_request,
                net.max_request_bytes.unwrap_or(usize::MAX),
            )
            .pool_size(pool_size);
        if let Some(profile) = self.profile()? {
            b = b.peer(profile);
        }
        if let Some(tag) = ring.hash_tag() {
            b = b.hash_tag(tag);
        }
        if let Some(prefix) = peer.as_ref().and_then(|p| p.prefix.as_ref()) {
            b = b
                .prefix(prefix)
                .hash_with_prefix(peer.as_ref().is_some_and(|p| p.hash_with_prefix));
        }
        net.security
            .apply(more(net.large(b)))?
            .build()
            .map_err(usage)
    }

    fn build(&self) -> Result<Ring, Failure> {
        self.resolve().map(|(ring, _)| ring)
    }

    /// `--servers -`: the server list comes from standard input.
    fn servers_from_stdin(&self) -> bool {
        self.servers.as_ref().is_some_and(|p| p.as_os_str() == "-")
    }

    /// --peer with its --peer-option settings, if given.
    fn profile(&self) -> Result<Option<memshard::peer::PeerProfile>, Failure> {
        let Some(peer) = self.peer else {
            return Ok(None);
        };
        let mut profile = memshard::peer::PeerProfile::from(peer);
        for kv in &self.peer_option {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| usage(format!("--peer-option {kv:?}: expected KEY=VALUE")))?;
            profile = profile
                .option(k, v)
                .map_err(|e| usage(format!("--peer-option {kv}: {e}")))?;
        }
        Ok(Some(profile))
    }

    /// --flavor (or --peer's), --hash and --hash-tag.
    fn placement(&self) -> Result<(Flavor, Option<KeyHash>, Option<HashTag>), Failure> {
        let tag: Option<HashTag> = match &self.hash_tag {
            Some(t) => Some(t.parse().map_err(usage)?),
            None => None,
        };
        if let Some(p) = self.profile()? {
            return Ok((p.flavor(), Some(p.hash()), tag.or(p.hash_tag())));
        }
        if let Some(name) = &self.flavor {
            alias_warning(name);
        }
        let flavor: Flavor = self
            .flavor
            .as_deref()
            .unwrap_or("libmemcached")
            .parse()
            .map_err(usage)?;
        let hash: Option<KeyHash> = match &self.hash {
            Some(h) => Some(h.parse().map_err(usage)?),
            None => None,
        };
        Ok((flavor, hash, tag))
    }

    /// --discover, --discover-interval and --discover-kind as a discovery setting.
    fn discovery(&self) -> Result<memshard::discovery::Discovery, Failure> {
        let endpoint = self.discover.as_deref().unwrap_or_default();
        let d = memshard::discovery::Discovery::new(endpoint)
            .map_err(|e| usage(format!("--discover: {e}")))?
            .interval(Duration::from_secs(self.discover_interval));
        Ok(match self.discover_kind.as_str() {
            "memorystore" => d.kind_of(memshard::discovery::DiscoveryKind::Memorystore),
            _ => d,
        })
    }

    /// The ring, and the peer configuration it came from (if any).
    fn resolve(&self) -> Result<(Ring, Option<memshard::config::PeerConfig>), Failure> {
        if self.discover.is_some() {
            let (flavor, hash, tag) = self.placement()?;
            let d = self.discovery()?;
            let config =
                memshard::discovery::fetch(d.endpoint(), Duration::from_secs(2)).map_err(|e| {
                    Failure {
                        code: 1,
                        msg: e.to_string(),
                    }
                })?;
            let servers = memshard::discovery::servers_for(&config, flavor);
            let ring = Ring::with_options(servers, flavor, hash, tag).map_err(usage)?;
            return Ok((ring, None));
        }
        let peer = if let Some(path) = &self.twemproxy_config {
            let text = std::fs::read_to_string(path)
                .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
            Some(
                memshard::config::twemproxy(&text, self.pool.as_deref())
                    .map_err(|e| usage(format!("{}: {e}", path.display())))?,
            )
        } else if let Some(cfg) = &self.libmemcached_config {
            Some(
                memshard::config::libmemcached(cfg)
                    .map_err(|e| usage(format!("--libmemcached-config: {e}")))?,
            )
        } else {
            None
        };
        if let Some(p) = peer {
            let ring = Ring::with_point_hash(
                p.servers.clone(),
                p.flavor,
                Some(p.hash),
                p.point_hash,
                p.hash_tag,
            )
            .map_err(usage)?;
            return Ok((ring, Some(p)));
        }
        let (flavor, hash, tag) = self.placement()?;
        let path = self.servers.as_ref().ok_or_else(|| {
            usage(
                "give --servers FILE (or --twemproxy-config / --libmemcached-config / --discover)",
            )
        })?;
        let text = if self.servers_from_stdin() {
            let mut s = String::new();
            io::stdin().read_to_string(&mut s)?;
            s
        } else {
            std::fs::read_to_string(path)
                .map_err(|e| usage(format!("cannot read server list {}: {e}", path.display())))?
        };
        let servers = memshard::parse_server_list(&text)
            .map_err(|e| usage(format!("{}: {e}", path.display())))?;
        let flavor = match self.profile()? {
            Some(p) => p.flavor_for(&servers),
            None => flavor,
        };
        let ring = Ring::with_options(servers, flavor, hash, tag)
            .map_err(|e| usage(format!("{}: {e}", path.display())))?;
        Ok((ring, None))
    }
}

impl NetArgs {
    /// A builder with these connection settings (timeouts, failure policy, protocol, request
    /// caps) and `pool_size`; TLS and login are `security`'s.
    fn builder(&self, pool_size: u32) -> memshard::Builder<memshard::Client> {
        let t = Duration::from_millis(self.timeout_ms);
        let b = Client::builder()
            .connect_timeout(t)
            .read_timeout(t)
            .write_timeout(t)
            .checkout_timeout(t)
            .failure_policy(memshard::FailurePolicy::new(
                self.failure_limit,
                Duration::from_millis(self.retry_timeout_ms),
                self.auto_eject,
            ))
            .protocol(self.protocol)
            .request_caps(
                self.max_keys_per_request,
                self.max_request_bytes.unwrap_or(usize::MAX),
            )
            .pool_size(pool_size);
        self.large(b)
    }

    /// `b` with `--large-values`, if given.
    fn large(&self, b: memshard::Builder<memshard::Client>) -> memshard::Builder<memshard::Client> {
        match self.large_values {
            // the client's own limit follows the chunk, so that a chunk over 1 MiB is taken
            Some(chunk) => b.max_value_size(chunk.max(1 << 20)).large_values(chunk),
            None => b,
        }
    }
}

/// `--peer NAME` as a peer.
fn parse_peer(s: &str) -> Result<memshard::peer::Peer, String> {
    s.parse()
        .map_err(|e: memshard::peer::PeerError| e.to_string())
}

/// The flavor aliases named after a peer are its ketama mode, not its default: said once.
fn alias_warning(name: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let (peer, option) = match name.to_ascii_lowercase().replace('_', "-").as_str() {
        "php-memcached" => ("php-memcached", "OPT_LIBKETAMA_COMPATIBLE"),
        "pylibmc" => ("pylibmc", "ketama_weighted"),
        _ => return,
    };
    ONCE.call_once(|| {
        eprintln!(
            "memshard: warning: --flavor {peer} is {peer}'s ketama mode ({option}), the same as \
             --flavor libmemcached; {peer} at its defaults places keys as --flavor \
             libmemcached-modula (or give --peer {peer})"
        );
    });
}

/// The codec `get` and `set` use: --codec, or --peer's (with its settings); both is an error.
fn peer_codec(
    ring: &RingArgs,
    codec: Option<memshard::value::Codec>,
) -> Result<Option<memshard::value::Transcoder>, Failure> {
    match (ring.profile()?, codec) {
        (Some(_), Some(_)) => Err(usage(
            "--peer sets the codec; drop --codec (or --peer), or change it with --peer-option",
        )),
        (Some(p), None) => Ok(Some(p.transcoder().clone())),
        (None, c) => Ok(c.map(memshard::value::Transcoder::new)),
    }
}

/// No codec given: the stored bytes, as the raw codec reads them.
trait OrRaw {
    fn unwrap_or_default_raw(self) -> memshard::value::Transcoder;
}

impl OrRaw for Option<memshard::value::Transcoder> {
    fn unwrap_or_default_raw(self) -> memshard::value::Transcoder {
        self.unwrap_or_else(|| memshard::value::Transcoder::new(memshard::value::Codec::Raw))
    }
}

/// A command-line argument as the bytes the user typed (keys need not be UTF-8).
fn os_bytes(s: &std::ffi::OsStr) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes()
}

fn route(a: RouteArgs) -> Result<(), Failure> {
    let (ring, peer) = a.ring.resolve()?;
    // libmemcached --HASH-WITH-NAMESPACE: placement hashes the namespace and the key
    let hash_prefix: Vec<u8> = match (&peer, a.ring.profile()?) {
        (Some(p), _) if p.hash_with_prefix => p.prefix.clone().unwrap_or_default().into_bytes(),
        // dalli's and node memcached's namespace is part of the key their ring hashes
        (_, Some(p)) if p.hash_with_prefix() => p.prefix().to_vec(),
        _ => Vec::new(),
    };
    let mut scratch = Vec::new();
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut emit = |key: &[u8], out: &mut BufWriter<io::StdoutLock>| -> io::Result<()> {
        let hashed = if hash_prefix.is_empty() {
            key
        } else {
            scratch.clear();
            scratch.extend_from_slice(&hash_prefix);
            scratch.extend_from_slice(key);
            &scratch[..]
        };
        // A ring that was built always has a point, so route() is Some.
        if let Some(s) = ring.server_for(hashed) {
            out.write_all(key)?;
            out.write_all(b"\t")?;
            // a discovered node: the address it is reached at (its IP), as the cluster
            // clients report it; placement still used the name its peer hashes
            match &s.connect_to {
                Some(_) => out.write_all(s.connect_addr().as_bytes())?,
                None => out.write_all(s.addr.as_bytes())?,
            }
            out.write_all(b"\n")?;
        }
        Ok(())
    };
    if a.keys.is_empty() {
        if a.ring.servers_from_stdin() {
            return Err(usage(
                "--servers - reads the server list from standard input, so keys must be given as arguments",
            ));
        }
        for_each_stdin_line(|line| emit(line, &mut out))?;
    } else {
        for k in &a.keys {
            emit(os_bytes(k), &mut out)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// Call `f` with each line of standard input, without its line end (LF or CRLF).
fn for_each_stdin_line(mut f: impl FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
        }
        f(&line)?;
    }
}

/// Keys from the arguments, or from standard input when there are none.
fn keys_from(
    args: &[std::ffi::OsString],
    servers_from_stdin: bool,
) -> Result<Vec<Vec<u8>>, Failure> {
    if !args.is_empty() {
        return Ok(args.iter().map(|k| os_bytes(k).to_vec()).collect());
    }
    if servers_from_stdin {
        return Err(usage(
            "--servers - reads the server list from standard input, so keys must be given as arguments",
        ));
    }
    let mut keys = Vec::new();
    for_each_stdin_line(|l| {
        keys.push(l.to_vec());
        Ok(())
    })?;
    Ok(keys)
}

/// Keys per multi-key call from the CLI: bounds memory for huge inputs.
const CLI_BATCH: usize = 1000;

fn get(a: GetArgs) -> Result<(), Failure> {
    let codec = peer_codec(&a.ring, a.codec)?;
    let client = routed::Target::new(&a.routes, &a.ring, &a.net, 2)?;
    let decoder = codec.clone().unwrap_or_default_raw();
    let keys = keys_from(&a.keys, a.ring.servers_from_stdin())?;
    if a.raw {
        return get_raw(&client, &keys);
    }
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let (mut hits, mut misses, mut errors) = (0usize, 0usize, 0usize);
    for batch in keys.chunks(CLI_BATCH) {
        for (k, r) in batch.iter().zip(client.get_multi(batch)) {
            match r {
                Ok(Some(item)) if codec.is_none() && !a.json => {
                    hits += 1;
                    out.write_all(k)?;
                    out.write_all(b"\t")?;
                    out.write_all(&item.value)?;
                    out.write_all(b"\n")?;
                }
                Ok(Some(item)) => {
                    match decoder.decode(item.flags, &item.value, values::DECODE_MAX) {
                        Ok(v) if a.json => {
                            hits += 1;
                            serde_json::to_writer(&mut out, &values::json_line(k, item.flags, v))
                                .map_err(io::Error::from)?;
                            out.write_all(b"\n")?;
                        }
                        Ok(v) => {
                            hits += 1;
                            out.write_all(k)?;
                            out.write_all(b"\t")?;
                            out.write_all(&values::plain(v))?;
                            out.write_all(b"\n")?;
                        }
                        Err(e) => {
                            errors += 1;
                            let k = String::from_utf8_lossy(k);
                            eprintln!("memshard get: {k}: flags {}: {e}", item.flags);
                        }
                    }
                }
                Ok(None) => misses += 1,
                Err(e) => {
                    errors += 1;
                    eprintln!("memshard get: {}: {e}", String::from_utf8_lossy(k));
                }
            }
        }
    }
    out.flush()?;
    eprintln!("memshard get: {hits} hits, {misses} misses, {errors} errors");
    client.report("get");
    if errors > 0 {
        return Err(Failure {
            code: 1,
            msg: format!("{errors} keys failed"),
        });
    }
    Ok(())
}

/// `get --raw KEY`: the value alone on standard output; a miss or an error exits 1.
fn get_raw(client: &routed::Target, keys: &[Vec<u8>]) -> Result<(), Failure> {
    let [key] = keys else {
        return Err(usage("--raw writes one value: give exactly one KEY"));
    };
    let got = client.get_multi(std::slice::from_ref(key)).pop();
    let (hits, misses, errors) = match got {
        Some(Ok(Some(item))) => {
            let mut out = io::stdout().lock();
            out.write_all(&item.value)?;
            out.flush()?;
            (1, 0, 0)
        }
        Some(Ok(None)) => (0, 1, 0),
        Some(Err(e)) => {
            eprintln!("memshard get: {}: {e}", String::from_utf8_lossy(key));
            (0, 0, 1)
        }
        None => (0, 0, 1),
    };
    eprintln!("memshard get: {hits} hits, {misses} misses, {errors} errors");
    client.report("get");
    match (misses, errors) {
        (0, 0) => Ok(()),
        (1, _) => Err(Failure {
            code: 1,
            msg: "a miss".into(),
        }),
        _ => Err(Failure {
            code: 1,
            msg: "the key failed".into(),
        }),
    }
}

fn set(a: SetArgs) -> Result<(), Failure> {
    let items: Vec<(Vec<u8>, Vec<u8>)> = match (&a.key, &a.value) {
        (Some(_), Some(v)) if os_bytes(v) == b"-" && a.ring.servers_from_stdin() => {
            return Err(usage(
                "--servers - and VALUE - both read standard input; give the servers in a file",
            ));
        }
        (Some(k), Some(v)) if os_bytes(v) == b"-" => {
            let mut value = Vec::new();
            io::stdin().lock().read_to_end(&mut value)?;
            vec![(os_bytes(k).to_vec(), value)]
        }
        (Some(k), Some(v)) => vec![(os_bytes(k).to_vec(), os_bytes(v).to_vec())],
        (Some(_), None) => {
            return Err(usage(
                "set KEY needs a VALUE (or give neither and pipe KEY<TAB>VALUE lines)",
            ));
        }
        (None, _) => {
            if a.ring.servers_from_stdin() {
                return Err(usage(
                    "--servers - reads the server list from standard input; give KEY VALUE as arguments",
                ));
            }
            let mut items = Vec::new();
            let mut n = 0;
            let mut bad = None;
            for_each_stdin_line(|l| {
                n += 1;
                if l.is_empty() {
                    return Ok(());
                }
                match l.iter().position(|&b| b == b'\t') {
                    Some(t) => items.push((l[..t].to_vec(), l[t + 1..].to_vec())),
                    None => bad = bad.or(Some(n)),
                }
                Ok(())
            })?;
            if let Some(line) = bad {
                return Err(usage(format!(
                    "standard input line {line}: expected KEY<TAB>VALUE"
                )));
            }
            items
        }
    };
    let codec = peer_codec(&a.ring, a.codec)?;
    if a.ring.peer.is_some() && a.flags != 0 {
        return Err(usage(
            "--peer stores values with its codec's flags; drop --flags (or --peer)",
        ));
    }
    let client = routed::Target::new(&a.routes, &a.ring, &a.net, 2)?;
    let (mut stored, mut failed) = (0usize, 0usize);
    let expiry = ttl_expiry(a.ttl);
    if codec.is_some() || a.value_type.is_some() {
        let codec = codec.unwrap_or_default_raw();
        let ty = a.value_type.unwrap_or(values::ValueType::String);
        for (k, v) in &items {
            let shown = String::from_utf8_lossy(k);
            let value = values::parse_value(ty, v).map_err(|e| usage(format!("{shown}: {e}")))?;
            match client.set_value(&codec, k, &value, expiry) {
                Ok(StoreOutcome::Stored) => stored += 1,
                Ok(other) => {
                    failed += 1;
                    eprintln!("memshard set: {shown}: {other:?}");
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("memshard set: {shown}: {e}");
                }
            }
        }
        client.report("set");
        return set_summary(stored, failed);
    }
    for batch in items.chunks(CLI_BATCH) {
        for ((k, _), r) in batch.iter().zip(client.set_multi(batch, a.flags, expiry)) {
            match r {
                Ok(StoreOutcome::Stored) => stored += 1,
                Ok(other) => {
                    failed += 1;
                    eprintln!("memshard set: {}: {other:?}", String::from_utf8_lossy(k));
                }
                Err(e) => {
                    failed += 1;
                    eprintln!("memshard set: {}: {e}", String::from_utf8_lossy(k));
                }
            }
        }
    }
    client.report("set");
    set_summary(stored, failed)
}

fn set_summary(stored: usize, failed: usize) -> Result<(), Failure> {
    eprintln!("memshard set: {stored} stored, {failed} failed");
    if failed > 0 {
        return Err(Failure {
            code: 1,
            msg: format!("{failed} keys were not stored"),
        });
    }
    Ok(())
}

fn delete(a: DeleteArgs) -> Result<(), Failure> {
    let client = routed::Target::new(&a.routes, &a.ring, &a.net, 2)?;
    let keys: Vec<&[u8]> = a.keys.iter().map(|k| os_bytes(k)).collect();
    let (mut deleted, mut missing, mut errors) = (0usize, 0usize, 0usize);
    for (k, r) in keys.iter().zip(client.delete_multi(&keys)) {
        match r {
            Ok(memshard::DeleteOutcome::Deleted) => deleted += 1,
            Ok(memshard::DeleteOutcome::NotFound) => missing += 1,
            Err(e) => {
                errors += 1;
                eprintln!("memshard delete: {}: {e}", String::from_utf8_lossy(k));
            }
        }
    }
    eprintln!("memshard delete: {deleted} deleted, {missing} not found, {errors} errors");
    client.report("delete");
    if errors > 0 {
        return Err(Failure {
            code: 1,
            msg: format!("{errors} keys failed"),
        });
    }
    Ok(())
}

fn bench_cmd(a: BenchArgs) -> Result<(), Failure> {
    if a.route_only {
        if a.routes.any() {
            return Err(usage(
                "--route-only times one ring: give --servers without --warm-from or --route",
            ));
        }
        let ring = a.ring.build()?;
        bench::route_only(&ring, a.keys);
        return Ok(());
    }
    if a.keys == 0 || a.threads == 0 {
        return Err(usage("--keys and --threads must be at least 1"));
    }
    if !(0.0..=1.0).contains(&a.get_ratio) {
        return Err(usage("--get-ratio is a share from 0 to 1"));
    }
    if let (Some(w), Some(s)) = (a.recover_window, a.seconds)
        && !(w > 0.0 && w < s)
    {
        return Err(usage(
            "--recover-window must be above 0 and below --seconds",
        ));
    }
    // at most MAX_BENCH_THREADS (clap), so this fits
    let pool_size = u32::try_from(a.threads).map_err(|_| usage("--threads is too large"))?;
    // more counters than a library default: a tighter count for a few hundred KiB
    let hot = (a.hot_keys > 0).then(|| {
        memshard::HotKeys::top(a.hot_keys).counters(a.hot_keys.saturating_mul(16).max(4096))
    });
    let more = |b: memshard::Builder<memshard::Client>| match &hot {
        Some(h) => b.hot_keys(*h),
        None => b,
    };
    let route = a.routes.router(&a.ring, &a.net, pool_size, more)?;
    let client = match &route {
        // the new (main, a) pool's client: its ring and hot keys are the report's
        Some(r) => r.router.pool(memshard::routes::PoolRole::First).clone(),
        None => a.ring.client_with(&a.net, pool_size, more)?,
    };
    let spec = bench::Spec {
        hot_keys: a.hot_keys,
        hot_share: a.hot_share,
        threads: a.threads,
        ops: a.ops,
        seconds: a.seconds,
        keys: a.keys,
        value_size: a.value_size,
        get_ratio: a.get_ratio,
        verify: a.verify,
        recover_window: a.recover_window,
        run_id: format!(
            "{:x}{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0)
        ),
    };
    let outcome = bench::run(&client, route.as_ref(), &spec);
    if let Some(d) = client.discovery() {
        println!(
            "discovery: version {} with {} nodes; {} configurations applied, {} ignored, {} polls{}",
            d.version,
            d.nodes,
            d.applied,
            d.ignored,
            d.polls,
            d.last_error
                .map(|e| format!("; last problem: {e}"))
                .unwrap_or_default()
        );
    }
    if let Some(auth) = outcome.auth {
        return Err(Failure { code: 1, msg: auth });
    }
    if outcome.wrong > 0 {
        return Err(Failure {
            code: 1,
            msg: format!("{} wrong values", outcome.wrong),
        });
    }
    if let Some(n) = outcome.window_errors.filter(|&n| n > 0) {
        return Err(Failure {
            code: 1,
            msg: format!("{n} errors in the recover window"),
        });
    }
    Ok(())
}

fn plan(a: PlanArgs) -> Result<(), Failure> {
    let before = a.ring.build()?;
    let keys = plan_cmd::load_keys(a.key_file.as_deref(), a.keys)
        .map_err(|e| usage(format!("cannot read --key-file: {e}")))?;
    if keys.is_empty() {
        return Err(usage("no keys to plan with"));
    }
    let threads = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let mut printed = false;
    if let Some(vs) = &a.vs_flavor {
        let b: Flavor = vs.parse().map_err(usage)?;
        let hb: Option<KeyHash> = match &a.vs_hash {
            Some(h) => Some(h.parse().map_err(usage)?),
            None => None,
        };
        let d = memshard::plan::compare_flavors(
            before.servers(),
            before.flavor(),
            b,
            Some(before.key_hash()),
            hb,
            &keys,
        )
        .map_err(usage)?;
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&d).map_err(|e| usage(e.to_string()))?
            );
        } else {
            print!("{}", plan_cmd::diff_text(&d));
        }
        printed = true;
    }
    if a.migrate {
        plan_migrate(&a, &keys)?;
        printed = true;
    }
    let sample = plan_sample(&keys);
    // the cluster as it is when no change and no other report is asked for
    let describe = a.to.is_none()
        && !a.migrate
        && a.vs_flavor.is_none()
        && !a.tag_audit
        && a.points.is_empty();
    let audit = match (&keys, a.tag_audit, before.hash_tag()) {
        (memshard::plan::Keys::List(list), true, Some(tag)) => {
            let ring = Ring::with_point_hash(
                before.servers().to_vec(),
                before.flavor(),
                Some(before.key_hash()),
                Some(before.point_hash()),
                Some(tag),
            )
            .map_err(usage)?;
            Some((
                memshard::plan::tag_audit(&ring, list, a.warn_share),
                tag.to_string(),
            ))
        }
        _ => None,
    };
    let change = a.to.as_ref().filter(|_| !a.migrate);
    if change.is_some() || describe || a.html.is_some() || a.csv.is_some() {
        let after = match change {
            Some(to) => {
                let text = std::fs::read_to_string(to)
                    .map_err(|e| usage(format!("cannot read server list {}: {e}", to.display())))?;
                memshard::parse_server_list(&text)
                    .map_err(|e| usage(format!("{}: {e}", to.display())))?
            }
            None => before.servers().to_vec(),
        };
        let p = plan_cmd::with_progress(keys.len(), |progress| {
            memshard::plan::plan_ring(&before, &after, &keys, threads, progress)
        })
        .map_err(usage)?;
        let view = plan_view::View::new(&p, sample, change.is_none());
        let top = top_keys(&keys, &before, 20);
        if let Some(table) = &a.csv {
            print!("{}", plan_view::csv(&view, table).map_err(usage)?);
        } else if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&plan_view::json(&view))
                    .map_err(|e| usage(e.to_string()))?
            );
        } else {
            print!("{}", plan_view::text(&view));
            if !top.is_empty() {
                print!("{}", plan_cmd::top_text(&top, sample.lines));
            }
        }
        if let Some(out) = &a.svg {
            std::fs::write(out, plan_cmd::svg(&p))?;
            eprintln!("memshard plan: wrote {}", out.display());
        }
        if let Some(out) = &a.html {
            let audit = audit.as_ref().map(|(a, t)| (a, t.as_str()));
            std::fs::write(out, plan_html::html(&view, audit, &top))?;
            eprintln!("memshard plan: wrote {}", out.display());
        }
        printed = true;
    }
    if a.tag_audit && before.hash_tag().is_none() {
        // No tag applied, none audited: a `{}` in a key is part of the key for this flavor.
        println!(
            "tag audit: no hash tag: {} places each key whole (give --hash-tag, or a twemproxy \
             configuration with hash_tag, to audit one)",
            before.flavor()
        );
        printed = true;
    } else if let Some((audit, tag)) = audit.as_ref().filter(|_| a.csv.is_none()) {
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(audit).map_err(|e| usage(e.to_string()))?
            );
        } else {
            print!("{}", plan_cmd::audit_text(audit, tag));
        }
        printed = true;
    }
    if !a.points.is_empty() {
        let servers = before.servers().len();
        if let Some(&pts) = a
            .points
            .iter()
            .find(|&&p| servers.saturating_mul(p) > MAX_TABLE_POINTS)
        {
            return Err(usage(format!(
                "--points {pts} over {servers} servers is more than {MAX_TABLE_POINTS} points; give fewer points"
            )));
        }
        println!(
            "imbalance of a textbook ring (unweighted md5 ketama, N points per server; not this cluster's ring) over {} servers, {} keys:",
            before.servers().len(),
            keys.len()
        );
        println!(
            "  {:>16} {:>16} {:>16}",
            "points/server", "heaviest/mean", "lightest/mean"
        );
        for &pts in &a.points {
            let (hi, lo) =
                memshard::plan::imbalance_with_points(before.servers(), pts.max(1), keys.len());
            println!("  {pts:>16} {hi:>16.3} {lo:>16.3}");
        }
        printed = true;
    }
    if !printed {
        return Err(usage(
            "give --to FILE2 (plan a change), --migrate with --warm-from OLD_FILE or --to FILE2 (cold switch against a warm-up route), --vs-flavor B (compare two clients), --tag-audit --key-file F, or --points N,... (imbalance table)",
        ));
    }
    Ok(())
}

/// The key sample's lines and distinct keys.
fn plan_sample(keys: &memshard::plan::Keys) -> plan_view::Sample {
    match keys {
        memshard::plan::Keys::Synthetic(n) => plan_view::Sample {
            lines: *n,
            distinct: *n,
        },
        memshard::plan::Keys::List(list) => {
            let distinct: std::collections::HashSet<&[u8]> =
                list.iter().map(Vec::as_slice).collect();
            plan_view::Sample {
                lines: list.len() as u64,
                distinct: distinct.len() as u64,
            }
        }
    }
}

/// The `n` keys of an access log that carry the most requests, each with its count and
/// server (none when no key repeats).
fn top_keys(keys: &memshard::plan::Keys, ring: &Ring, n: usize) -> Vec<(String, u64, String)> {
    let memshard::plan::Keys::List(list) = keys else {
        return Vec::new();
    };
    let mut counts: std::collections::HashMap<&[u8], u64> = std::collections::HashMap::new();
    for k in list {
        *counts.entry(k.as_slice()).or_default() += 1;
    }
    if counts.len() == list.len() {
        return Vec::new();
    }
    let mut top: Vec<(&[u8], u64)> = counts.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    top.truncate(n);
    top.into_iter()
        .map(|(k, c)| {
            let server = ring
                .route(k)
                .and_then(|i| ring.servers().get(i))
                .map_or_else(|| "-".to_string(), |s| s.addr.clone());
            (String::from_utf8_lossy(k).into_owned(), c, server)
        })
        .collect()
}

/// `plan --migrate`: the old and new rings (and their prefixes), then the library's arithmetic.
fn plan_migrate(a: &PlanArgs, keys: &memshard::plan::Keys) -> Result<(), Failure> {
    use memshard::plan::{PoolPlacement, plan_migration};
    let (new_ring, new_peer) = a.ring.resolve()?;
    let prefix_of = |p: &Option<memshard::config::PeerConfig>| {
        p.as_ref()
            .map(|p| {
                (
                    p.prefix.clone().unwrap_or_default().into_bytes(),
                    p.hash_with_prefix,
                )
            })
            .unwrap_or_default()
    };
    let (old_ring, old_peer, new_ring, new_peer) = if let Some(old) = &a.warm_from {
        let old_args = RingArgs {
            servers: Some(old.clone()),
            twemproxy_config: None,
            pool: None,
            libmemcached_config: None,
            flavor: a.warm_from_flavor.clone(),
            hash: a.warm_from_hash.clone(),
            hash_tag: None,
            peer: None,
            peer_option: Vec::new(),
            discover: None,
            discover_interval: 60,
            discover_kind: "elasticache".into(),
        };
        let (old_ring, old_peer) = old_args.resolve().map_err(|f| Failure {
            msg: format!("--warm-from: {}", f.msg),
            ..f
        })?;
        (old_ring, old_peer, new_ring, new_peer)
    } else if let Some(to) = &a.to {
        let text = std::fs::read_to_string(to)
            .map_err(|e| usage(format!("cannot read server list {}: {e}", to.display())))?;
        let after = memshard::parse_server_list(&text)
            .map_err(|e| usage(format!("{}: {e}", to.display())))?;
        let after_ring = new_ring
            .with_servers(after)
            .map_err(|e| usage(format!("{}: {e}", to.display())))?;
        (new_ring, new_peer.clone(), after_ring, new_peer)
    } else {
        return Err(usage(
            "--migrate needs the old ring: --warm-from OLD_FILE (with --servers the new ring), or --to FILE2 (with --servers the old ring)",
        ));
    };
    let (op, oh) = prefix_of(&old_peer);
    let (np, nh) = prefix_of(&new_peer);
    let p = plan_migration(
        PoolPlacement::new(&old_ring).with_prefix(&op, oh),
        PoolPlacement::new(&new_ring).with_prefix(&np, nh),
        keys,
    );
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&p).map_err(|e| usage(e.to_string()))?
        );
    } else {
        print!(
            "{}",
            plan_cmd::migrate_text(
                &p,
                &old_ring.flavor().to_string(),
                &new_ring.flavor().to_string()
            )
        );
    }
    Ok(())
}
