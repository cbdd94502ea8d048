//! Reading one configuration file: the JSONC tree (with the byte range of
//! every value) walked into [`Config`], every error placed at the value at
//! fault. One walk serves both formats: an `mcpServers` file (Claude
//! Desktop, Claude Code) and a `servers` file (VS Code) differ only in what
//! `"type": "http"` means and in the editor-only variables.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jsonc_parser::ast::{Object, ObjectProp, StringLit, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::errors::{ParseError, ParseErrorKind};
use jsonc_parser::{CollectOptions, ParseOptions, ParseStringErrorKind};
use sha2::{Digest, Sha256};

mod chat;
mod kinds;

use super::expand::{self, Vars};
use crate::secret::Secret;

use super::{
    ChatSettings, Config, ConfigError, Fingerprint, GatewaySection, Ignored, LoadRequest, Location,
    ServerConfig, ServerSpec, Source, Timeouts, ToolTimeouts, Written,
};

/// The fields of a server entry.
const ENTRY_FIELDS: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "envFile",
    "cwd",
    "url",
    "headers",
    "builtin",
    "disabled",
    "timeout",
    "maxTimeout",
    "toolTimeouts",
    "startupTimeout",
    "description",
];
/// The fields only a command (stdio) entry has.
const STDIO_FIELDS: &[&str] = &["command", "args", "env", "envFile", "cwd", "startupTimeout"];
/// The fields only a URL entry has.
const REMOTE_FIELDS: &[&str] = &["url", "headers"];
/// The top-level fields of a file.
const TOP_FIELDS: &[&str] = &[
    "mcpServers",
    "servers",
    "inputs",
    "trace",
    "traceRedact",
    "chat",
    "gateway",
    "$schema",
];
/// The fields of a `toolTimeouts` entry.
const TOOL_TIMEOUT_FIELDS: &[&str] = &["timeout", "maxTimeout"];

/// Fields of other hosts' entries that change nothing nexo does, and why.
const SET_ASIDE: &[(&str, &str)] = &[
    (
        "alwaysAllow",
        "tools another host approved in advance; nexo's own approvals apply",
    ),
    (
        "autoApprove",
        "tools another host approved in advance; nexo's own approvals apply",
    ),
    (
        "gallery",
        "VS Code's record of where it installed the server from",
    ),
    (
        "version",
        "VS Code's record of the server's version, for its own updates",
    ),
    (
        "dev",
        "VS Code's development mode (restart on file changes, a debugger) is an editor feature",
    ),
];
/// Top-level fields of other hosts that change nothing nexo does.
const TOP_SET_ASIDE: &[(&str, &str)] = &[
    ("globalShortcut", "a Claude Desktop setting"),
    ("preferences", "a Claude Desktop setting"),
];

/// A field of another host that would change what nexo does if it were
/// read, refused by name: what it is, and what to write instead.
fn refused(field: &str) -> Option<(&'static str, &'static str)> {
    Some(match field {
        "headersHelper" => (
            "Claude Code's `headersHelper` runs a command to make the request headers; nexo \
             runs no command from a configuration file to connect to a URL",
            "write the headers in `headers`, taking secrets from the environment: \
             `\"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"}`",
        ),
        "oauth" => (
            "Claude Code's `oauth` settings are not read from the file",
            "nexo authorizes with OAuth when the server asks; give a registered client with \
             `--client-id` (and `--client-secret`), or remove the field",
        ),
        "disabledTools" => (
            "`disabledTools` (hiding some of a server's tools) is not supported",
            "remove it, or set `\"disabled\": true` to leave the whole server out",
        ),
        "serverUrl" => ("`serverUrl` is Windsurf's name for the URL", "write `url`"),
        "transport" | "transportType" => (
            "the transport is not a field of its own in nexo's files",
            "write `\"type\": \"stdio\"`, `\"http\"` or `\"sse\"`, with `command` or `url` \
             beside it in the entry",
        ),
        _ => return None,
    })
}

