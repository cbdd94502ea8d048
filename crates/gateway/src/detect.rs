//! Detectors: secrets (private keys, cloud and API keys, JWTs, passwords
//! in URLs) and prompt-injection markers (hidden Unicode, instructions
//! aimed at the model) in the strings of tool arguments, tool results and
//! tool descriptions, each place with its own action: flag (record only),
//! redact (replace the match) or block.
//!
//! The patterns are compiled once: an Aho-Corasick automaton of the words
//! every match must hold passes over each string first (most strings hold
//! none and cost no more); a `RegexSet` then says in one pass which
//! detectors fire, and only those run alone to find what to redact. Hidden Unicode is looked for by a scan of the
//! characters of strings that are not plain ASCII. Values are walked
//! without recursion ([`crate::walk`]). A finding never carries the secret
//! itself, only its kind and where it was.

use aho_corasick::AhoCorasick;
use regex::{Regex, RegexSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::walk;

/// What was inspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// A tool call's arguments, on the way to the upstream.
    Arguments,
    /// A tool's result, on the way back to the client.
    Results,
    /// Tool descriptions (and their schemas), as `tools/list` returns them.
    Descriptions,
}

/// What a detector does when it fires, ordered from mildest to strongest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Record the finding (in the audit log) and pass the value on.
    Flag,
    /// Replace what matched and pass the value on.
    Redact,
    /// Refuse the call, the result or the tool.
    Block,
}

/// The two families of detectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Secret,
    Injection,
}

/// The action of one family in each place; `None` turns it off there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actions {
    pub arguments: Option<Action>,
    pub results: Option<Action>,
    pub descriptions: Option<Action>,
}

impl Actions {
    fn at(&self, place: Place) -> Option<Action> {
        match place {
            Place::Arguments => self.arguments,
            Place::Results => self.results,
            Place::Descriptions => self.descriptions,
        }
    }

    /// Secrets flagged in arguments and descriptions, redacted in results.
    pub const SECRETS: Self = Self {
        arguments: Some(Action::Flag),
        results: Some(Action::Redact),
        descriptions: Some(Action::Flag),
    };

    /// Injection flagged in results and descriptions, not looked for in
    /// arguments (the model wrote them).
    pub const INJECTION: Self = Self {
        arguments: None,
        results: Some(Action::Flag),
        descriptions: Some(Action::Flag),
    };
}

/// One detector that fired.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub family: Family,
    /// A stable snake_case name: `aws_access_key`, `hidden_unicode`...
    pub kind: &'static str,
    /// Where, as a JSON pointer into the inspected value.
    pub pointer: String,
    pub action: Action,
}

/// What an inspection found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Inspection {
    pub findings: Vec<Finding>,
}

impl Inspection {
    /// The strongest action among the findings.
    pub fn action(&self) -> Option<Action> {
        self.findings.iter().map(|finding| finding.action).max()
    }

    pub fn blocked(&self) -> bool {
        self.action() == Some(Action::Block)
    }
}

/// What replaces a redacted match: the one spelling every part of nexo
/// writes.
pub use nexo_client::secret::REDACTED;

struct Pattern {
    family: Family,
    kind: &'static str,
    regex: Regex,
}

