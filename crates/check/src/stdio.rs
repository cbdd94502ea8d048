//! A stdio child's own findings, read when it is shut down: what it wrote
//! on stdout that is not JSON-RPC (footgun 1), its stderr, and whether it
//! exits when stdin closes.

use std::time::Duration;

use crate::Run;
use crate::finding::{Finding, Group, Severity};
use crate::link::Link;

/// The longest wait for a stdio child to exit after EOF.
const EOF_WAIT: Duration = Duration::from_secs(5);

impl Run {
    /// A stdio child's stray stdout, stderr and exit on EOF.
    pub(crate) async fn stdio_findings(&mut self) {
        let Link::Stdio(stdio) = &*self.link else {
            return;
        };
        let crashed = stdio.has_ended();
        let in_flight = stdio.in_flight();
        let exit = if crashed {
            None
        } else {
            Some(stdio.shut_down(self.options.timeout.min(EOF_WAIT)).await)
        };
        let stray = stdio.stray();
        let (stderr, stderr_lines) = stdio.stderr();
        if !self.runs(Group::Stdio) {
            return;
        }
        self.probe("stdio", Group::Stdio, "ran", "");
        if !stray.is_empty() {
            let mut phases: Vec<&str> = Vec::new();
            for (phase, _) in &stray {
                if !phases.contains(&phase.as_str()) {
                    phases.push(phase.as_str());
                }
            }
            // The first three lines of each phase.
            let evidence: Vec<String> = stray
                .iter()
                .enumerate()
                .filter(|(index, (phase, _))| {
                    stray[..*index]
                        .iter()
                        .filter(|(earlier, _)| earlier == phase)
                        .count()
                        < 3
                })
                .map(|(_, line)| line)
                .map(|(phase, line)| {
                    format!(
                        "stdout {}: {}",
                        phase.as_str(),
                        crate::finding::trim(line, 160)
                    )
                })
                .collect();
            self.push(
                Finding::new(
                    "stdout-pollution",
                    Severity::Error,
                    Group::Stdio,
                    format!(
                        "{} line(s) on stdout are not JSON-RPC ({})",
                        stray.len(),
                        phases.join(", ")
                    ),
                    "footgun 1 (seed 002, Appendix B); best practices §16.8: on stdio, stdout carries JSON-RPC only",
                    "log to stderr (logging.basicConfig(stream=sys.stderr)); never print() in a stdio server",
                )
                .evidence(evidence.join("\n")),
            );
        }
        if stderr_lines > 0 {
            self.push(
                Finding::new(
                    "stderr-output",
                    Severity::Info,
                    Group::Stdio,
                    format!("the server wrote {stderr_lines} line(s) to stderr"),
                    "spec, transports (stdio): stderr is for logs, which hosts may show or drop",
                    "nothing, if these are logs; keep them few and useful",
                )
                .evidence(
                    stderr
                        .iter()
                        .take(3)
                        .map(|line| crate::finding::trim(line, 160))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
            );
        }
        match exit {
            Some(None) => self.push(
                Finding::new(
                    "no-exit-on-eof",
                    // A call still running (one the probes gave up on) may
                    // keep a server alive for a while, fairly.
                    if in_flight > 0 {
                        Severity::Info
                    } else {
                        Severity::Warning
                    },
                    Group::Stdio,
                    format!(
                        "the server did not exit within {} s of stdin closing ({in_flight} request(s) still in flight)",
                        self.options.timeout.min(EOF_WAIT).as_secs_f64()
                    ),
                    "spec, lifecycle (shutdown, stdio): the client closes stdin and expects the server to exit",
                    "exit when stdin reaches EOF",
                ),
            ),
            Some(Some(status)) if !status.success() => self.push(
                Finding::new(
                    "exit-status-on-eof",
                    Severity::Info,
                    Group::Stdio,
                    format!("the server exited with {status} when stdin closed"),
                    "spec, lifecycle (shutdown, stdio)",
                    "exit with status 0 on EOF: it is the normal end",
                ),
            ),
            _ => {}
        }
    }
}
