//! The approval policy: whether a tool call runs, is asked about, or is
//! refused, and why. Annotations come from servers that may be hostile, so
//! they only ever loosen the default for a read-only tool of a server the
//! user configured himself; everything else is decided by rules the user
//! wrote or answered.
//!
//! A [`Rule`] is a [`Pattern`] over `server__tool` (the server's and the
//! tool's own names joined by [`SEPARATOR`], before any renaming for a
//! provider), an [`ApprovalAction`] and where it came from ([`RuleSource`]).
//! Patterns are literal text where `*` stands for any run of characters
//! (`files__*`, `*__delete_*`); `\*` is a literal star and `\\` a literal
//! backslash. A matcher of our own rather than `globset`: one wildcard is
//! all the names need, and the winning rule is chosen by the pattern's
//! shape ([`Pattern::specificity`]), which a compiled regex hides.
//!
//! [`Policy::decide`], in order:
//! 1. Any matching `deny` rule refuses the call, whatever else matches.
//! 2. Among the matching `allow` and `ask` rules the most specific wins:
//!    a pattern with no `*` beats any with one; then more literal
//!    characters win; then fewer `*`s. At equal specificity `ask` wins over
//!    `allow`. An `allow` rule of a project's configuration file (one found
//!    in the working directory, [`RuleSource::ProjectConfig`]) is ignored:
//!    a cloned repository may tighten the policy, never loosen it.
//! 3. A tool annotated `destructiveHint: true` is asked about even when an
//!    `allow` rule wins, unless that rule names the exact tool (no `*`).
//! 4. With no rule: a tool annotated `readOnlyHint: true` (and not
//!    `destructiveHint: true`) of a server of [`Origin::User`] runs; every
//!    other call is asked about. A missing `destructiveHint` is not taken
//!    as destructive (the protocol's default): such a tool asks anyway
//!    unless the user allowed it, and "always for this server" is meant to
//!    cover it.
//! 5. `--yes` ([`Call::yes`]) turns an ask into an allow, never a deny. It
//!    approves calls only: a new or changed tool definition is the pins'
//!    gate ([`crate::pins`]), which `--yes` never opens.
//!
//! Answers to an ask ([`Answer`]) may be remembered ([`Approvals::remember`]):
//! for the session (in memory), for the project or always (an
//! [`ApprovalStore`] file in the user's configuration directory, the
//! project keyed by its directory).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use nexo_client::config::ApprovalAction;
use nexo_client::namespace::{self, SEPARATOR};
use rmcp::model::ToolAnnotations;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::{Approver, Pending};
use crate::error::{ApprovalError, StoreError};
use crate::store;

/// Where a rule came from, shown with every decision it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleSource {
    /// A configuration file the user chose or wrote (`--config`, his own
    /// `config.json`).
    Config,
    /// A project's configuration file (`./.mcp.json`): its `allow` rules
    /// are ignored.
    ProjectConfig,
    /// An answer remembered for this session.
    Session,
    /// An answer remembered for this project.
    Project,
    /// An answer remembered always.
    Always,
}

impl fmt::Display for RuleSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Config => "configuration",
            Self::ProjectConfig => "project configuration",
            Self::Session => "remembered for this session",
            Self::Project => "remembered for this project",
            Self::Always => "remembered always",
        })
    }
}

/// A glob over `server__tool`: `*` is any run of characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Pattern {
    text: String,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Literal(char),
    Star,
}

/// How specific a pattern is; greater is more specific.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Specificity {
    exact: bool,
    literals: usize,
    fewer_stars: std::cmp::Reverse<usize>,
}

