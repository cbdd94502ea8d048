//! The one rendering of an error report: the human lines (`error:`, any
//! `caused by:`, `hint:`), the JSON error line
//! `{"error":{"code","message","causes","hint"}}`, and the parts the page
//! draws (the message, the causes, the page's hint).

use crate::{Exit, Hint, Hinted};

/// An error, ready to be shown.
#[derive(Debug, Clone)]
pub struct Report {
    pub exit: Exit,
    /// The `code` of the JSON error line.
    pub code: &'static str,
    pub message: String,
    /// The `caused by:` lines, outermost first.
    pub causes: Vec<String>,
    pub hint: Option<Hint>,
}

impl Report {
    /// A report that no [`Hinted`] error gives: its exit class, code and
    /// message, without causes or a hint.
    pub fn new(exit: Exit, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            exit,
            code,
            message: message.into(),
            causes: Vec::new(),
            hint: None,
        }
    }

    /// Any error a person can meet, as [`Hinted`] describes it.
    pub fn of<E: Hinted + ?Sized>(error: &E) -> Self {
        Self {
            exit: error.exit(),
            code: error.code(),
            message: error.to_string(),
            causes: error.causes(),
            hint: error.hint(),
        }
    }

    /// The lines for a person at a terminal, each ended by a line break.
    pub fn human(&self) -> String {
        self.lines("error")
    }

    /// The same lines for an error that ends nothing (`warning:` first).
    pub fn warning(&self) -> String {
        self.lines("warning")
    }

    fn lines(&self, label: &str) -> String {
        let mut text = format!("{label}: {}\n", self.message);
        for cause in &self.causes {
            text.push_str(&format!("  caused by: {cause}\n"));
        }
        if let Some(hint) = &self.hint {
            text.push_str(&format!("hint: {}\n", hint.terminal()));
        }
        text
    }

    /// The JSON error line for a script, without its line break: `causes`
    /// only when there are some, `hint` only when there is one.
    pub fn json(&self) -> String {
        let mut error = serde_json::json!({ "code": self.code, "message": self.message });
        if !self.causes.is_empty() {
            error["causes"] = serde_json::json!(self.causes);
        }
        if let Some(hint) = &self.hint {
            error["hint"] = serde_json::json!(hint.terminal());
        }
        serde_json::json!({ "error": error }).to_string()
    }

    /// The hint as the page shows it.
    pub fn page_hint(&self) -> Option<String> {
        self.hint.as_ref().map(Hint::page)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Inner;

    impl std::fmt::Display for Inner {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("connection refused")
        }
    }

    impl std::error::Error for Inner {}

    #[derive(Debug)]
    struct Outer(Inner);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("cannot reach `x`")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    impl Hinted for Outer {
        fn code(&self) -> &'static str {
            "unreachable"
        }

        fn exit(&self) -> Exit {
            Exit::Unreachable
        }

        fn hint(&self) -> Option<Hint> {
            Some(
                Hint::new("check the address")
                    .command("nexo doctor TARGET", "goes through it")
                    .on_page("the Servers view shows it"),
            )
        }
    }

    /// Both texts keep the formats scripts and snapshots read.
    #[test]
    fn the_terminal_and_the_json_line_say_the_same() {
        let report = Report::of(&Outer(Inner));
        assert_eq!(
            report.human(),
            "error: cannot reach `x`\n  caused by: connection refused\nhint: check the address; \
             `nexo doctor TARGET` goes through it\n"
        );
        assert_eq!(
            report.json(),
            r#"{"error":{"code":"unreachable","message":"cannot reach `x`","causes":["connection refused"],"hint":"check the address; `nexo doctor TARGET` goes through it"}}"#
        );
        assert_eq!(
            report.page_hint().as_deref(),
            Some("check the address; the Servers view shows it")
        );
        let bare = Report::new(Exit::Usage, "usage", "no");
        assert_eq!(bare.human(), "error: no\n");
        assert_eq!(bare.warning(), "warning: no\n");
        assert_eq!(bare.json(), r#"{"error":{"code":"usage","message":"no"}}"#);
    }
}
