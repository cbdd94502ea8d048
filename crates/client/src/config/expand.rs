//! Variables in configuration strings. What Claude Code expands, `${VAR}`
//! and `${VAR:-default}` (the default also when `VAR` is empty, as in a
//! shell), and what VS Code's files use: `${env:VAR}`, `${workspaceFolder}`
//! (and its old name `${workspaceRoot}`), `${workspaceFolderBasename}`,
//! `${userHome}`, `${pathSeparator}` and `${/}`. `$${` writes a literal
//! `${`; any other `$` is kept as it is (`$VAR` is not expanded, as in
//! Claude Code). Defaults are literal text: nested variables are refused.
//!
//! What cannot be filled in outside an editor is refused by name: VS Code's
//! `${input:id}` (a prompt), `${config:...}`, `${command:...}` and, in VS
//! Code's files, the names of the open editor (`${file}`, ...).
//!
//! Hand-written: the crates that expand shell-style variables read the
//! process's environment themselves or take other syntaxes, and every
//! problem must come back with its offset in the string.

use std::collections::BTreeMap;
use std::path::{MAIN_SEPARATOR_STR, Path};

/// What variables expand to.
pub(crate) struct Vars<'a> {
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// `${workspaceFolder}`.
    pub workspace: &'a Path,
    /// `${userHome}`.
    pub home: Option<&'a Path>,
    /// VS Code's file: its editor-only names are refused rather than read
    /// from the environment.
    pub vscode: bool,
    /// VS Code's `inputs`: each id with its description, for the hint.
    pub inputs: &'a BTreeMap<String, Option<String>>,
}

/// A variable that cannot be expanded, at a byte offset in the string.
#[derive(Debug)]
pub(crate) struct Problem {
    pub offset: usize,
    pub message: String,
    pub hint: Option<String>,
    /// Only the value is missing (an unset variable, an input): a lenient
    /// expansion keeps the text as written instead.
    pub unset: bool,
}

/// VS Code's variables that name what is open in the editor.
const EDITOR_ONLY: &[&str] = &[
    "file",
    "fileBasename",
    "fileBasenameNoExtension",
    "fileDirname",
    "fileDirnameBasename",
    "fileExtname",
    "fileWorkspaceFolder",
    "relativeFile",
    "relativeFileDirname",
    "lineNumber",
    "columnNumber",
    "selectedText",
    "cwd",
    "execPath",
    "defaultBuildTask",
];

