//! The policy: ordered rules over who asks (token subject, scopes, client
//! address), which server, method and tool, and what the arguments hold
//! (typed matchers at JSON pointers), deciding allow, deny or redact for
//! every request. Loaded from a TOML or YAML file into a compiled [`Policy`]
//! (patterns, expressions and directories checked and built once);
//! [`PolicyHandle`] swaps in a new one when the file changes.
//!
//! How a decision is made: the rules are read from the top; the first
//! `allow` or `deny` rule whose every condition holds decides, as in a
//! firewall. `redact` rules that hold before it redact and let reading go
//! on, so a redaction never hides a later `deny`, and the rules after it
//! are matched against the arguments as sent, not as redacted. When no
//! rule decides, the policy's `default` does (`deny` unless the file says
//! otherwise). First match rather than most restrictive: exceptions are
//! written above the rule they except ("allow admins to drop tables"
//! above "deny DDL"), which the most restrictive reading cannot express
//! without negations, and `check-policy` shows the one rule that decided.
//!
//! Knows nothing of HTTP or JSON-RPC: the gateway hands it a [`Request`].

pub mod address;
mod file;
pub mod path;
pub(crate) mod pointer;
mod reload;
pub mod resolve;
pub mod shell;
pub mod sql;
pub mod url;
mod yaml;

use std::net::IpAddr;
use std::path::Path;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ipnet::IpNet;
use regex::Regex;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use toml::Spanned;

pub use self::file::DefaultDecision;
pub use self::reload::{PolicyHandle, Reload};
pub use self::resolve::{Resolver, StaticResolver, SystemResolver};
pub use self::shell::ShellHazard;
pub use self::sql::SqlClass;

use self::file::{ArgumentFile, PolicyFile, RuleDecision, RuleFile};
use self::path::Dirs;
use self::pointer::Pointer;
use self::url::UrlRules;
use crate::detect::{Actions, Detectors};
use crate::error::PolicyError;

/// Who is asking, as authentication established it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Identity {
    /// The token's subject (`sub`), or the API key's name.
    pub subject: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The client's address as the gateway saw it.
    pub client: Option<IpAddr>,
}

/// One request, as the policy sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub identity: Identity,
    /// The upstream server's name.
    pub server: String,
    /// The JSON-RPC method: `tools/call`, `resources/read`, `prompts/get`...
    pub method: String,
    /// The tool's name for `tools/call` (the prompt's for `prompts/get`),
    /// without the server's prefix.
    pub tool: Option<String>,
    /// A tool call's `arguments`; for other methods, the `params`.
    pub arguments: Value,
}

/// What a policy decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    /// Allowed, with some argument values replaced (see
    /// [`Decision::arguments`]).
    Redact,
    Deny,
}

/// A decision and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// The rule that decided; `None` when the policy's default did.
    pub rule: Option<String>,
    /// A sentence for the person refused (the rule's reason and what the
    /// arguments showed).
    pub reason: String,
    /// What the matchers found, one line per argument value.
    pub evidence: Vec<String>,
    /// The redactions made, each as the rule and the argument's pointer.
    pub redactions: Vec<Redaction>,
    /// The arguments to pass on when something was redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redaction {
    pub rule: String,
    pub pointer: String,
}

/// How one rule fared against a request, for `check-policy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub rule: String,
    pub matched: bool,
    /// Why it matched (its evidence) or the first condition that failed.
    pub why: String,
}

/// A decision with the steps that led to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    pub decision: Decision,
    pub steps: Vec<Step>,
}

/// A compiled policy.
#[derive(Debug)]
pub struct Policy {
    default: DefaultDecision,
    rules: Vec<Rule>,
    detectors: Detectors,
    dialect: String,
    unparseable: SqlClass,
    digest: [u8; 32],
}

#[derive(Debug)]
struct Rule {
    name: String,
    decision: RuleDecision,
    reason: Option<String>,
    replacement: String,
    server: Option<Names>,
    method: Option<Names>,
    tool: Option<Names>,
    subject: Option<Names>,
    scopes: Vec<String>,
    lacks_scope: Vec<String>,
    client: Option<Vec<IpNet>>,
    arguments: Vec<Condition>,
}

/// Glob patterns and how they were written.
#[derive(Debug)]
struct Names {
    set: GlobSet,
    shown: String,
}

impl Names {
    fn matches(&self, name: &str) -> bool {
        self.set.is_match(name)
    }
}

#[derive(Debug)]
struct Condition {
    pointer: Pointer,
    matcher: Matcher,
}

