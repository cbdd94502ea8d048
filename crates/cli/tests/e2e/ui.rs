//! `nexo ui` as a person starts it: the URL on stdout, the page on
//! 127.0.0.1 with the configured servers, a tool called through its form,
//! a foreign Host refused, and SIGTERM ending it cleanly.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::support::{PATIENCE, Proc, TempDir, nexo};

#[tokio::test(flavor = "multi_thread")]
async fn ui_serves_the_configured_servers_behind_its_launch_token() {
    let dir = TempDir::new("ui");
    let config = dir.path().join("servers.json");
    std::fs::write(
        &config,
        r#"{"mcpServers": {"utils": {"builtin": "utils"}, "morse": {"builtin": "morse"}}}"#,
    )
    .unwrap();
    let mut command = nexo();
    command
        .args(["ui", "--no-open", "--config"])
        .arg(&config)
        .env("HOME", dir.path())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut proc = Proc::spawn(&mut command, "nexo ui");
    let stdout = proc.child().stdout.take().unwrap();
    let url = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line.trim().to_owned()
    });
    let url = tokio::time::timeout(PATIENCE, url)
        .await
        .expect("nexo ui printed no URL")
        .unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/?token="),
        "{url}"
    );
    let base = url[..url.find("/?").unwrap()].to_owned();
    let host = base.trim_start_matches("http://").to_owned();

    let client = crate::support::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let refused = client.get(format!("{base}/tools")).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let opened = client.get(&url).send().await.unwrap();
    assert!(opened.status().is_redirection());
    let cookie = opened.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();

    // A view's HTML, with the page's cookie.
    let view = |path: &str| {
        let request = client
            .get(format!("{base}{path}"))
            .header("cookie", &cookie);
        async move { request.send().await.unwrap().text().await.unwrap() }
    };
    let tools = view("/tools").await;
    assert!(
        tools.contains("/tools/utils/echo") && tools.contains("/tools/morse/morse"),
        "{tools}"
    );
    let form = view("/tools/morse/morse").await;
    let csrf = form
        .split("X-CSRF-Token\": \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let result = client
        .post(format!("{base}/tools/morse/morse"))
        .header("cookie", &cookie)
        .header("origin", &base)
        .header("x-csrf-token", &csrf)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("a%3Atexto=sos")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(result.contains("... --- ..."), "{result}");

    let rebound = client
        .get(format!("{base}/tools"))
        .header("host", "attacker.example")
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), 421, "host {host} only");

    proc.terminate();
    let status = proc
        .wait_for_exit(Duration::from_secs(10))
        .expect("nexo ui did not stop on SIGTERM");
    assert!(status.success(), "{status}");
}
