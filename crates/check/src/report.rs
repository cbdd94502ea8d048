//! What `nexo check` found, in three shapes: text for a person (findings
//! grouped by severity, each with its evidence, why and fix, then a score
//! line), a versioned JSON document (`"schema": "nexo-check/1"`) for
//! scripts, and SARIF 2.1.0 for code-scanning tools. This module builds
//! them; the CLI writes them.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Value, json};

use crate::definitions::ToolSize;
use crate::finding::{Finding, Group, Severity};

/// The JSON document's schema name and version; bumped on any change a
/// script could notice.
pub const SCHEMA: &str = "nexo-check/1";

/// One probe, run or skipped.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub name: &'static str,
    pub group: Group,
    /// `ran`, `skipped` or `not-applicable`.
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A figure measured on the way (a latency, a count).
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    pub name: &'static str,
    pub value: f64,
    pub unit: &'static str,
}

/// Everything one run of `nexo check` learnt.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub target: String,
    pub transport: String,
    /// `serverInfo` from `initialize`, as sent.
    pub server: Option<Value>,
    pub protocol_version: Option<String>,
    pub findings: Vec<Finding>,
    pub probes: Vec<Probe>,
    pub tools: Vec<ToolSize>,
    pub measurements: Vec<Measurement>,
}