#[derive(Debug)]
enum Matcher {
    Inside(Dirs),
    Outside(Dirs),
    Url(UrlRules),
    Sql(Vec<SqlClass>),
    Shell(Vec<ShellHazard>),
    Regex(Regex),
}

/// One argument value a condition held for.
struct Hit {
    pointer: String,
    detail: String,
}

impl Policy {
    /// Reads and compiles the policy file at `path`.
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(path, &text)
    }

    /// Compiles `text`, the contents of `path` (named in errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, PolicyError> {
        let source = file::Source::new(path, text)?;
        let parsed = source.parse()?;
        compile(&source, text, parsed)
    }

    /// SHA-256 of the file the policy was compiled from.
    pub fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// The rules' names, in order.
    pub fn rule_names(&self) -> Vec<&str> {
        self.rules.iter().map(|rule| rule.name.as_str()).collect()
    }

    pub fn default_decision(&self) -> DefaultDecision {
        self.default
    }

    /// The detectors with the actions this policy gives them.
    pub fn detectors(&self) -> &Detectors {
        &self.detectors
    }

    /// Decides `request`; host names in URLs are resolved with `resolver`.
    pub async fn evaluate(&self, request: &Request, resolver: &dyn Resolver) -> Decision {
        self.run(request, resolver, None).await
    }

    /// Decides `request` and says how each rule fared.
    pub async fn explain(&self, request: &Request, resolver: &dyn Resolver) -> Explanation {
        let mut steps = Vec::new();
        let decision = self.run(request, resolver, Some(&mut steps)).await;
        Explanation { decision, steps }
    }

    /// Whether `tool` of `server` is offered to `identity` in `tools/list`:
    /// hidden only when every call of it would be denied, whatever its
    /// arguments (the first rule that applies to the tool regardless of
    /// arguments denies it, and no rule above it could allow a call).
    pub fn tool_visible(&self, identity: &Identity, server: &str, tool: &str) -> bool {
        for rule in &self.rules {
            if rule
                .refusal(identity, server, "tools/call", Some(tool))
                .is_some()
            {
                continue;
            }
            match rule.decision {
                RuleDecision::Allow => return true,
                RuleDecision::Deny if rule.arguments.is_empty() => return false,
                RuleDecision::Deny | RuleDecision::Redact => {}
            }
        }
        self.default == DefaultDecision::Allow
    }

    async fn run(
        &self,
        request: &Request,
        resolver: &dyn Resolver,
        mut steps: Option<&mut Vec<Step>>,
    ) -> Decision {
        let mut redacted: Option<Value> = None;
        let mut redactions = Vec::new();
        for rule in &self.rules {
            let identity = &request.identity;
            if let Some(why) = rule.refusal(
                identity,
                &request.server,
                &request.method,
                request.tool.as_deref(),
            ) {
                record(&mut steps, rule, false, why);
                continue;
            }
            let hits = match self
                .match_arguments(rule, &request.arguments, resolver)
                .await
            {
                Ok(hits) => hits,
                Err(why) => {
                    record(&mut steps, rule, false, why);
                    continue;
                }
            };
            let evidence: Vec<String> = hits
                .iter()
                .map(|hit| format!("argument `{}`: {}", hit.pointer, hit.detail))
                .collect();
            let why = if evidence.is_empty() {
                "every condition holds".to_owned()
            } else {
                evidence.join("; ")
            };
            record(&mut steps, rule, true, why);
            let verdict = match rule.decision {
                RuleDecision::Allow => Verdict::Allow,
                RuleDecision::Deny => Verdict::Deny,
                RuleDecision::Redact => {
                    let arguments = redacted.get_or_insert_with(|| request.arguments.clone());
                    for hit in &hits {
                        redact_at(rule, arguments, &hit.pointer);
                        redactions.push(Redaction {
                            rule: rule.name.clone(),
                            pointer: hit.pointer.clone(),
                        });
                    }
                    continue;
                }
            };
            let stated = rule.reason.clone().unwrap_or_else(|| {
                format!("rule `{}` {} this request", rule.name, verb(verdict).1)
            });
            let reason = if evidence.is_empty() {
                stated
            } else {
                format!("{stated} ({})", evidence.join("; "))
            };
            return finish(
                verdict,
                Some(rule.name.clone()),
                reason,
                evidence,
                redactions,
                redacted,
            );
        }
        let verdict = match self.default {
            DefaultDecision::Allow => Verdict::Allow,
            DefaultDecision::Deny => Verdict::Deny,
        };
        let reason = format!(
            "no rule decided this request; the policy's default is to {}",
            verb(verdict).0
        );
        finish(verdict, None, reason, Vec::new(), redactions, redacted)
    }

    /// The argument values every condition of `rule` held for, or the
    /// first condition that held for none.
    async fn match_arguments(
        &self,
        rule: &Rule,
        arguments: &Value,
        resolver: &dyn Resolver,
    ) -> Result<Vec<Hit>, String> {
        let mut hits = Vec::new();
        for condition in &rule.arguments {
            let mut held = false;
            let mut misses = Vec::new();
            let values = condition.pointer.resolve(arguments);
            for (pointer, value) in values {
                let Value::String(text) = value else {
                    misses.push(format!("argument `{pointer}` is not a string"));
                    continue;
                };
                match self.test(&condition.matcher, text, resolver).await {
                    (true, detail) => {
                        held = true;
                        hits.push(Hit { pointer, detail });
                    }
                    (false, detail) => misses.push(format!("argument `{pointer}`: {detail}")),
                }
            }
            if !held {
                if misses.is_empty() {
                    return Err(format!("no argument at `{}`", condition.pointer.as_str()));
                }
                return Err(format!("{} (no match)", misses.join("; ")));
            }
        }
        Ok(hits)
    }

    /// Whether `matcher` holds for `text`, and what it saw.
    async fn test(&self, matcher: &Matcher, text: &str, resolver: &dyn Resolver) -> (bool, String) {
        match matcher {
            Matcher::Inside(dirs) => {
                let placement = dirs.place(text);
                (placement.inside, placement.detail)
            }
            Matcher::Outside(dirs) => {
                let placement = dirs.place(text);
                (!placement.inside, placement.detail)
            }
            Matcher::Url(rules) => {
                let check = rules.check(text, resolver).await;
                (check.refused, check.detail)
            }
            Matcher::Sql(classes) => {
                let classified = match sql::dialect(&self.dialect) {
                    Some(dialect) => sql::classify(dialect.as_ref(), text, self.unparseable),
                    None => sql::Classified {
                        class: self.unparseable,
                        detail: format!("the SQL dialect `{}` is unknown", self.dialect),
                    },
                };
                (classes.contains(&classified.class), classified.detail)
            }
            Matcher::Shell(hazards) => {
                let found = shell::scan(text);
                let matching: Vec<String> = found
                    .iter()
                    .filter(|found| hazards.contains(&found.hazard))
                    .map(|found| format!("{} ({})", found.hazard.name(), found.what))
                    .collect();
                if matching.is_empty() {
                    (false, "no shell hazard the rule looks for".to_owned())
                } else {
                    (true, format!("the command has {}", matching.join(", ")))
                }
            }
            Matcher::Regex(regex) => {
                if regex.is_match(text) {
                    (true, format!("matches `{}`", regex.as_str()))
                } else {
                    (false, format!("does not match `{}`", regex.as_str()))
                }
            }
        }
    }
}

