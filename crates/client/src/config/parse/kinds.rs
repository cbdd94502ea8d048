//! What each kind of entry makes: a command to spawn (`command`, `args`,
//! `env`, `envFile`, `cwd`), a URL to reach (`url`, `headers`, and what
//! `type` says of the transport) or a bundled server (`builtin` and its
//! options), each field checked and its variables expanded.

use jsonc_parser::ast::{ObjectProp, Value};
use jsonc_parser::common::Ranged;

use super::{Made, REMOTE_FIELDS, Reader, STDIO_FIELDS, about, find, kind_of, write_canonical};
use crate::config::{BuiltinProblem, ConfigError, Location, ServerSpec, Written, envfile};
use crate::secret::{EnvVar, Header, Secret, TargetUrl, redact_userinfo};
use crate::target::HttpTransport;

impl Reader<'_> {
    /// A `{"builtin": NAME, ...options}` entry.
    pub(super) fn builtin(
        &self,
        name: &str,
        fields: &[(&str, &ObjectProp<'_>)],
        builtin: &ObjectProp<'_>,
        options: &[(&str, &ObjectProp<'_>)],
        disabled: bool,
    ) -> Result<Made, ConfigError> {
        let server = Some(name);
        if let Some(&(field, prop)) = fields.iter().find(|(field, _)| {
            *field == "type" || STDIO_FIELDS.contains(field) || REMOTE_FIELDS.contains(field)
        }) {
            return Err(self.error(
                prop.start(),
                about(
                    server,
                    format!(
                        "a `builtin` entry runs a bundled server in-process: it has no `{field}`"
                    ),
                ),
                Some(format!(
                    "remove `{field}`, or remove `builtin` to reach a server of your own"
                )),
            ));
        }
        let lit = self.string(&builtin.value, "builtin", server, "\"builtin\": \"dns\"")?;
        let bundled = lit.value.trim();
        if bundled.is_empty() {
            return Err(self.error(
                builtin.value.start(),
                about(server, "`builtin` names no server"),
                Some("name a bundled server: `\"builtin\": \"dns\"`".into()),
            ));
        }
        let mut values = serde_json::Map::new();
        for &(option, prop) in options {
            values.insert(option.to_owned(), self.json(&prop.value, server, disabled)?);
        }
        let mut sorted = options.to_vec();
        sorted.sort_by_key(|(option, _)| *option);
        let mut written = String::from("{");
        for (index, (option, prop)) in sorted.into_iter().enumerate() {
            if index > 0 {
                written.push(',');
            }
            written.push_str(&serde_json::Value::String(option.to_owned()).to_string());
            written.push(':');
            write_canonical(&prop.value, &mut written);
        }
        written.push('}');
        if let Some(check) = self.request.check_builtin
            && let Err(BuiltinProblem {
                option,
                message,
                hint,
            }) = check(bundled, &values, &self.place.project_dir)
        {
            let at = option
                .and_then(|option| find(options, &option))
                .map_or(builtin.value.start(), |prop| prop.value.start());
            return Err(self.error(at, about(server, message), hint));
        }
        Ok(Made {
            written: Written::Builtin {
                server: bundled.to_owned(),
                options: written,
            },
            spec: ServerSpec::Builtin {
                server: bundled.to_owned(),
                options: values,
                base_dir: self.place.project_dir.clone(),
            },
            env_file: None,
        })
    }

    /// A JSON value (a builtin's option, the gateway's settings), its
    /// strings expanded.
    pub(in crate::config) fn json(
        &self,
        value: &Value<'_>,
        server: Option<&str>,
        lenient: bool,
    ) -> Result<serde_json::Value, ConfigError> {
        Ok(match value {
            Value::StringLit(lit) => serde_json::Value::String(self.expand(lit, server, lenient)?),
            Value::NumberLit(number) => match number.value.parse::<serde_json::Number>() {
                Ok(number) => serde_json::Value::Number(number),
                Err(_) => {
                    return Err(self.error(
                        value.start(),
                        about(
                            server,
                            format!("`{}` is not a number nexo can hold", number.value),
                        ),
                        Some("write a plain decimal number: `3` or `2.5`".into()),
                    ));
                }
            },
            Value::BooleanLit(lit) => serde_json::Value::Bool(lit.value),
            Value::NullKeyword(_) => serde_json::Value::Null,
            Value::Array(array) => serde_json::Value::Array(
                array
                    .elements
                    .iter()
                    .map(|element| self.json(element, server, lenient))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(object) => {
                let mut map = serde_json::Map::new();
                for (name, prop) in self.unique(object, "in an option")? {
                    map.insert(name.to_owned(), self.json(&prop.value, server, lenient)?);
                }
                serde_json::Value::Object(map)
            }
        })
    }

    /// A server reached by a command or at a URL.
    pub(super) fn reached(
        &self,
        name: &str,
        entry: &ObjectProp<'_>,
        fields: &[(&str, &ObjectProp<'_>)],
        lenient: bool,
    ) -> Result<Made, ConfigError> {
        let server = Some(name);
        let command = find(fields, "command");
        let url = find(fields, "url");
        let example = "`\"command\": \"npx\", \"args\": [\"-y\", \"package\"]`, or `\"type\": \
                       \"http\", \"url\": \"https://example.com/mcp\"`, or `\"builtin\": \"dns\"`";
        let (stdio, transport, label) = match find(fields, "type") {
            Some(prop) => {
                let lit = self.string(&prop.value, "type", server, "\"type\": \"stdio\"")?;
                match lit.value.as_ref() {
                    "stdio" => (true, HttpTransport::Auto, "stdio"),
                    // VS Code falls back to SSE from `http`; Claude Code does not.
                    "http" if self.vscode => (false, HttpTransport::Auto, "http"),
                    "http" | "streamable-http" | "streamableHttp" => {
                        (false, HttpTransport::Http, "http")
                    }
                    "sse" => (false, HttpTransport::Sse, "sse"),
                    "ws" | "websocket" => {
                        return Err(self.error(
                            prop.value.start(),
                            about(server, "nexo does not speak MCP over WebSocket"),
                            Some(
                                "reach the server's Streamable HTTP endpoint: `\"type\": \"http\"`"
                                    .into(),
                            ),
                        ));
                    }
                    other => {
                        return Err(self.error(
                            prop.value.start(),
                            about(server, format!("`{other}` is not a server type")),
                            Some("write `\"stdio\"`, `\"http\"` or `\"sse\"`".into()),
                        ));
                    }
                }
            }
            None => match (command, url) {
                (Some(_), None) => (true, HttpTransport::Auto, "stdio"),
                (None, Some(_)) => (false, HttpTransport::Auto, "auto"),
                (Some(_), Some(_)) => {
                    return Err(self.error(
                        entry.start(),
                        about(server, "the entry has both `command` and `url`"),
                        Some(
                            "a server is either a command (`command`, `args`, `env`) or a URL \
                             (`url`, `headers`): keep one"
                                .into(),
                        ),
                    ));
                }
                (None, None) => {
                    return Err(self.error(
                        entry.start(),
                        about(server, "the entry has no `command`, `url` or `builtin`"),
                        Some(format!("write {example}")),
                    ));
                }
            },
        };
        let (own, foreign, kind) = if stdio {
            (STDIO_FIELDS, REMOTE_FIELDS, "a command (stdio) server")
        } else {
            (REMOTE_FIELDS, STDIO_FIELDS, "a server reached at a URL")
        };
        if let Some(&(field, prop)) = fields.iter().find(|(field, _)| foreign.contains(field)) {
            return Err(self.error(
                prop.start(),
                about(server, format!("`{field}` does not belong to {kind}")),
                Some(format!(
                    "remove `{field}`, or make the entry {} (`{}`)",
                    if stdio {
                        "reach a URL"
                    } else {
                        "run a command"
                    },
                    own.join("`, `")
                )),
            ));
        }
        if stdio {
            self.stdio(name, entry, fields, lenient)
        } else {
            let Some(url) = url else {
                return Err(self.error(
                    entry.start(),
                    about(server, "the entry has no `url`"),
                    Some("write `\"url\": \"https://example.com/mcp\"`".into()),
                ));
            };
            self.remote(
                name,
                url,
                find(fields, "headers"),
                transport,
                label,
                lenient,
            )
        }
    }

    fn stdio(
        &self,
        name: &str,
        entry: &ObjectProp<'_>,
        fields: &[(&str, &ObjectProp<'_>)],
        lenient: bool,
    ) -> Result<Made, ConfigError> {
        let server = Some(name);
        let Some(command) = find(fields, "command") else {
            return Err(self.error(
                entry.start(),
                about(server, "the entry has no `command`"),
                Some("write `\"command\": \"npx\", \"args\": [\"-y\", \"package\"]`".into()),
            ));
        };
        let command_lit = self.string(&command.value, "command", server, "\"command\": \"npx\"")?;
        let program = self.expand(command_lit, server, lenient)?;
        if program.trim().is_empty() {
            return Err(self.error(
                command.value.start(),
                about(server, "`command` is empty"),
                Some("write the program to run: `\"command\": \"npx\"`".into()),
            ));
        }
        let args_example = "\"args\": [\"--flag\", \"value\"]";
        let mut args = Vec::new();
        let mut written_args = Vec::new();
        if let Some(prop) = find(fields, "args") {
            let Value::Array(array) = &prop.value else {
                return Err(self.expected(
                    &prop.value,
                    "args",
                    server,
                    "an array of strings",
                    args_example,
                ));
            };
            for element in &array.elements {
                let Value::StringLit(lit) = element else {
                    return Err(self.error(
                        element.start(),
                        about(
                            server,
                            format!("each of `args` must be a string, not {}", kind_of(element)),
                        ),
                        Some("put it in double quotes: `[\"--port\", \"8080\"]`".into()),
                    ));
                };
                args.push(self.expand(lit, server, lenient)?);
                written_args.push(lit.value.to_string());
            }
        }
        let mut env_file = None;
        let mut written_env_file = None;
        let mut vars: Vec<(String, String)> = Vec::new();
        if let Some(prop) = find(fields, "envFile") {
            let lit = self.string(
                &prop.value,
                "envFile",
                server,
                "\"envFile\": \"${workspaceFolder}/.env\"",
            )?;
            written_env_file = Some(lit.value.to_string());
            let path = self
                .place
                .project_dir
                .join(self.expand(lit, server, lenient)?);
            match std::fs::read(&path) {
                Ok(contents) => {
                    let text = String::from_utf8_lossy(&contents).into_owned();
                    vars = envfile::parse(&text).map_err(|bad| ConfigError::Invalid {
                        location: Location {
                            file: path.clone(),
                            line: bad.line,
                            column: bad.column,
                        },
                        message: about(server, bad.message),
                        hint: Some("write one `KEY=VALUE` a line; `#` starts a comment".into()),
                    })?;
                    env_file = Some(contents);
                }
                Err(_) if lenient => {}
                Err(error) => {
                    return Err(self.error(
                        prop.value.start(),
                        about(
                            server,
                            format!(
                                "cannot read the `envFile` `{}`: {}",
                                path.display(),
                                crate::config::error::io_reason(&error)
                            ),
                        ),
                        Some(
                            "create the file, or correct the path (a relative path starts at \
                             the project's directory)"
                                .into(),
                        ),
                    ));
                }
            }
        }
        let mut env_names: Vec<String> = vars.iter().map(|(key, _)| key.clone()).collect();
        if let Some(prop) = find(fields, "env") {
            let env_example = "\"env\": {\"NAME\": \"value\"}";
            let Value::Object(object) = &prop.value else {
                return Err(self.expected(&prop.value, "env", server, "an object", env_example));
            };
            for (key, var) in self.unique(object, &format!("in the `env` of `{name}`"))? {
                if key.is_empty() || key.contains(['=', '\0']) {
                    return Err(self.error(
                        var.start(),
                        about(
                            server,
                            format!(
                                "`{}` cannot name an environment variable",
                                key.escape_debug()
                            ),
                        ),
                        Some("name it with letters, digits and `_`: `\"API_KEY\": \"...\"`".into()),
                    ));
                }
                let value = match &var.value {
                    Value::StringLit(lit) => self.expand(lit, server, lenient)?,
                    Value::NumberLit(number) => number.value.to_owned(),
                    Value::NullKeyword(_) => {
                        return Err(self.error(
                            var.value.start(),
                            about(
                                server,
                                format!(
                                    "`{key}` is `null`: taking a variable away from the \
                                     server's environment is not supported"
                                ),
                            ),
                            Some(format!(
                                "remove `{key}`, or give it a value: `\"{key}\": \"\"`"
                            )),
                        ));
                    }
                    other => {
                        return Err(self.expected(
                            other,
                            key,
                            server,
                            "a string",
                            &format!("\"{key}\": \"value\""),
                        ));
                    }
                };
                vars.retain(|(file_key, _)| file_key != key);
                vars.push((key.to_owned(), value));
                env_names.push(key.to_owned());
            }
        }
        env_names.sort();
        env_names.dedup();
        let (cwd, written_cwd) = match find(fields, "cwd") {
            Some(prop) => {
                let lit = self.string(&prop.value, "cwd", server, "\"cwd\": \"./server\"")?;
                let dir = self.expand(lit, server, lenient)?;
                (
                    Some(self.place.project_dir.join(dir)),
                    Some(lit.value.to_string()),
                )
            }
            None => (None, None),
        };
        Ok(Made {
            spec: ServerSpec::Stdio {
                command: program,
                args,
                env: vars
                    .into_iter()
                    .map(|(key, value)| EnvVar {
                        key,
                        value: Secret::new(value),
                    })
                    .collect(),
                cwd,
            },
            written: Written::Stdio {
                command: command_lit.value.to_string(),
                args: written_args,
                cwd: written_cwd,
                env_names,
                env_file: written_env_file,
            },
            env_file,
        })
    }

    fn remote(
        &self,
        name: &str,
        url: &ObjectProp<'_>,
        headers: Option<&ObjectProp<'_>>,
        transport: HttpTransport,
        label: &'static str,
        lenient: bool,
    ) -> Result<Made, ConfigError> {
        let server = Some(name);
        let url_example = "\"url\": \"https://example.com/mcp\"";
        let lit = self.string(&url.value, "url", server, url_example)?;
        let expanded = self.expand(lit, server, lenient)?;
        let shown = redact_userinfo(&expanded).into_owned();
        if expanded
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("unix:")
        {
            return Err(self.error(
                url.value.start(),
                about(server, "Unix socket URLs (`unix:///...`) are not supported"),
                Some(
                    "serve it on a loopback port and write `\"url\": \"http://127.0.0.1:PORT/mcp\"`"
                        .into(),
                ),
            ));
        }
        let unexpanded = lenient && expanded.contains("${");
        if !unexpanded {
            match url::Url::parse(&expanded) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => {}
                Ok(parsed) => {
                    return Err(self.error(
                        url.value.start(),
                        about(
                            server,
                            format!("`{}:` URLs are not supported", parsed.scheme()),
                        ),
                        Some("write an `http://` or `https://` URL".into()),
                    ));
                }
                Err(_) => {
                    return Err(self.error(
                        url.value.start(),
                        about(server, format!("`{shown}` is not a URL")),
                        Some(format!("write a full URL: `{url_example}`")),
                    ));
                }
            }
        }
        let mut made_headers = Vec::new();
        let mut header_names = Vec::new();
        if let Some(prop) = headers {
            let example = "\"headers\": {\"Authorization\": \"Bearer ${TOKEN}\"}";
            let Value::Object(object) = &prop.value else {
                return Err(self.expected(&prop.value, "headers", server, "an object", example));
            };
            for (header, value) in self.unique(object, &format!("in the `headers` of `{name}`"))? {
                let lit = self.string(&value.value, header, server, example)?;
                let text = self.expand(lit, server, lenient)?;
                let made = Header::new(header, &text).map_err(|_| {
                    let message = if http::HeaderName::try_from(header).is_err() {
                        format!("`{header}` is not a valid HTTP header name")
                    } else {
                        format!(
                            "the value of the `{header}` header holds a character HTTP does not \
                             allow (a control character or a line break)"
                        )
                    };
                    self.error(
                        value.start(),
                        about(server, message),
                        Some(format!("write headers as `{example}`")),
                    )
                })?;
                made_headers.push(made);
                header_names.push(header.to_owned());
            }
        }
        Ok(Made {
            spec: ServerSpec::Remote {
                url: TargetUrl::new(expanded),
                transport,
                headers: made_headers,
            },
            written: Written::Remote {
                transport: label,
                url: redact_userinfo(&lit.value).into_owned(),
                header_names,
            },
            env_file: None,
        })
    }
}
