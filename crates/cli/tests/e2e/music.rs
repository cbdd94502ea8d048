//! `nexo serve music` as real processes on real SQLite files: two servers
//! writing to one database at once, a library that survives its server
//! being killed, `--db` refused for other servers and a database that
//! cannot be opened, the default library under the user's data directory,
//! and every way of confirming a write: the argument
//! retry through `nexo call`, raw 2026-07-28 `input_required` rounds over
//! HTTP (answered at a second server on the same database), and
//! elicitation answered by a client built on nexo-client, over stdio and
//! HTTP in both protocol eras (one assertion function for the matrix).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::join_all;
use nexo_client::{
    ConnectOptions, ElicitationPolicy, ElicitationResponder, Era, HttpTransport, Session, Target,
};
use rmcp::model::{CallToolResult, ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::{Value, json};

use crate::support::{Http, HttpServer, SEED_ACCEPT, TempDir, nexo_path, run, shell_quote};

/// The command line of `nexo serve music --db DB`.
fn serve_music(db: &std::path::Path) -> String {
    format!(
        "{} serve music --db {}",
        shell_quote(nexo_path()),
        shell_quote(db.to_str().unwrap())
    )
}

/// A song two playlists fit (Rock, 1970s): adding it needs a choice.
fn bohemian() -> Value {
    json!({ "title": "Bohemian Rhapsody", "artist": "Queen", "genre": "rock", "year": 1975, "duration_s": 354 })
}

fn with(base: Value, extra: Value) -> Value {
    let (Value::Object(mut base), Value::Object(extra)) = (base, extra) else {
        panic!("objects only");
    };
    base.extend(extra);
    Value::Object(base)
}

fn object(value: Value) -> rmcp::model::JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

async fn connect(target: Target, era: Era, elicitation: ElicitationPolicy) -> Session {
    let options = ConnectOptions {
        era,
        elicitation,
        ..ConnectOptions::default()
    };
    nexo_client::connect(&target, &options).await.unwrap()
}

fn stdio(db: &std::path::Path) -> Target {
    Target::stdio(&serve_music(db), Vec::new()).unwrap()
}

fn url(server: &HttpServer) -> Target {
    Target::Url {
        url: server.mcp_url().into(),
        transport: HttpTransport::Http,
        headers: Vec::new(),
    }
}

async fn call(session: &Session, tool: &str, arguments: Value) -> CallToolResult {
    session.call_tool(tool, object(arguments)).await.unwrap()
}

fn structured(result: &CallToolResult) -> &Value {
    assert_ne!(result.is_error, Some(true), "{result:#?}");
    result.structured_content.as_ref().unwrap()
}

/// A person at the client: accepts each form choosing the last playlist
/// offered and `confirm: true`, or declines; remembers every form shown.
struct ScriptedUser {
    accept: bool,
    forms: Mutex<Vec<Value>>,
}

impl ScriptedUser {
    fn new(accept: bool) -> Arc<Self> {
        Arc::new(Self {
            accept,
            forms: Mutex::new(Vec::new()),
        })
    }

    fn forms(&self) -> Vec<Value> {
        self.forms.lock().unwrap().clone()
    }
}

#[async_trait]
impl ElicitationResponder for ScriptedUser {
    async fn respond(&self, request: ElicitRequestParams) -> ElicitResult {
        let form = serde_json::to_value(&request).unwrap();
        self.forms.lock().unwrap().push(form.clone());
        if !self.accept {
            return ElicitResult::new(ElicitationAction::Decline);
        }
        let mut content = serde_json::Map::new();
        let properties = form["requestedSchema"]["properties"].as_object().unwrap();
        if let Some(playlists) = properties
            .get("playlist")
            .and_then(|p| p["enum"].as_array())
        {
            content.insert("playlist".into(), playlists.last().unwrap().clone());
        }
        if properties.contains_key("confirm") {
            content.insert("confirm".into(), Value::Bool(true));
        }
        ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_write_to_one_database_at_once() {
    const EACH: usize = 15;
    let dir = TempDir::new("music");
    let db = dir.path().join("shared.sqlite3");
    let first = connect(stdio(&db), Era::Initialize, ElicitationPolicy::Decline).await;
    let second = connect(stdio(&db), Era::Discover, ElicitationPolicy::Decline).await;
    let mut calls = Vec::new();
    for n in 0..EACH {
        for (who, session) in [("first", &first), ("second", &second)] {
            let song = json!({ "title": format!("{who} {n}"), "artist": format!("{who} {n}"), "genre": "rock" });
            calls.push(call(session, "add_song", song));
        }
    }
    for result in join_all(calls).await {
        assert_eq!(structured(&result)["status"], "added", "{result:#?}");
        assert_eq!(structured(&result)["playlist"], "Rock");
    }
    for session in [&first, &second] {
        let rock = call(session, "get_playlist", json!({ "name": "Rock" })).await;
        assert_eq!(
            structured(&rock)["songs"].as_array().unwrap().len(),
            2 * EACH
        );
        let listed = call(session, "list_playlists", json!({})).await;
        assert_eq!(
            structured(&listed)["playlists"].as_array().unwrap().len(),
            1
        );
    }
    first.close().await;
    second.close().await;
}

#[tokio::test]
async fn the_library_survives_a_killed_server() {
    let dir = TempDir::new("music");
    let db = dir.path().join("data/nested/library.sqlite3");
    let db_flag = db.to_str().unwrap();
    let mut server = HttpServer::serve("music", &["--db", db_flag]);
    let session = connect(url(&server), Era::Initialize, ElicitationPolicy::Decline).await;
    let added = call(
        &session,
        "add_song",
        with(
            bohemian(),
            json!({ "playlist": "Rock", "workspace": "casa" }),
        ),
    )
    .await;
    assert_eq!(structured(&added)["status"], "added");
    session.close().await;
    server.proc().child().kill().unwrap();
    server.proc().exit_status();

    let restarted = HttpServer::serve("music", &["--db", db_flag]);
    let session = connect(url(&restarted), Era::Discover, ElicitationPolicy::Decline).await;
    let rock = call(
        &session,
        "get_playlist",
        json!({ "name": "rock", "workspace": "casa" }),
    )
    .await;
    assert_eq!(structured(&rock)["songs"][0]["title"], "Bohemian Rhapsody");
    let default = call(&session, "list_playlists", json!({})).await;
    assert_eq!(
        structured(&default)["playlists"],
        json!([]),
        "another workspace"
    );
    session.close().await;
}

#[test]
fn the_argument_retry_through_nexo_call() {
    let dir = TempDir::new("music");
    let server = serve_music(&dir.path().join("music.sqlite3"));
    let nexo_call = |arguments: Value| {
        let run = run(&[
            "call",
            "--stdio",
            &server,
            "--json",
            "add_song",
            &arguments.to_string(),
        ]);
        let structured = run.stdout_json()["structuredContent"].clone();
        // Issue 15, point 13: a call that wrote nothing because it needs a
        // confirmation exits 6, with the JSON line saying so.
        if structured["status"] == "needs_confirmation" {
            assert_eq!(run.code(), 6, "{run:#?}");
            assert_eq!(run.error_line()["error"]["code"], "needs_confirmation");
        } else {
            run.assert_success();
        }
        structured
    };
    let asked = nexo_call(bohemian());
    assert_eq!(asked["status"], "needs_confirmation");
    assert_eq!(asked["candidates"], json!(["Rock", "1970s"]));
    assert_eq!(asked["retry_with"], json!(["playlist"]));
    let added = nexo_call(with(bohemian(), json!({ "playlist": "1970s" })));
    assert_eq!(added["status"], "added");
    let duplicate = nexo_call(with(bohemian(), json!({ "playlist": "1970s" })));
    assert_eq!(duplicate["reasons"], json!(["duplicate"]));
    let confirmed = nexo_call(with(
        bohemian(),
        json!({ "playlist": "1970s", "confirm": true }),
    ));
    assert_eq!(confirmed["status"], "added");

    let export = run(&[
        "call",
        "--stdio",
        &server,
        "export_playlist",
        "name=1970s",
        "format=csv",
    ]);
    let text = export.assert_success().stdout.clone();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let titles: Vec<String> = reader.records().map(|r| r.unwrap()[2].to_owned()).collect();
    assert_eq!(titles, ["Bohemian Rhapsody", "Bohemian Rhapsody"]);

    let clear = run(&["call", "--stdio", &server, "clear_library", "--json"]);
    assert_eq!(clear.code(), 6, "{clear:#?}");
    assert_eq!(
        clear.stdout_json()["structuredContent"]["status"],
        "needs_confirmation"
    );
    let clear = run(&["call", "--stdio", &server, "clear_library"]);
    assert_eq!(clear.code(), 6, "{clear:#?}");
    assert_eq!(
        clear.error_line()["error"]["hint"],
        "to go ahead, call it again with the same arguments and `confirm=true`"
    );
    let clear = run(&[
        "call",
        "--stdio",
        &server,
        "clear_library",
        "confirm=true",
        "--json",
    ]);
    let cleared = clear.assert_success().stdout_json();
    assert_eq!(cleared["structuredContent"]["status"], "cleared");
    assert_eq!(cleared["structuredContent"]["songs"], 2);

    let bad = run(&[
        "call",
        "--stdio",
        &server,
        "add_song",
        "title=X",
        "artist=Y",
        "year=99999",
    ]);
    assert_eq!(bad.code(), 5, "a tool error: {bad:#?}");
    assert!(
        bad.stderr.contains("`year` 99999 is out of range"),
        "{bad:#?}"
    );
}

/// One 2026-07-28 `tools/call` of `add_song`, as raw JSON-RPC.
fn stateless_call(id: u64, extra: Value) -> String {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "nexo-e2e", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
    });
    let params = with(
        json!({ "name": "add_song", "arguments": bohemian(), "_meta": meta }),
        extra,
    );
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string()
}

const STATELESS_HEADERS: [(&str, &str); 4] = [
    ("Accept", SEED_ACCEPT),
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "add_song"),
];

