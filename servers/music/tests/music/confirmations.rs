//! Every way `add_song` and `clear_library` ask before writing, with a
//! scripted client: `elicitation/create` over a 2025-11-25 session
//! (accepted, declined, cancelled), and `input_required` rounds over
//! 2026-07-28, driven by rmcp's client and by hand (`call_tool_once`) to
//! check the sealed `requestState`. A declined or cancelled question
//! writes nothing.

use std::collections::BTreeMap;

use nexo_music::store::Library;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ErrorCode};
use serde_json::{Value, json};

use crate::{Answer, Era, Scripted, TempDb, bohemian, call, connect, structured, with};

async fn counts(db: &TempDb) -> (u64, u64) {
    let counts = Library::open(&db.path())
        .unwrap()
        .counts("default".into())
        .await
        .unwrap();
    (counts.songs, counts.playlists)
}

/// Stores Bohemian Rhapsody in Rock without asking anything.
async fn preload(db: &TempDb) {
    let client = connect(db.music(), Scripted::plain(), Era::Session).await;
    let added = call(
        &client,
        "add_song",
        with(bohemian(), json!({ "playlist": "Rock" })),
    )
    .await;
    assert_eq!(structured(&added)["status"], "added");
}

#[tokio::test]
async fn elicitation_chooses_the_playlist() {
    let db = TempDb::create();
    let handler = Scripted::answering(Answer::Accept(json!({ "playlist": "1970s" })));
    let client = connect(db.music(), handler.clone(), Era::Session).await;
    let result = call(&client, "add_song", bohemian()).await;
    let output = structured(&result);
    assert_eq!(output["status"], "added");
    assert_eq!(output["playlist"], "1970s");
    let forms = handler.forms();
    assert_eq!(forms.len(), 1);
    assert_eq!(forms[0]["mode"], "form");
    let schema = &forms[0]["requestedSchema"];
    assert_eq!(
        schema["properties"]["playlist"]["enum"],
        json!(["Rock", "1970s"])
    );
    assert!(
        schema["properties"].get("confirm").is_none(),
        "not a duplicate"
    );
    assert_eq!(schema["required"], json!(["playlist"]));
}

#[tokio::test]
async fn one_form_confirms_a_duplicate_and_chooses_its_playlist() {
    let db = TempDb::create();
    preload(&db).await;
    let plain = connect(db.music(), Scripted::plain(), Era::Session).await;
    let hotel = json!({
        "title": "Hotel California",
        "artist": "Eagles",
        "genre": "rock",
        "year": 1976,
        "playlist": "1970s"
    });
    assert_eq!(
        structured(&call(&plain, "add_song", hotel).await)["status"],
        "added"
    );
    let handler = Scripted::answering(Answer::Accept(
        json!({ "confirm": true, "playlist": "1970s" }),
    ));
    let client = connect(db.music(), handler.clone(), Era::Session).await;
    let result = call(&client, "add_song", bohemian()).await;
    let output = structured(&result);
    assert_eq!(output["status"], "added");
    assert_eq!(output["playlist"], "1970s");
    assert_eq!(output["duplicate_of"]["title"], "Bohemian Rhapsody");
    let forms = handler.forms();
    assert_eq!(forms.len(), 1, "both questions in one form");
    assert_eq!(
        forms[0]["requestedSchema"]["required"],
        json!(["confirm", "playlist"])
    );
    assert!(
        forms[0]["message"]
            .as_str()
            .unwrap()
            .contains("Add it anyway?")
    );
    assert_eq!(counts(&db).await, (3, 2));
}