/// `text` with its variables expanded. `lenient` keeps an unset variable
/// (or an input) as written instead of refusing it. The values taken from
/// the environment are added to `from_env`, for the caller to keep out of
/// what it shows.
pub(crate) fn expand(
    text: &str,
    vars: &Vars<'_>,
    lenient: bool,
    from_env: &mut Vec<String>,
) -> Result<String, Problem> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(found) = text[at..].find('$') {
        let start = at + found;
        out.push_str(&text[at..start]);
        let tail = &text[start..];
        if tail.starts_with("$${") {
            out.push_str("${");
            at = start + 3;
            continue;
        }
        if !tail.starts_with("${") {
            out.push('$');
            at = start + 1;
            continue;
        }
        let Some(close) = tail.find('}') else {
            return Err(Problem {
                offset: start,
                message: "a `${` is not closed".to_owned(),
                hint: Some("close the variable with `}`, or write `$${` for a literal `${`".into()),
                unset: false,
            });
        };
        let written = &tail[..=close];
        match resolve(&tail[2..close], vars) {
            Ok(Value::Plain(value)) => out.push_str(&value),
            Ok(Value::FromEnv(value)) => {
                out.push_str(&value);
                from_env.push(value);
            }
            Err(problem) if problem.unset && lenient => out.push_str(written),
            Err(problem) => {
                return Err(Problem {
                    offset: start,
                    ..problem
                });
            }
        }
        at = start + close + 1;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// What a variable expands to.
enum Value {
    /// A value from the environment, perhaps a secret.
    FromEnv(String),
    /// A directory, a separator, a default written in the file.
    Plain(String),
}

/// The value of the variable written `${inner}`.
fn resolve(inner: &str, vars: &Vars<'_>) -> Result<Value, Problem> {
    let problem = |message: String, hint: Option<String>| Problem {
        offset: 0,
        message,
        hint,
        unset: false,
    };
    if inner.is_empty() {
        return Err(problem(
            "`${}` names no variable".into(),
            Some("write `${NAME}` or `${NAME:-default}`".into()),
        ));
    }
    if let Some(id) = inner.strip_prefix("input:") {
        return Err(input(id, vars));
    }
    if let Some(name) = inner.strip_prefix("env:") {
        check_name(name, inner)?;
        return match (vars.env)(name) {
            Some(value) => Ok(Value::FromEnv(value)),
            None => Err(unset(name, inner)),
        };
    }
    match inner {
        "workspaceFolder" | "workspaceRoot" => {
            return Ok(Value::Plain(vars.workspace.display().to_string()));
        }
        "workspaceFolderBasename" => {
            return Ok(Value::Plain(
                vars.workspace
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            ));
        }
        "userHome" => {
            return match vars.home {
                Some(home) => Ok(Value::Plain(home.display().to_string())),
                None => Err(problem(
                    "`${userHome}` cannot be expanded: the home directory is not known".into(),
                    Some("write the directory itself".into()),
                )),
            };
        }
        "pathSeparator" | "/" => return Ok(Value::Plain(MAIN_SEPARATOR_STR.to_owned())),
        _ => {}
    }
    if let Some((kind, _)) = inner.split_once(':')
        && ["config", "command", "extensionInstallFolder"].contains(&kind)
    {
        return Err(problem(
            format!("`${{{inner}}}` is a VS Code variable that only the editor can fill in"),
            Some(
                "write the value itself, or take it from an environment variable: `${NAME}`".into(),
            ),
        ));
    }
    if vars.vscode && EDITOR_ONLY.contains(&inner) {
        return Err(problem(
            format!("`${{{inner}}}` names what is open in VS Code, which nexo has not"),
            Some(
                "write the path itself, or `${workspaceFolder}` for the project's directory".into(),
            ),
        ));
    }
    if let Some((name, default)) = inner.split_once(":-") {
        check_name(name, inner)?;
        if default.contains("${") {
            return Err(problem(
                format!("`${{{inner}}}}}`: a default cannot hold another variable"),
                Some(format!(
                    "write the default as plain text: `${{{name}:-value}}`"
                )),
            ));
        }
        return Ok(match (vars.env)(name) {
            Some(value) if !value.is_empty() => Value::FromEnv(value),
            _ => Value::Plain(default.to_owned()),
        });
    }
    check_name(inner, inner)?;
    match (vars.env)(inner) {
        Some(value) => Ok(Value::FromEnv(value)),
        None => Err(unset(inner, inner)),
    }
}

/// Whether `name` can name an environment variable.
fn check_name(name: &str, inner: &str) -> Result<(), Problem> {
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        return Ok(());
    }
    Err(Problem {
        offset: 0,
        message: format!("`${{{inner}}}` is not a variable nexo can expand"),
        hint: Some(
            "write `${NAME}` or `${NAME:-default}`, NAME made of letters, digits and `_`".into(),
        ),
        unset: false,
    })
}

fn unset(name: &str, inner: &str) -> Problem {
    Problem {
        offset: 0,
        message: format!("the environment variable `{name}` is not set"),
        hint: Some(if inner.starts_with("env:") {
            format!("set `{name}` in the environment nexo runs in")
        } else {
            format!("set `{name}` in the environment, or give a default: `${{{name}:-value}}`")
        }),
        unset: true,
    }
}