#[tokio::test]
async fn input_required_rounds_over_raw_http_even_across_servers() {
    let dir = TempDir::new("music");
    let db = dir.path().join("music.sqlite3");
    let db_flag = db.to_str().unwrap();
    let asking = HttpServer::serve("music", &["--db", db_flag]);
    let answering = HttpServer::serve("music", &["--db", db_flag]);

    let reply = Http::new(&asking)
        .post(&stateless_call(1, json!({})), &STATELESS_HEADERS)
        .await;
    assert_eq!(reply.status, 200, "{reply:#?}");
    let result = reply.message()["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{result:#}");
    let request = &result["inputRequests"]["confirmation"];
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "form");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["playlist"]["enum"],
        json!(["Rock", "1970s"])
    );
    let state = result["requestState"].as_str().unwrap().to_owned();

    let answer = |state: &str| {
        json!({
            "requestState": state,
            "inputResponses": { "confirmation": { "action": "accept", "content": { "playlist": "Rock" } } },
        })
    };
    let mut forged = state.clone();
    forged.insert(forged.len() / 2, 'x');
    let refused = Http::new(&answering)
        .post(&stateless_call(2, answer(&forged)), &STATELESS_HEADERS)
        .await;
    let message = refused.message();
    assert_eq!(message["error"]["code"], -32602, "{message}");

    let completed = Http::new(&answering)
        .post(&stateless_call(3, answer(&state)), &STATELESS_HEADERS)
        .await;
    let result = completed.message()["result"].clone();
    assert_eq!(result["resultType"], "complete", "{result:#}");
    assert_eq!(result["structuredContent"]["status"], "added");
    assert_eq!(result["structuredContent"]["playlist"], "Rock");
}

