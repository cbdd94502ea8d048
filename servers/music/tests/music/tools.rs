//! The tools, resources and prompt through rmcp's client, with a client
//! that declares no elicitation: listings and annotations, the
//! `needs_confirmation` answer and the retry with `playlist` or `confirm`,
//! tool errors that write nothing, exports parsed back, resources and the
//! prompt.

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams, ResourceContents};
use serde_json::{Value, json};

use crate::{Era, Scripted, TempDb, bohemian, call, connect, structured, text, with};

#[tokio::test]
async fn tools_are_listed_with_schemas_and_annotations() {
    let db = TempDb::create();
    let client = connect(db.music(), Scripted::plain(), Era::Session).await;
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(
        tools,
        nexo_music::tools(),
        "tools() is what tools/list returns"
    );
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "add_song",
            "clear_library",
            "export_playlist",
            "get_playlist",
            "list_playlists"
        ]
    );
    for tool in &tools {
        let tool = serde_json::to_value(tool).unwrap();
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool:#}");
        assert_eq!(tool["annotations"]["openWorldHint"], false, "{tool:#}");
    }
    let clear =
        serde_json::to_value(tools.iter().find(|t| t.name == "clear_library").unwrap()).unwrap();
    assert_eq!(clear["annotations"]["destructiveHint"], true);
    assert_eq!(clear["annotations"]["readOnlyHint"], false);
    let add = serde_json::to_value(&tools[0]).unwrap();
    assert_eq!(add["inputSchema"]["required"], json!(["title", "artist"]));
    for argument in [
        "album",
        "genre",
        "year",
        "duration_s",
        "tags",
        "workspace",
        "playlist",
        "confirm",
    ] {
        assert!(
            add["inputSchema"]["properties"][argument].is_object(),
            "{argument}"
        );
    }
    let info = client.peer_info().unwrap();
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("nexo-music")
    );
}

#[tokio::test]
async fn an_ambiguous_song_needs_confirmation_and_the_playlist_retry_stores_it() {
    let db = TempDb::create();
    let client = connect(db.music(), Scripted::plain(), Era::Session).await;
    let first = call(&client, "add_song", bohemian()).await;
    let output = structured(&first);
    assert_eq!(output["status"], "needs_confirmation");
    assert_eq!(output["candidates"], json!(["Rock", "1970s"]));
    assert_eq!(output["reasons"], json!(["ambiguous_playlist"]));
    assert_eq!(output["retry_with"], json!(["playlist"]));
    assert!(text(&first).contains("playlist"), "{first:#?}");
    let listed = call(&client, "list_playlists", json!({})).await;
    assert_eq!(
        structured(&listed)["playlists"],
        json!([]),
        "nothing written"
    );

    let retry = call(
        &client,
        "add_song",
        with(bohemian(), json!({ "playlist": "Rock" })),
    )
    .await;
    let output = structured(&retry);
    assert_eq!(output["status"], "added");
    assert_eq!(output["playlist"], "Rock");
    assert_eq!(output["song"]["title"], "Bohemian Rhapsody");
    assert_eq!(output["song"]["duration_s"], 354);

    let duplicate = call(
        &client,
        "add_song",
        with(bohemian(), json!({ "playlist": "Rock" })),
    )
    .await;
    let output = structured(&duplicate);
    assert_eq!(output["status"], "needs_confirmation");
    assert_eq!(output["reasons"], json!(["duplicate"]));
    assert_eq!(
        output["duplicate_of"]["id"],
        retry.structured_content.as_ref().unwrap()["song"]["id"]
    );
    let confirmed = call(
        &client,
        "add_song",
        with(bohemian(), json!({ "playlist": "Rock", "confirm": true })),
    )
    .await;
    assert_eq!(structured(&confirmed)["status"], "added");
    let rock = call(&client, "get_playlist", json!({ "name": "rock" })).await;
    assert_eq!(structured(&rock)["songs"].as_array().unwrap().len(), 2);
    assert_eq!(structured(&rock)["duration_s"], 708);
}