#[tokio::test]
async fn a_duplicate_fitting_one_existing_playlist_asks_only_to_confirm() {
    let db = TempDb::create();
    preload(&db).await;
    let handler = Scripted::answering(Answer::Accept(json!({ "confirm": true })));
    let client = connect(db.music(), handler.clone(), Era::Session).await;
    let result = call(&client, "add_song", bohemian()).await;
    let output = structured(&result);
    assert_eq!(output["status"], "added");
    assert_eq!(
        output["playlist"], "Rock",
        "the one existing playlist it fits"
    );
    assert_eq!(output["candidates"], json!(["Rock"]));
    let forms = handler.forms();
    assert_eq!(forms.len(), 1);
    assert_eq!(forms[0]["requestedSchema"]["required"], json!(["confirm"]));
    assert_eq!(counts(&db).await, (2, 1));
}

#[tokio::test]
async fn declined_cancelled_or_refused_questions_write_nothing() {
    let db = TempDb::create();
    let cases = [(Answer::Decline, "declined"), (Answer::Cancel, "cancelled")];
    for (answer, status) in cases {
        let client = connect(db.music(), Scripted::answering(answer), Era::Session).await;
        let result = call(&client, "add_song", bohemian()).await;
        assert_eq!(structured(&result)["status"], status);
        assert!(
            structured(&result)["message"]
                .as_str()
                .unwrap()
                .starts_with("Nothing was written")
        );
        assert_eq!(counts(&db).await, (0, 0), "{status}");
    }
    preload(&db).await;
    let no = Scripted::answering(Answer::Accept(
        json!({ "confirm": false, "playlist": "Rock" }),
    ));
    let client = connect(db.music(), no, Era::Session).await;
    let result = call(&client, "add_song", bohemian()).await;
    assert_eq!(
        structured(&result)["status"],
        "declined",
        "confirm=false is a no"
    );
    assert_eq!(counts(&db).await, (1, 1));
}

#[tokio::test]
async fn a_client_that_can_be_asked_is_always_asked_before_clearing() {
    let db = TempDb::create();
    preload(&db).await;
    let declining = Scripted::answering(Answer::Decline);
    let client = connect(db.music(), declining.clone(), Era::Session).await;
    let result = call(&client, "clear_library", json!({ "confirm": true })).await;
    assert_eq!(structured(&result)["status"], "declined");
    assert_eq!(
        declining.forms().len(),
        1,
        "confirm=true does not replace the user's answer"
    );
    assert!(
        declining.forms()[0]["message"]
            .as_str()
            .unwrap()
            .contains("Delete all 1 songs and 1 playlists")
    );
    assert_eq!(counts(&db).await, (1, 1));

    let accepting = Scripted::answering(Answer::Accept(json!({ "confirm": true })));
    let client = connect(db.music(), accepting, Era::Session).await;
    let result = call(&client, "clear_library", json!({})).await;
    assert_eq!(structured(&result)["status"], "cleared");
    assert_eq!(counts(&db).await, (0, 0));
}

#[tokio::test]
async fn input_required_rounds_complete_over_2026() {
    let db = TempDb::create();
    let handler = Scripted::answering(Answer::Accept(json!({ "playlist": "Rock" })));
    let client = connect(db.music(), handler.clone(), Era::Stateless).await;
    let result = call(&client, "add_song", bohemian()).await;
    let output = structured(&result);
    assert_eq!(
        output["status"], "added",
        "rmcp's client answered the input request and retried"
    );
    assert_eq!(output["playlist"], "Rock");
    assert_eq!(handler.forms().len(), 1);

    let cleared = call(&client, "clear_library", json!({})).await;
    assert_eq!(
        structured(&cleared)["status"],
        "declined",
        "an answer without `confirm: true` is a no"
    );
    let confirming = Scripted::answering(Answer::Accept(json!({ "confirm": true })));
    let client = connect(db.music(), confirming, Era::Stateless).await;
    let cleared = call(&client, "clear_library", json!({})).await;
    assert_eq!(structured(&cleared)["status"], "cleared");
}

fn params(arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("an object");
    };
    CallToolRequestParams::new("add_song").with_arguments(arguments)
}

