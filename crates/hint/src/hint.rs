//! A hint: what to do about an error, worded for each surface that shows
//! it. The advice is the same everywhere; the nexo command that does it is
//! the terminal's alone, and the page says its own way instead (a view, a
//! button), so that no page shows a command line or its `TARGET`
//! placeholder.

/// What to do about an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// What to do, in words true on every surface.
    advice: String,
    /// The other surfaces' ways, when there are any (boxed: most hints
    /// have none, and errors that carry a hint stay small).
    ways: Option<Box<Ways>>,
}

/// How each surface does what a hint advises.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Ways {
    /// The nexo command that does it (`nexo tools TARGET --json`) and what
    /// it does (`shows it`), for the terminal.
    command: Option<(String, String)>,
    /// How the page does it (`the Tools view shows it`).
    page: Option<String>,
}

/// The placeholder a command line has for the target, where it is not known.
const TARGET: &str = "TARGET";

impl Hint {
    /// A hint that reads the same on every surface.
    pub fn new(advice: impl Into<String>) -> Self {
        Self {
            advice: advice.into(),
            ways: None,
        }
    }

    fn ways(&mut self) -> &mut Ways {
        self.ways.get_or_insert_default()
    }

    /// With the nexo command that does it, and what that command does; the
    /// terminal shows ``advice; `command` does``. `TARGET` in `command`
    /// stands for the target, filled in by [`Hint::at`] where it is known.
    #[must_use]
    pub fn command(mut self, command: impl Into<String>, does: impl Into<String>) -> Self {
        self.ways().command = Some((command.into(), does.into()));
        self
    }

    /// With the page's own way of doing it; the page shows `advice; way`
    /// (and never the command).
    #[must_use]
    pub fn on_page(mut self, way: impl Into<String>) -> Self {
        self.ways().page = Some(way.into());
        self
    }

    /// This hint with `more` after its advice, on every surface (` and its
    /// log in `FILE``).
    #[must_use]
    pub fn append(mut self, more: &str) -> Self {
        self.advice.push_str(more);
        self
    }

    /// This hint with each of its texts passed through `change` (to scrub
    /// secrets from them).
    #[must_use]
    pub fn map(self, change: impl Fn(String) -> String) -> Self {
        Self {
            advice: change(self.advice),
            ways: self.ways.map(|ways| {
                Box::new(Ways {
                    command: ways
                        .command
                        .map(|(command, does)| (change(command), change(does))),
                    page: ways.page.map(&change),
                })
            }),
        }
    }

    /// This hint with `target` (the flags that name it, `--server dns`) in
    /// place of the command's `TARGET`.
    #[must_use]
    pub fn at(mut self, target: &str) -> Self {
        if let Some((command, _)) = self.ways.as_mut().and_then(|ways| ways.command.as_mut()) {
            *command = command.replace(TARGET, target);
        }
        self
    }

    /// The hint as the terminal and the JSON error line show it.
    pub fn terminal(&self) -> String {
        match self.ways.as_ref().and_then(|ways| ways.command.as_ref()) {
            Some((command, does)) => format!("{}; `{command}` {does}", self.advice),
            None => self.advice.clone(),
        }
    }

    /// The hint as the page shows it: the advice, and the page's own way.
    pub fn page(&self) -> String {
        match self.ways.as_ref().and_then(|ways| ways.page.as_ref()) {
            Some(way) => format!("{}; {way}", self.advice),
            None => self.advice.clone(),
        }
    }
}

impl From<String> for Hint {
    fn from(advice: String) -> Self {
        Self::new(advice)
    }
}

impl From<&str> for Hint {
    fn from(advice: &str) -> Self {
        Self::new(advice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command is the terminal's, the way the page's; the advice is both.
    #[test]
    fn each_surface_says_what_fits_it() {
        let hint = Hint::new("the server's tools: a, b")
            .command("nexo tools TARGET NAME", "describes one")
            .on_page("the Tools view describes each");
        assert_eq!(
            hint.terminal(),
            "the server's tools: a, b; `nexo tools TARGET NAME` describes one"
        );
        assert_eq!(
            hint.page(),
            "the server's tools: a, b; the Tools view describes each"
        );
        assert_eq!(
            hint.at("--server dns").terminal(),
            "the server's tools: a, b; `nexo tools --server dns NAME` describes one"
        );
        let plain = Hint::new("check the path");
        assert_eq!(
            (plain.terminal(), plain.page()),
            ("check the path".to_owned(), "check the path".to_owned())
        );
    }
}