/// The verdict as a verb: "to allow", and "it allows".
fn verb(verdict: Verdict) -> (&'static str, &'static str) {
    match verdict {
        Verdict::Allow => ("allow", "allows"),
        Verdict::Redact => ("redact", "redacts"),
        Verdict::Deny => ("deny", "denies"),
    }
}

fn record(steps: &mut Option<&mut Vec<Step>>, rule: &Rule, matched: bool, why: String) {
    if let Some(steps) = steps {
        steps.push(Step {
            rule: rule.name.clone(),
            matched,
            why,
        });
    }
}

fn finish(
    verdict: Verdict,
    rule: Option<String>,
    reason: String,
    evidence: Vec<String>,
    redactions: Vec<Redaction>,
    redacted: Option<Value>,
) -> Decision {
    let (verdict, arguments) = match verdict {
        Verdict::Allow if redacted.is_some() => (Verdict::Redact, redacted),
        Verdict::Allow | Verdict::Redact => (verdict, None),
        Verdict::Deny => (Verdict::Deny, None),
    };
    Decision {
        verdict,
        rule,
        reason,
        evidence,
        redactions,
        arguments,
    }
}

/// Replaces the value at `pointer`: a regular expression's matches within
/// it, or the whole value for other matchers.
fn redact_at(rule: &Rule, arguments: &mut Value, pointer: &str) {
    let Some(Value::String(text)) = arguments.pointer_mut(pointer) else {
        return;
    };
    let regex = rule
        .arguments
        .iter()
        .find_map(|condition| match &condition.matcher {
            Matcher::Regex(regex) if regex.is_match(text) => Some(regex),
            _ => None,
        });
    *text = match regex {
        Some(regex) => regex
            .replace_all(text, regex::NoExpand(&rule.replacement))
            .into_owned(),
        None => rule.replacement.clone(),
    };
}