#[tokio::test]
async fn request_state_is_sealed_to_its_call() {
    let db = TempDb::create();
    let client = connect(
        db.music(),
        Scripted::answering(Answer::Decline),
        Era::Stateless,
    )
    .await;
    let CallToolResponse::InputRequired(asked) =
        client.call_tool_once(params(bohemian())).await.unwrap()
    else {
        panic!("expected input_required");
    };
    let request = serde_json::to_value(&asked).unwrap();
    assert_eq!(request["resultType"], "input_required");
    let input = &request["inputRequests"]["confirmation"];
    assert_eq!(input["method"], "elicitation/create");
    assert_eq!(
        input["params"]["requestedSchema"]["properties"]["playlist"]["enum"],
        json!(["Rock", "1970s"])
    );
    let state = asked.request_state.clone().unwrap();
    assert_eq!(
        counts(&db).await,
        (0, 0),
        "nothing written before the answer"
    );

    let answer = |content: Value| {
        Some(BTreeMap::from([(
            "confirmation".to_owned(),
            json!({ "action": "accept", "content": content }),
        )]))
    };
    let retry = |arguments: Value, state: &str, content: Value| {
        let mut retry = params(arguments);
        retry.request_state = Some(state.to_owned());
        retry.input_responses = answer(content);
        retry
    };

    let other_song = with(bohemian(), json!({ "title": "Another One Bites the Dust" }));
    let error = client
        .call_tool_once(retry(other_song, &state, json!({ "playlist": "Rock" })))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("requestState does not belong"),
        "{error}"
    );
    let mut forged = state.clone();
    forged.replace_range(forged.len() - 4.., "AAAA");
    let error = client
        .call_tool_once(retry(bohemian(), &forged, json!({ "playlist": "Rock" })))
        .await
        .unwrap_err();
    let rmcp::ServiceError::McpError(data) = error else {
        panic!("a JSON-RPC error: {error}");
    };
    assert_eq!(data.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(counts(&db).await, (0, 0));

    let CallToolResponse::InputRequired(again) = client
        .call_tool_once(retry(bohemian(), &state, json!({ "playlist": "" })))
        .await
        .unwrap()
    else {
        panic!("an unusable answer is asked again");
    };
    assert!(again.request_state.is_some());

    let CallToolResponse::Complete(done) = client
        .call_tool_once(retry(bohemian(), &state, json!({ "playlist": "1970s" })))
        .await
        .unwrap()
    else {
        panic!("the retry completes");
    };
    assert_eq!(structured(&done)["playlist"], "1970s");
    assert_eq!(counts(&db).await, (1, 1));
}

#[tokio::test]
async fn a_2026_client_without_elicitation_gets_needs_confirmation() {
    let db = TempDb::create();
    let client = connect(db.music(), Scripted::plain(), Era::Stateless).await;
    let result = call(&client, "add_song", bohemian()).await;
    assert_eq!(structured(&result)["status"], "needs_confirmation");
    let retry = call(
        &client,
        "add_song",
        with(bohemian(), json!({ "playlist": "1970s" })),
    )
    .await;
    assert_eq!(structured(&retry)["status"], "added");
}

#[tokio::test]
async fn a_failed_elicitation_falls_back_to_the_argument_retry() {
    let db = TempDb::create();
    let failing = Scripted::answering(Answer::Fail);
    let client = connect(db.music(), failing.clone(), Era::Session).await;
    let result = call(&client, "add_song", bohemian()).await;
    assert_eq!(structured(&result)["status"], "needs_confirmation");
    assert_eq!(failing.forms().len(), 1, "asked once, then fell back");
    let retry = call(
        &client,
        "add_song",
        with(bohemian(), json!({ "playlist": "Rock" })),
    )
    .await;
    assert_eq!(structured(&retry)["status"], "added");
    let cleared = call(&client, "clear_library", json!({ "confirm": true })).await;
    assert_eq!(
        structured(&cleared)["status"],
        "cleared",
        "confirm=true answers when asking failed"
    );
    assert_eq!(counts(&db).await, (0, 0));
}