impl Pattern {
    /// Reads a pattern; an empty one or a trailing lone `\` is refused.
    pub fn new(text: &str) -> Result<Self, ApprovalError> {
        let invalid = |reason: &str| ApprovalError::Pattern {
            pattern: text.to_owned(),
            reason: reason.to_owned(),
        };
        if text.is_empty() {
            return Err(invalid("it is empty"));
        }
        let mut tokens = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                '*' => Token::Star,
                '\\' => match chars.next() {
                    Some(escaped @ ('*' | '\\')) => Token::Literal(escaped),
                    _ => return Err(invalid("`\\` must be followed by `*` or `\\`")),
                },
                c => Token::Literal(c),
            });
        }
        Ok(Self {
            text: text.to_owned(),
            tokens,
        })
    }

    /// The pattern naming exactly `tool` of `server`.
    pub fn exact(server: &str, tool: &str) -> Self {
        Self::literal_then(&namespace::join(server, tool), false)
    }

    /// The pattern naming every tool of `server`: `server__*`.
    pub fn server(server: &str) -> Self {
        Self::literal_then(&format!("{server}{SEPARATOR}"), true)
    }

    fn literal_then(literal: &str, star: bool) -> Self {
        let mut text = literal.replace('\\', "\\\\").replace('*', "\\*");
        let mut tokens: Vec<Token> = literal.chars().map(Token::Literal).collect();
        if star {
            text.push('*');
            tokens.push(Token::Star);
        }
        Self { text, tokens }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern has no `*`: it names one tool.
    pub fn is_exact(&self) -> bool {
        !self.tokens.contains(&Token::Star)
    }

    /// Exact before wildcard, then more literal characters, then fewer `*`s.
    pub fn specificity(&self) -> Specificity {
        let stars = self.tokens.iter().filter(|t| **t == Token::Star).count();
        Specificity {
            exact: stars == 0,
            literals: self.tokens.len() - stars,
            fewer_stars: std::cmp::Reverse(stars),
        }
    }

    /// Whether `name` matches the whole pattern. Linear backtracking over
    /// the last `*` only: at most `pattern × name` steps.
    pub fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        let tokens = &self.tokens;
        let (mut p, mut n) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while n < name.len() {
            match tokens.get(p) {
                Some(Token::Literal(c)) if *c == name[n] => {
                    p += 1;
                    n += 1;
                }
                Some(Token::Star) => {
                    star = Some((p, n));
                    p += 1;
                }
                _ => match star {
                    Some((star_p, star_n)) => {
                        p = star_p + 1;
                        n = star_n + 1;
                        star = Some((star_p, star_n + 1));
                    }
                    None => return false,
                },
            }
        }
        tokens[p.min(tokens.len())..]
            .iter()
            .all(|token| *token == Token::Star)
    }
}

impl TryFrom<String> for Pattern {
    type Error = ApprovalError;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::new(&text)
    }
}

impl From<Pattern> for String {
    fn from(pattern: Pattern) -> Self {
        pattern.text
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// One rule of the policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub pattern: Pattern,
    pub action: ApprovalAction,
    pub source: RuleSource,
}

/// Who configured the server a tool comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The user: `--config`, his own `config.json`, the embedded default.
    User,
    /// A project's `.mcp.json`, found in the working directory.
    Project,
}

/// A call to decide about.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub server: &'a str,
    /// The tool's own name on its server.
    pub tool: &'a str,
    pub annotations: Option<&'a ToolAnnotations>,
    pub origin: Origin,
    /// `--yes`: approve what would be asked.
    pub yes: bool,
}

impl Call<'_> {
    /// Only a tool that says so: the specification's default (`true` when
    /// not read-only) would make every unannotated tool escape "always for
    /// this server", and such a tool asks anyway unless a rule allows it.
    fn destructive(&self) -> bool {
        self.annotations
            .is_some_and(|annotations| annotations.destructive_hint == Some(true))
    }

    fn read_only(&self) -> bool {
        !self.destructive()
            && self
                .annotations
                .is_some_and(|annotations| annotations.read_only_hint == Some(true))
    }
}

/// What the user may answer when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// This call only.
    Yes,
    /// Not this call.
    No,
    /// This tool, from now on (an exact `allow` rule).
    AlwaysTool,
    /// Every tool of this server, from now on (`server__*`). Not offered
    /// for a destructive tool, which such a rule would not cover.
    AlwaysServer,
}

/// How long a remembered answer holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Session,
    Project,
    Always,
}

/// The outcome for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Ask the user, offering these answers.
    Ask(Vec<Answer>),
    Deny,
}

