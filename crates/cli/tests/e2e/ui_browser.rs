//! The web page in a real browser: headless Chromium (Debian's chromium and
//! chromium-driver, which scripts/test installs) driven over WebDriver. The
//! page loads with its servers; a tool is called through its form; a chat
//! turn against the scripted model streams its words, asks its approval on
//! the page (kept across a reload), runs the tool and shows it in the
//! trace; a server's elicitation form is answered on the page; an MCP
//! App is drawn in its sandbox and calls its own tool, approved on the
//! page. Each step
//! saves a screenshot under the test output (`ui-browser/` in Cargo's
//! temporary directory for tests).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use nexo_scripted_llm::{Call, Script, ScriptedLlm, Turn};
use serde_json::json;

use crate::support::{PATIENCE, Proc, TempDir, nexo};

/// How long the page has to show what a step waits for.
const SHOWN_WITHIN: Duration = Duration::from_secs(20);

/// chromedriver on a loopback port, and a headless Chromium session.
struct Browser {
    client: Client,
    _driver: Proc,
    shots: PathBuf,
}

impl Browser {
    async fn start(profile: &std::path::Path) -> Self {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let driver = Proc::spawn(
            Command::new("chromedriver")
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            "chromedriver (Debian's chromium-driver; scripts/test installs it)",
        );
        let deadline = std::time::Instant::now() + PATIENCE;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "chromedriver never listened"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({"args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,800", "--no-first-run", "--no-default-browser-check",
                format!("--user-data-dir={}", profile.display()),
            ]}),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap_or_else(|error| panic!("cannot start headless Chromium: {error}"));
        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-browser");
        std::fs::create_dir_all(&shots).unwrap();
        Self {
            client,
            _driver: driver,
            shots,
        }
    }

    /// Saves what the browser shows as `name.png`.
    async fn shot(&self, name: &str) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
    }

    /// Waits until the page's text holds `text`.
    async fn shows(&self, text: &str) {
        let deadline = std::time::Instant::now() + SHOWN_WITHIN;
        loop {
            let shown = self
                .client
                .execute("return document.body.innerText", Vec::new())
                .await
                .unwrap();
            if shown.as_str().is_some_and(|shown| shown.contains(text)) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the page never showed `{text}`; it shows:\n{shown}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs `inside` in the first MCP App's document (the frame of its
    /// sandbox proxy, then the app's own), and comes back to the page.
    async fn in_app<T>(&self, inside: impl AsyncFnOnce(&Client) -> T) -> T {
        for _ in 0..2 {
            self.client
                .wait()
                .for_element(Locator::Css("iframe"))
                .await
                .unwrap()
                .enter_frame()
                .await
                .unwrap();
        }
        let done = inside(&self.client).await;
        self.client.enter_parent_frame().await.unwrap();
        self.client.enter_parent_frame().await.unwrap();
        done
    }

    /// Waits until the first MCP App's text holds `text`.
    async fn app_shows(&self, text: &str) {
        let deadline = std::time::Instant::now() + SHOWN_WITHIN;
        loop {
            let shown = self
                .in_app(async |client| {
                    client
                        .execute("return document.body.innerText", Vec::new())
                        .await
                        .unwrap()
                })
                .await;
            if shown.as_str().is_some_and(|shown| shown.contains(text)) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the app never showed `{text}`; it shows:\n{shown}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn fill(&self, selector: &str, text: &str) {
        let field = self
            .client
            .wait()
            .for_element(Locator::Css(selector))
            .await
            .unwrap();
        field.send_keys(text).await.unwrap();
    }

    async fn click(&self, selector: &str) {
        let button = self
            .client
            .wait()
            .for_element(Locator::Css(selector))
            .await
            .unwrap();
        button.click().await.unwrap();
    }
}

/// `nexo ui --no-open` over `config`, the scripted model's API in its
/// environment; gives the process and the URL it printed.
async fn start_ui(dir: &std::path::Path, config: &std::path::Path, llm: &str) -> (Proc, String) {
    let mut command = nexo();
    command
        .args(["ui", "--no-open", "--config"])
        .arg(config)
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("ANTHROPIC_BASE_URL", llm)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("OLLAMA_HOST", "http://127.0.0.1:9")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut proc = Proc::spawn(&mut command, "nexo ui");
    let stdout = proc.child().stdout.take().unwrap();
    let url = tokio::time::timeout(
        PATIENCE,
        tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).unwrap();
            line.trim().to_owned()
        }),
    )
    .await
    .expect("nexo ui printed no URL")
    .unwrap();
    (proc, url)
}