impl Rule {
    /// The first condition on the request (not its arguments) that does
    /// not hold, worded for a person; `None` when all hold.
    fn refusal(
        &self,
        identity: &Identity,
        server: &str,
        method: &str,
        tool: Option<&str>,
    ) -> Option<String> {
        if let Some(names) = &self.server
            && !names.matches(server)
        {
            return Some(format!("the server `{server}` is not {}", names.shown));
        }
        if let Some(names) = &self.method
            && !names.matches(method)
        {
            return Some(format!("the method `{method}` is not {}", names.shown));
        }
        if let Some(names) = &self.tool {
            match tool {
                Some(tool) if names.matches(tool) => {}
                Some(tool) => return Some(format!("the tool `{tool}` is not {}", names.shown)),
                None => return Some("the request names no tool".to_owned()),
            }
        }
        if let Some(names) = &self.subject {
            match &identity.subject {
                Some(subject) if names.matches(subject) => {}
                Some(subject) => {
                    return Some(format!("the subject `{subject}` is not {}", names.shown));
                }
                None => return Some("the request has no subject".to_owned()),
            }
        }
        if let Some(missing) = self
            .scopes
            .iter()
            .find(|scope| !identity.scopes.contains(scope))
        {
            return Some(format!("the identity lacks the scope `{missing}`"));
        }
        if !self.lacks_scope.is_empty()
            && self
                .lacks_scope
                .iter()
                .all(|scope| identity.scopes.contains(scope))
        {
            return Some(format!(
                "the identity holds every scope of `lacks_scope` ({})",
                self.lacks_scope.join(", ")
            ));
        }
        if let Some(nets) = &self.client {
            match identity.client {
                Some(address) if nets.iter().any(|net| net.contains(&address)) => {}
                Some(address) => {
                    return Some(format!(
                        "the client {address} is in none of the rule's networks"
                    ));
                }
                None => return Some("the client's address is unknown".to_owned()),
            }
        }
        None
    }
}

/// Builds the compiled policy, checking what the file's syntax alone cannot.
fn compile(
    source: &file::Source<'_>,
    text: &str,
    parsed: PolicyFile,
) -> Result<Policy, PolicyError> {
    let error = |span: std::ops::Range<usize>, message: String, hint: String| {
        source.error(span, message, hint)
    };
    let mut rules: Vec<Rule> = Vec::with_capacity(parsed.rules.len());
    for spanned in parsed.rules {
        let span = spanned.span();
        let rule = spanned.into_inner();
        if rules.iter().any(|known| known.name == *rule.name.get_ref()) {
            return Err(error(
                rule.name.span(),
                format!("two rules are named `{}`", rule.name.get_ref()),
                "give each rule a name of its own: decisions and the audit log name the rule"
                    .to_owned(),
            ));
        }
        rules.push(compile_rule(&error, span, rule)?);
    }
    let dialect = match parsed.sql.dialect {
        Some(name) => {
            if sql::dialect(name.get_ref()).is_none() {
                return Err(error(
                    name.span(),
                    format!("the SQL dialect `{}` is unknown", name.get_ref()),
                    "write one of `generic`, `postgresql`, `mysql`, `sqlite`, `mssql`, \
                     `snowflake`, `bigquery`, `duckdb`, `clickhouse`, `hive`, `redshift`, `ansi`"
                        .to_owned(),
                ));
            }
            name.into_inner()
        }
        None => "generic".to_owned(),
    };
    let secrets = parsed
        .detectors
        .secrets
        .as_ref()
        .map_or(Actions::SECRETS, |given| given.over(Actions::SECRETS));
    let injection = parsed
        .detectors
        .injection
        .as_ref()
        .map_or(Actions::INJECTION, |given| given.over(Actions::INJECTION));
    let detectors = Detectors::new(secrets, injection).map_err(|problem| {
        error(
            0..0,
            format!("a built-in detector does not compile: {problem}"),
            "this is a bug in nexo; please report it".to_owned(),
        )
    })?;
    Ok(Policy {
        default: parsed
            .default
            .map_or(DefaultDecision::Deny, Spanned::into_inner),
        rules,
        detectors,
        dialect,
        unparseable: parsed.sql.unparseable.unwrap_or(SqlClass::Admin),
        digest: Sha256::digest(text.as_bytes()).into(),
    })
}