/// Why a call got its verdict, for display and the chat log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// A rule decided.
    Rule {
        pattern: String,
        action: ApprovalAction,
        source: RuleSource,
    },
    /// An `allow` rule matched a destructive tool without naming it.
    Destructive { pattern: String, source: RuleSource },
    /// No rule: annotated read-only, on a server the user configured.
    ReadOnly,
    /// No rule, and nothing that allows the call without asking.
    Default { destructive: bool, origin: Origin },
    /// `--yes` approved what would have been asked.
    Yes(Box<Reason>),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rule {
                pattern,
                action,
                source,
            } => {
                write!(f, "rule `{pattern}` ({action}, {source})")
            }
            Self::Destructive { pattern, source } => write!(
                f,
                "the tool says it is destructive, and the rule `{pattern}` ({source}) does not \
                 name it exactly"
            ),
            Self::ReadOnly => {
                f.write_str("the tool says it only reads, on a server you configured")
            }
            Self::Default {
                destructive: true, ..
            } => f.write_str("the tool says it is destructive"),
            Self::Default {
                origin: Origin::Project,
                ..
            } => f.write_str("a tool of a project's server, and no rule allows it"),
            Self::Default { .. } => f.write_str("no rule allows it"),
            Self::Yes(asked) => write!(f, "--yes (else asked: {asked})"),
        }
    }
}

/// A verdict and its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verdict: Verdict,
    pub reason: Reason,
}

/// The rules in force: the configuration's, the remembered ones, and the
/// session's.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: Vec<Rule>,
}

impl Policy {
    pub fn new(rules: Vec<Rule>) -> Self {
        Self { rules }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn add(&mut self, rule: Rule) {
        self.rules.push(rule);
    }

    /// Decides about `call` (the rules in the module comment).
    pub fn decide(&self, call: &Call<'_>) -> Decision {
        let name = namespace::join(call.server, call.tool);
        let matching = self.rules.iter().filter(|rule| {
            !(rule.source == RuleSource::ProjectConfig && rule.action == ApprovalAction::Allow)
                && rule.pattern.matches(&name)
        });
        let (denies, others): (Vec<&Rule>, Vec<&Rule>) =
            matching.partition(|rule| rule.action == ApprovalAction::Deny);
        let by_rule = |rule: &Rule| Reason::Rule {
            pattern: rule.pattern.to_string(),
            action: rule.action,
            source: rule.source,
        };
        if let Some(deny) = denies.iter().max_by_key(|rule| rule.pattern.specificity()) {
            return Decision {
                verdict: Verdict::Deny,
                reason: by_rule(deny),
            };
        }
        let best = others.into_iter().max_by(|a, b| {
            a.pattern
                .specificity()
                .cmp(&b.pattern.specificity())
                .then_with(|| match (a.action, b.action) {
                    (ApprovalAction::Ask, ApprovalAction::Allow) => Ordering::Greater,
                    (ApprovalAction::Allow, ApprovalAction::Ask) => Ordering::Less,
                    _ => Ordering::Equal,
                })
        });
        let destructive = call.destructive();
        let (allow, reason) = match best {
            Some(rule) if rule.action == ApprovalAction::Allow => {
                if destructive && !rule.pattern.is_exact() {
                    (
                        false,
                        Reason::Destructive {
                            pattern: rule.pattern.to_string(),
                            source: rule.source,
                        },
                    )
                } else {
                    (true, by_rule(rule))
                }
            }
            Some(rule) => (false, by_rule(rule)),
            None if call.read_only() && call.origin == Origin::User => (true, Reason::ReadOnly),
            None => (
                false,
                Reason::Default {
                    destructive,
                    origin: call.origin,
                },
            ),
        };
        match (allow, call.yes) {
            (true, _) => Decision {
                verdict: Verdict::Allow,
                reason,
            },
            (false, true) => Decision {
                verdict: Verdict::Allow,
                reason: Reason::Yes(Box::new(reason)),
            },
            (false, false) => {
                let mut answers = vec![Answer::Yes, Answer::No, Answer::AlwaysTool];
                if !destructive {
                    answers.push(Answer::AlwaysServer);
                }
                Decision {
                    verdict: Verdict::Ask(answers),
                    reason,
                }
            }
        }
    }

    /// Remembers `answer` to a question about `call` for `scope`: a
    /// session's in this policy only, a project's or an always one also in
    /// `store` (saved at once); with no store, for the session whatever
    /// `scope` says. `Yes` and `No` are for one call: nothing is
    /// remembered. Returns the rule added.
    pub fn remember(
        &mut self,
        call: &Call<'_>,
        answer: Answer,
        scope: Scope,
        store: Option<&mut ApprovalStore>,
        project: &Path,
    ) -> Result<Option<Rule>, ApprovalError> {
        let scope = if store.is_some() {
            scope
        } else {
            Scope::Session
        };
        let pattern = match answer {
            Answer::Yes | Answer::No => return Ok(None),
            Answer::AlwaysTool => Pattern::exact(call.server, call.tool),
            Answer::AlwaysServer => Pattern::server(call.server),
        };
        let source = match scope {
            Scope::Session => RuleSource::Session,
            Scope::Project => RuleSource::Project,
            Scope::Always => RuleSource::Always,
        };
        let rule = Rule {
            pattern,
            action: ApprovalAction::Allow,
            source,
        };
        if let Some(store) = store
            && scope != Scope::Session
        {
            store.remember(&rule, project)?;
        }
        self.add(rule.clone());
        Ok(Some(rule))
    }
}

/// A call the policy did not let run: what the asker (the model, an app)
/// is told instead, and which kind of refusal it was, so that the person
/// can be told what would let it run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub refused: Refused,
    pub reason: String,
}