/// VS Code's `${input:id}`: a value the editor prompts for.
fn input(id: &str, vars: &Vars<'_>) -> Problem {
    let variable: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    let described = match vars.inputs.get(id) {
        Some(Some(description)) => format!(" (the input asks for: {description})"),
        Some(None) => String::new(),
        None => " (and no input of that id is declared)".to_owned(),
    };
    Problem {
        offset: 0,
        message: format!(
            "`${{input:{id}}}` is a value VS Code prompts for, which nexo cannot do{described}"
        ),
        hint: Some(format!(
            "set an environment variable and write `${{{variable}}}` instead"
        )),
        unset: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("tok".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    fn vars(vscode: bool) -> (BTreeMap<String, Option<String>>, bool) {
        let mut inputs = BTreeMap::new();
        inputs.insert("api-key".to_owned(), Some("GitHub token".to_owned()));
        (inputs, vscode)
    }

    fn run(text: &str, vscode: bool, lenient: bool) -> Result<String, Problem> {
        let (inputs, vscode) = vars(vscode);
        let vars = Vars {
            env: &env,
            workspace: Path::new("/work/project"),
            home: Some(Path::new("/home/ana")),
            vscode,
            inputs: &inputs,
        };
        expand(text, &vars, lenient, &mut Vec::new())
    }

    #[test]
    fn variables_expand() -> Result<(), Problem> {
        let cases = [
            ("Bearer ${TOKEN}", "Bearer tok"),
            ("${TOKEN:-x}", "tok"),
            ("${MISSING:-fallback value}", "fallback value"),
            ("${EMPTY:-default}", "default"),
            ("${EMPTY}", ""),
            ("${env:TOKEN}", "tok"),
            ("${workspaceFolder}/src", "/work/project/src"),
            ("${workspaceRoot}", "/work/project"),
            ("${workspaceFolderBasename}", "project"),
            ("${userHome}/.npmrc", "/home/ana/.npmrc"),
            ("a${/}b", &format!("a{MAIN_SEPARATOR_STR}b")),
            ("$HOME and $ alone", "$HOME and $ alone"),
            ("literal $${TOKEN}", "literal ${TOKEN}"),
            ("${TOKEN}${TOKEN}", "toktok"),
            ("ñ ${TOKEN} ñ", "ñ tok ñ"),
            ("${file}", ""),
        ];
        for (text, expanded) in cases {
            if text == "${file}" {
                // In an `mcpServers` file `file` is just a variable's name.
                assert!(run(text, false, false).is_err_and(|p| p.unset));
                continue;
            }
            assert_eq!(run(text, false, false)?, expanded, "{text}");
        }
        Ok(())
    }

    #[test]
    fn problems_name_the_variable_and_where_it_is() {
        let cases = [
            ("x ${MISSING}", 2, "`MISSING` is not set", true),
            ("${env:MISSING}", 0, "`MISSING` is not set", true),
            ("ab ${input:api-key}", 3, "GitHub token", true),
            ("${input:other}", 0, "no input of that id", true),
            ("ok ${TOKEN", 3, "not closed", false),
            ("${}", 0, "names no variable", false),
            ("${A-b}", 0, "not a variable nexo can expand", false),
            ("${A:=b}", 0, "not a variable nexo can expand", false),
            ("${1A}", 0, "not a variable nexo can expand", false),
            ("${A:-${B}}", 0, "cannot hold another variable", false),
            ("${config:editor.tabSize}", 0, "only the editor", false),
            ("${command:pick}", 0, "only the editor", false),
        ];
        for (text, offset, message, unset) in cases {
            match run(text, false, false) {
                Err(problem) => {
                    assert_eq!(problem.offset, offset, "{text}");
                    assert!(problem.message.contains(message), "{text}: {problem:?}");
                    assert_eq!(problem.unset, unset, "{text}");
                    assert!(problem.hint.is_some(), "{text}");
                }
                Ok(value) => panic!("{text} expanded to {value}"),
            }
        }
        let input = run("${input:api-key}", false, false).err();
        assert!(input.is_some_and(|p| p.hint.is_some_and(|h| h.contains("`${API_KEY}`"))));
        let editor = run("${file}", true, false).err();
        assert!(editor.is_some_and(|p| p.message.contains("open in VS Code")));
    }

    #[test]
    fn values_from_the_environment_are_told() -> Result<(), Problem> {
        let (inputs, vscode) = vars(false);
        let vars = Vars {
            env: &env,
            workspace: Path::new("/w"),
            home: None,
            vscode,
            inputs: &inputs,
        };
        let mut from_env = Vec::new();
        let text = "${TOKEN} ${workspaceFolder} ${MISSING:-d} ${env:TOKEN}";
        assert_eq!(expand(text, &vars, false, &mut from_env)?, "tok /w d tok");
        assert_eq!(from_env, ["tok", "tok"]);
        Ok(())
    }

    #[test]
    fn lenient_expansion_keeps_what_is_unset() -> Result<(), Problem> {
        assert_eq!(
            run("${TOKEN} ${MISSING} ${input:api-key}", false, true)?,
            "tok ${MISSING} ${input:api-key}"
        );
        assert!(run("${A-b}", false, true).is_err());
        Ok(())
    }
}