#[tokio::test]
async fn bad_input_is_a_tool_error_that_writes_nothing() {
    let db = TempDb::create();
    let client = connect(db.music(), Scripted::plain(), Era::Session).await;
    let cases = [
        (
            "add_song",
            json!({ "title": "", "artist": "Queen" }),
            "`title` is empty",
        ),
        (
            "add_song",
            json!({ "title": "X", "artist": "Queen", "year": 99999 }),
            "`year` 99999 is out of range",
        ),
        (
            "add_song",
            json!({ "title": "X", "artist": "Queen", "duration_s": -3 }),
            "`duration_s` -3",
        ),
        (
            "add_song",
            json!({ "title": "X", "artist": "Queen", "workspace": "../etc" }),
            "not a workspace name",
        ),
        (
            "add_song",
            json!({ "title": "X", "artist": "Queen", "playlist": " " }),
            "`playlist` is empty",
        ),
        (
            "get_playlist",
            json!({ "name": "Nope" }),
            "no playlist is called `Nope`",
        ),
        (
            "export_playlist",
            json!({ "name": "Nope", "format": "m3u" }),
            "no playlist is called `Nope`",
        ),
        (
            "export_playlist",
            json!({ "name": "Nope", "format": "xml" }),
            "`xml` is not an export format",
        ),
        (
            "list_playlists",
            json!({ "workspace": "a b" }),
            "not a workspace name",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let result = call(&client, tool, arguments.clone()).await;
        assert_eq!(
            result.is_error,
            Some(true),
            "{tool} {arguments}: {result:#?}"
        );
        assert!(
            text(&result).contains(expected),
            "{tool} {arguments}: {}",
            text(&result)
        );
    }
    let library = nexo_music::store::Library::open(&db.path()).unwrap();
    let counts = library.counts("default".into()).await.unwrap();
    assert_eq!((counts.songs, counts.playlists), (0, 0));
}

/// The entries of an extended M3U document: (seconds, "artist - title", location).
fn parse_m3u(document: &str) -> Vec<(i64, String, String)> {
    let mut lines = document.lines();
    assert_eq!(lines.next(), Some("#EXTM3U"));
    let mut entries = Vec::new();
    let mut pending: Option<(i64, String)> = None;
    for line in lines {
        if let Some(info) = line.strip_prefix("#EXTINF:") {
            let (seconds, name) = info.split_once(',').unwrap();
            pending = Some((seconds.parse().unwrap(), name.to_owned()));
        } else if !line.starts_with('#') {
            let (seconds, name) = pending.take().expect("a location after #EXTINF");
            entries.push((seconds, name, line.to_owned()));
        }
    }
    entries
}

#[tokio::test]
async fn exports_parse_back_to_the_playlist() {
    let db = TempDb::create();
    let client = connect(db.music(), Scripted::plain(), Era::Session).await;
    let songs = [
        json!({ "title": "Hello, \"World\"\nReprise", "artist": "Ana, Luis", "genre": "pop", "duration_s": 200, "tags": ["a,b", "c\"d"] }),
        json!({ "title": "Plain", "artist": "Solo", "genre": "Pop", "year": 2001 }),
    ];
    for song in songs.clone() {
        let added = call(
            &client,
            "add_song",
            with(song, json!({ "playlist": "Mix" })),
        )
        .await;
        assert_eq!(structured(&added)["status"], "added", "{added:#?}");
    }
    let export = |format: &'static str| {
        let client = &client;
        async move {
            let result = call(
                client,
                "export_playlist",
                json!({ "name": "mix", "format": format }),
            )
            .await;
            let output = structured(&result).clone();
            assert_eq!(
                output["content"].as_str(),
                Some(text(&result)),
                "the document is the text"
            );
            assert_eq!(output["songs"], 2);
            output
        }
    };

    let m3u = export("m3u").await;
    assert_eq!(m3u["mime_type"], "audio/x-mpegurl");
    let entries = parse_m3u(m3u["content"].as_str().unwrap());
    assert_eq!(
        entries,
        [
            (
                200,
                "Ana, Luis - Hello, \"World\" Reprise".to_owned(),
                "Ana, Luis - Hello, _World_ Reprise".to_owned()
            ),
            (-1, "Solo - Plain".to_owned(), "Solo - Plain".to_owned()),
        ]
    );

    let json_export = export("json").await;
    let document: Value = serde_json::from_str(json_export["content"].as_str().unwrap()).unwrap();
    assert_eq!(document["name"], "Mix");
    assert_eq!(document["songs"][0]["title"], songs[0]["title"]);
    assert_eq!(document["songs"][0]["tags"], songs[0]["tags"]);
    assert_eq!(document["songs"][1]["year"], 2001);

    let csv_export = export("csv").await;
    let content = csv_export["content"].as_str().unwrap();
    let mut reader = csv::Reader::from_reader(content.as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        &rows[0][2],
        songs[0]["title"].as_str().unwrap(),
        "commas, quotes and a newline survive"
    );
    assert_eq!(&rows[0][3], "Ana, Luis");
    assert_eq!(
        serde_json::from_str::<Value>(&rows[0][8]).unwrap(),
        songs[0]["tags"]
    );
    assert_eq!(&rows[1][6], "2001");
}

