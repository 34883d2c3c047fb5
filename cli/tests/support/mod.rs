//! Running the `memshard` binary from the CLI's tests. Kept apart from tests/common/, which
//! the library's tests include too: `CARGO_BIN_EXE_memshard` exists only in this package's
//! test builds.
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `memshard ARGS` with `stdin` written to it (none: an empty, closed standard input) and `env`
/// added to its environment; its status and captured output.
pub fn memshard_with(args: &[&str], stdin: &[u8], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memshard"));
    cmd.args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("run memshard");
    // Dropped at the end of the statement: memshard reads to the end of its input.
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write memshard's stdin");
    child.wait_with_output().expect("memshard output")
}

/// `memshard ARGS` on `stdin`.
pub fn memshard_in(args: &[&str], stdin: &[u8]) -> Output {
    memshard_with(args, stdin, &[])
}

/// `memshard ARGS` with nothing on its standard input.
pub fn memshard(args: &[&str]) -> Output {
    memshard_with(args, b"", &[])
}

/// Exit code (-1: killed by a signal), standard output, standard error.
pub fn parts(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Status and both outputs, for an assertion's message.
pub fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
