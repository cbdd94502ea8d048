//! The chat's slash commands (`/tools`, `/call server__tool {json}`, ...)
//! and `@server:uri` attachments, read from a line the person typed. The
//! terminal and the web page both take their commands from here, and show
//! [`COMMANDS`] as help and as completions.

/// A command: its name, its arguments as help shows them, what it does.
#[derive(Debug, Clone, Copy)]
pub struct CommandHelp {
    pub name: &'static str,
    pub arguments: &'static str,
    pub does: &'static str,
}

/// Every command, in the order help lists them.
pub const COMMANDS: &[CommandHelp] = &[
    CommandHelp {
        name: "/help",
        arguments: "",
        does: "these commands",
    },
    CommandHelp {
        name: "/tools",
        arguments: "[TEXT]",
        does: "the tools offered to the model (those whose name or description holds TEXT), and \
               those withheld and why",
    },
    CommandHelp {
        name: "/servers",
        arguments: "",
        does: "every configured server: state, transport, revision, tools",
    },
    CommandHelp {
        name: "/call",
        arguments: "SERVER__TOOL [key=value ... | JSON]",
        does: "call a tool yourself, with `key=value` arguments (read by its schema, as `nexo \
               call` reads them) or one JSON object",
    },
    CommandHelp {
        name: "/resources",
        arguments: "[SERVER]",
        does: "the servers' resources",
    },
    CommandHelp {
        name: "/read",
        arguments: "SERVER URI",
        does: "show a resource (write @SERVER:URI in a message to give it to the model)",
    },
    CommandHelp {
        name: "/prompts",
        arguments: "[SERVER]",
        does: "the servers' prompts",
    },
    CommandHelp {
        name: "/prompt",
        arguments: "SERVER__PROMPT [key=value ...]",
        does: "run a server's prompt as your next message",
    },
    CommandHelp {
        name: "/skills",
        arguments: "[TEXT]",
        does: "the servers' skills the model may load (those whose name or description holds \
               TEXT), and those withheld and why",
    },
    CommandHelp {
        name: "/skill",
        arguments: "SKILL [TEXT]",
        does: "load a skill yourself: its SKILL.md, checked, goes to the model with TEXT as \
               your next message",
    },
    CommandHelp {
        name: "/trace",
        arguments: "[on [FILE] | off]",
        does: "record every message to and from the servers in a trace file (`nexo trace summary \
               FILE` reads it); alone, where it goes",
    },
    CommandHelp {
        name: "/resume",
        arguments: "[ID]",
        does: "the saved conversations; with an ID, go on with that one",
    },
    CommandHelp {
        name: "/clear",
        arguments: "",
        does: "start the conversation afresh (the servers stay connected)",
    },
    CommandHelp {
        name: "/quit",
        arguments: "",
        does: "leave (also /exit, or Ctrl-D)",
    },
];

/// What a line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A message for the model, with the resources it attaches.
    Message {
        text: String,
        attachments: Vec<Attachment>,
    },
    Command(Command),
    /// Nothing typed.
    Empty,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Help,
    Tools {
        filter: Option<String>,
    },
    Servers,
    Call {
        tool: String,
        /// `key=value` words, or one JSON object, read against the tool's
        /// schema when it is called (nexo-client's `tool_arguments`).
        words: Vec<String>,
    },
    Resources {
        server: Option<String>,
    },
    Read {
        server: String,
        uri: String,
    },
    Prompts {
        server: Option<String>,
    },
    Prompt {
        prompt: String,
        arguments: Vec<(String, String)>,
    },
    Skills {
        filter: Option<String>,
    },
    Skill {
        skill: String,
        text: Option<String>,
    },
    Trace(TraceSwitch),
    Resume {
        id: Option<String>,
    },
    Clear,
    Quit,
}

/// What `/trace` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceSwitch {
    /// Say whether the trace is on, and where it goes.
    Show,
    /// Record from now on, to `file` or the conversation's own.
    On {
        file: Option<String>,
    },
    Off,
}

/// `@server:uri` in a message: that resource's contents go to the model
/// with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub server: String,
    pub uri: String,
}

/// A line that is no command, or a command written wrong: what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LineError {
    pub message: String,
}

fn usage(name: &str) -> LineError {
    let help = COMMANDS.iter().find(|command| command.name == name);
    LineError {
        message: match help {
            Some(help) => format!("write `{} {}`", help.name, help.arguments),
            None => format!("`{name}` is not a command; /help lists them"),
        },
    }
}