/// Adding a song that needs a choice, with a scripted user answering:
/// the same through every transport and era.
async fn assert_elicitation(target: Target, era: Era, context: &str) {
    let user = ScriptedUser::new(true);
    let session = connect(target, era, ElicitationPolicy::Responder(user.clone())).await;
    let added = call(&session, "add_song", bohemian()).await;
    assert_eq!(structured(&added)["status"], "added", "{context}");
    assert_eq!(
        structured(&added)["playlist"],
        "1970s",
        "{context}: the user's choice"
    );
    let again = call(&session, "add_song", bohemian()).await;
    assert_eq!(structured(&again)["status"], "added", "{context}");
    assert_eq!(structured(&again)["playlist"], "1970s", "{context}");
    assert_eq!(
        structured(&again)["duplicate_of"]["title"],
        "Bohemian Rhapsody",
        "{context}"
    );
    let cleared = call(&session, "clear_library", json!({})).await;
    assert_eq!(structured(&cleared)["status"], "cleared", "{context}");
    assert_eq!(structured(&cleared)["songs"], 2, "{context}");
    let forms = user.forms();
    assert_eq!(forms.len(), 3, "{context}: one form per question");
    assert_eq!(
        forms[1]["requestedSchema"]["required"],
        json!(["confirm"]),
        "{context}: 1970s is the one existing playlist the copy fits"
    );
    assert!(
        forms[2]["message"]
            .as_str()
            .unwrap()
            .contains("Delete all 2 songs"),
        "{context}"
    );
    session.close().await;
}

