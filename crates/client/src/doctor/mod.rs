//! `nexo doctor`: an ordered checklist of one connection, each step timed,
//! each failure saying what to do. For a URL: the name resolved, the TCP
//! connection, TLS (version, certificate names and dates), the HTTP answer
//! (and where MCP answers when the path is wrong), CORS as a browser
//! client meets it, the authorization metadata a 401 points at; for a
//! command: whether it is on PATH, how long until its first byte and its
//! first answer, what it wrote to stdout that is not JSON-RPC, its stderr
//! and its exit status. Then, for every target, both protocol eras tried
//! one after the other, `tools/list` and one `ping` on the session a
//! client would keep.
//!
//! Each step runs only when the ones it stands on passed: a name that does
//! not resolve leaves nothing to connect to. The steps are reported as
//! they finish ([`diagnose`]'s `progress`), so a person watches a slow
//! server start rather than a silent terminal.

mod command;
mod network;

pub(crate) use network::{elsewhere_hint, where_mcp_answers};

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use nexo_hint::Hinted;
use serde::Serialize;
use serde_json::{Value, json};

use crate::{ClientError, ConnectOptions, Era, ErrorKind, Session, Target};

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    /// It works, with something worth knowing (a certificate about to
    /// expire, no CORS for browser clients, banner lines on stdout).
    Warning,
    Failed,
    /// Not run: a step it stands on failed.
    Skipped,
}

/// One step of the checklist.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// A stable name for scripts: `resolve`, `connect`, `tls`, `http`,
    /// `cors`, `authorization`, `command`, `start`, `era_2026`, `era_2025`,
    /// `tools`, `ping`.
    pub name: &'static str,
    pub status: Status,
    /// What was found, in a line.
    pub summary: String,
    /// Further lines: addresses, certificate names, stray output...
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
    /// What to do, for a failure or a warning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(rename = "ms", serialize_with = "milliseconds")]
    pub elapsed: Duration,
    /// For a failure: the kind that decides the exit status.
    #[serde(skip)]
    pub kind: Option<ErrorKind>,
}

fn milliseconds<S: serde::Serializer>(
    elapsed: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64((elapsed.as_secs_f64() * 1e5).round() / 100.0)
}

impl Step {
    fn new(name: &'static str, status: Status, summary: impl Into<String>, since: Instant) -> Self {
        Self {
            name,
            status,
            summary: summary.into(),
            details: Vec::new(),
            hint: None,
            elapsed: since.elapsed(),
            kind: None,
        }
    }

    fn passed(name: &'static str, summary: impl Into<String>, since: Instant) -> Self {
        Self::new(name, Status::Passed, summary, since)
    }

    fn warning(
        name: &'static str,
        summary: impl Into<String>,
        hint: impl Into<String>,
        since: Instant,
    ) -> Self {
        Self::new(name, Status::Warning, summary, since).hint(hint)
    }

    fn failed(
        name: &'static str,
        kind: ErrorKind,
        summary: impl Into<String>,
        hint: impl Into<String>,
        since: Instant,
    ) -> Self {
        let mut step = Self::new(name, Status::Failed, summary, since).hint(hint);
        step.kind = Some(kind);
        step
    }

    /// A step failed with a client error: its message, causes and hint.
    fn failed_with(name: &'static str, error: &ClientError, since: Instant) -> Self {
        let mut step = Self::new(name, Status::Failed, error.to_string(), since);
        step.details = error.causes();
        step.hint = error.hint().map(|hint| hint.terminal());
        step.kind = Some(error.kind());
        step
    }

    fn skipped(name: &'static str, why: impl Into<String>) -> Self {
        Self::new(name, Status::Skipped, why, Instant::now())
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    fn detail(mut self, line: impl Into<String>) -> Self {
        self.details.push(line.into());
        self
    }
}

/// The checklist of one target.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The target as shown (credentials redacted).
    pub target: String,
    pub steps: Vec<Step>,
}

impl Report {
    /// The first step that failed, which decides the exit status.
    pub fn first_failure(&self) -> Option<&Step> {
        self.steps.iter().find(|step| step.status == Status::Failed)
    }