/// The patterns: family, kind, expression and anchors, words one of
/// which every match holds (compared without regard to ASCII case): a
/// string holding none is not scanned further. Where a group named `s` is
/// present, only it is redacted (the password of a URL, not its host). Word
/// boundaries are ASCII ones, so that the regex crate's DFA scans text in
/// any script.
const PATTERNS: &[(Family, &str, &str, &[&str])] = &[
    (
        Family::Secret,
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=\s:,-]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?",
        &["-----BEGIN"],
    ),
    (
        Family::Secret,
        "aws_access_key",
        r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?-u:\b)",
        &["AKIA", "ASIA", "ABIA", "ACCA"],
    ),
    (
        Family::Secret,
        "aws_secret_key",
        r#"(?i:aws_?secret_?access_?key)["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+]{40})(?-u:\b)"#,
        &["secret"],
    ),
    (
        Family::Secret,
        "gcp_api_key",
        r"(?-u:\b)AIza[0-9A-Za-z_-]{35}(?-u:\b)",
        &["AIza"],
    ),
    (
        Family::Secret,
        "azure_storage_key",
        r"(?:AccountKey|SharedAccessKey)=(?P<s>[A-Za-z0-9+/]{40,}={0,2})",
        &["AccountKey=", "SharedAccessKey="],
    ),
    (
        Family::Secret,
        "github_token",
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})(?-u:\b)",
        &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
    ),
    (
        Family::Secret,
        "gitlab_token",
        r"(?-u:\b)gl(?:pat|ptt|dt|rt|cbt|oas|imt|ft|soat)-[A-Za-z0-9_-]{20,}(?-u:\b)",
        &[
            "glpat-", "glptt-", "gldt-", "glrt-", "glcbt-", "gloas-", "glimt-", "glft-", "glsoat-",
        ],
    ),
    (
        Family::Secret,
        "slack_token",
        r"(?-u:\b)xox[abposre]-[A-Za-z0-9-]{10,}(?-u:\b)",
        &["xox"],
    ),
    (
        Family::Secret,
        "slack_webhook",
        r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/(?P<s>[A-Za-z0-9]{16,})",
        &["hooks.slack.com"],
    ),
    (
        Family::Secret,
        "stripe_key",
        r"(?-u:\b)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}(?-u:\b)",
        &["k_live_", "k_test_"],
    ),
    (
        Family::Secret,
        "anthropic_key",
        r"(?-u:\b)sk-ant-(?:api|admin|oat)[0-9]{2}-[A-Za-z0-9_-]{32,}",
        &["sk-ant-"],
    ),
    (
        Family::Secret,
        "openai_key",
        r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{16,}T3BlbkFJ[A-Za-z0-9_-]{16,}",
        &["T3BlbkFJ"],
    ),
    (
        Family::Secret,
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        &["eyJ"],
    ),
    (
        Family::Secret,
        "url_password",
        r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s/:@]{1,256}:(?P<s>[^\s/@]{1,256})@",
        &["://"],
    ),
    (
        Family::Injection,
        "instruction_override",
        r"(?i)(?-u:\b)(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|preceding|your|system)\s+(?:instructions|prompts?|directions|rules|guidelines)",
        &["ignore", "disregard", "forget", "override"],
    ),
    (
        Family::Injection,
        "important_block",
        r"(?i)<\s*/?\s*(?:important|system|instructions?|admin)\s*>",
        &["important", "system", "instruction", "admin"],
    ),
    (
        Family::Injection,
        "secrecy_request",
        r"(?i)(?-u:\b)(?:do\s+not|don't|never)\s+(?:tell|inform|mention|reveal|show)\s+(?:this\s+|it\s+)?(?:to\s+)?the\s+user",
        &["user"],
    ),
    (
        Family::Injection,
        "role_takeover",
        r"(?i)(?-u:\b)(?:you\s+are\s+now\s+(?:in\s+)?(?:developer|dan|admin|god)\s+mode|new\s+system\s+prompt\s*:)",
        &["mode", "system"],
    ),
    (
        Family::Injection,
        "credential_request",
        r"(?i)(?-u:\b)(?:read|cat|send|upload|include|pass)\s+(?:the\s+)?(?:contents?\s+of\s+)?~/\.(?:ssh|aws|config/gcloud|kube|netrc|npmrc|env)(?-u:\b)",
        &["~/."],
    ),
];

/// The detectors, compiled once, with the actions a policy gave them.
pub struct Detectors {
    set: RegexSet,
    anchors: AhoCorasick,
    patterns: Vec<Pattern>,
    secrets: Actions,
    injection: Actions,
}

impl std::fmt::Debug for Detectors {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Detectors")
            .field("secrets", &self.secrets)
            .field("injection", &self.injection)
            .finish_non_exhaustive()
    }
}

impl Detectors {
    /// Compiles the patterns. Fails only if a built-in pattern does not
    /// compile, which the tests rule out.
    pub fn new(secrets: Actions, injection: Actions) -> Result<Self, regex::Error> {
        let set = RegexSet::new(PATTERNS.iter().map(|(_, _, expression, _)| *expression))?;
        let anchors = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(
                PATTERNS
                    .iter()
                    .flat_map(|(_, _, _, anchors)| anchors.iter()),
            )
            .map_err(|error| regex::Error::Syntax(error.to_string()))?;
        let mut patterns = Vec::with_capacity(PATTERNS.len());
        for (family, kind, expression, _) in PATTERNS {
            patterns.push(Pattern {
                family: *family,
                kind,
                regex: Regex::new(expression)?,
            });
        }
        Ok(Self {
            set,
            anchors,
            patterns,
            secrets,
            injection,
        })
    }