#[tokio::test(flavor = "multi_thread")]
async fn ui_browser_tools_chat_approval_trace_and_elicitation() {
    let dir = TempDir::new("ui-browser");
    let llm = ScriptedLlm::start(Script::new(vec![
        Turn::tool_calls(vec![Call::new(
            "call_1",
            "utils__echo",
            json!({"text": "hello from the model"}),
        )]),
        Turn::text("The echo answered: hello from the model."),
    ]))
    .await
    .unwrap();
    let config = dir.path().join("servers.json");
    std::fs::write(
        &config,
        json!({
            "mcpServers": {
                "utils": {"builtin": "utils"},
                "morse": {"builtin": "morse"},
                "everything": {"builtin": "everything"},
            },
            "chat": {"approvals": {"utils__echo": "ask"}},
        })
        .to_string(),
    )
    .unwrap();
    let (_ui, url) = start_ui(dir.path(), &config, llm.url()).await;
    let base = url[..url.find("/?").unwrap()].to_owned();
    let browser = Browser::start(&dir.path().join("chromium")).await;

    // The page loads with its servers (the launch token becomes a cookie).
    browser.client.goto(&url).await.unwrap();
    browser.shows("The model:").await;
    browser.shot("1-chat-empty").await;
    browser
        .client
        .goto(&format!("{base}/servers"))
        .await
        .unwrap();
    browser.shows("3 of 3 servers connected").await;
    browser.shot("2-servers").await;
    // A narrow window: the views reflow rather than overflow.
    browser.client.set_window_size(480, 900).await.unwrap();
    browser.client.goto(&format!("{base}/tools")).await.unwrap();
    browser.shows("morse").await;
    let overflow = browser
        .client
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        overflow,
        json!(true),
        "the tools view overflows a narrow window"
    );
    browser.shot("2b-tools-narrow").await;
    browser.client.set_window_size(1280, 800).await.unwrap();

    // A tool called through its form.
    browser
        .client
        .goto(&format!("{base}/tools/morse/morse"))
        .await
        .unwrap();
    browser.fill("input[name='a:texto']", "sos").await;
    browser.click("form.call button[type=submit]").await;
    browser.shows("... --- ...").await;
    browser.shot("3-tool-called").await;

    // A chat turn: the approval is asked on the page, kept across a
    // reload, and the tool runs once it is given.
    browser.client.goto(&format!("{base}/")).await.unwrap();
    browser
        .fill("#chat-text", "say hello through the echo")
        .await;
    browser.click("#chat-form button[type=submit]").await;
    browser.shows("Run utils__echo?").await;
    browser.shot("4-approval-asked").await;
    browser.client.refresh().await.unwrap();
    browser.shows("Run utils__echo?").await;
    browser.shows("say hello through the echo").await;
    browser.shot("5-approval-after-reload").await;
    browser.click("#inbox button[value=yes]").await;
    browser
        .shows("The echo answered: hello from the model.")
        .await;
    browser.shows("done in").await;
    browser.shot("6-chat-answered").await;
    let log = browser
        .client
        .find(Locator::Css("#chat-log"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !log.contains("Run utils__echo?"),
        "the question is gone: {log}"
    );

    // The trace shows the call, its answer under it.
    browser.client.goto(&format!("{base}/trace")).await.unwrap();
    browser.shows("tools/call").await;
    browser.shot("7-trace").await;

    // A server's elicitation (a 2026-07-28 input_required round), answered
    // on the page while its call waits.
    browser
        .client
        .goto(&format!(
            "{base}/tools/everything/test_input_required_result_elicitation"
        ))
        .await
        .unwrap();
    browser.click("form.call button[type=submit]").await;
    browser.shows("What is your name?").await;
    browser.fill("#inbox input[name='f:name']", "Ada").await;
    browser.shot("8-elicitation-asked").await;
    browser.click("#inbox button[value=accept]").await;
    browser.shows("Ada").await;
    browser.shot("9-elicitation-answered").await;

    // An MCP App: test_app's counter, drawn in its sandbox (the server
    // saw the page declare the extension); its button calls test_app_add,
    // a tool for the app alone, approved on the page as the app's request.
    browser
        .client
        .goto(&format!("{base}/tools/everything/test_app"))
        .await
        .unwrap();
    browser.click("form.call button[type=submit]").await;
    browser.shows("(shown in the counter app)").await;
    browser.app_shows("ready").await;
    browser.app_shows("Count: 0").await;
    browser
        .client
        .execute(
            "document.querySelector('figure.app').scrollIntoView()",
            Vec::new(),
        )
        .await
        .unwrap();
    let fits = browser
        .client
        .execute(
            "const f = document.querySelector('iframe.app-frame'); \
             return f.getBoundingClientRect().height >= 100",
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(fits, json!(true), "the frame took the app's size");
    browser.shot("10-app-drawn").await;
    browser
        .in_app(async |client| {
            client
                .find(Locator::Css("#add"))
                .await
                .unwrap()
                .click()
                .await
                .unwrap();
        })
        .await;
    browser.shows("Run everything__test_app_add?").await;
    browser
        .shows("Asked by the app ui://everything/counter of everything")
        .await;
    browser.shot("11-app-call-asked").await;
    browser.click("#inbox button[value=yes]").await;
    browser.app_shows("Count: 1").await;
    browser.app_shows("added").await;
    browser
        .client
        .execute(
            "document.querySelector('figure.app').scrollIntoView()",
            Vec::new(),
        )
        .await
        .unwrap();
    browser.shot("12-app-call-ran").await;

    browser.client.close().await.unwrap();
    llm.stop().await;
}