    pub fn to_json(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Value::Object(object) = &mut value {
            object.insert("ok".to_owned(), json!(self.first_failure().is_none()));
        }
        value
    }

    /// The checklist for a person, with its verdict.
    pub fn render(&self) -> String {
        let mut text: String = self.steps.iter().map(Step::render).collect();
        text.push_str(&self.verdict());
        text.push('\n');
        text
    }

    /// The verdict in a line: healthy, working with warnings, or where it
    /// stops working.
    pub fn verdict(&self) -> String {
        if let Some(step) = self.first_failure() {
            return format!("not working: the `{}` step failed", step.name);
        }
        match self
            .steps
            .iter()
            .filter(|step| step.status == Status::Warning)
            .count()
        {
            0 => "healthy: every step passed".to_owned(),
            count => format!("working, with {count} warning(s) above"),
        }
    }
}

impl Step {
    /// The step's lines for a person: a mark, the name, the time, what was
    /// found, then details and the hint indented.
    pub fn render(&self) -> String {
        let mark = match self.status {
            Status::Passed => "ok  ",
            Status::Warning => "warn",
            Status::Failed => "FAIL",
            Status::Skipped => "skip",
        };
        let time = match self.status {
            Status::Skipped => String::new(),
            _ => format!(" ({})", shown_duration(self.elapsed)),
        };
        let mut text = format!("{mark} {:<13} {}{time}\n", self.name, self.summary);
        for line in &self.details {
            let _ = writeln!(text, "       {line}");
        }
        if let Some(hint) = &self.hint
            && self.status != Status::Passed
        {
            let _ = writeln!(text, "       hint: {hint}");
        }
        text
    }
}

fn shown_duration(elapsed: Duration) -> String {
    let milliseconds = elapsed.as_secs_f64() * 1000.0;
    if milliseconds < 1.0 {
        format!("{milliseconds:.2} ms")
    } else if milliseconds < 10_000.0 {
        format!("{milliseconds:.0} ms")
    } else {
        format!("{:.1} s", elapsed.as_secs_f64())
    }
}

/// Collects steps, handing each to `progress` as it is added.
struct Checklist<'p> {
    steps: Vec<Step>,
    progress: &'p (dyn Fn(&Step) + Sync),
}

impl Checklist<'_> {
    fn add(&mut self, step: Step) -> Status {
        (self.progress)(&step);
        let status = step.status;
        self.steps.push(step);
        status
    }

    /// Adds `names` as skipped because `why`.
    fn skip(&mut self, names: &[&'static str], why: &str) {
        for name in names {
            self.add(Step::skipped(name, why.to_owned()));
        }
    }
}

/// The steps that speak MCP, run for every kind of target.
const MCP_STEPS: &[&str] = &["era_2026", "era_2025", "tools", "ping"];

/// Runs the checklist of `target`, connecting as `options` say (their era
/// aside: both eras are tried), handing each step to `progress` as it
/// finishes.
pub async fn diagnose(
    target: &Target,
    options: &ConnectOptions,
    progress: &(dyn Fn(&Step) + Sync),
) -> Report {
    let mut checklist = Checklist {
        steps: Vec::new(),
        progress,
    };
    let reachable = match target {
        Target::Url { url, headers, .. } => {
            network::check(url.expose(), headers, options.timeout, &mut checklist).await
        }
        Target::Stdio { command, env, cwd } => {
            command::check(
                command,
                env,
                cwd.as_deref(),
                options.startup,
                &mut checklist,
            )
            .await
        }
        Target::InProcess(_) => true,
    };
    if reachable {
        speak_mcp(target, options, &mut checklist).await;
    } else {
        checklist.skip(MCP_STEPS, "the server cannot be reached");
    }
    Report {
        target: target.to_string(),
        steps: checklist.steps,
    }
}

