//! `nexo serve files` as a real child process over stdio, spoken as raw
//! JSON-RPC: the attack corpus (every way out of a root the issue names,
//! special files, binary content, extensions, version-control metadata,
//! limits), each case asserting its exact error code; a race that swaps a
//! directory for a symbolic link while reads go on; and the command line
//! (`nexo call` through the server, reports, `--allow-ext`, options refused
//! for other servers, no root). The ordinary paths of every tool are
//! covered in-process in `servers/files/tests`.

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use crate::stdio_wire::StdioServer;
use crate::support::{TempDir, nexo_path, run, shell_quote};

/// The directories of the attack bed:
///
/// ```text
/// base/app/          the root served
/// base/app_evil/     a sibling that shares the root's name as a prefix
/// base/secret/       a directory outside
/// ```
struct Bed {
    _temp: TempDir,
    base: PathBuf,
    root: PathBuf,
    /// Keeps `sock.md` a listening socket while the bed lives.
    _socket: UnixListener,
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn symlink(target: impl AsRef<Path>, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

impl Bed {
    fn new() -> Self {
        let temp = TempDir::new("files");
        let base = std::fs::canonicalize(temp.path()).unwrap();
        let root = base.join("app");
        write(&base.join("secret/s.md"), b"TOP SECRET\n");
        write(&base.join("app_evil/secret.md"), b"EVIL SECRET\n");
        for (path, content) in [
            ("README.md", "# App\n"),
            ("src/Main.java", "class Main {}\n"),
            ("image.png", "not really a picture\n"),
            ("App.class", "compiled\n"),
            (".env", "TOKEN=1\n"),
            (".git/config", "[core]\n"),
            (".git/HEAD", "ref: refs/heads/main\n"),
        ] {
            write(&root.join(path), content.as_bytes());
        }
        write(&root.join("bin.md"), b"text then \0 a NUL\n");
        let line = [b'x'; 63].iter().chain(b"\n").copied().collect::<Vec<u8>>();
        let mut big = line.repeat(10 * 1024 * 1024 / 64);
        big.extend_from_slice(b"last");
        write(&root.join("big.md"), &big);
        for n in 0..1001 {
            write(&root.join(format!("many/f{n:04}.md")), b"");
        }
        let deep: PathBuf = (0..20).map(|n| format!("d{n}")).collect();
        write(&root.join("deep").join(deep).join("bottom.md"), b"deep\n");

        symlink("/etc", &root.join("out_abs"));
        symlink("../secret", &root.join("out_rel"));
        symlink("../secret/s.md", &root.join("out_file.md"));
        symlink("../app_evil", &root.join("sibling"));
        symlink("/dev/zero", &root.join("zero.md"));
        symlink("/dev/null", &root.join("null.md"));
        std::fs::create_dir(root.join("mid")).unwrap();
        symlink("../..", &root.join("mid/up"));
        symlink(root.join("README.md"), &root.join("abs_inside.md"));
        symlink("loop2.md", &root.join("loop.md"));
        symlink("loop.md", &root.join("loop2.md"));
        symlink(".env", &root.join("alias.md"));
        symlink(".git/config", &root.join("gitlink.md"));
        symlink(".git", &root.join("gitdir"));
        symlink("README.md", &root.join("good_link.md"));
        std::fs::hard_link(base.join("secret/s.md"), root.join("hard.md")).unwrap();
        mkfifo(&root.join("fifo.md"));
        let socket = UnixListener::bind(root.join("sock.md")).unwrap();
        Self {
            _temp: temp,
            base,
            root,
            _socket: socket,
        }
    }
}

/// What a case must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A tool error with this code (for `read_multiple_files`, the code of
    /// its first file).
    Code(&'static str),
    /// A result that is not an error, whose text holds this.
    Served(&'static str),
}

use Expect::{Code, Served};

struct Case {
    what: &'static str,
    tool: &'static str,
    arguments: Value,
    expect: Expect,
}

fn case(what: &'static str, tool: &'static str, arguments: Value, expect: Expect) -> Case {
    Case {
        what,
        tool,
        arguments,
        expect,
    }
}

/// `read_text_file` of `path`.
fn read(what: &'static str, path: impl Into<String>, expect: Expect) -> Case {
    case(
        what,
        "read_text_file",
        json!({ "path": path.into() }),
        expect,
    )
}

const OUTSIDE: Expect = Code("path_outside_roots");

/// The attack corpus: every class of the issue, and the ordinary answers
/// right beside them.
fn corpus(bed: &Bed) -> Vec<Case> {
    let root = bed.root.display().to_string();
    let base = bed.base.display().to_string();
    let path = |path: &str| json!({ "path": path });
    vec![
        // `..` in every position and tool.
        read("dot-dot up one", "../secret/s.md", OUTSIDE),
        read(
            "dot-dot to /etc",
            "../../../../../../../../etc/passwd",
            OUTSIDE,
        ),
        read(
            "dot-dot after a directory",
            "src/../../secret/s.md",
            OUTSIDE,
        ),
        read("dot then dot-dot", "./../secret/s.md", OUTSIDE),
        read(
            "dot-dot to the sibling",
            "src/../../app_evil/secret.md",
            OUTSIDE,
        ),
        read(
            "absolute with dot-dot",
            format!("{root}/../secret/s.md"),
            OUTSIDE,
        ),
        case("list_directory ..", "list_directory", path(".."), OUTSIDE),
        case("directory_tree ..", "directory_tree", path(".."), OUTSIDE),
        case(
            "search_files ..",
            "search_files",
            json!({ "path": "..", "pattern": "**/*.md" }),
            OUTSIDE,
        ),
        case(
            "get_file_info ..",
            "get_file_info",
            path("../secret"),
            OUTSIDE,
        ),
        case(
            "seed 004's own example",
            "readJavaFile",
            path("../../etc/passwd"),
            OUTSIDE,
        ),
        case(
            "readProjectStructure ..",
            "readProjectStructure",
            path(".."),
            OUTSIDE,
        ),
        case(
            "read_multiple_files ..",
            "read_multiple_files",
            json!({ "paths": ["../secret/s.md"] }),
            OUTSIDE,
        ),
        // Absolute paths elsewhere.
        read("/etc/passwd", "/etc/passwd", OUTSIDE),
        case("list /", "list_directory", path("/"), OUTSIDE),
        case("tree /etc", "directory_tree", path("/etc"), OUTSIDE),
        read(
            "the directory outside",
            format!("{base}/secret/s.md"),
            OUTSIDE,
        ),
        read("/proc/self/environ", "/proc/self/environ", OUTSIDE),
        read("double slash", "//etc/passwd", OUTSIDE),
        read("file URI outside", "file:///etc/passwd", OUTSIDE),
        // `~` is never expanded.
        case("~", "list_directory", path("~"), OUTSIDE),
        read("~/.ssh/id_rsa", "~/.ssh/id_rsa", OUTSIDE),
        read("~root", "~root/.bashrc", OUTSIDE),
        case("~/", "get_file_info", path("~/"), OUTSIDE),
        // A sibling that shares the root's prefix (CVE-2025-53110's class).
        read("sibling prefix", format!("{root}_evil/secret.md"), OUTSIDE),
        case(
            "list sibling prefix",
            "list_directory",
            json!({ "path": format!("{root}_evil") }),
            OUTSIDE,
        ),
        read(
            "sibling prefix as URI",
            format!("file://{root}_evil/secret.md"),
            OUTSIDE,
        ),
        read("symlink to the sibling", "sibling/secret.md", OUTSIDE),
        // Symbolic links that lead out (CVE-2025-53109's class).
        read("absolute symlink to /etc", "out_abs/passwd", OUTSIDE),
        case(
            "list through an absolute symlink",
            "list_directory",
            path("out_abs"),
            OUTSIDE,
        ),
        read("relative symlink out", "out_rel/s.md", OUTSIDE),
        read("file symlink out", "out_file.md", OUTSIDE),
        read("symlink in the middle", "mid/up/secret/s.md", OUTSIDE),
        case(
            "tree through a symlink in the middle",
            "directory_tree",
            path("mid/up"),
            OUTSIDE,
        ),
        read("/dev/zero via symlink", "zero.md", OUTSIDE),
        read("/dev/null via symlink", "null.md", OUTSIDE),
        case(
            "info of /dev/zero via symlink",
            "get_file_info",
            path("zero.md"),
            OUTSIDE,
        ),
        read("absolute symlink back inside", "abs_inside.md", OUTSIDE),
        case(
            "search through a symlink",
            "search_files",
            json!({ "path": "out_abs", "pattern": "*" }),
            OUTSIDE,
        ),
        case(
            "several files through a symlink",
            "read_multiple_files",
            json!({ "paths": ["out_file.md"] }),
            OUTSIDE,
        ),
        read("symlink loop", "loop.md", Code("io_error")),
        read(
            "symlink named .md to .env",
            "alias.md",
            Code("extension_not_allowed"),
        ),
        read(
            "symlink named .md into .git",
            "gitlink.md",
            Code("hidden_path"),
        ),
        case(
            "symlink to .git",
            "list_directory",
            path("gitdir"),
            Code("hidden_path"),
        ),
        read("symlink inside the root", "good_link.md", Served("# App")),
        // Issue 15: a hard link to a file outside the root is refused.
        read(
            "hard link to a file outside the root",
            "hard.md",
            Code("hard_link"),
        ),
        // NUL bytes.
        read(
            "NUL before an extension",
            "README.md\u{0}.png",
            Code("invalid_path"),
        ),
        read("NUL alone", "\u{0}", Code("invalid_path")),
        read(
            "NUL before dot-dot",
            "src\u{0}/../../etc/passwd",
            Code("invalid_path"),
        ),
        read(
            "NUL percent-encoded in a URI",
            "file:///etc/passwd%00.md",
            Code("invalid_path"),
        ),
        // Over-long names and paths.
        read("a 256-byte name", "a".repeat(256), Code("invalid_path")),
        read("a 4097-byte path", "a/".repeat(2049), Code("invalid_path")),
        read(
            "a 100000-byte path",
            "../".repeat(33_334),
            Code("invalid_path"),
        ),
        read(
            "a 255-byte name is only missing",
            "a".repeat(255),
            Code("not_found"),
        ),
        // Percent-encoding is a name, except in a file: URI.
        read("%2e%2e", "%2e%2e/secret/s.md", Code("not_found")),
        read(
            "all percent-encoded",
            "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            Code("not_found"),
        ),
        read("encoded slash", "..%2fsecret%2fs.md", Code("not_found")),
        read(
            "double encoding",
            "%252e%252e/secret/s.md",
            Code("not_found"),
        ),
        read(
            "decoded in a URI, still confined",
            format!("file://{root}/%2e%2e/secret/s.md"),
            OUTSIDE,
        ),
        read(
            "encoded slash in a URI",
            format!("file://{root}/..%2fsecret%2fs.md"),
            OUTSIDE,
        ),
        read(
            "encoded slash to /etc in a URI",
            "file:///etc%2fpasswd",
            OUTSIDE,
        ),
        read(
            "a URI with a host",
            "file://attacker/etc/passwd",
            Code("invalid_path"),
        ),
        // Backslashes are part of a name.
        read("backslash dot-dot", r"..\secret\s.md", Code("not_found")),
        read("backslash to /etc", r"..\..\etc\passwd", Code("not_found")),
        read(
            "backslash after a directory",
            r"src\..\..\secret\s.md",
            Code("not_found"),
        ),
        read("leading backslash", r"\etc\passwd", Code("not_found")),
        read("a drive letter", r"C:\Windows\win.ini", Code("not_found")),
        // Only regular files are read, and never by blocking.
        read("a FIFO", "fifo.md", Code("not_a_regular_file")),
        case(
            "a FIFO, seed 004's tool",
            "readJavaFile",
            path("fifo.md"),
            Code("not_a_regular_file"),
        ),
        case(
            "a FIFO's head",
            "read_text_file",
            json!({ "path": "fifo.md", "head": 1 }),
            Code("not_a_regular_file"),
        ),
        case(
            "a FIFO among several",
            "read_multiple_files",
            json!({ "paths": ["fifo.md"] }),
            Code("not_a_regular_file"),
        ),
        case(
            "a FIFO described, not opened",
            "get_file_info",
            path("fifo.md"),
            Served("type: fifo"),
        ),
        read("a unix socket", "sock.md", Code("not_a_regular_file")),
        case(
            "a socket described",
            "get_file_info",
            path("sock.md"),
            Served("type: socket"),
        ),
        read("a directory", "src", Code("not_a_regular_file")),
        // Binary content, extensions, version-control metadata.
        read("a NUL in the first 8 KiB", "bin.md", Code("binary_file")),
        read("bytecode", "App.class", Code("extension_not_allowed")),
        read("an image", "image.png", Code("extension_not_allowed")),
        read(
            "a dotfile with secrets",
            ".env",
            Code("extension_not_allowed"),
        ),
        read(".git/config", ".git/config", Code("hidden_path")),
        case(
            "list .git",
            "list_directory",
            path(".git"),
            Code("hidden_path"),
        ),
        read(".git by dot-dot", "src/../.git/HEAD", Code("hidden_path")),
        read(
            ".git absolute",
            format!("{root}/.git/config"),
            Code("hidden_path"),
        ),
        case(
            "list hides .git",
            "list_directory",
            path("."),
            Served("[FILE] README.md"),
        ),
        // Limits, each named by its error.
        read("over 10 MB", "big.md", Code("too_large")),
        case(
            "the tail of a file over 10 MB",
            "read_text_file",
            json!({ "path": "big.md", "tail": 1 }),
            Served("last"),
        ),
        case(
            "1001 entries listed",
            "list_directory",
            path("many"),
            Code("limit_exceeded"),
        ),
        case(
            "1001 entries in a tree",
            "directory_tree",
            path("many"),
            Code("limit_exceeded"),
        ),
        case(
            "1001 matches",
            "search_files",
            json!({ "path": "many", "pattern": "*" }),
            Code("limit_exceeded"),
        ),
        case(
            "a tree 21 levels deep",
            "directory_tree",
            path("deep"),
            Code("limit_exceeded"),
        ),
        case(
            "1001 paths at once",
            "read_multiple_files",
            json!({ "paths": vec!["README.md"; 1001] }),
            Code("limit_exceeded"),
        ),
        // Plain mistakes.
        read("an empty path", "", Code("invalid_path")),
        read("a missing file", "missing.md", Code("not_found")),
        read(
            "a file used as a directory",
            "README.md/x",
            Code("not_found"),
        ),
        case(
            "a bad glob",
            "search_files",
            json!({ "path": ".", "pattern": "[" }),
            Code("invalid_argument"),
        ),
        case(
            "head and tail",
            "read_text_file",
            json!({ "path": "README.md", "head": 1, "tail": 1 }),
            Code("invalid_argument"),
        ),
    ]
}

/// Sends `tools/call` and waits for its answer.
fn call(server: &mut StdioServer, id: usize, tool: &str, arguments: &Value) -> Value {
    server.send_json(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": { "name": tool, "arguments": arguments },
    }));
    loop {
        let message = server.next_message();
        if message["id"] == id {
            return message;
        }
    }
}

/// What a case gave, in the terms of [`Expect`], as text for a report.
fn outcome(response: &Value) -> (Option<String>, String) {
    let result = &response["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let structured = &result["structuredContent"];
    let code = if result["isError"] == true {
        let code = structured["error"]["code"].as_str();
        assert_eq!(structured["error"]["message"], text.as_str(), "{response}");
        code.map(str::to_owned)
    } else {
        structured["files"][0]["error"]["code"]
            .as_str()
            .map(str::to_owned)
    };
    (code, text)
}

fn initialize(server: &mut StdioServer) {
    server.send_json(&json!({
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": { "name": "nexo-e2e", "version": "0" },
        },
    }));
    let answer = server.next_message();
    assert_eq!(
        answer["result"]["serverInfo"]["name"], "nexo-files",
        "{answer}"
    );
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

#[test]
fn attack_corpus_over_stdio() {
    let bed = Bed::new();
    let root = bed.root.display().to_string();
    let mut server = StdioServer::serve(&["files", &root]);
    initialize(&mut server);
    let cases = corpus(&bed);
    let mut failures = Vec::new();
    for (id, case) in cases.iter().enumerate() {
        let response = call(&mut server, id, case.tool, &case.arguments);
        assert!(
            response.get("error").is_none(),
            "{}: a JSON-RPC error: {response}",
            case.what
        );
        let (code, text) = outcome(&response);
        let passed = match case.expect {
            Code(expected) => code.as_deref() == Some(expected),
            Served(needle) => code.is_none() && text.contains(needle),
        };
        if !passed {
            failures.push(format!(
                "{}: expected {:?}, got {code:?}: {text}",
                case.what, case.expect
            ));
        }
        assert!(!text.contains("TOP SECRET"), "{}", case.what);
        assert!(!text.contains("EVIL SECRET"), "{}", case.what);
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(cases.len() >= 90, "the corpus has {} cases", cases.len());

    // Never a crash: the server still answers, and ends cleanly.
    let answer = call(
        &mut server,
        cases.len(),
        "list_allowed_directories",
        &json!({}),
    );
    assert_eq!(outcome(&answer).1, format!("Allowed directories:\n{root}"));
    server.close_stdin();
    assert!(server.remaining_lines().is_empty());
    assert_eq!(server.proc.exit_status().code(), Some(0));
}

/// A directory swapped for a symbolic link to a directory outside, over and
/// over, while reads go on: every read gives the inside file or an error,
/// never the outside one.
#[test]
fn a_directory_swapped_for_a_symlink_mid_read_never_leads_out() {
    let bed = Bed::new();
    let real = bed.root.join("race");
    let parked = bed.root.join("race.parked");
    write(&real.join("f.md"), b"inside\n");
    let link = bed.root.join("race.link");
    symlink("../secret", &link);
    std::fs::rename(bed.base.join("secret/s.md"), bed.base.join("secret/f.md")).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let (real, parked, link) = (real.clone(), parked.clone(), link.clone());
        std::thread::spawn(move || {
            let mut swaps = 0_u32;
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::rename(&real, &parked);
                let _ = std::fs::rename(&link, &real);
                let _ = std::fs::rename(&real, &link);
                let _ = std::fs::rename(&parked, &real);
                swaps += 1;
            }
            swaps
        })
    };

    let root = bed.root.display().to_string();
    let mut server = StdioServer::serve(&["files", &root]);
    initialize(&mut server);
    // At least 300 reads, and on until one has found the inside file (the
    // swapper may starve the reads of it on a loaded machine), 3000 at most.
    let mut inside = 0;
    for id in 0..3000 {
        if id >= 300 && inside > 0 {
            break;
        }
        let response = call(
            &mut server,
            id,
            "read_text_file",
            &json!({ "path": "race/f.md" }),
        );
        let (code, text) = outcome(&response);
        assert!(
            !text.contains("TOP SECRET"),
            "read {id} led out: {response}"
        );
        match code.as_deref() {
            None => {
                assert_eq!(text, "inside\n");
                inside += 1;
            }
            Some("path_outside_roots" | "not_found") => {}
            Some(other) => panic!("read {id}: unexpected {other}: {text}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 0, "the directory was never swapped");
    assert!(inside > 0, "no read ever found the inside file");
}

fn serve_files(args: &str) -> String {
    format!("{} serve files {args}", shell_quote(nexo_path()))
}

#[test]
fn nexo_call_reads_lists_and_writes_reports() {
    let bed = Bed::new();
    let root = shell_quote(&bed.root.display().to_string());
    let server = serve_files(&root);

    let listing = run(&["call", "--stdio", &server, "list_directory", "path=src"]);
    assert_eq!(listing.assert_success().stdout, "[FILE] Main.java\n");
    let refused = run(&[
        "call",
        "--stdio",
        &server,
        "read_text_file",
        "path=../secret/s.md",
    ]);
    assert_eq!(refused.code(), 5, "a tool error exits 5: {refused:#?}");
    assert!(
        refused.stderr.contains("outside the allowed directories"),
        "{refused:#?}"
    );
    let refused = run(&["call", "--stdio", &server, "write_report", "content=# x"]);
    assert_eq!(
        refused.code(),
        5,
        "no write_report without --allow-reports: {refused:#?}"
    );

    let writer = serve_files(&format!("{root} --allow-reports"));
    let written = run(&[
        "call",
        "--stdio",
        &writer,
        "write_report",
        "content=# Report",
        "--json",
    ]);
    let name = written.assert_success().stdout_json()["structuredContent"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        std::fs::read_to_string(bed.root.join(&name)).unwrap(),
        "# Report"
    );

    let rust_only = serve_files(&format!("{root} --allow-ext rs"));
    let refused = run(&[
        "call",
        "--stdio",
        &rust_only,
        "read_text_file",
        "path=README.md",
        "--json",
    ]);
    assert_eq!(refused.code(), 5, "{refused:#?}");
    assert_eq!(
        refused.stdout_json()["structuredContent"]["error"]["code"],
        "extension_not_allowed"
    );
}

#[test]
fn files_arguments_belong_to_the_files_server() {
    let missing = run(&["serve", "files"]);
    assert_eq!(missing.code(), 1, "{missing:#?}");
    assert!(
        missing.stderr.contains("needs the directories it may read"),
        "{missing:#?}"
    );
    assert_eq!(missing.error_line()["error"]["code"], "usage");

    for args in [
        &["serve", "morse", "/tmp"][..],
        &["serve", "utils", "--allow-reports"],
        &["serve", "everything", "--allow-ext", "rs"],
    ] {
        let refused = run(args);
        assert_eq!(refused.code(), 1, "{refused:#?}");
        assert!(
            refused
                .stderr
                .contains("is an option of `nexo serve files`"),
            "{refused:#?}"
        );
    }
    let nowhere = run(&["serve", "files", "/nonexistent/nexo-e2e"]);
    assert_eq!(nowhere.code(), 1, "{nowhere:#?}");
    assert!(nowhere.stderr.contains("cannot be opened"), "{nowhere:#?}");
    let bad = run(&["serve", "files", "/tmp", "--allow-ext", "tar.gz"]);
    assert_eq!(bad.code(), 1, "{bad:#?}");
    assert!(bad.stderr.contains("is not a file extension"), "{bad:#?}");
}
