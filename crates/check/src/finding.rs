//! One finding: what is wrong, how bad, which probe group saw it, the
//! evidence (the exchange, trimmed), why it matters (a footgun of the study
//! guide's Appendix B, a section of its best practices, or the spec) and
//! how to fix it. Finding ids are stable kebab-case codes: scripts, SARIF
//! rules and the tests match on them.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// How bad a finding is, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
    Critical,
}

impl Severity {
    pub const ALL: [Severity; 4] = [
        Severity::Critical,
        Severity::Error,
        Severity::Warning,
        Severity::Info,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "info" => Ok(Severity::Info),
            "warning" => Ok(Severity::Warning),
            "error" => Ok(Severity::Error),
            "critical" => Ok(Severity::Critical),
            other => Err(format!(
                "`{other}` is no severity; one of info, warning, error, critical"
            )),
        }
    }
}

/// The probe groups, which `--only` and `--skip` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Group {
    Stdio,
    Http,
    Protocol,
    Errors,
    Resources,
    Capabilities,
    Definitions,
    Security,
    Portability,
    Latency,
    Auth,
}

impl Group {
    pub const ALL: [Group; 11] = [
        Group::Stdio,
        Group::Http,
        Group::Protocol,
        Group::Errors,
        Group::Resources,
        Group::Capabilities,
        Group::Definitions,
        Group::Security,
        Group::Portability,
        Group::Latency,
        Group::Auth,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Group::Stdio => "stdio",
            Group::Http => "http",
            Group::Protocol => "protocol",
            Group::Errors => "errors",
            Group::Resources => "resources",
            Group::Capabilities => "capabilities",
            Group::Definitions => "definitions",
            Group::Security => "security",
            Group::Portability => "portability",
            Group::Latency => "latency",
            Group::Auth => "auth",
        }
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Group {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Group::ALL
            .into_iter()
            .find(|group| group.as_str() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Group::ALL.iter().map(|group| group.as_str()).collect();
                format!("`{text}` is no probe group; one of {}", names.join(", "))
            })
    }
}

/// One thing wrong (or worth knowing) about the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// A stable kebab-case code (`stdout-pollution`, `unknown-tool-not-error`).
    pub id: &'static str,
    pub severity: Severity,
    pub group: Group,
    /// One line, naming the tool, resource or header concerned.
    pub title: String,
    /// What was sent and what came back, trimmed.
    pub evidence: String,
    /// The footgun (seed 002, Appendix B) or the section of the spec or of
    /// the best practices (seed 002, section 16) that says why it matters.
    pub why: &'static str,
    /// What to change.
    pub fix: &'static str,
    /// The tool, resource, prompt or header the finding is about, if one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

impl Finding {
    pub fn new(
        id: &'static str,
        severity: Severity,
        group: Group,
        title: impl Into<String>,
        why: &'static str,
        fix: &'static str,
    ) -> Self {
        Self {
            id,
            severity,
            group,
            title: title.into(),
            evidence: String::new(),
            why,
            fix,
            subject: None,
        }
    }

    pub fn evidence(mut self, evidence: impl AsRef<str>) -> Self {
        self.evidence = trim(evidence.as_ref(), EVIDENCE_CHARS);
        self
    }

    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }
}

/// The longest evidence kept, in characters.
const EVIDENCE_CHARS: usize = 600;

/// `text` cut to `chars` characters, with an ellipsis when cut.
pub fn trim(text: &str, chars: usize) -> String {
    let mut out: String = text.chars().take(chars).collect();
    if out.len() < text.len() {
        out.push_str(" …");
    }
    out
}

/// Which groups run: all but `--skip`, or only `--only`.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub only: Vec<Group>,
    pub skip: Vec<Group>,
}

impl Selection {
    pub fn runs(&self, group: Group) -> bool {
        (self.only.is_empty() || self.only.contains(&group)) && !self.skip.contains(&group)
    }
}