/// Why a call did not run, and so what would let it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Refused {
    /// A `deny` rule decided: only changing that rule lets it run; `--yes`
    /// never overrides it.
    ByRule,
    /// The policy asks and the answer was no, or nobody could be asked
    /// (`nexo chat -p`): answering yes, `--yes`, or an `allow` rule that
    /// names the tool lets it run.
    NotApproved,
}

/// The one way a tool call that the person did not make with their own
/// hands reaches its server: asked for by the model (the chat) or by an
/// MCP App on the web page. The policy's rules and remembered answers,
/// where each server's configuration came from (a project file's servers
/// are trusted less), and `--yes`.
#[derive(Debug)]
pub struct ApprovalGate {
    approvals: Mutex<Approvals>,
    origins: HashMap<String, Origin>,
    /// `--yes`: questions are answered yes (never a deny).
    yes: bool,
}

impl ApprovalGate {
    pub fn new(approvals: Approvals, origins: HashMap<String, Origin>, yes: bool) -> Self {
        Self {
            approvals: Mutex::new(approvals),
            origins,
            yes,
        }
    }

    /// The policy's decision on one call of `server`'s `tool` (its
    /// `annotations` as listed), `approver` asked when the policy says so:
    /// `Ok` with why it may run, or `Err` with what the asker is told
    /// instead and what would have let it run. `asked_by` names who asks
    /// when it is not the model.
    pub async fn decide(
        &self,
        server: &str,
        tool: &str,
        annotations: Option<&ToolAnnotations>,
        arguments: &Value,
        asked_by: Option<&str>,
        approver: &dyn Approver,
    ) -> Result<String, Refusal> {
        let request = Call {
            server,
            tool,
            annotations,
            origin: self.origins.get(server).copied().unwrap_or(Origin::Project),
            yes: self.yes,
        };
        let Decision { verdict, reason } = self.approvals().decide(&request);
        let reason = reason.to_string();
        match verdict {
            Verdict::Allow => Ok(reason),
            Verdict::Deny => Err(Refusal {
                refused: Refused::ByRule,
                reason: format!("the user's policy does not allow this call ({reason})"),
            }),
            Verdict::Ask(answers) => {
                let pending = Pending {
                    server: server.to_owned(),
                    tool: tool.to_owned(),
                    arguments: arguments.clone(),
                    asked_by: asked_by.map(str::to_owned),
                    reason: reason.clone(),
                    answers,
                    scopes: self.approvals().scopes(),
                };
                let reply = approver.ask(&pending).await;
                match reply.answer {
                    Answer::No => Err(Refusal {
                        refused: Refused::NotApproved,
                        reason: format!(
                            "the user did not approve this call ({reason}); do not try it \
                             again without asking the user"
                        ),
                    }),
                    Answer::Yes => Ok(format!("approved by the user ({reason})")),
                    Answer::AlwaysTool | Answer::AlwaysServer => {
                        let remembered =
                            self.approvals()
                                .remember(&request, reply.answer, reply.scope);
                        Ok(match remembered {
                            Ok(Some(rule)) => format!(
                                "approved by the user, who added the rule `{}` ({})",
                                rule.pattern, rule.source
                            ),
                            Ok(None) => format!("approved by the user ({reason})"),
                            Err(error) => format!(
                                "approved by the user for this call; the answer could not be \
                                 remembered: {error}"
                            ),
                        })
                    }
                }
            }
        }
    }

