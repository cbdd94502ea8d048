//! The bed's validating resolver: BIND's `named` as a child process,
//! recursing from the bed's root servers (its root hints) on the bed's port
//! (BIND's `port` option sets the port it asks other servers on as well as
//! the one it listens on), with the DS of the bed's root key as its only
//! trust anchor. It answers what a public validating resolver would: data
//! it can prove, SERVFAIL for data it judges bogus, and the data itself
//! when the question sets CD (checking disabled).
//!
//! Its questions to the bed's servers leave from [`VALIDATOR_SOURCE`], so
//! that the bed counts only the questions of the code under test.
//!
//! `named` keeps its files in a temporary directory and writes its log
//! there (`named.log`, quoted in the error when it fails to start). It is
//! stopped when the [`Validator`] is dropped, or, for a bed that never is
//! (one kept in a `static`), by a watching shell once the test process has
//! exited.

use std::fmt::Write as _;
use std::net::{SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hickory_server::proto::dnssec::rdata::DS;
use hickory_server::proto::op::{Message, Query};
use hickory_server::proto::rr::{Name, RecordType};

use crate::bed::{Error, VALIDATOR_SOURCE};

/// Where Debian puts `named` when it is not on the PATH.
const NAMED_SBIN: &str = "/usr/sbin/named";
/// Runs `named` ($1, with the configuration $2) under a shell that stops it
/// when this process ($3) is gone or the shell gets SIGTERM: a bed kept in
/// a `static` is never dropped, and `named` must not outlive the tests.
const WATCHED: &str = r#""$1" -g -4 -n 1 -c "$2" & n=$!
trap 'kill $n 2>/dev/null; wait $n; exit 0' TERM INT
while kill -0 "$3" 2>/dev/null && kill -0 "$n" 2>/dev/null; do sleep 0.5; done
kill "$n" 2>/dev/null
wait "$n""#;
/// How long `named` may take to answer its first question.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `named`; dropped, it is stopped.
pub struct Validator {
    child: Child,
    dir: tempfile::TempDir,
}

impl Validator {
    /// Starts `named` on `address`, with the root servers at `hints` and
    /// `anchor` as its trust anchor, and returns once it answers.
    pub fn start(address: SocketAddr, hints: &[SocketAddr], anchor: &DS) -> Result<Self, Error> {
        let dir = tempfile::tempdir()?;
        let path = dir.path();
        std::fs::write(path.join("root.hint"), root_hints(hints))?;
        std::fs::write(path.join("named.conf"), config(path, address, anchor))?;
        let log = std::fs::File::create(path.join("named.log"))?;
        let child = Command::new("sh")
            .args(["-c", WATCHED, "sh", named()])
            .arg(path.join("named.conf"))
            .arg(std::process::id().to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|error| format!("cannot start a shell to run BIND's `named`: {error}"))?;
        let mut validator = Self { child, dir };
        validator.wait_until_answering(address)?;
        Ok(validator)
    }

    fn wait_until_answering(&mut self, address: SocketAddr) -> Result<(), Error> {
        let started = Instant::now();
        while started.elapsed() < START_TIMEOUT {
            if let Some(status) = self.child.try_wait()? {
                return Err(format!(
                    "`named` exited with {status} (is Debian's bind9 installed? scripts/test \
                     installs it):\n{}",
                    self.log()
                )
                .into());
            }
            if answers(address) {
                return Ok(());
            }
        }
        Err(format!(
            "`named` did not answer within {} s:\n{}",
            START_TIMEOUT.as_secs(),
            self.log()
        )
        .into())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("named.log")).unwrap_or_default()
    }
}

impl Drop for Validator {
    fn drop(&mut self) {
        // SIGTERM, which the watcher passes on to `named` (a SIGKILL would
        // leave `named` running without its watcher).
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// `named` from the PATH, else where Debian installs it.
fn named() -> &'static str {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("named").is_file()));
    if on_path { "named" } else { NAMED_SBIN }
}

/// Whether a server answers a question for the root's SOA at `address`
/// within a tenth of a second.
fn answers(address: SocketAddr) -> bool {
    let mut message = Message::query();
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::root(), RecordType::SOA));
    let Ok(bytes) = message.to_vec() else {
        return false;
    };
    let Ok(socket) = UdpSocket::bind(("127.0.0.1", 0)) else {
        return false;
    };
    let mut buffer = [0_u8; 4096];
    socket
        .set_read_timeout(Some(Duration::from_millis(100)))
        .is_ok()
        && socket.send_to(&bytes, address).is_ok()
        && socket.recv(&mut buffer).is_ok()
}

fn root_hints(hints: &[SocketAddr]) -> String {
    let mut text = String::new();
    for (index, hint) in hints.iter().enumerate() {
        let host = format!("{}.root.test.", char::from(b'a' + (index % 26) as u8));
        let _ = writeln!(text, ". 3600 IN NS {host}");
        let _ = writeln!(text, "{host} 3600 IN A {}", hint.ip());
    }
    text
}

fn config(dir: &std::path::Path, address: SocketAddr, anchor: &DS) -> String {
    let digest: String = anchor
        .digest()
        .iter()
        .map(|byte| format!("{byte:02X}"))
        .collect();
    format!(
        r#"options {{
    directory "{dir}";
    pid-file none;
    session-keyfile "{dir}/session.key";
    listen-on port {port} {{ {ip}; }};
    listen-on-v6 {{ none; }};
    query-source address {source};
    port {port};
    recursion yes;
    allow-query {{ any; }};
    allow-recursion {{ any; }};
    allow-query-cache {{ any; }};
    dnssec-validation yes;
    servfail-ttl 0;
    notify no;
}};
controls {{ }};
trust-anchors {{ . static-ds {tag} {algorithm} {digest_type} "{digest}"; }};
zone "." {{ type hint; file "root.hint"; }};
"#,
        dir = dir.display(),
        source = VALIDATOR_SOURCE,
        ip = address.ip(),
        port = address.port(),
        tag = anchor.key_tag(),
        algorithm = u8::from(anchor.algorithm()),
        digest_type = u8::from(anchor.digest_type()),
    )
}