    /// The actions of the secret and injection detectors, in that order.
    pub fn actions(&self) -> (Actions, Actions) {
        (self.secrets, self.injection)
    }

    fn action(&self, family: Family, place: Place) -> Option<Action> {
        match family {
            Family::Secret => self.secrets.at(place),
            Family::Injection => self.injection.at(place),
        }
    }

    /// Whether any detector reads what is found in `place`.
    pub fn reads(&self, place: Place) -> bool {
        self.secrets.at(place).is_some() || self.injection.at(place).is_some()
    }

    /// Inspects every string of `value` (found in `place`), redacting in
    /// place what a redacting detector matched. When the result is
    /// blocked, `value` is not to be passed on, redacted or not.
    pub fn inspect(&self, place: Place, value: &mut Value) -> Inspection {
        let mut inspection = Inspection::default();
        if !self.reads(place) {
            return inspection;
        }
        walk::strings_mut(value, |path, text| {
            self.inspect_text(place, text, &mut |kind, family, action| {
                inspection.findings.push(Finding {
                    family,
                    kind,
                    pointer: path.pointer(),
                    action,
                });
            });
        });
        inspection
    }

    /// Inspects one string, redacting in place; `found` hears each
    /// detector that fired.
    fn inspect_text(
        &self,
        place: Place,
        text: &mut String,
        found: &mut dyn FnMut(&'static str, Family, Action),
    ) {
        if let Some(action) = self.action(Family::Injection, place)
            && !text.is_ascii()
            && text.chars().any(hidden)
        {
            found("hidden_unicode", Family::Injection, action);
            if action == Action::Redact {
                text.retain(|c| !hidden(c));
            }
        }
        if !self.anchors.is_match(text.as_str()) {
            return;
        }
        let fired = self.set.matches(text);
        if !fired.matched_any() {
            return;
        }
        for index in fired.iter() {
            let Some(pattern) = self.patterns.get(index) else {
                continue;
            };
            let Some(action) = self.action(pattern.family, place) else {
                continue;
            };
            found(pattern.kind, pattern.family, action);
            if action == Action::Redact {
                *text = redact(&pattern.regex, text);
            }
        }
    }
}

/// `text` with every match of `regex` (or of its group `s`) replaced.
fn redact(regex: &Regex, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for captures in regex.captures_iter(text) {
        let Some(whole) = captures.get(0) else {
            continue;
        };
        let target = captures.name("s").unwrap_or(whole);
        out.push_str(&text[last..target.start()]);
        out.push_str(REDACTED);
        last = target.end();
    }
    out.push_str(&text[last..]);
    out
}

/// Characters that change how text reads without being seen: the tags
/// block (ASCII smuggled as invisible tags), zero-width spaces and word
/// joiners, bidirectional embeddings, overrides and isolates (Trojan
/// Source), the byte-order mark inside text, the Mongolian vowel separator
/// and the invisible operators. The zero-width joiner and non-joiner alone
/// are left: emoji sequences and Persian script use them.
fn hidden(c: char) -> bool {
    matches!(
        c,
        '\u{E0000}'..='\u{E007F}'
            | '\u{200B}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
            | '\u{180E}'
    )
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly on a missing value")]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        let detectors = Detectors::new(Actions::SECRETS, Actions::INJECTION).unwrap();
        assert_eq!(detectors.patterns.len(), PATTERNS.len());
    }

    #[test]
    fn redaction_keeps_what_is_not_secret() {
        let (_, _, expression, _) = PATTERNS
            .iter()
            .find(|(_, kind, _, _)| *kind == "url_password")
            .unwrap();
        let regex = Regex::new(expression).unwrap();
        assert_eq!(
            redact(&regex, "see postgres://admin:hunter2@db.internal/app"),
            "see postgres://admin:[redacted]@db.internal/app"
        );
    }
}
