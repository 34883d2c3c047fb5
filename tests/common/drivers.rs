//! Building the compiled peers' drivers (tests/defaults, tests/detect, tests/values) from
//! Debian's packages, offline: nothing is downloaded.
#![allow(dead_code)]

use super::path_string;
use std::path::Path;
use std::process::{Command, Stdio};

/// Debian's libspymemcached-java.
pub const SPY_JAR: &str = "/usr/share/java/spymemcached.jar";
/// Debian's golang-github-bradfitz-gomemcache-dev.
pub const GOMEMCACHE_SRC: &str = "/usr/share/gocode/src/github.com/bradfitz/gomemcache/memcache";

/// Compiles the spymemcached driver `source` into `tmp/spy`: the command line that runs its
/// class `class`, or why the peer is missing. A driver that does not compile fails the test.
pub fn spymemcached(tmp: &Path, source: &str, class: &str) -> Result<Vec<String>, String> {
    let (Some(javac), Some(java)) = (
        super::servers::program("javac"),
        super::servers::program("java"),
    ) else {
        return Err("javac/java are not installed".into());
    };
    if !Path::new(SPY_JAR).is_file() {
        return Err(format!("{SPY_JAR} is missing"));
    }
    let classes = tmp.join("spy");
    let out = Command::new(&javac)
        .args(["-J-XX:-UsePerfData", "-nowarn", "-d"])
        .arg(&classes)
        .args(["-cp", SPY_JAR])
        .arg(source)
        .stdin(Stdio::null())
        .output()
        .expect("run javac");
    assert!(
        out.status.success(),
        "javac {source} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The drivers are short-lived: the JVM's first tier and no perf file start them faster.
    Ok(vec![
        path_string(&java),
        "-XX:-UsePerfData".into(),
        "-XX:TieredStopAtLevel=1".into(),
        "-cp".into(),
        format!("{SPY_JAR}:{}", path_string(&classes)),
        class.into(),
    ])
}

/// Builds the gomemcache driver `source` into `tmp/NAME`: the binary's path, or why the peer
/// is missing. A driver that does not build fails the test.
pub fn gomemcache(tmp: &Path, source: &str, name: &str) -> Result<String, String> {
    let Some(go) = super::servers::program("go") else {
        return Err("go is not installed".into());
    };
    if !Path::new(GOMEMCACHE_SRC).is_dir() {
        return Err(format!(
            "{GOMEMCACHE_SRC} is missing (golang-github-bradfitz-gomemcache-dev)"
        ));
    }
    // GOPATH mode against Debian's source; GOFLAGS is emptied because `-mod` flags are for
    // module mode only.
    let bin = tmp.join(name);
    let out = Command::new(&go)
        .arg("build")
        .arg("-o")
        .arg(&bin)
        .arg(source)
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOFLAGS", "")
        .env("GOPROXY", "off")
        .env("GOCACHE", tmp.join("gocache"))
        .stdin(Stdio::null())
        .output()
        .expect("run go build");
    assert!(
        out.status.success(),
        "go build {source} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(path_string(&bin))
}