/// Reads a line. `//text` sends `/text` to the model.
pub fn parse(line: &str) -> Result<Line, LineError> {
    let line = line.trim();
    if line.is_empty() {
        return Ok(Line::Empty);
    }
    if let Some(escaped) = line.strip_prefix("//") {
        return Ok(message(&format!("/{escaped}")));
    }
    let Some(command) = line.strip_prefix('/') else {
        return Ok(message(line));
    };
    let (name, rest) = match command.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (command, ""),
    };
    let slash = format!("/{name}");
    let one_word = |rest: &str| -> Result<Option<String>, LineError> {
        match rest.split_whitespace().count() {
            0 => Ok(None),
            1 => Ok(Some(rest.to_owned())),
            _ => Err(usage(&slash)),
        }
    };
    let command = match name {
        "help" | "?" => Command::Help,
        "tools" => Command::Tools {
            filter: (!rest.is_empty()).then(|| rest.to_owned()),
        },
        "servers" => Command::Servers,
        "call" => {
            let (tool, given) = match rest.split_once(char::is_whitespace) {
                Some((tool, given)) => (tool, given.trim()),
                None => (rest, ""),
            };
            if tool.is_empty() {
                return Err(usage("/call"));
            }
            // One JSON object stays one word, its spaces and quotes its own;
            // `key=value` words are split as a shell splits them.
            let words = if given.is_empty() {
                Vec::new()
            } else if given.starts_with('{') {
                vec![given.to_owned()]
            } else {
                shell_words::split(given).map_err(|error| LineError {
                    message: format!(
                        "the arguments cannot be split ({error}): write `key=value` pairs, \
                         quoting a value with spaces (`text=\"a b\"`), or one JSON object"
                    ),
                })?
            };
            Command::Call {
                tool: tool.to_owned(),
                words,
            }
        }
        "resources" => Command::Resources {
            server: one_word(rest)?,
        },
        "read" => {
            let mut words = rest.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some(server), Some(uri), None) => Command::Read {
                    server: server.to_owned(),
                    uri: uri.to_owned(),
                },
                _ => return Err(usage("/read")),
            }
        }
        "prompts" => Command::Prompts {
            server: one_word(rest)?,
        },
        "prompt" => {
            let mut words = rest.split_whitespace();
            let Some(prompt) = words.next() else {
                return Err(usage("/prompt"));
            };
            let mut arguments = Vec::new();
            for word in words {
                let Some((key, value)) = word.split_once('=') else {
                    return Err(LineError {
                        message: format!(
                            "`{word}` is not `key=value`: give each argument of the prompt as `key=value`"
                        ),
                    });
                };
                arguments.push((key.to_owned(), value.to_owned()));
            }
            Command::Prompt {
                prompt: prompt.to_owned(),
                arguments,
            }
        }
        "skills" => Command::Skills {
            filter: (!rest.is_empty()).then(|| rest.to_owned()),
        },
        "skill" => match rest.split_once(char::is_whitespace) {
            _ if rest.is_empty() => return Err(usage("/skill")),
            Some((skill, text)) => Command::Skill {
                skill: skill.to_owned(),
                text: Some(text.trim().to_owned()),
            },
            None => Command::Skill {
                skill: rest.to_owned(),
                text: None,
            },
        },
        "trace" => {
            let mut words = rest.split_whitespace();
            Command::Trace(match (words.next(), words.next(), words.next()) {
                (None, _, _) => TraceSwitch::Show,
                (Some("on"), file, None) => TraceSwitch::On {
                    file: file.map(str::to_owned),
                },
                (Some("off"), None, _) => TraceSwitch::Off,
                _ => return Err(usage("/trace")),
            })
        }
        "resume" => Command::Resume {
            id: one_word(rest)?,
        },
        "clear" | "new" => Command::Clear,
        "quit" | "exit" | "q" => Command::Quit,
        _ => return Err(usage(&slash)),
    };
    Ok(Line::Command(command))
}