    /// The approvals, whatever a panicking holder left: the rules are
    /// only ever added to.
    fn approvals(&self) -> std::sync::MutexGuard<'_, Approvals> {
        self.approvals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One chat's policy and where the answers it remembers beyond the session
/// are kept.
#[derive(Debug)]
pub struct Approvals {
    policy: Policy,
    store: Option<ApprovalStore>,
    project: PathBuf,
}

impl Approvals {
    /// The configuration's `rules` and those `store` remembers always and
    /// for `project` (the working directory). Without a store, answers are
    /// remembered for the session only.
    pub fn new(mut rules: Vec<Rule>, store: Option<ApprovalStore>, project: PathBuf) -> Self {
        if let Some(store) = &store {
            rules.extend(store.rules(&project));
        }
        Self {
            policy: Policy::new(rules),
            store,
            project,
        }
    }

    pub fn decide(&self, call: &Call<'_>) -> Decision {
        self.policy.decide(call)
    }

    /// How long an answer may be remembered here.
    pub fn scopes(&self) -> Vec<Scope> {
        match self.store {
            Some(_) => vec![Scope::Session, Scope::Project, Scope::Always],
            None => vec![Scope::Session],
        }
    }

    /// [`Policy::remember`], with this chat's store and project.
    pub fn remember(
        &mut self,
        call: &Call<'_>,
        answer: Answer,
        scope: Scope,
    ) -> Result<Option<Rule>, ApprovalError> {
        self.policy
            .remember(call, answer, scope, self.store.as_mut(), &self.project)
    }
}

/// What the approvals file says.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Remembered {
    version: u32,
    /// Rules remembered always.
    always: Vec<StoredRule>,
    /// Project directory → rules remembered for it.
    projects: BTreeMap<String, Vec<StoredRule>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredRule {
    pattern: Pattern,
    action: ApprovalAction,
}

/// The version of the approvals file's format.
const VERSION: u32 = 1;
const KIND: &str = "approvals";

/// Answers remembered for a project or always, in a JSON file at a path the
/// caller gives (the user's configuration directory).
#[derive(Debug, Clone)]
pub struct ApprovalStore {
    path: PathBuf,
    remembered: Remembered,
}

impl ApprovalStore {
    /// The store at `path`; no file there is a store with nothing in it.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self, ApprovalError> {
        let path = path.into();
        let remembered = load(&path)?;
        Ok(Self { path, remembered })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rules remembered always and for `project`.
    pub fn rules(&self, project: &Path) -> Vec<Rule> {
        let always = self
            .remembered
            .always
            .iter()
            .map(|rule| (rule, RuleSource::Always));
        let project = self
            .remembered
            .projects
            .get(&key(project))
            .into_iter()
            .flatten()
            .map(|rule| (rule, RuleSource::Project));
        always
            .chain(project)
            .map(|(rule, source)| Rule {
                pattern: rule.pattern.clone(),
                action: rule.action,
                source,
            })
            .collect()
    }