/// Both eras, each on its own connection, then `tools/list` on the session
/// a client with `--protocol auto` keeps (2026-07-28 where the server
/// speaks it) and `ping` on the 2025-era one (2026-07-28 has no `ping`).
async fn speak_mcp(target: &Target, options: &ConnectOptions, checklist: &mut Checklist<'_>) {
    let (newer, newer_error) = era(target, options, Era::Discover, "era_2026", checklist).await;
    let (older, older_error) = era(target, options, Era::Initialize, "era_2025", checklist).await;
    let Some(kept) = newer.as_ref().or(older.as_ref()) else {
        // Neither era opened a session: what the older one said (every
        // server of the last years speaks it) decides what to do.
        let since = Instant::now();
        match older_error.or(newer_error) {
            Some(error) => {
                let mut step = Step::failed_with("tools", &error, since);
                step.summary = format!("no session in either era: {}", step.summary);
                checklist.add(step);
            }
            None => {
                checklist.add(Step::failed(
                    "tools",
                    ErrorKind::Protocol,
                    "no session in either era",
                    "run `nexo discover` on the target with --verbose to see the exchange",
                    since,
                ));
            }
        }
        checklist.skip(&["ping"], "no session");
        return;
    };
    let since = Instant::now();
    match kept.list_tools().await {
        Ok(tools) => {
            let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
            let mut step = Step::passed("tools", format!("{} tool(s)", tools.len()), since);
            if !names.is_empty() {
                step = step.detail(shown_names(&names));
            }
            checklist.add(step);
        }
        Err(error) => {
            checklist.add(Step::failed_with("tools", &error, since));
        }
    }
    match &older {
        Some(older) => {
            let since = Instant::now();
            match older.ping().await {
                Ok(()) => checklist.add(Step::passed("ping", "answered", since)),
                Err(error) => checklist.add(Step::failed_with("ping", &error, since)),
            };
        }
        None => {
            checklist.add(Step::skipped(
                "ping",
                "2026-07-28 has no `ping`, and the server speaks no older era",
            ));
        }
    }
    for session in [newer, older].into_iter().flatten() {
        session.close().await;
    }
}

/// The names of a list, the first few of a long one.
fn shown_names(names: &[&str]) -> String {
    const SHOWN: usize = 12;
    let mut text = names
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        let _ = write!(text, ", and {} more", names.len() - SHOWN);
    }
    text
}

/// One era's connection, as a step; the session when it opened. A server
/// that speaks only the other era is a warning, not a failure: the
/// verdict comes from both ([`speak_mcp`]).
async fn era(
    target: &Target,
    options: &ConnectOptions,
    era: Era,
    name: &'static str,
    checklist: &mut Checklist<'_>,
) -> (Option<Session>, Option<ClientError>) {
    let options = ConnectOptions {
        era,
        ..options.clone()
    };
    let since = Instant::now();
    let asked = match era {
        Era::Discover => "2026-07-28 (server/discover)",
        Era::Initialize | Era::Auto => "2025 (initialize)",
    };
    match crate::connect(target, &options).await {
        Ok(session) => {
            let revision = session.revision().unwrap_or_else(|| "?".to_owned());
            let mut step = Step::passed(name, format!("{asked}: speaks {revision}"), since);
            let server = session
                .server_info()
                .and_then(|info| info.server_info.clone())
                .map_or_else(
                    || "a server that gave no name".to_owned(),
                    |server| format!("server {} {}", server.name, server.version),
                );
            step = step.detail(format!("{server}, over {}", session.transport()));
            checklist.add(step);
            (Some(session), None)
        }
        Err(error) => {
            let mut step = Step::failed_with(name, &error, since);
            if error.kind() != ErrorKind::Unauthorized {
                // One era refused is how a server of the other era answers.
                step.status = Status::Warning;
                step.kind = None;
                step.summary = format!("{asked}: not spoken ({error})");
                step.hint = Some(match era {
                    Era::Discover => {
                        "the server speaks only the older era, which every client still offers"
                            .to_owned()
                    }
                    Era::Initialize | Era::Auto => {
                        "the server speaks only 2026-07-28; clients of the 2025 era cannot reach it"
                            .to_owned()
                    }
                });
            }
            checklist.add(step);
            (None, Some(error))
        }
    }
}