/// What relative paths and `${workspaceFolder}` mean in one file.
pub(super) struct Place {
    /// The path the file was named by, as errors show it.
    pub shown: PathBuf,
    /// The directory relative paths are resolved against: the file's, or
    /// for `.vscode/mcp.json` the project's above it.
    pub project_dir: PathBuf,
    /// `${workspaceFolder}`: the project directory, or for the user's own
    /// file (which belongs to no project) the working directory.
    pub workspace: PathBuf,
    /// The canonical path of a project file, whose entries need consent.
    pub project_file: Option<PathBuf>,
}

impl Place {
    pub fn new(source: &Source, shown: &Path, request: &LoadRequest<'_>) -> Self {
        let full = request.cwd.join(shown);
        let file_dir = full
            .parent()
            .map_or_else(|| request.cwd.clone(), Path::to_path_buf);
        let project_dir = match (file_dir.file_name(), file_dir.parent()) {
            (Some(name), Some(parent)) if name == ".vscode" => parent.to_path_buf(),
            _ => file_dir,
        };
        let workspace = match source {
            Source::User(_) => request.cwd.clone(),
            _ => project_dir.clone(),
        };
        let project_file = source
            .is_project()
            .then(|| std::fs::canonicalize(&full).unwrap_or(full));
        Self {
            shown: shown.to_path_buf(),
            project_dir,
            workspace,
            project_file,
        }
    }
}

/// Reads `text`, the file at `place`.
pub(super) fn parse(
    text: &str,
    source: Source,
    place: Place,
    request: &LoadRequest<'_>,
) -> Result<Config, ConfigError> {
    let mut reader = Reader {
        text,
        place,
        request,
        vscode: false,
        inputs: BTreeMap::new(),
        ignored: Vec::new(),
        from_env: RefCell::new(Vec::new()),
    };
    let options = jsonc_options();
    // A byte-order mark (Windows editors write one) is not part of the JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    reader.text = text;
    let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options)
        .map_err(|error| reader.syntax(&error))?;
    let example = "a configuration is one object: `{\"mcpServers\": {\"name\": {\"command\": \
                   \"...\", \"args\": []}}}`";
    let Some(root) = parsed.value else {
        return Err(reader.error(0, "the file holds no JSON value", Some(example.into())));
    };
    let Value::Object(root) = &root else {
        return Err(reader.error(
            root.start(),
            format!("the file holds {}, not a JSON object", kind_of(&root)),
            Some(example.into()),
        ));
    };
    let fields = reader.unique(root, "at the top level")?;
    if let Some(inputs) = find(&fields, "inputs") {
        reader.inputs(inputs)?;
    }
    let mut servers: Option<&ObjectProp<'_>> = None;
    let mut trace = None;
    let mut trace_redact = false;
    let mut chat = ChatSettings::default();
    let mut gateway = None;
    for &(name, prop) in &fields {
        match name {
            "mcpServers" | "servers" => {
                if let Some(first) = servers {
                    return Err(reader.error(
                        prop.start(),
                        format!("the file holds both `{}` and `{name}`", first.name.as_str()),
                        Some("keep one: nexo reads either format, not both at once".into()),
                    ));
                }
                reader.vscode = name == "servers";
                servers = Some(prop);
            }
            "inputs" | "$schema" => {}
            "chat" => chat = reader.chat(prop)?,
            "gateway" => {
                gateway = Some(GatewaySection {
                    value: reader.json(&prop.value, None, false)?,
                    location: reader.location(prop.value.start()),
                    base_dir: reader.place.project_dir.clone(),
                });
            }
            "trace" => {
                let lit =
                    reader.string(&prop.value, "trace", None, "\"trace\": \"trace.jsonl\"")?;
                let path = reader.expand(lit, None, false)?;
                trace = Some(reader.place.project_dir.join(path));
            }
            "traceRedact" => {
                trace_redact = reader.boolean(&prop.value, "traceRedact", None)?;
            }
            "mcp" => {
                return Err(reader.error(
                    prop.start(),
                    "`mcp` is the key of VS Code's settings.json, not of an MCP configuration",
                    Some(
                        "move what is inside it (`servers`, `inputs`) to the top level of the file"
                            .into(),
                    ),
                ));
            }
            other => match TOP_SET_ASIDE.iter().find(|(field, _)| *field == other) {
                Some(&(field, why)) => reader.set_aside(prop, None, field, why),
                None => return Err(reader.unknown(prop, None, "the file's top level", TOP_FIELDS)),
            },
        }
    }
    let mut configs = Vec::new();
    if let Some(servers) = servers {
        let key = servers.name.as_str();
        let Value::Object(entries) = &servers.value else {
            return Err(reader.expected(
                &servers.value,
                key,
                None,
                "an object of servers by name",
                &format!("\"{key}\": {{\"name\": {{\"command\": \"...\"}}}}"),
            ));
        };
        for (name, prop) in reader.unique(entries, &format!("in `{key}`"))? {
            configs.push(reader.entry(name, prop)?);
        }
    }
    Ok(Config {
        source,
        servers: configs,
        trace,
        trace_redact,
        chat,
        gateway,
        ignored: reader.ignored,
    })
}