#[tokio::test]
async fn clear_library_without_elicitation_needs_the_confirm_retry() {
    let db = TempDb::create();
    let client = connect(db.music(), Scripted::plain(), Era::Session).await;
    call(
        &client,
        "add_song",
        json!({ "title": "T", "artist": "A", "genre": "jazz" }),
    )
    .await;
    let asked = call(&client, "clear_library", json!({})).await;
    let output = structured(&asked);
    assert_eq!(output["status"], "needs_confirmation");
    assert_eq!(
        (output["songs"].clone(), output["playlists"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(output["retry_with"], json!(["confirm"]));
    assert_eq!(
        structured(&call(&client, "list_playlists", json!({})).await)["playlists"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let refused = call(&client, "clear_library", json!({ "confirm": false })).await;
    assert_eq!(structured(&refused)["status"], "needs_confirmation");
    let cleared = call(&client, "clear_library", json!({ "confirm": true })).await;
    assert_eq!(structured(&cleared)["status"], "cleared");
    assert_eq!(
        structured(&call(&client, "list_playlists", json!({})).await)["playlists"],
        json!([])
    );
}

#[tokio::test]
async fn resources_and_the_prompt_read_the_library() {
    let db = TempDb::create();
    let client = connect(db.music(), Scripted::plain(), Era::Session).await;
    call(
        &client,
        "add_song",
        json!({ "title": "Weightless", "artist": "Marconi Union", "tags": ["chill"] }),
    )
    .await;
    call(
        &client,
        "add_song",
        json!({ "title": "Other", "artist": "B", "genre": "rock", "workspace": "w2" }),
    )
    .await;

    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["music://playlists", "music://playlist/Chill"]);
    let templates = client.list_all_resource_templates().await.unwrap();
    assert_eq!(templates[0].uri_template, "music://playlist/{name}");

    let read = |uri: &'static str| {
        let client = &client;
        async move {
            let result = client
                .read_resource(ReadResourceRequestParams::new(uri))
                .await
                .unwrap();
            match &result.contents[0] {
                ResourceContents::TextResourceContents {
                    text, mime_type, ..
                } => {
                    assert_eq!(mime_type.as_deref(), Some("application/json"));
                    serde_json::from_str::<Value>(text).unwrap()
                }
                other => panic!("not text: {other:?}"),
            }
        }
    };
    assert_eq!(
        read("music://playlists").await["playlists"][0]["name"],
        "Chill"
    );
    assert_eq!(
        read("music://playlist/Chill").await["songs"][0]["title"],
        "Weightless"
    );
    assert_eq!(
        read("music://playlists?workspace=w2").await["playlists"][0]["name"],
        "Rock"
    );
    assert_eq!(
        read("music://playlist/rock?workspace=w2").await["songs"][0]["title"],
        "Other"
    );
    let missing = client
        .read_resource(ReadResourceRequestParams::new("music://playlist/Nope"))
        .await;
    assert!(
        missing
            .unwrap_err()
            .to_string()
            .contains("no playlist is called `Nope`")
    );

    let prompts = client.list_all_prompts().await.unwrap();
    assert_eq!(prompts[0].name, "curate_playlist");
    let mut request = GetPromptRequestParams::new("curate_playlist");
    request.arguments = Some(
        json!({ "mood": "chill", "length": "5" })
            .as_object()
            .unwrap()
            .clone(),
    );
    let prompt = client.get_prompt(request).await.unwrap();
    let body = serde_json::to_value(&prompt.messages[0])
        .unwrap()
        .to_string();
    assert!(
        body.contains("5 songs") && body.contains("“Weightless” by Marconi Union"),
        "{body}"
    );
    assert!(
        !body.contains("Other"),
        "another workspace's songs are not listed"
    );
    let mut bad = GetPromptRequestParams::new("curate_playlist");
    bad.arguments = Some(
        json!({ "mood": "chill", "length": "500" })
            .as_object()
            .unwrap()
            .clone(),
    );
    let error = client.get_prompt(bad).await.unwrap_err().to_string();
    assert!(error.contains("`length` must be a whole number"), "{error}");
}
