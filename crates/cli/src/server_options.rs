//! The bundled servers' options on the command line: `nexo serve`'s flags
//! (and the files server's ROOT arguments) made at run time from
//! nexo-bundled's description of each server's options, read back into
//! its [`GivenOptions`], and written out again as flags for the child
//! `nexo serve` that `nexo check` runs. Which options exist, their help
//! and what they mean are nexo-bundled's; this module knows only how a
//! [`Kind`] of value looks on the command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::ValueParser;
use clap::{Arg, ArgAction, ArgMatches, Command};
use nexo_bundled::{Bundled, GivenOptions, Kind, ServerOption, Value};

/// Every bundled server's options, as `nexo serve` read them.
#[derive(Debug, Clone, Default)]
pub struct ServerOptionArgs(pub GivenOptions);

/// Every option of every bundled server.
fn all() -> impl Iterator<Item = &'static ServerOption> {
    Bundled::ALL.iter().flat_map(|server| server.options())
}

/// The clap argument of `option`, its id the configuration key.
fn arg(option: &'static ServerOption) -> Arg {
    let mut arg = Arg::new(option.key).help(option.help());
    if let Some(flag) = option.flag {
        arg = arg.long(flag);
    } else {
        arg = arg.help_heading(None::<&str>);
    }
    if let Some(name) = option.value_name {
        arg = arg.value_name(name);
    }
    let parser = match option.kind {
        Kind::Text | Kind::List { .. } => ValueParser::string(),
        Kind::File | Kind::Directories => ValueParser::path_buf(),
        Kind::Seconds => ValueParser::new(crate::args::positive_seconds),
        Kind::Port => clap::value_parser!(u16).into(),
        Kind::Switch => return arg.action(ArgAction::SetTrue),
    };
    arg = arg.value_parser(parser);
    match option.kind {
        Kind::List { .. } => arg.action(ArgAction::Append).value_delimiter(','),
        Kind::Directories => arg.action(ArgAction::Append),
        _ => arg.action(ArgAction::Set),
    }
}

impl clap::Args for ServerOptionArgs {
    fn augment_args(mut command: Command) -> Command {
        let heading: Option<clap::builder::Str> =
            command.get_next_help_heading().map(|h| h.to_owned().into());
        for server in Bundled::ALL {
            if server.options().is_empty() {
                continue;
            }
            command = command.next_help_heading(format!("Options of `nexo serve {server}`"));
            command = command.args(server.options().iter().map(arg));
        }
        command.next_help_heading(clap::builder::Resettable::from(heading))
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl clap::FromArgMatches for ServerOptionArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = GivenOptions::default();
        for option in all() {
            if let Some(value) = read(matches, option)? {
                given.give(option, value);
            }
        }
        Ok(Self(given))
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// The value of `option` in `matches`, if given.
fn read(matches: &ArgMatches, option: &ServerOption) -> Result<Option<Value>, clap::Error> {
    let id = option.key;
    let wrong = |error: clap::parser::MatchesError| {
        clap::Error::raw(clap::error::ErrorKind::ArgumentConflict, error.to_string())
    };
    Ok(match option.kind {
        Kind::Text => matches
            .try_get_one::<String>(id)
            .map_err(wrong)?
            .cloned()
            .map(Value::Text),
        Kind::File => matches
            .try_get_one::<PathBuf>(id)
            .map_err(wrong)?
            .cloned()
            .map(Value::File),
        Kind::Seconds => matches
            .try_get_one::<Duration>(id)
            .map_err(wrong)?
            .copied()
            .map(Value::Seconds),
        Kind::Port => matches
            .try_get_one::<u16>(id)
            .map_err(wrong)?
            .copied()
            .map(Value::Port),
        Kind::List { .. } => matches
            .try_get_many::<String>(id)
            .map_err(wrong)?
            .map(|texts| Value::List(texts.cloned().collect())),
        Kind::Directories => matches
            .try_get_many::<PathBuf>(id)
            .map_err(wrong)?
            .map(|paths| Value::Directories(paths.cloned().collect())),
        Kind::Switch => matches
            .try_get_one::<bool>(id)
            .map_err(wrong)?
            .copied()
            .and_then(|on| on.then_some(Value::On)),
    })
}

/// `nexo serve`'s arguments for `given` (the inverse of reading them):
/// the files server's roots first, then each option that is set, in the
/// order help lists them.
pub fn serve_flags(given: &GivenOptions) -> Vec<String> {
    let text = |path: &std::path::Path| path.to_string_lossy().into_owned();
    let mut arguments = Vec::new();
    let mut flags = Vec::new();
    for option in all() {
        let Some(value) = given.value(option.key) else {
            continue;
        };
        let shown = match value {
            Value::Text(text) => Some(text.clone()),
            Value::File(path) => Some(text(path)),
            Value::Seconds(duration) => Some(duration.as_secs_f64().to_string()),
            Value::Port(port) => Some(port.to_string()),
            Value::List(texts) => Some(texts.join(",")),
            Value::Directories(paths) => {
                arguments.extend(paths.iter().map(|path| text(path)));
                continue;
            }
            Value::On => None,
        };
        if let Some(flag) = option.flag {
            flags.push(format!("--{flag}"));
            flags.extend(shown);
        }
    }
    arguments.extend(flags);
    arguments
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use clap::{Args, FromArgMatches};

    use super::*;

    /// Every option written as `nexo serve`'s flags, read back the same.
    #[test]
    fn every_option_becomes_its_serve_flag_and_back() {
        let mut given = GivenOptions::default();
        let values = [
            ("resolver", Value::Text("127.0.0.1:53".to_owned())),
            ("dnsTimeout", Value::Seconds(Duration::from_millis(2500))),
            ("authPort", Value::Port(5353)),
            (
                "rootHints",
                Value::List(vec!["1.2.3.4".to_owned(), "5.6.7.8".to_owned()]),
            ),
            (
                "roots",
                Value::Directories(vec!["/srv/a".into(), "/srv/b".into()]),
            ),
            ("allowReports", Value::On),
            (
                "allowExt",
                Value::List(vec!["md".to_owned(), "txt".to_owned()]),
            ),
            ("allowHardLinks", Value::On),
            ("db", Value::File("/tmp/music.db".into())),
        ];
        assert_eq!(values.len(), all().count());
        for (key, value) in values {
            let option = all().find(|option| option.key == key).unwrap();
            given.give(option, value);
        }
        let flags = serve_flags(&given);
        assert_eq!(
            flags,
            [
                "/srv/a",
                "/srv/b",
                "--resolver",
                "127.0.0.1:53",
                "--timeout",
                "2.5",
                "--auth-port",
                "5353",
                "--root-hints",
                "1.2.3.4,5.6.7.8",
                "--allow-reports",
                "--allow-ext",
                "md,txt",
                "--allow-hard-links",
                "--db",
                "/tmp/music.db"
            ]
        );
        assert!(serve_flags(&GivenOptions::default()).is_empty());

        let command = ServerOptionArgs::augment_args(Command::new("serve"));
        let matches = command
            .try_get_matches_from(std::iter::once("serve".to_owned()).chain(flags))
            .unwrap();
        let read = ServerOptionArgs::from_arg_matches(&matches).unwrap().0;
        for option in all() {
            assert_eq!(read.value(option.key), given.value(option.key));
        }
    }
}
