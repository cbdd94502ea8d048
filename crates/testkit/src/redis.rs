//! A real Redis for the tests of what gateway instances share: Debian's
//! `redis-server` on a free 127.0.0.1 port, nothing saved to disk, killed
//! by its PID when dropped. scripts/test installs it; without it a test
//! fails, everywhere, saying how to install it: a test that passes
//! without running would hide a broken shared state.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long `redis-server` may take to answer once started.
const START_PATIENCE: Duration = Duration::from_secs(30);

/// A running `redis-server` on 127.0.0.1.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts one.
    ///
    /// # Panics
    ///
    /// When `redis-server` is not installed, cannot start or does not
    /// answer.
    pub fn start() -> Self {
        let Some(program) = program() else {
            panic!(
                "redis-server is not installed: scripts/test installs it (apt-get install \
                 redis-server)"
            );
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .unwrap_or_else(|error| panic!("no free port on 127.0.0.1: {error}"));
        let dir = std::env::temp_dir().join(format!("nexo-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|error| panic!("cannot make {}: {error}", dir.display()));
        let child = Command::new(&program)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", program.display()));
        let mut server = Self { child, port, dir };
        let deadline = Instant::now() + START_PATIENCE;
        while !server.answers() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("redis-server on port {port} ended: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer on port {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// `redis://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Whether it answers `PING` with `PONG`.
    pub fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut answer = [0_u8; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut answer).is_ok()
            && &answer == b"+PONG\r\n"
    }

    /// Kills it (SIGKILL, by its PID) and waits for it to end.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `redis-server` from the PATH, else where Debian installs it.
fn program() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("redis-server"))
            .find(|file| file.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/bin/redis-server");
        debian.is_file().then_some(debian)
    })
}