#[tokio::test]
async fn elicitation_answered_by_a_nexo_client_over_every_transport_and_era() {
    for era in [Era::Initialize, Era::Discover] {
        let dir = TempDir::new("music");
        let db = dir.path().join("music.sqlite3");
        assert_elicitation(stdio(&db), era, &format!("stdio {era:?}")).await;
        let server = HttpServer::serve("music", &["--db", db.to_str().unwrap()]);
        assert_elicitation(url(&server), era, &format!("http {era:?}")).await;
    }
}

#[tokio::test]
async fn a_declined_question_writes_nothing() {
    let dir = TempDir::new("music");
    let db = dir.path().join("music.sqlite3");
    for era in [Era::Initialize, Era::Discover] {
        let user = ScriptedUser::new(false);
        let session = connect(stdio(&db), era, ElicitationPolicy::Responder(user.clone())).await;
        let declined = call(&session, "add_song", bohemian()).await;
        assert_eq!(structured(&declined)["status"], "declined", "{era:?}");
        assert!(
            structured(&declined)["message"]
                .as_str()
                .unwrap()
                .contains("Nothing was written")
        );
        assert_eq!(user.forms().len(), 1, "{era:?}");
        let listed = call(&session, "list_playlists", json!({})).await;
        assert_eq!(structured(&listed)["playlists"], json!([]), "{era:?}");
        session.close().await;
    }
}

#[test]
fn music_options_and_unusable_databases_are_refused() {
    let refused = run(&["serve", "morse", "--db", "x.sqlite3"]);
    assert_eq!(refused.code(), 1, "{refused:#?}");
    assert!(
        refused
            .stderr
            .contains("`--db` is an option of `nexo serve music`"),
        "{refused:#?}"
    );

    let dir = TempDir::new("music");
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let db = blocker.join("music.sqlite3");
    let failed = run(&["serve", "music", "--db", db.to_str().unwrap()]);
    assert_eq!(failed.code(), 1, "{failed:#?}");
    let line = failed.error_line();
    assert!(
        line["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot create the directory"),
        "{line}"
    );
    assert!(
        line["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--db FILE"),
        "{line}"
    );
}

#[test]
fn the_default_library_lives_in_the_user_data_directory() {
    let dir = TempDir::new("music");
    let server = format!("{} serve music", shell_quote(nexo_path()));
    let xdg = dir.path().join("xdg");
    let xdg_env = format!("XDG_DATA_HOME={}", xdg.display());
    let listed = run(&["call", "--stdio", &server, "-e", &xdg_env, "list_playlists"]);
    listed.assert_success();
    assert!(xdg.join("nexo/music.sqlite3").is_file(), "{listed:#?}");

    let home = dir.path().join("home");
    let home_env = format!("HOME={}", home.display());
    let listed = run(&[
        "call",
        "--stdio",
        &server,
        "-e",
        "XDG_DATA_HOME=",
        "-e",
        &home_env,
        "list_playlists",
    ]);
    listed.assert_success();
    assert!(
        home.join(".local/share/nexo/music.sqlite3").is_file(),
        "{listed:#?}"
    );
}