    /// Adds `rule` (remembered for the project or always) and saves, over
    /// the file as it is now: another nexo may have written it since.
    fn remember(&mut self, rule: &Rule, project: &Path) -> Result<(), ApprovalError> {
        let mut remembered = load(&self.path)?;
        let stored = StoredRule {
            pattern: rule.pattern.clone(),
            action: rule.action,
        };
        let list = match rule.source {
            RuleSource::Project => remembered.projects.entry(key(project)).or_default(),
            _ => &mut remembered.always,
        };
        if !list.contains(&stored) {
            list.push(stored);
        }
        remembered.version = VERSION;
        store::write(KIND, &self.path, &remembered)?;
        self.remembered = remembered;
        Ok(())
    }
}

fn key(project: &Path) -> String {
    project.to_string_lossy().into_owned()
}

fn load(path: &Path) -> Result<Remembered, ApprovalError> {
    match store::read::<Remembered>(KIND, path)? {
        None => Ok(Remembered {
            version: VERSION,
            ..Remembered::default()
        }),
        Some(remembered) if remembered.version == VERSION => Ok(remembered),
        Some(remembered) => {
            Err(StoreError::version(KIND, path, remembered.version, VERSION).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use nexo_hint::Hinted;

    use super::*;

    type Result = std::result::Result<(), Box<dyn std::error::Error>>;

    fn rule(pattern: &str, action: ApprovalAction) -> Rule {
        Rule {
            pattern: Pattern::new(pattern).unwrap_or_else(|_| Pattern::exact("bad", "bad")),
            action,
            source: RuleSource::Config,
        }
    }

    fn call<'a>(
        server: &'a str,
        tool: &'a str,
        annotations: Option<&'a ToolAnnotations>,
    ) -> Call<'a> {
        Call {
            server,
            tool,
            annotations,
            origin: Origin::User,
            yes: false,
        }
    }

    fn read_only() -> ToolAnnotations {
        ToolAnnotations::new().read_only(true)
    }

    fn destructive() -> ToolAnnotations {
        ToolAnnotations::new().destructive(true)
    }

    #[test]
    fn patterns_match_whole_names() -> Result {
        let cases = [
            ("files__*", "files__read", true),
            ("files__*", "files__", true),
            ("files__*", "xfiles__read", false),
            ("*__delete_*", "db__delete_row", true),
            ("*__delete_*", "db__undelete_row", false),
            ("*", "anything", true),
            ("a*b*c", "aXbYbZc", true),
            ("a*b*c", "aXbYbZ", false),
            ("exact__tool", "exact__tool", true),
            ("exact__tool", "exact__tools", false),
            ("s__\\*", "s__*", true),
            ("s__\\*", "s__x", false),
            ("**", "", true),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(
                Pattern::new(pattern)?.matches(name),
                expected,
                "{pattern} {name}"
            );
        }
        // No blow-up on a hostile name and pattern.
        let long = "a".repeat(5_000);
        assert!(!Pattern::new(&"*a".repeat(50).replace("aa", "a"))?.matches(&format!("{long}b")));
        assert!(Pattern::new("").is_err());
        assert!(Pattern::new("x\\").is_err());
        assert!(Pattern::new("x\\y").is_err());
        Ok(())
    }

    #[test]
    fn exact_and_server_patterns_escape_stars() {
        let exact = Pattern::exact("evil", "x*");
        assert!(exact.is_exact());
        assert!(exact.matches("evil__x*"));
        assert!(!exact.matches("evil__xy"));
        assert_eq!(exact.as_str(), "evil__x\\*");
        let server = Pattern::server("s*");
        assert!(server.matches("s*__t"));
        assert!(!server.matches("sx__t"));
    }

    #[test]
    fn specificity_is_exact_then_literals_then_fewer_stars() -> Result {
        let s = |p: &str| Pattern::new(p).map(|p| p.specificity());
        assert!(s("a__b")? > s("a__b*")?);
        assert!(s("a__bc")? > s("*a__bcdefgh*")?);
        assert!(s("files__read_*")? > s("files__*")?);
        assert!(s("files__*")? > s("*__*")?);
        assert!(s("files__*")? > s("fil*es__*")?);
        assert!(s("files_*")? > s("fi*l*es")?);
        Ok(())
    }

    #[test]
    fn read_only_tools_of_the_users_servers_run_and_the_rest_asks() {
        let policy = Policy::default();
        let ro = read_only();
        let decision = policy.decide(&call("files", "read", Some(&ro)));
        assert_eq!(decision.verdict, Verdict::Allow);
        assert_eq!(decision.reason, Reason::ReadOnly);

        let project = Call {
            origin: Origin::Project,
            ..call("files", "read", Some(&ro))
        };
        assert!(matches!(policy.decide(&project).verdict, Verdict::Ask(_)));
        let plain = policy.decide(&call("files", "write", None));
        assert_eq!(
            plain.verdict,
            Verdict::Ask(vec![
                Answer::Yes,
                Answer::No,
                Answer::AlwaysTool,
                Answer::AlwaysServer
            ])
        );
        // A server claiming both is taken as destructive.
        let both = ToolAnnotations::new().read_only(true).destructive(true);
        let decision = policy.decide(&call("files", "read", Some(&both)));
        assert_eq!(
            decision.verdict,
            Verdict::Ask(vec![Answer::Yes, Answer::No, Answer::AlwaysTool])
        );
    }

    #[test]
    fn deny_wins_over_any_allow() {
        let policy = Policy::new(vec![
            rule("files__read", ApprovalAction::Allow),
            rule("*", ApprovalAction::Deny),
        ]);
        let ro = read_only();
        let decision = policy.decide(&Call {
            yes: true,
            ..call("files", "read", Some(&ro))
        });
        assert_eq!(decision.verdict, Verdict::Deny);
        assert_eq!(
            decision.reason.to_string(),
            "rule `*` (deny, configuration)"
        );
    }

    #[test]
    fn the_most_specific_rule_wins_and_ask_breaks_ties() {
        let policy = Policy::new(vec![
            rule("files__*", ApprovalAction::Allow),
            rule("files__write_*", ApprovalAction::Ask),
            rule("files__write_log", ApprovalAction::Allow),
            rule("db__*", ApprovalAction::Allow),
            rule("db__*", ApprovalAction::Ask),
        ]);
        let verdict = |tool: &str, server: &str| policy.decide(&call(server, tool, None)).verdict;
        assert_eq!(verdict("read", "files"), Verdict::Allow);
        assert!(matches!(verdict("write_file", "files"), Verdict::Ask(_)));
        assert_eq!(verdict("write_log", "files"), Verdict::Allow);
        assert!(matches!(verdict("query", "db"), Verdict::Ask(_)));
        // A rule asking about read-only tools overrides the annotation.
        let policy = Policy::new(vec![rule("files__*", ApprovalAction::Ask)]);
        let ro = read_only();
        assert!(matches!(
            policy.decide(&call("files", "read", Some(&ro))).verdict,
            Verdict::Ask(_)
        ));
    }

    #[test]
    fn destructive_tools_ask_unless_a_rule_names_them() {
        let d = destructive();
        let broad = Policy::new(vec![rule("files__*", ApprovalAction::Allow)]);
        let decision = broad.decide(&call("files", "delete", Some(&d)));
        assert_eq!(
            decision.verdict,
            Verdict::Ask(vec![Answer::Yes, Answer::No, Answer::AlwaysTool])
        );
        assert!(matches!(decision.reason, Reason::Destructive { .. }));
        let exact = Policy::new(vec![
            rule("files__*", ApprovalAction::Allow),
            rule("files__delete", ApprovalAction::Allow),
        ]);
        assert_eq!(
            exact.decide(&call("files", "delete", Some(&d))).verdict,
            Verdict::Allow
        );
    }

    #[test]
    fn yes_allows_what_would_be_asked_never_what_is_denied() {
        let policy = Policy::new(vec![rule("db__drop", ApprovalAction::Deny)]);
        let d = destructive();
        let yes = |tool| Call {
            yes: true,
            ..call("db", tool, Some(&d))
        };
        let decision = policy.decide(&yes("delete"));
        assert_eq!(decision.verdict, Verdict::Allow);
        assert_eq!(
            decision.reason.to_string(),
            "--yes (else asked: the tool says it is destructive)"
        );
        assert_eq!(policy.decide(&yes("drop")).verdict, Verdict::Deny);
    }

    #[test]
    fn a_projects_file_cannot_allow() {
        let policy = Policy::new(vec![
            Rule {
                source: RuleSource::ProjectConfig,
                ..rule("*", ApprovalAction::Allow)
            },
            Rule {
                source: RuleSource::ProjectConfig,
                ..rule("files__rm", ApprovalAction::Deny)
            },
        ]);
        assert!(matches!(
            policy.decide(&call("files", "write", None)).verdict,
            Verdict::Ask(_)
        ));
        assert_eq!(
            policy.decide(&call("files", "rm", None)).verdict,
            Verdict::Deny
        );
    }

    #[test]
    fn answers_are_remembered_per_scope() -> Result {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("config/approvals.json");
        let (here, there) = (dir.path().join("here"), dir.path().join("there"));
        let mut store = ApprovalStore::open(&path)?;
        let mut policy = Policy::default();
        let write = call("files", "write", None);
        assert_eq!(
            policy.remember(&write, Answer::Yes, Scope::Always, Some(&mut store), &here)?,
            None
        );
        policy.remember(
            &write,
            Answer::AlwaysTool,
            Scope::Session,
            Some(&mut store),
            &here,
        )?;
        assert_eq!(policy.decide(&write).verdict, Verdict::Allow);
        assert!(!path.exists());

        let db = call("db", "query", None);
        policy.remember(
            &db,
            Answer::AlwaysServer,
            Scope::Project,
            Some(&mut store),
            &here,
        )?;
        let notes = call("notes", "add", None);
        policy.remember(
            &notes,
            Answer::AlwaysTool,
            Scope::Always,
            Some(&mut store),
            &here,
        )?;

        let reopened = ApprovalStore::open(&path)?;
        let in_here = Policy::new(reopened.rules(&here));
        let in_there = Policy::new(reopened.rules(&there));
        assert_eq!(
            in_here.decide(&call("db", "other", None)).verdict,
            Verdict::Allow
        );
        assert!(matches!(
            in_there.decide(&call("db", "other", None)).verdict,
            Verdict::Ask(_)
        ));
        assert_eq!(in_there.decide(&notes).verdict, Verdict::Allow);
        assert!(matches!(in_here.decide(&write).verdict, Verdict::Ask(_)));
        let reason = in_here.decide(&call("db", "x", None)).reason.to_string();
        assert_eq!(reason, "rule `db__*` (allow, remembered for this project)");
        Ok(())
    }

    #[test]
    fn a_chats_approvals_join_the_configuration_and_the_store() -> Result {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("approvals.json");
        let here = dir.path().join("here");
        let notes = call("notes", "add", None);
        let mut first = Approvals::new(
            vec![rule("db__*", ApprovalAction::Deny)],
            Some(ApprovalStore::open(&path)?),
            here.clone(),
        );
        assert_eq!(
            first.scopes(),
            [Scope::Session, Scope::Project, Scope::Always]
        );
        first.remember(&notes, Answer::AlwaysTool, Scope::Project)?;
        assert_eq!(first.decide(&notes).verdict, Verdict::Allow);

        // The next chat in the same project finds the answer, beside the
        // configuration's rules.
        let next = Approvals::new(
            vec![rule("db__*", ApprovalAction::Deny)],
            Some(ApprovalStore::open(&path)?),
            here,
        );
        assert_eq!(next.decide(&notes).verdict, Verdict::Allow);
        assert_eq!(
            next.decide(&call("db", "drop", None)).verdict,
            Verdict::Deny
        );

        // Without a store an answer holds for the session, whatever was asked.
        let mut alone = Approvals::new(Vec::new(), None, dir.path().to_owned());
        assert_eq!(alone.scopes(), [Scope::Session]);
        let rule = alone.remember(&notes, Answer::AlwaysServer, Scope::Always)?;
        assert_eq!(rule.map(|rule| rule.source), Some(RuleSource::Session));
        assert_eq!(
            alone.decide(&call("notes", "other", None)).verdict,
            Verdict::Allow
        );
        Ok(())
    }

    #[test]
    fn two_stores_keep_each_others_answers() -> Result {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("approvals.json");
        let mut one = ApprovalStore::open(&path)?;
        let mut two = ApprovalStore::open(&path)?;
        let mut policy = Policy::default();
        let (a, b) = (call("a", "t", None), call("b", "t", None));
        policy.remember(
            &a,
            Answer::AlwaysTool,
            Scope::Always,
            Some(&mut one),
            dir.path(),
        )?;
        policy.remember(
            &b,
            Answer::AlwaysTool,
            Scope::Always,
            Some(&mut two),
            dir.path(),
        )?;
        assert_eq!(ApprovalStore::open(&path)?.rules(dir.path()).len(), 2);
        Ok(())
    }

    #[test]
    fn a_damaged_file_is_named_and_left_alone() -> Result {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("approvals.json");
        for text in [
            "{\"version\": 1, \"always\": [",
            "{\"version\": 1, \"always\": [{\"pattern\": \"\", \"action\": \"allow\"}], \"projects\": {}}",
            "{\"version\": 1, \"always\": [{\"pattern\": \"x\", \"action\": \"maybe\"}], \"projects\": {}}",
            "{\"version\": 7, \"always\": [], \"projects\": {}}",
        ] {
            std::fs::write(&path, text)?;
            match ApprovalStore::open(&path) {
                Err(error @ ApprovalError::Store(StoreError::Damaged { .. })) => {
                    assert!(error.to_string().contains("approvals.json"), "{error}");
                    let hint = error.hint().map(|hint| hint.terminal());
                    assert!(hint.is_some_and(|hint| hint.contains("repair")));
                }
                other => panic!("{text}: {other:?}"),
            }
            assert_eq!(std::fs::read_to_string(&path)?, text);
        }
        Ok(())
    }
}