/// A message, with its `@server:uri` words as attachments. A word is one
/// when it starts with `@`, a server name without blanks follows, then
/// `:` and a URI with a scheme (`@files:file:///notes.md`); an address
/// (`@example.com`) or a handle is left as text.
fn message(text: &str) -> Line {
    let attachments = text
        .split_whitespace()
        .filter_map(|word| {
            let (server, uri) = word.strip_prefix('@')?.split_once(':')?;
            let uri = uri.trim_end_matches([',', '.', ';', ')', '?', '!']);
            let scheme = uri.split_once(':')?.0;
            let valid_scheme = scheme
                .chars()
                .next()
                .is_some_and(|first| first.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            (!server.is_empty() && valid_scheme).then(|| Attachment {
                server: server.to_owned(),
                uri: uri.to_owned(),
            })
        })
        .collect();
    Line::Message {
        text: text.to_owned(),
        attachments,
    }
}

/// The command names that complete `start` (`/to` → `/tools`).
pub fn complete_command(start: &str) -> Vec<&'static str> {
    COMMANDS
        .iter()
        .map(|command| command.name)
        .filter(|name| name.starts_with(start))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(line: &str) -> Command {
        match parse(line) {
            Ok(Line::Command(command)) => command,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn commands_are_read() {
        assert_eq!(command("/help"), Command::Help);
        assert_eq!(command("/trace"), Command::Trace(TraceSwitch::Show));
        assert_eq!(
            command("/trace on"),
            Command::Trace(TraceSwitch::On { file: None })
        );
        assert_eq!(
            command("/trace on /tmp/t.jsonl"),
            Command::Trace(TraceSwitch::On {
                file: Some("/tmp/t.jsonl".into())
            })
        );
        assert_eq!(command("/trace off"), Command::Trace(TraceSwitch::Off));
        for wrong in ["/trace maybe", "/trace off now", "/trace on a b"] {
            assert!(parse(wrong).is_err(), "{wrong}");
        }
        assert_eq!(command("  /tools  "), Command::Tools { filter: None });
        assert_eq!(
            command("/tools dns"),
            Command::Tools {
                filter: Some("dns".into())
            }
        );
        assert_eq!(
            command(r#"/call utils__echo {"text": "a b"}"#),
            Command::Call {
                tool: "utils__echo".into(),
                words: vec![r#"{"text": "a b"}"#.into()]
            }
        );
        assert_eq!(
            command(r#"/call utils__echo text="a b" times=2"#),
            Command::Call {
                tool: "utils__echo".into(),
                words: vec!["text=a b".into(), "times=2".into()]
            }
        );
        assert_eq!(
            command("/call utils__time"),
            Command::Call {
                tool: "utils__time".into(),
                words: Vec::new()
            }
        );
        assert_eq!(
            command("/read files file:///a%20b.md"),
            Command::Read {
                server: "files".into(),
                uri: "file:///a%20b.md".into()
            }
        );
        assert_eq!(
            command("/prompt dns__review dominio=example.com level=2"),
            Command::Prompt {
                prompt: "dns__review".into(),
                arguments: vec![
                    ("dominio".into(), "example.com".into()),
                    ("level".into(), "2".into())
                ]
            }
        );
        assert_eq!(command("/exit"), Command::Quit);
        assert_eq!(
            command("/skill shelf__review check my last commit"),
            Command::Skill {
                skill: "shelf__review".into(),
                text: Some("check my last commit".into())
            }
        );
        assert_eq!(
            command("/skill review"),
            Command::Skill {
                skill: "review".into(),
                text: None
            }
        );
        assert_eq!(command("/skills"), Command::Skills { filter: None });
        assert_eq!(
            command("/resources music"),
            Command::Resources {
                server: Some("music".into())
            }
        );
    }

    #[test]
    fn mistakes_say_what_to_write() {
        for (line, said) in [
            ("/call", "write `/call SERVER__TOOL [key=value ... | JSON]`"),
            ("/call x text=\"a", "cannot be split"),
            ("/read files", "write `/read SERVER URI`"),
            ("/prompt p word", "`word` is not `key=value`"),
            ("/resources a b", "write `/resources [SERVER]`"),
            ("/skill", "write `/skill SKILL [TEXT]`"),
            (
                "/frobnicate",
                "`/frobnicate` is not a command; /help lists them",
            ),
        ] {
            match parse(line) {
                Err(error) => assert!(error.message.contains(said), "{line}: {error}"),
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    #[test]
    fn messages_carry_their_attachments() {
        assert_eq!(parse("   "), Ok(Line::Empty));
        assert_eq!(
            parse("summarise @files:file:///notes.md, please; mail me@example.com or @bob"),
            Ok(Line::Message {
                text: "summarise @files:file:///notes.md, please; mail me@example.com or @bob"
                    .into(),
                attachments: vec![Attachment {
                    server: "files".into(),
                    uri: "file:///notes.md".into()
                }],
            })
        );
        assert_eq!(
            parse("//tools is a path"),
            Ok(Line::Message {
                text: "/tools is a path".into(),
                attachments: Vec::new()
            })
        );
    }

    #[test]
    fn command_names_complete() {
        assert_eq!(complete_command("/to"), ["/tools"]);
        assert_eq!(complete_command("/pr"), ["/prompts", "/prompt"]);
        assert_eq!(complete_command("/sk"), ["/skills", "/skill"]);
        assert!(complete_command("/z").is_empty());
    }
}