type ErrorAt<'a> = dyn Fn(std::ops::Range<usize>, String, String) -> PolicyError + 'a;

fn compile_rule(
    error: &ErrorAt<'_>,
    span: std::ops::Range<usize>,
    rule: RuleFile,
) -> Result<Rule, PolicyError> {
    let name = rule.name.get_ref().trim().to_owned();
    if name.is_empty() {
        return Err(error(
            rule.name.span(),
            "a rule's name is empty".to_owned(),
            "name the rule after what it does, e.g. `name = \"no-ddl\"`".to_owned(),
        ));
    }
    if rule.decision == RuleDecision::Redact && rule.arguments.is_empty() {
        return Err(error(
            span,
            format!("the redact rule `{name}` says no argument to redact"),
            "add an `argument` with a `pointer` and a matcher; what it matches is \
             replaced"
                .to_owned(),
        ));
    }
    let names = |field: Option<Spanned<file::Patterns>>,
                 what: &str|
     -> Result<Option<Names>, PolicyError> {
        field.map(|spanned| globs(error, spanned, what)).transpose()
    };
    let client = match rule.client {
        Some(spanned) => {
            let span = spanned.span();
            let mut nets = Vec::new();
            for text in &spanned.get_ref().0 {
                let net = text
                    .parse::<IpNet>()
                    .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        error(
                            span.clone(),
                            format!("`{text}` is not an IP address or network"),
                            "write addresses as `10.0.0.7` or networks as `10.0.0.0/8`, \
                             `fd00::/8`"
                                .to_owned(),
                        )
                    })?;
                nets.push(net);
            }
            Some(nets)
        }
        None => None,
    };
    let mut arguments = Vec::with_capacity(rule.arguments.len());
    for argument in rule.arguments {
        arguments.push(compile_argument(error, argument)?);
    }
    Ok(Rule {
        name,
        decision: rule.decision,
        reason: rule.reason,
        replacement: rule
            .replacement
            .unwrap_or_else(|| crate::detect::REDACTED.to_owned()),
        server: names(rule.server, "server")?,
        method: names(rule.method, "method")?,
        tool: names(rule.tool, "tool")?,
        subject: names(rule.subject, "subject")?,
        scopes: rule.scopes,
        lacks_scope: rule.lacks_scope,
        client,
        arguments,
    })
}

