//! Which files may be read: an allowlist of extensions, compared without
//! regard to case. The default covers common source, configuration and
//! documentation formats plus a few well-known names without an extension
//! (`Makefile`, `Dockerfile`, `LICENSE`, ...). It leaves out dotfiles such as
//! `.env` or `.npmrc`, which often hold secrets, and key or certificate
//! files. `--allow-ext` replaces the whole list; `*` allows any name.

use std::collections::BTreeSet;

use crate::error::OptionsError;

/// The default extensions: source code, configuration, documentation.
const DEFAULT_EXTENSIONS: &[&str] = &[
    // Seed 004's own list.
    "java",
    "xml",
    "md",
    "properties",
    "yml",
    "yaml",
    // Source code.
    "rs",
    "kt",
    "kts",
    "scala",
    "groovy",
    "go",
    "py",
    "pyi",
    "rb",
    "php",
    "js",
    "mjs",
    "cjs",
    "jsx",
    "ts",
    "mts",
    "cts",
    "tsx",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "hxx",
    "cs",
    "fs",
    "fsx",
    "swift",
    "m",
    "mm",
    "r",
    "jl",
    "lua",
    "pl",
    "pm",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "sql",
    "ex",
    "exs",
    "erl",
    "hrl",
    "hs",
    "ml",
    "mli",
    "clj",
    "cljs",
    "dart",
    "vue",
    "svelte",
    "elm",
    "zig",
    "nim",
    "proto",
    "graphql",
    "gql",
    "html",
    "htm",
    "css",
    "scss",
    "sass",
    "less",
    "cmake",
    "mk",
    "gradle",
    "bzl",
    "nix",
    "tf",
    "hcl",
    // Configuration.
    "json",
    "jsonc",
    "json5",
    "toml",
    "ini",
    "cfg",
    "conf",
    "lock",
    "xsd",
    "wsdl",
    // Documentation and plain text.
    "markdown",
    "rst",
    "txt",
    "adoc",
    "asciidoc",
    "org",
    "tex",
    "csv",
    "tsv",
    "svg",
];

/// Names without an extension that the default list allows.
const DEFAULT_NAMES: &[&str] = &[
    "Makefile",
    "GNUmakefile",
    "Dockerfile",
    "Containerfile",
    "Jenkinsfile",
    "Rakefile",
    "Gemfile",
    "Procfile",
    "Vagrantfile",
    "LICENSE",
    "README",
    "CHANGELOG",
    "COPYING",
    "NOTICE",
    "AUTHORS",
    "CODEOWNERS",
];

/// The files a server reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedExtensions {
    /// Any name.
    Any,
    /// Names whose extension (lower case) is in `extensions`, or that are one
    /// of `names` exactly.
    Listed {
        extensions: BTreeSet<String>,
        names: BTreeSet<String>,
    },
}

impl Default for AllowedExtensions {
    fn default() -> Self {
        AllowedExtensions::Listed {
            extensions: DEFAULT_EXTENSIONS.iter().map(|e| (*e).to_owned()).collect(),
            names: DEFAULT_NAMES.iter().map(|n| (*n).to_owned()).collect(),
        }
    }
}

impl AllowedExtensions {
    /// The list `--allow-ext` gives: extensions with or without their dot
    /// (`rs`, `.md`), or `*` for any name. Replaces the default entirely.
    pub fn from_list<S: AsRef<str>>(items: &[S]) -> Result<Self, OptionsError> {
        let mut extensions = BTreeSet::new();
        for item in items {
            let item = item.as_ref().trim();
            if item == "*" {
                return Ok(AllowedExtensions::Any);
            }
            let extension = item.strip_prefix('.').unwrap_or(item);
            let usable = !extension.is_empty()
                && !extension.contains(['.', '/', '\\', '\0', '*'])
                && !extension.chars().any(char::is_whitespace);
            if !usable {
                return Err(OptionsError::BadExtension(item.to_owned()));
            }
            extensions.insert(extension.to_lowercase());
        }
        if extensions.is_empty() {
            return Err(OptionsError::BadExtension(String::new()));
        }
        Ok(AllowedExtensions::Listed {
            extensions,
            names: BTreeSet::new(),
        })
    }

    /// Whether a file called `name` may be read.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            AllowedExtensions::Any => true,
            AllowedExtensions::Listed { extensions, names } => match extension(name) {
                Some(extension) => extensions.contains(&extension.to_lowercase()),
                None => names.contains(name),
            },
        }
    }
}

/// What a refused file is, for the error message: `.exe`, or `extensionless`.
pub fn kind_of(name: &str) -> String {
    match extension(name) {
        Some(extension) => format!("`.{extension}`"),
        None if name.starts_with('.') => format!("dotfile (`{name}`)"),
        None => format!("extensionless (`{name}`)"),
    }
}

/// The text after the last dot, unless that dot starts the name
/// (`.gitignore` has none) or ends it.
fn extension(name: &str) -> Option<&str> {
    let (stem, extension) = name.rsplit_once('.')?;
    (!stem.is_empty() && !extension.is_empty()).then_some(extension)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_allows_source_and_documentation_and_refuses_secrets() {
        let allowed = AllowedExtensions::default();
        for name in [
            "App.java",
            "pom.xml",
            "README.md",
            "a.properties",
            "c.yml",
            "d.YAML",
            "lib.rs",
            "Makefile",
            "Cargo.lock",
            "notes.txt",
        ] {
            assert!(allowed.allows(name), "{name}");
        }
        for name in [
            ".env",
            ".npmrc",
            "id_rsa",
            "key.pem",
            "App.class",
            "app.jar",
            "a.exe",
            "x.md.",
            ".md",
            "makefile",
        ] {
            assert!(!allowed.allows(name), "{name}");
        }
    }

    #[test]
    fn the_readme_lists_the_default() {
        let words: BTreeSet<&str> = crate::readme::section("## Which files are read")
            .split(|c: char| c.is_whitespace() || "`();:,.".contains(c))
            .collect();
        for item in DEFAULT_EXTENSIONS.iter().chain(DEFAULT_NAMES) {
            assert!(
                words.contains(item),
                "servers/files/README.md does not list `{item}`"
            );
        }
    }

    #[test]
    fn allow_ext_replaces_the_list() {
        let allowed = AllowedExtensions::from_list(&["rs", ".TOML"]).ok();
        let allowed = allowed.as_ref();
        assert_eq!(allowed.map(|a| a.allows("lib.rs")), Some(true));
        assert_eq!(allowed.map(|a| a.allows("Cargo.toml")), Some(true));
        assert_eq!(allowed.map(|a| a.allows("README.md")), Some(false));
        assert_eq!(allowed.map(|a| a.allows("Makefile")), Some(false));
        assert_eq!(
            AllowedExtensions::from_list(&["md", "*"]).ok(),
            Some(AllowedExtensions::Any)
        );
        for bad in ["", ".", "a/b", "tar.gz", "r s"] {
            assert!(AllowedExtensions::from_list(&[bad]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn refused_kinds_are_named() {
        assert_eq!(kind_of("a.exe"), "`.exe`");
        assert_eq!(kind_of(".env"), "dotfile (`.env`)");
        assert_eq!(kind_of("id_rsa"), "extensionless (`id_rsa`)");
    }
}
