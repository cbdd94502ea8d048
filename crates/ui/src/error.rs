//! The page's own errors (it cannot listen, or stopped serving), with their
//! code, exit class and hint ([`Hinted`]), and the one way the page draws
//! any error ([`report_html`]): its message, its causes and the hint as
//! the page says it, never a command line.

use nexo_hint::{Exit, Hint, Hinted, Report};

use crate::render::escape;

/// Why the page could not be served.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error("cannot listen on 127.0.0.1:{port}")]
    Bind {
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("the page stopped serving")]
    Serve(#[source] std::io::Error),
}

impl Hinted for UiError {
    fn code(&self) -> &'static str {
        "error"
    }

    fn exit(&self) -> Exit {
        Exit::Usage
    }

    fn hint(&self) -> Option<Hint> {
        match self {
            Self::Bind { port: 0, .. } => None,
            Self::Bind { port, .. } => Some(Hint::new(format!(
                "is another process using port {port}? pick another with `--port N` (0: any \
                 free port)"
            ))),
            Self::Serve(_) => None,
        }
    }
}

/// An error as a block of its own (a failed call, a failed turn).
pub fn error_block(report: &Report) -> String {
    format!(
        "<div class=\"error-block\" role=\"alert\">{}</div>",
        report_html(report)
    )
}

/// An error as the page draws it, wherever it appears: its message, its
/// causes, and its hint as the page says it.
pub fn report_html(report: &Report) -> String {
    let mut html = format!("<p><strong>{}</strong></p>", escape(&report.message));
    if !report.causes.is_empty() {
        html.push_str("<ul class=\"causes\">");
        for cause in &report.causes {
            html.push_str(&format!("<li>{}</li>", escape(cause)));
        }
        html.push_str("</ul>");
    }
    if let Some(hint) = report.page_hint() {
        html.push_str(&format!("<p class=\"hint\">{}</p>", escape(&hint)));
    }
    html
}

#[cfg(test)]
mod tests {
    use nexo_client::arguments::tool_arguments;
    use nexo_client::{ClientError, Method};
    use rmcp::model::ErrorCode;

    use super::*;

    /// Issue 38, point 3: the errors a page meets whose terminal hint names
    /// a nexo command say the page's own way instead: no command line, no
    /// `TARGET` placeholder.
    #[test]
    fn issue_38_the_page_shows_no_command_line() {
        let rpc = |method, code: ErrorCode| ClientError::Rpc {
            method,
            code: code.0,
            message: "no".into(),
            data: None,
        };
        let mut schema = rmcp::model::JsonObject::new();
        schema.insert(
            "properties".into(),
            serde_json::json!({"count": {"type": "integer"}}),
        );
        let mismatch = tool_arguments(&schema, &["count=many".to_owned()]).err();
        let errors = [
            rpc(Method::CallTool, ErrorCode::INVALID_PARAMS),
            rpc(Method::ReadResource, ErrorCode::RESOURCE_NOT_FOUND),
            rpc(Method::GetPrompt, ErrorCode::INVALID_PARAMS),
            rpc(Method::ListTools, ErrorCode::METHOD_NOT_FOUND),
            ClientError::UnknownTool {
                tool: "x".into(),
                known: vec!["a".into()],
            },
        ]
        .into_iter()
        .chain(mismatch);
        let mut seen = 0;
        for error in errors {
            let report = Report::of(&error);
            let terminal = report.hint.as_ref().map(Hint::terminal).unwrap_or_default();
            assert!(terminal.contains("`nexo "), "{error:?}: {terminal}");
            let page = report_html(&report);
            assert!(
                page.contains("class=\"hint\"") && page.contains(" view "),
                "{page}"
            );
            assert!(
                !page.contains("TARGET") && !page.contains("`nexo "),
                "{page}"
            );
            seen += 1;
        }
        assert_eq!(seen, 6, "the arguments' mismatch is one of them");
    }

    /// The message, each cause and the page's hint, escaped.
    #[test]
    fn an_error_is_drawn_with_its_causes_and_hint() {
        let mut report = Report::new(Exit::Unauthorized, "unauthorized", "no <entry>");
        report.causes = vec!["HTTP 401".into()];
        report.hint = Some(
            Hint::new("sign in")
                .command("nexo tools TARGET", "signs in")
                .on_page("reconnect it from the Servers view"),
        );
        assert_eq!(
            report_html(&report),
            "<p><strong>no &lt;entry&gt;</strong></p><ul class=\"causes\"><li>HTTP 401</li></ul>\
             <p class=\"hint\">sign in; reconnect it from the Servers view</p>"
        );
    }
}