fn globs(
    error: &ErrorAt<'_>,
    spanned: Spanned<file::Patterns>,
    what: &str,
) -> Result<Names, PolicyError> {
    let span = spanned.span();
    let patterns = spanned.into_inner().0;
    if patterns.is_empty() {
        return Err(error(
            span,
            format!("the `{what}` list is empty, so the rule could never match"),
            format!("name at least one {what}, or leave `{what}` out to match any"),
        ));
    }
    let mut builder = GlobSetBuilder::new();
    for pattern in &patterns {
        let glob = GlobBuilder::new(pattern)
            .case_insensitive(what == "server")
            .build()
            .map_err(|problem| {
                error(
                    span.clone(),
                    format!("`{pattern}` is not a pattern: {}", problem.kind()),
                    "patterns take `*` (any characters), `?` (one), `[abc]` and `{a,b}`".to_owned(),
                )
            })?;
        builder.add(glob);
    }
    let set = builder.build().map_err(|problem| {
        error(
            span.clone(),
            format!("the `{what}` patterns cannot be combined: {problem}"),
            "simplify the patterns".to_owned(),
        )
    })?;
    let shown = if patterns.len() == 1 {
        format!("`{}`", patterns[0])
    } else {
        format!(
            "one of {}",
            patterns
                .iter()
                .map(|pattern| format!("`{pattern}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Ok(Names { set, shown })
}

fn compile_argument(
    error: &ErrorAt<'_>,
    spanned: Spanned<ArgumentFile>,
) -> Result<Condition, PolicyError> {
    let span = spanned.span();
    let argument = spanned.into_inner();
    let pointer = Pointer::parse(argument.pointer.get_ref()).map_err(|problem| {
        error(
            argument.pointer.span(),
            problem,
            "a pointer is a JSON pointer into the arguments: `/path`, `/options/url`, \
             `/files/*/path`"
                .to_owned(),
        )
    })?;
    let given = [
        argument.path.is_some(),
        argument.url.is_some(),
        argument.sql.is_some(),
        argument.shell.is_some(),
        argument.regex.is_some(),
    ]
    .iter()
    .filter(|given| **given)
    .count();
    if given != 1 {
        return Err(error(
            span,
            format!(
                "the argument at `{}` has {given} matchers; it takes exactly one",
                pointer.as_str()
            ),
            "give it one of `path`, `url`, `sql`, `shell` or `regex`; for two tests of the same \
             argument, write two `argument` entries (both must hold)"
                .to_owned(),
        ));
    }
    let matcher = if let Some(spanned) = argument.path {
        let span = spanned.span();
        let path = spanned.into_inner();
        let dirs_error = |problem: String| {
            error(
                span.clone(),
                problem,
                "write directories as absolute paths: `inside = [\"/srv/work\"]`".to_owned(),
            )
        };
        match (path.inside, path.outside) {
            (Some(dirs), None) => {
                Matcher::Inside(Dirs::new(&dirs, path.relative_to.as_deref()).map_err(dirs_error)?)
            }
            (None, Some(dirs)) => {
                Matcher::Outside(Dirs::new(&dirs, path.relative_to.as_deref()).map_err(dirs_error)?)
            }
            _ => {
                return Err(error(
                    span,
                    "a path matcher takes `inside` or `outside`, one of the two".to_owned(),
                    "write `path = { outside = [\"/srv/work\"] }` to match paths that leave \
                     /srv/work, or `inside` for those within it"
                        .to_owned(),
                ));
            }
        }
    } else if let Some(spanned) = argument.url {
        Matcher::Url(compile_url(error, spanned)?)
    } else if let Some(classes) = argument.sql {
        Matcher::Sql(classes)
    } else if let Some(hazards) = argument.shell {
        Matcher::Shell(hazards)
    } else if let Some(expression) = argument.regex {
        let regex =
            Regex::new(expression.get_ref()).map_err(|problem| {
                error(
                expression.span(),
                format!(
                    "the regular expression does not compile: {}",
                    problem.to_string().lines().last().unwrap_or_default().trim()
                ),
                "write it in the regex crate's syntax; in TOML and YAML, a 'single-quoted' string keeps \
                 backslashes as they are"
                    .to_owned(),
            )
            })?;
        Matcher::Regex(regex)
    } else {
        return Err(error(
            span,
            "the argument has no matcher".to_owned(),
            "give it one of `path`, `url`, `sql`, `shell` or `regex`".to_owned(),
        ));
    };
    Ok(Condition { pointer, matcher })
}

fn compile_url(
    error: &ErrorAt<'_>,
    spanned: Spanned<file::UrlFile>,
) -> Result<UrlRules, PolicyError> {
    let span = spanned.span();
    let url = spanned.into_inner();
    let hosts =
        |patterns: Option<Vec<String>>, what: &str| -> Result<Option<GlobSet>, PolicyError> {
            let Some(patterns) = patterns else {
                return Ok(None);
            };
            let mut builder = GlobSetBuilder::new();
            for pattern in &patterns {
                let glob = GlobBuilder::new(&pattern.to_ascii_lowercase())
                    .build()
                    .map_err(|problem| {
                        error(
                            span.clone(),
                            format!(
                                "`{pattern}` in `{what}` is not a host pattern: {}",
                                problem.kind()
                            ),
                            "write hosts as `example.com` or `*.example.com`".to_owned(),
                        )
                    })?;
                builder.add(glob);
            }
            builder.build().map(Some).map_err(|problem| {
                error(
                    span.clone(),
                    format!("the `{what}` patterns cannot be combined: {problem}"),
                    "simplify the patterns".to_owned(),
                )
            })
        };
    let mut allow_addresses = Vec::new();
    for text in &url.allow_addresses {
        let net = text
            .parse::<IpNet>()
            .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
            .map_err(|_| {
                error(
                    span.clone(),
                    format!("`{text}` in `allow_addresses` is not an IP address or network"),
                    "write `10.1.2.3` or `10.1.2.0/24`".to_owned(),
                )
            })?;
        allow_addresses.push(net);
    }
    Ok(UrlRules {
        schemes: url.schemes.map_or_else(
            || vec!["http".to_owned(), "https".to_owned()],
            |schemes| schemes.iter().map(|s| s.to_ascii_lowercase()).collect(),
        ),
        allow_hosts: hosts(url.allow_hosts, "allow_hosts")?,
        deny_hosts: hosts(url.deny_hosts, "deny_hosts")?,
        allow_private: url.allow_private,
        allow_addresses,
    })
}
