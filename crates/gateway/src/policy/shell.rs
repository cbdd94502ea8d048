//! The shell matcher: what in a text would make a POSIX shell do more than
//! run one harmless command: command substitution (`$(...)`, backquotes,
//! `<(...)`, `${...}`), chaining (`;`, `&&`, `||`, `|`, `&`, a new line),
//! redirection (`>`, `<`) and known dangerous commands (`rm`, `curl`,
//! `sudo`, `mkfs`, a fork bomb...), each found outside the quotes that
//! would disarm it (inside double quotes, substitution still counts).
//!
//! The scan is by hand: no crate reports these hazards; shell-words
//! splits each command into words as the shell would, to find its name.

use serde::{Deserialize, Serialize};

/// One kind of thing a shell would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShellHazard {
    Substitution,
    Chaining,
    Redirection,
    DangerousCommand,
}

impl ShellHazard {
    pub fn name(self) -> &'static str {
        match self {
            Self::Substitution => "substitution",
            Self::Chaining => "chaining",
            Self::Redirection => "redirection",
            Self::DangerousCommand => "dangerous_command",
        }
    }
}

/// A hazard found, with the text that shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub hazard: ShellHazard,
    pub what: String,
}

/// Commands that delete, overwrite, escalate, reach the network or run
/// other code.
const DANGEROUS: &[&str] = &[
    "rm",
    "rmdir",
    "shred",
    "dd",
    "mkfs",
    "fdisk",
    "parted",
    "wipefs",
    "chmod",
    "chown",
    "chattr",
    "sudo",
    "su",
    "doas",
    "curl",
    "wget",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "ssh",
    "scp",
    "sftp",
    "rsync",
    "ftp",
    "tftp",
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "eval",
    "exec",
    "source",
    "kill",
    "killall",
    "pkill",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "systemctl",
    "crontab",
    "at",
    "iptables",
    "nft",
    "mount",
    "umount",
    "useradd",
    "userdel",
    "usermod",
    "passwd",
    "visudo",
    "insmod",
    "modprobe",
    "nohup",
    "python",
    "python3",
    "perl",
    "ruby",
    "node",
    "php",
    "lua",
    "docker",
    "kubectl",
];

/// Words that run the command after them.
const WRAPPERS: &[&str] = &[
    "env", "time", "command", "nice", "ionice", "xargs", "timeout", "builtin",
];

/// Every hazard in `text`, in the order found, each kind once per
/// distinct sign.
pub fn scan(text: &str) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut note = |hazard: ShellHazard, what: &str| {
        if !found.iter().any(|f| f.hazard == hazard && f.what == what) {
            found.push(Found {
                hazard,
                what: what.to_owned(),
            });
        }
    };
    let chars: Vec<char> = text.chars().collect();
    let mut segments: Vec<String> = vec![String::new()];
    let mut single = false;
    let mut double = false;
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        let next = chars.get(index + 1).copied();
        let mut split = false;
        if single {
            if c == '\'' {
                single = false;
            }
        } else if c == '\\' {
            if let (Some(escaped), Some(segment)) = (next, segments.last_mut()) {
                segment.push(c);
                segment.push(escaped);
            }
            index += 2;
            continue;
        } else {
            match (c, next) {
                ('$', Some('(')) => note(ShellHazard::Substitution, "$("),
                ('$', Some('{')) => note(ShellHazard::Substitution, "${"),
                ('`', _) => note(ShellHazard::Substitution, "`"),
                ('"', _) => double = !double,
                _ if double => {}
                ('\'', _) => single = true,
                ('<' | '>', Some('(')) => note(ShellHazard::Substitution, "process substitution"),
                (';', _) => {
                    note(ShellHazard::Chaining, ";");
                    split = true;
                }
                ('\n' | '\r', _) => {
                    note(ShellHazard::Chaining, "a new line");
                    split = true;
                }
                ('&', Some('&')) | ('|', Some('|')) => {
                    note(ShellHazard::Chaining, if c == '&' { "&&" } else { "||" });
                    index += 1;
                    split = true;
                }
                ('|', _) => {
                    note(ShellHazard::Chaining, "|");
                    split = true;
                }
                ('&', _) if index > 0 && matches!(chars[index - 1], '>' | '<') => {}
                ('&', _) => {
                    note(ShellHazard::Chaining, "&");
                    split = true;
                }
                ('>' | '<', _) => note(ShellHazard::Redirection, &c.to_string()),
                _ => {}
            }
        }
        if split {
            segments.push(String::new());
        } else if let Some(segment) = segments.last_mut() {
            segment.push(c);
        }
        index += 1;
    }
    if text.contains(":(){") || text.contains(":() {") {
        note(ShellHazard::DangerousCommand, "a fork bomb");
    }
    for segment in &segments {
        if let Some(name) = command_name(segment)
            && DANGEROUS.contains(&name.as_str())
        {
            note(ShellHazard::DangerousCommand, &name);
        }
    }
    found
}

/// The name of the command a segment runs: assignments (`A=b`) and
/// wrappers (`env`, `nohup`...) with their options skipped, the directory
/// dropped (`/bin/rm` is `rm`), a version suffix too (`python3.12`).
fn command_name(segment: &str) -> Option<String> {
    let words = shell_words::split(segment)
        .unwrap_or_else(|_| segment.split_whitespace().map(str::to_owned).collect());
    let mut after_wrapper = false;
    for word in words {
        let word = word.trim_start_matches(['(', '{', '!']);
        if word.is_empty() || (after_wrapper && word.starts_with('-')) {
            continue;
        }
        if word.contains('=') && !word.starts_with('=') && !word.contains('/') {
            continue;
        }
        let base = word.rsplit('/').next().unwrap_or(word).to_ascii_lowercase();
        if WRAPPERS.contains(&base.as_str()) {
            after_wrapper = true;
            continue;
        }
        let trimmed = base
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
            .to_owned();
        let name = if DANGEROUS.contains(&trimmed.as_str()) || trimmed.starts_with("mkfs") {
            if trimmed.starts_with("mkfs") {
                "mkfs".to_owned()
            } else {
                trimmed
            }
        } else {
            base
        };
        return Some(name);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<ShellHazard> {
        scan(text).into_iter().map(|found| found.hazard).collect()
    }

    #[test]
    fn plain_commands_and_quoted_signs_are_harmless() {
        for text in [
            "ls -la /tmp",
            "grep 'a;b|c' file.txt",
            "echo 'rm -rf / $(whoami)'",
            "cat notes.txt",
            "The meeting is at 3 o'clock",
        ] {
            assert!(kinds(text).is_empty(), "{text}: {:?}", scan(text));
        }
    }

    #[test]
    fn hazards_are_found_outside_quotes() {
        let table: [(&str, &[ShellHazard]); 8] = [
            ("echo $(id)", &[ShellHazard::Substitution]),
            ("echo \"`id`\"", &[ShellHazard::Substitution]),
            ("ls; id", &[ShellHazard::Chaining]),
            (
                "cat a | sh",
                &[ShellHazard::Chaining, ShellHazard::DangerousCommand],
            ),
            ("echo x > /etc/passwd", &[ShellHazard::Redirection]),
            ("rm -rf /", &[ShellHazard::DangerousCommand]),
            (
                "FOO=1 /usr/bin/curl http://x",
                &[ShellHazard::DangerousCommand],
            ),
            ("env -i python3.12 -c 'x'", &[ShellHazard::DangerousCommand]),
        ];
        for (text, expected) in table {
            assert_eq!(kinds(text), expected, "{text}");
        }
    }
}