/// The field `name` among `fields`.
fn find<'o, 'a>(
    fields: &[(&'o str, &'o ObjectProp<'a>)],
    name: &str,
) -> Option<&'o ObjectProp<'a>> {
    fields
        .iter()
        .find(|(field, _)| *field == name)
        .map(|(_, prop)| *prop)
}

/// `message` about the server `server`.
fn about(server: Option<&str>, message: impl Into<String>) -> String {
    let message = message.into();
    match server {
        Some(server) => format!("server `{server}`: {message}"),
        None => message,
    }
}

/// How a JSON value is named in an error.
fn kind_of(value: &Value<'_>) -> &'static str {
    match value {
        Value::StringLit(_) => "a string",
        Value::NumberLit(_) => "a number",
        Value::BooleanLit(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::NullKeyword(_) => "null",
    }
}

/// The known name closest to `given`, if any is close: the same but for
/// case, `_` and `-`, or a slip of a letter or two.
fn closest<'k>(given: &str, known: &[&'k str]) -> Option<&'k str> {
    let fold = |text: &str| -> String {
        text.chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let folded = fold(given);
    known
        .iter()
        .map(|name| (strsim::damerau_levenshtein(&folded, &fold(name)), *name))
        .filter(|(distance, name)| *distance <= (name.len() / 4).max(1))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

struct Reader<'a> {
    text: &'a str,
    place: Place,
    request: &'a LoadRequest<'a>,
    /// A `servers` file (VS Code's).
    vscode: bool,
    inputs: BTreeMap<String, Option<String>>,
    ignored: Vec<Ignored>,
    /// The values of environment variables expanded in the entry being read.
    from_env: RefCell<Vec<String>>,
}

/// What an entry's fields make, before its fingerprint.
struct Made {
    spec: ServerSpec,
    written: Written,
    /// The contents of its `envFile`, which the fingerprint covers.
    env_file: Option<Vec<u8>>,
}

impl Reader<'_> {
    fn location(&self, offset: usize) -> Location {
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        Location {
            file: self.place.shown.clone(),
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }

    fn error(
        &self,
        offset: usize,
        message: impl Into<String>,
        hint: Option<String>,
    ) -> ConfigError {
        ConfigError::Invalid {
            location: self.location(offset),
            message: message.into(),
            hint,
        }
    }

    /// A syntax error of the JSONC parser, in our words.
    fn syntax(&self, error: &ParseError) -> ConfigError {
        let offset = error.range().start;
        let found = self.text.get(offset..).and_then(|rest| rest.chars().next());
        let unexpected = || match found {
            Some(c) => format!("unexpected `{c}`"),
            None => "unexpected end of the file".to_owned(),
        };
        let message = match error.kind() {
            ParseErrorKind::ExpectedComma => "expected a `,` before the next entry".to_owned(),
            ParseErrorKind::ExpectedColonAfterObjectKey => {
                "expected a `:` after the field's name".to_owned()
            }
            ParseErrorKind::ExpectedObjectValue => "expected a value after the `:`".to_owned(),
            ParseErrorKind::ExpectedStringObjectProperty => {
                "expected a field name in double quotes".to_owned()
            }
            ParseErrorKind::SingleQuotedStringsNotAllowed => {
                "strings are written in double quotes".to_owned()
            }
            ParseErrorKind::UnterminatedObject => {
                "this object is not closed with `}` before the file ends".to_owned()
            }
            ParseErrorKind::UnterminatedArray => {
                "this array is not closed with `]` before the file ends".to_owned()
            }
            ParseErrorKind::UnterminatedCommentBlock => {
                "this comment is not closed with `*/`".to_owned()
            }
            ParseErrorKind::MultipleRootJsonValues => {
                "the file goes on after its JSON value".to_owned()
            }
            ParseErrorKind::String(ParseStringErrorKind::UnterminatedStringLiteral) => {
                "this string is not closed with `\"`".to_owned()
            }
            ParseErrorKind::String(_) => {
                "this string holds an escape JSON does not have".to_owned()
            }
            ParseErrorKind::NestingDepthExceeded => "the file nests too deeply".to_owned(),
            ParseErrorKind::UnexpectedCloseBrace
            | ParseErrorKind::UnexpectedCloseBracket
            | ParseErrorKind::UnexpectedColon
            | ParseErrorKind::UnexpectedComma
            | ParseErrorKind::UnexpectedToken
            | ParseErrorKind::UnexpectedTokenInObject
            | ParseErrorKind::UnexpectedWord => unexpected(),
            _ => format!("not valid JSON ({})", unexpected()),
        };
        self.error(
            offset,
            message,
            Some(
                "write JSON: names and strings in double quotes, entries separated by commas \
                 (comments and trailing commas are allowed)"
                    .into(),
            ),
        )
    }

    /// The fields of `object`, each name once.
    fn unique<'o, 'b>(
        &self,
        object: &'o Object<'b>,
        within: &str,
    ) -> Result<Vec<(&'o str, &'o ObjectProp<'b>)>, ConfigError> {
        let mut fields: Vec<(&'o str, &'o ObjectProp<'b>)> = Vec::new();
        for prop in &object.properties {
            let name = prop.name.as_str();
            if let Some((_, first)) = fields.iter().find(|(seen, _)| *seen == name) {
                let first = self.location(first.start());
                return Err(self.error(
                    prop.start(),
                    format!("`{name}` is given twice {within}"),
                    Some(format!(
                        "keep one of them (the first is at line {}, column {})",
                        first.line, first.column
                    )),
                ));
            }
            fields.push((name, prop));
        }
        Ok(fields)
    }

    /// A field nobody reads, with the name it may have been meant as.
    fn unknown(
        &self,
        prop: &ObjectProp<'_>,
        server: Option<&str>,
        of: &str,
        known: &[&str],
    ) -> ConfigError {
        let name = prop.name.as_str();
        let hint = match closest(name, known) {
            Some(meant) => format!("did you mean `{meant}`?"),
            None => format!(
                "the fields are {}",
                known
                    .iter()
                    .map(|field| format!("`{field}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        self.error(
            prop.start(),
            about(server, format!("`{name}` is not a field of {of}")),
            Some(hint),
        )
    }

    fn set_aside(
        &mut self,
        prop: &ObjectProp<'_>,
        server: Option<&str>,
        field: &str,
        why: &'static str,
    ) {
        self.ignored.push(Ignored {
            location: self.location(prop.start()),
            server: server.map(str::to_owned),
            field: field.to_owned(),
            why,
        });
    }

    /// `value` is not what `field` must be.
    fn expected(
        &self,
        value: &Value<'_>,
        field: &str,
        server: Option<&str>,
        what: &str,
        example: &str,
    ) -> ConfigError {
        self.error(
            value.start(),
            about(
                server,
                format!("`{field}` must be {what}, not {}", kind_of(value)),
            ),
            Some(format!("write it as `{example}`")),
        )
    }

    fn string<'v, 'b>(
        &self,
        value: &'v Value<'b>,
        field: &str,
        server: Option<&str>,
        example: &str,
    ) -> Result<&'v StringLit<'b>, ConfigError> {
        match value {
            Value::StringLit(lit) => Ok(lit),
            other => Err(self.expected(other, field, server, "a string", example)),
        }
    }

    fn boolean(
        &self,
        value: &Value<'_>,
        field: &str,
        server: Option<&str>,
    ) -> Result<bool, ConfigError> {
        match value {
            Value::BooleanLit(lit) => Ok(lit.value),
            other => Err(self.expected(
                other,
                field,
                server,
                "`true` or `false`",
                &format!("\"{field}\": true"),
            )),
        }
    }

    /// A number of seconds, more than zero.
    fn seconds(
        &self,
        value: &Value<'_>,
        field: &str,
        server: Option<&str>,
    ) -> Result<Duration, ConfigError> {
        let example = format!("\"{field}\": 60");
        let Value::NumberLit(number) = value else {
            return Err(self.expected(value, field, server, "a number of seconds", &example));
        };
        match number.value.parse::<f64>().map(Duration::try_from_secs_f64) {
            Ok(Ok(duration)) if !duration.is_zero() => Ok(duration),
            _ => Err(self.error(
                value.start(),
                about(
                    server,
                    format!("`{field}` must be a number of seconds above zero"),
                ),
                Some(format!(
                    "write it as `{example}`, or leave it out for nexo's default"
                )),
            )),
        }
    }

    /// The byte offset in the file of byte `offset` of `lit`'s value: exact
    /// where the string has no escapes, else the string's start.
    fn within(&self, lit: &StringLit<'_>, offset: usize) -> usize {
        let (start, end) = (lit.range.start, lit.range.end);
        match self.text.get(start + 1..end.saturating_sub(1)) {
            Some(raw) if !raw.contains('\\') && offset <= raw.len() => start + 1 + offset,
            _ => start,
        }
    }

    /// `lit`'s value with its variables expanded; `lenient` (a disabled
    /// entry) keeps unset ones as written.
    fn expand(
        &self,
        lit: &StringLit<'_>,
        server: Option<&str>,
        lenient: bool,
    ) -> Result<String, ConfigError> {
        let vars = Vars {
            env: self.request.env,
            workspace: &self.place.workspace,
            home: self.request.home.as_deref(),
            vscode: self.vscode,
            inputs: &self.inputs,
        };
        let mut from_env = self.from_env.borrow_mut();
        expand::expand(&lit.value, &vars, lenient, &mut from_env).map_err(|problem| {
            self.error(
                self.within(lit, problem.offset),
                about(server, problem.message),
                problem.hint,
            )
        })
    }

    /// VS Code's `inputs`: only their ids and descriptions are read, for
    /// the error that refuses `${input:id}`.
    fn inputs(&mut self, prop: &ObjectProp<'_>) -> Result<(), ConfigError> {
        let Value::Array(inputs) = &prop.value else {
            return Err(self.expected(
                &prop.value,
                "inputs",
                None,
                "an array",
                "\"inputs\": [{\"id\": \"token\", \"type\": \"promptString\"}]",
            ));
        };
        for input in &inputs.elements {
            let Value::Object(input) = input else {
                continue;
            };
            let text = |name: &str| input.get_string(name).map(|lit| lit.value.to_string());
            if let Some(id) = text("id") {
                self.inputs.insert(id, text("description"));
            }
        }
        Ok(())
    }

    /// One server entry.
    fn entry(&mut self, name: &str, prop: &ObjectProp<'_>) -> Result<ServerConfig, ConfigError> {
        if name.trim().is_empty() || name.chars().any(char::is_control) {
            return Err(self.error(
                prop.start(),
                format!("`{}` cannot name a server", name.escape_debug()),
                Some("name it with letters, digits, `-` and `_`: `\"my-server\"`".into()),
            ));
        }
        let server = Some(name);
        self.from_env.borrow_mut().clear();
        let Value::Object(object) = &prop.value else {
            return Err(self.expected(
                &prop.value,
                name,
                None,
                "an object",
                &format!("\"{name}\": {{\"command\": \"...\", \"args\": []}}"),
            ));
        };
        let fields = self.unique(object, &format!("in server `{name}`"))?;
        let builtin = find(&fields, "builtin");
        let mut options = Vec::new();
        for &(field, field_prop) in &fields {
            if ENTRY_FIELDS.contains(&field) {
                continue;
            }
            if let Some((message, hint)) = refused(field) {
                return Err(self.error(
                    field_prop.start(),
                    about(server, message),
                    Some(hint.into()),
                ));
            }
            if let Some(&(_, why)) = SET_ASIDE.iter().find(|(known, _)| *known == field) {
                self.set_aside(field_prop, server, field, why);
                continue;
            }
            if builtin.is_none() {
                return Err(self.unknown(field_prop, server, "a server entry", ENTRY_FIELDS));
            }
            options.push((field, field_prop));
        }
        let disabled = match find(&fields, "disabled") {
            Some(prop) => self.boolean(&prop.value, "disabled", server)?,
            None => false,
        };
        let description = match find(&fields, "description") {
            Some(prop) => Some(
                self.string(
                    &prop.value,
                    "description",
                    server,
                    "\"description\": \"...\"",
                )?
                .value
                .to_string(),
            ),
            None => None,
        };
        let timeouts = self.timeouts(&fields, name)?;
        let made = match builtin {
            Some(builtin) => self.builtin(name, &fields, builtin, &options, disabled)?,
            None => self.reached(name, prop, &fields, disabled)?,
        };
        let mut canonical = String::new();
        write_canonical(&prop.value, &mut canonical);
        let mut hasher = Sha256::new();
        hasher.update(canonical.as_bytes());
        if let Some(contents) = &made.env_file {
            hasher.update(b"\0envFile\0");
            hasher.update(contents);
        }
        Ok(ServerConfig {
            name: name.to_owned(),
            spec: made.spec,
            timeouts,
            disabled,
            description,
            location: Some(self.location(prop.start())),
            fingerprint: Fingerprint(hasher.finalize().into()),
            project_file: self.place.project_file.clone(),
            written: made.written,
            from_env: self.from_env.take().into_iter().map(Secret::new).collect(),
        })
    }

    /// `timeout`, `maxTimeout`, `toolTimeouts` and `startupTimeout`.
    fn timeouts(
        &self,
        fields: &[(&str, &ObjectProp<'_>)],
        name: &str,
    ) -> Result<Timeouts, ConfigError> {
        let server = Some(name);
        let pair = |fields: &[(&str, &ObjectProp<'_>)], within: &str| {
            let mut limits = ToolTimeouts::default();
            if let Some(prop) = find(fields, "timeout") {
                limits.idle = Some(self.seconds(&prop.value, "timeout", server)?);
            }
            if let Some(prop) = find(fields, "maxTimeout") {
                let max = self.seconds(&prop.value, "maxTimeout", server)?;
                if let Some(idle) = limits.idle.filter(|idle| max < *idle) {
                    return Err(self.error(
                        prop.value.start(),
                        about(
                            server,
                            format!(
                                "`maxTimeout` ({} s) is shorter than `timeout` ({} s){within}",
                                max.as_secs_f64(),
                                idle.as_secs_f64()
                            ),
                        ),
                        Some(
                            "`timeout` is the wait for each message, `maxTimeout` the whole \
                             call's: make `maxTimeout` the longer"
                                .into(),
                        ),
                    ));
                }
                limits.max = Some(max);
            }
            Ok::<_, ConfigError>(limits)
        };
        let own = pair(fields, "")?;
        let startup = find(fields, "startupTimeout")
            .map(|prop| self.seconds(&prop.value, "startupTimeout", server))
            .transpose()?;
        let mut timeouts = Timeouts {
            idle: own.idle,
            max: own.max,
            startup,
            tools: BTreeMap::new(),
        };
        let Some(prop) = find(fields, "toolTimeouts") else {
            return Ok(timeouts);
        };
        let example = "\"toolTimeouts\": {\"tool\": {\"timeout\": 60, \"maxTimeout\": 600}}";
        let Value::Object(tools) = &prop.value else {
            return Err(self.expected(&prop.value, "toolTimeouts", server, "an object", example));
        };
        for (tool, tool_prop) in self.unique(tools, "in `toolTimeouts`")? {
            let Value::Object(limits) = &tool_prop.value else {
                return Err(self.expected(&tool_prop.value, tool, server, "an object", example));
            };
            let limit_fields = self.unique(limits, &format!("for the tool `{tool}`"))?;
            if let Some(&(_, unknown)) = limit_fields
                .iter()
                .find(|(field, _)| !TOOL_TIMEOUT_FIELDS.contains(field))
            {
                return Err(self.unknown(
                    unknown,
                    server,
                    "a `toolTimeouts` entry",
                    TOOL_TIMEOUT_FIELDS,
                ));
            }
            let limits = pair(&limit_fields, &format!(" for the tool `{tool}`"))?;
            let effective = ToolTimeouts {
                idle: limits.idle.or(timeouts.idle),
                max: limits.max.or(timeouts.max),
            };
            if let (Some(idle), Some(max)) = (effective.idle, effective.max)
                && max < idle
            {
                return Err(self.error(
                    tool_prop.start(),
                    about(
                        server,
                        format!(
                            "the tool `{tool}` would wait {} s for each message but {} s in all",
                            idle.as_secs_f64(),
                            max.as_secs_f64()
                        ),
                    ),
                    Some("give the tool a `maxTimeout` at least as long as its `timeout`".into()),
                ));
            }
            timeouts.tools.insert(tool.to_owned(), limits);
        }
        Ok(timeouts)
    }
}

/// `value` as canonical JSON: object fields sorted by name, no blanks,
/// comments dropped, numbers as written.
pub(super) fn write_canonical(value: &Value<'_>, out: &mut String) {
    match value {
        Value::StringLit(lit) => {
            out.push_str(&serde_json::Value::String(lit.value.to_string()).to_string());
        }
        Value::NumberLit(number) => out.push_str(number.value),
        Value::BooleanLit(lit) => out.push_str(if lit.value { "true" } else { "false" }),
        Value::NullKeyword(_) => out.push_str("null"),
        Value::Array(array) => {
            out.push('[');
            for (index, element) in array.elements.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(element, out);
            }
            out.push(']');
        }
        Value::Object(object) => {
            let mut props: Vec<&ObjectProp<'_>> = object.properties.iter().collect();
            props.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
            out.push('{');
            for (index, prop) in props.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::Value::String(prop.name.as_str().to_owned()).to_string());
                out.push(':');
                write_canonical(&prop.value, out);
            }
            out.push('}');
        }
    }
}

/// The JSON a configuration file may be written in: JSON with comments
/// and trailing commas (JSONC), nothing looser.
pub(crate) fn jsonc_options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}