impl Report {
    /// How many findings of each severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|finding| finding.severity == severity)
            .count()
    }

    /// Whether any finding is at or above `level` (`--fail-on`).
    pub fn fails(&self, level: Severity) -> bool {
        self.findings
            .iter()
            .any(|finding| finding.severity >= level)
    }

    /// 100 less 25 a critical, 10 an error and 3 a warning, never below 0;
    /// info costs nothing.
    pub fn score(&self) -> u32 {
        let lost = 25 * self.count(Severity::Critical)
            + 10 * self.count(Severity::Error)
            + 3 * self.count(Severity::Warning);
        100_u32.saturating_sub(u32::try_from(lost).unwrap_or(u32::MAX))
    }

    /// The approximate tokens of all tool definitions.
    pub fn total_tokens(&self) -> usize {
        self.tools.iter().map(|tool| tool.tokens).sum()
    }

    /// `score 87/100: 0 critical, 1 error, 1 warning, 2 info`.
    pub fn score_line(&self) -> String {
        format!(
            "score {}/100: {} critical, {} error, {} warning, {} info",
            self.score(),
            self.count(Severity::Critical),
            self.count(Severity::Error),
            self.count(Severity::Warning),
            self.count(Severity::Info)
        )
    }

    /// The findings in order: most severe first, then by group and id.
    pub fn sort(&mut self) {
        self.findings.sort_by(|a, b| {
            b.severity
                .cmp(&a.severity)
                .then(a.group.cmp(&b.group))
                .then(a.id.cmp(b.id))
                .then(a.title.cmp(&b.title))
        });
    }

    /// The text a person reads.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let name = self
            .server
            .as_ref()
            .map(|info| {
                format!(
                    "{} {}",
                    info.get("name").and_then(Value::as_str).unwrap_or("?"),
                    info.get("version")
                        .and_then(Value::as_str)
                        .unwrap_or("(no version)")
                )
            })
            .unwrap_or_else(|| "(no serverInfo)".to_owned());
        let _ = writeln!(
            out,
            "nexo check {}: {name}, {}, protocol {}",
            self.target,
            self.transport,
            self.protocol_version.as_deref().unwrap_or("?")
        );
        let ran = self
            .probes
            .iter()
            .filter(|probe| probe.outcome == "ran")
            .count();
        let _ = writeln!(
            out,
            "{ran} probes ran, {} skipped or not applicable; {} tools, about {} tokens of definitions (bytes / 4)",
            self.probes.len() - ran,
            self.tools.len(),
            self.total_tokens()
        );
        for severity in Severity::ALL {
            let findings: Vec<&Finding> = self
                .findings
                .iter()
                .filter(|finding| finding.severity == severity)
                .collect();
            if findings.is_empty() {
                continue;
            }
            let _ = writeln!(
                out,
                "\n{} ({})",
                severity.as_str().to_uppercase(),
                findings.len()
            );
            for finding in findings {
                let _ = writeln!(
                    out,
                    "  [{}] {} ({})",
                    finding.id, finding.title, finding.group
                );
                if !finding.evidence.is_empty() {
                    for line in finding.evidence.lines() {
                        let _ = writeln!(out, "      | {line}");
                    }
                }
                let _ = writeln!(out, "      why: {}", finding.why);
                let _ = writeln!(out, "      fix: {}", finding.fix);
            }
        }
        if self.findings.is_empty() {
            let _ = writeln!(out, "\nno findings");
        }
        let _ = writeln!(out, "\n{}", self.score_line());
        out
    }

    /// The `--json` document.
    pub fn to_json(&self) -> Value {
        json!({
            "schema": SCHEMA,
            "target": self.target,
            "transport": self.transport,
            "server": self.server,
            "protocolVersion": self.protocol_version,
            "summary": {
                "score": self.score(),
                "critical": self.count(Severity::Critical),
                "error": self.count(Severity::Error),
                "warning": self.count(Severity::Warning),
                "info": self.count(Severity::Info),
            },
            "tokens": {
                "method": "bytes/4",
                "total": self.total_tokens(),
                "tools": self.tools,
            },
            "measurements": self.measurements,
            "probes": self.probes,
            "findings": self.findings,
        })
    }

    /// The SARIF 2.1.0 log: one rule per finding id, one result per finding.
    pub fn to_sarif(&self) -> Value {
        let mut rules: Vec<Value> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for finding in &self.findings {
            if seen.contains(&finding.id) {
                continue;
            }
            seen.push(finding.id);
            rules.push(json!({
                "id": finding.id,
                "name": finding.id,
                "shortDescription": {"text": finding.title},
                "help": {"text": format!("why: {}\nfix: {}", finding.why, finding.fix)},
                "properties": {"group": finding.group},
            }));
        }
        let results: Vec<Value> = self
            .findings
            .iter()
            .map(|finding| {
                let index = seen.iter().position(|id| *id == finding.id).unwrap_or(0);
                let subject = finding
                    .subject
                    .clone()
                    .unwrap_or_else(|| self.target.clone());
                json!({
                    "ruleId": finding.id,
                    "ruleIndex": index,
                    "level": match finding.severity {
                        Severity::Critical | Severity::Error => "error",
                        Severity::Warning => "warning",
                        Severity::Info => "note",
                    },
                    "message": {"text": if finding.evidence.is_empty() {
                        finding.title.clone()
                    } else {
                        format!("{}\n{}", finding.title, finding.evidence)
                    }},
                    "locations": [{
                        "logicalLocations": [{"name": subject, "kind": "member"}]
                    }],
                    "properties": {"severity": finding.severity, "group": finding.group},
                })
            })
            .collect();
        json!({
            "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": "nexo check",
                    "version": env!("CARGO_PKG_VERSION"),
                    "informationUri": "https://modelcontextprotocol.io/",
                    "rules": rules,
                }},
                "properties": {"target": self.target},
                "results": results,
            }]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(id: &'static str, severity: Severity) -> Finding {
        Finding::new(id, severity, Group::Definitions, id, "why", "fix")
    }

    #[test]
    fn fail_on_and_score_follow_severities() {
        let mut report = Report {
            findings: vec![
                finding("a", Severity::Info),
                finding("b", Severity::Warning),
                finding("c", Severity::Error),
            ],
            ..Report::default()
        };
        report.sort();
        assert_eq!(report.findings[0].id, "c");
        assert!(report.fails(Severity::Error));
        assert!(!report.fails(Severity::Critical));
        assert_eq!(report.score(), 87);
        assert_eq!(
            report.score_line(),
            "score 87/100: 0 critical, 1 error, 1 warning, 1 info"
        );
    }

    #[test]
    fn sarif_has_one_rule_per_id() {
        let report = Report {
            findings: vec![
                finding("a", Severity::Error),
                finding("a", Severity::Error),
                finding("b", Severity::Info),
            ],
            ..Report::default()
        };
        let sarif = report.to_sarif();
        assert_eq!(sarif["version"], "2.1.0");
        assert_eq!(
            sarif["runs"][0]["tool"]["driver"]["rules"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
        assert_eq!(sarif["runs"][0]["results"][2]["level"], "note");
        assert_eq!(sarif["runs"][0]["results"][2]["ruleIndex"], 1);
    }
}
