//! Names for the tools and prompts of many servers at once: `server__tool`,
//! safe for every LLM provider's function names (`^[A-Za-z0-9_-]{1,64}$`,
//! the strictest of them), and addresses for their resources.
//!
//! A [`Namespace`] gives each `(server, name)` pair one qualified name and
//! maps it back ([`Namespace::resolve`]). `server__tool` is used as it is
//! when it fits; otherwise characters outside `[A-Za-z0-9_-]` become `_`,
//! the name is cut to leave room, and `_` and six hex digits of the
//! SHA-256 of `server\0tool` are added, so that two names that were changed
//! the same way still differ. Two pairs that give the same name (`a__b` +
//! `c` and `a` + `b__c`) both get the hash suffix: neither wins by the
//! order servers answered in. The result depends only on the set of pairs,
//! never on their order; every name that is not plain `server__tool` is
//! listed in [`Namespace::renamed`], with why, for the user to see.
//!
//! Prompts take a [`Namespace`] of their own, the same way. Resources keep
//! their URIs, addressed per server by a [`UriNamespace`]:
//! `nexo://<server>/<uri>`, the server's label made safe by the same rules.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use sha2::{Digest, Sha256};

/// Between the server's name and the tool's.
pub const SEPARATOR: &str = "__";
/// The longest name every provider accepts.
pub const MAX_LEN: usize = 64;
/// Hex digits of the hash added to a changed name.
const HASH_DIGITS: usize = 6;
/// Hex digits when six were not enough (two hashes met).
const LONG_HASH_DIGITS: usize = 16;
/// The scheme of [`UriNamespace`] addresses.
pub const URI_SCHEME: &str = "nexo";

/// `qualified` (`server__name`) as the server and the name, for the longest
/// of `servers` it starts with followed by [`SEPARATOR`]: server names may
/// hold `__` themselves (`a` and `a__b` both configured), so the split is
/// never simply at the first separator. `None` when no server fits or the
/// name after it is empty.
pub fn split<'q, 's>(
    qualified: &'q str,
    servers: impl IntoIterator<Item = &'s str>,
) -> Option<(&'q str, &'q str)> {
    servers
        .into_iter()
        .filter_map(|server| {
            let name = qualified
                .strip_prefix(server)?
                .strip_prefix(SEPARATOR)
                .filter(|name| !name.is_empty())?;
            Some((qualified.get(..server.len())?, name))
        })
        .max_by_key(|(server, _)| server.len())
}

/// `server` and `name` as one qualified name, `server__name`, as they are
/// (a gateway's federated names; the host's go through [`Namespace`],
/// which also makes them safe for every provider).
pub fn join(server: &str, name: &str) -> String {
    format!("{server}{SEPARATOR}{name}")
}

/// Whether `name` is safe for every provider: `^[A-Za-z0-9_-]{1,64}$`.
pub fn is_safe(name: &str) -> bool {
    (1..=MAX_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Why a name is not plain `server__tool`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renaming {
    pub server: String,
    /// The tool's (or prompt's) own name.
    pub name: String,
    /// The name given instead.
    pub qualified: String,
    /// Characters outside `[A-Za-z0-9_-]` were replaced.
    pub sanitized: bool,
    /// It was longer than [`MAX_LEN`] and was cut.
    pub shortened: bool,
    /// The other pairs that would have had the same name.
    pub collided_with: Vec<(String, String)>,
}

impl fmt::Display for Renaming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut why = Vec::new();
        if self.sanitized {
            why.push("characters outside A-Z, a-z, 0-9, `_` and `-` replaced".to_owned());
        }
        if self.shortened {
            why.push(format!("cut to {MAX_LEN} characters"));
        }
        if !self.collided_with.is_empty() {
            let others: Vec<String> = self
                .collided_with
                .iter()
                .map(|(server, name)| format!("`{name}` of `{server}`"))
                .collect();
            why.push(format!("the same name as {}", others.join(", ")));
        }
        write!(
            f,
            "`{}` of `{}` is `{}` ({})",
            self.name,
            self.server,
            self.qualified,
            why.join("; ")
        )
    }
}

/// Qualified names for `(server, name)` pairs, both ways.
#[derive(Debug, Clone, Default)]
pub struct Namespace {
    by_qualified: BTreeMap<String, (String, String)>,
    by_pair: BTreeMap<String, BTreeMap<String, String>>,
    renamed: Vec<Renaming>,
}

impl Namespace {
    /// Names every `(server, name)` pair; a pair given twice is named once.
    pub fn build<S, N>(entries: impl IntoIterator<Item = (S, N)>) -> Self
    where
        S: AsRef<str>,
        N: AsRef<str>,
    {
        let pairs = entries
            .into_iter()
            .map(|(server, name)| (server.as_ref().to_owned(), name.as_ref().to_owned()))
            .collect();
        assign(pairs, |server, name| format!("{server}{SEPARATOR}{name}"))
    }

    /// The qualified name of `name` on `server`, if it was given.
    pub fn qualified(&self, server: &str, name: &str) -> Option<&str> {
        self.by_pair.get(server)?.get(name).map(String::as_str)
    }

    /// The server and name a qualified name stands for.
    pub fn resolve(&self, qualified: &str) -> Option<(&str, &str)> {
        self.by_qualified
            .get(qualified)
            .map(|(server, name)| (server.as_str(), name.as_str()))
    }

    /// The names that are not plain `server__name`, in the order of their
    /// pairs.
    pub fn renamed(&self) -> &[Renaming] {
        &self.renamed
    }

    /// Every `(qualified, server, name)`, in the order of the qualified names.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.by_qualified
            .iter()
            .map(|(qualified, (server, name))| (qualified.as_str(), server.as_str(), name.as_str()))
    }

    pub fn len(&self) -> usize {
        self.by_qualified.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_qualified.is_empty()
    }
}

/// Resources addressed per server: `nexo://<label>/<uri>`, the URI kept
/// whole after the label, the label the server's name made safe as
/// [`Namespace`] makes names.
#[derive(Debug, Clone, Default)]
pub struct UriNamespace {
    labels: Namespace,
}

impl UriNamespace {
    pub fn build<S: AsRef<str>>(servers: impl IntoIterator<Item = S>) -> Self {
        let pairs = servers
            .into_iter()
            .map(|server| (server.as_ref().to_owned(), String::new()))
            .collect();
        Self {
            labels: assign(pairs, |server, _| server.to_owned()),
        }
    }

    /// The address of `uri` on `server`, if the server was given.
    pub fn qualify(&self, server: &str, uri: &str) -> Option<String> {
        let label = self.labels.qualified(server, "")?;
        Some(format!("{URI_SCHEME}://{label}/{uri}"))
    }

    /// The server and the URI an address stands for.
    pub fn resolve<'u>(&self, address: &'u str) -> Option<(&str, &'u str)> {
        let rest = address.strip_prefix(URI_SCHEME)?.strip_prefix("://")?;
        let (label, uri) = rest.split_once('/')?;
        let (server, _) = self.labels.resolve(label)?;
        Some((server, uri))
    }

    /// The servers whose label is not their name.
    pub fn renamed(&self) -> &[Renaming] {
        self.labels.renamed()
    }
}

/// `text` with each character outside `[A-Za-z0-9_-]` replaced by `_`.
fn sanitize(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `safe` (already sanitized) cut to leave room for `_` and `digits` hex
/// digits of the hash of the pair, and those added.
fn hashed(server: &str, name: &str, safe: &str, digits: usize) -> String {
    let mut hasher = Sha256::new();
    hasher.update(server.as_bytes());
    hasher.update([0]);
    hasher.update(name.as_bytes());
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let suffix = &hex[..digits.min(hex.len())];
    let keep = MAX_LEN - suffix.len() - 1;
    let base = &safe[..safe.len().min(keep)];
    format!("{base}_{suffix}")
}

/// A name being decided.
struct Candidate {
    server: String,
    name: String,
    /// What `join` makes of the pair, sanitized.
    safe: String,
    qualified: String,
    sanitized: bool,
    shortened: bool,
    collided_with: Vec<(String, String)>,
}

impl Candidate {
    fn hashed(&self, digits: usize) -> String {
        hashed(&self.server, &self.name, &self.safe, digits)
    }

    fn changed(&self) -> bool {
        self.sanitized || self.shortened || !self.collided_with.is_empty()
    }
}

/// Names `pairs` (sorted, so the result does not depend on their order).
fn assign(pairs: BTreeSet<(String, String)>, join: impl Fn(&str, &str) -> String) -> Namespace {
    let mut candidates: Vec<Candidate> = pairs
        .into_iter()
        .map(|(server, name)| {
            let joined = join(&server, &name);
            let safe = sanitize(&joined);
            let sanitized = safe != joined;
            let shortened = safe.len() > MAX_LEN;
            let mut candidate = Candidate {
                server,
                name,
                safe,
                qualified: joined.clone(),
                sanitized,
                shortened,
                collided_with: Vec::new(),
            };
            if !is_safe(&joined) {
                candidate.qualified = candidate.hashed(HASH_DIGITS);
            }
            candidate
        })
        .collect();

    // Pairs that would share a name all take the hash suffix.
    let mut by_name: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, candidate) in candidates.iter().enumerate() {
        by_name
            .entry(candidate.qualified.clone())
            .or_default()
            .push(index);
    }
    for group in by_name.values().filter(|group| group.len() > 1) {
        for &index in group {
            let others = group
                .iter()
                .filter(|&&other| other != index)
                .map(|&other| {
                    (
                        candidates[other].server.clone(),
                        candidates[other].name.clone(),
                    )
                })
                .collect();
            let candidate = &mut candidates[index];
            candidate.collided_with = others;
            candidate.qualified = candidate.hashed(HASH_DIGITS);
        }
    }

    // What is still taken twice (two hashes met): longer hashes, then a
    // counter, in the pairs' order.
    let mut namespace = Namespace::default();
    for mut candidate in candidates {
        if namespace.by_qualified.contains_key(&candidate.qualified) {
            let long = candidate.hashed(LONG_HASH_DIGITS);
            let mut qualified = long.clone();
            let mut count = 2;
            while namespace.by_qualified.contains_key(&qualified) {
                let counter = format!("_{count}");
                qualified = format!(
                    "{}{counter}",
                    &long[..MAX_LEN.min(long.len()) - counter.len()]
                );
                count += 1;
            }
            if let Some((server, name)) = namespace.by_qualified.get(&candidate.qualified) {
                candidate.collided_with.push((server.clone(), name.clone()));
            }
            candidate.qualified = qualified;
        }
        if candidate.changed() {
            namespace.renamed.push(Renaming {
                server: candidate.server.clone(),
                name: candidate.name.clone(),
                qualified: candidate.qualified.clone(),
                sanitized: candidate.sanitized,
                shortened: candidate.shortened,
                collided_with: candidate.collided_with,
            });
        }
        namespace
            .by_pair
            .entry(candidate.server.clone())
            .or_default()
            .insert(candidate.name.clone(), candidate.qualified.clone());
        namespace
            .by_qualified
            .insert(candidate.qualified, (candidate.server, candidate.name));
    }
    namespace
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_qualified_name_splits_at_the_longest_server_it_starts_with() {
        let servers = ["a", "a__b", "music"];
        assert_eq!(split("a__b__c", servers), Some(("a__b", "c")));
        assert_eq!(split("a__x", servers), Some(("a", "x")));
        assert_eq!(
            split("music__add_song", servers),
            Some(("music", "add_song"))
        );
        assert_eq!(split("music__", servers), None);
        assert_eq!(split("musicx__y", servers), None);
        assert_eq!(split("dns__ping", servers), None);
    }

    #[test]
    fn plain_names_are_kept() {
        let names = Namespace::build([("dns", "salud_dns"), ("music", "add_song"), ("a-b", "C-9")]);
        assert_eq!(names.qualified("dns", "salud_dns"), Some("dns__salud_dns"));
        assert_eq!(
            names.resolve("music__add_song"),
            Some(("music", "add_song"))
        );
        assert_eq!(names.qualified("a-b", "C-9"), Some("a-b__C-9"));
        assert!(names.renamed().is_empty());
        assert_eq!(names.qualified("dns", "nope"), None);
        assert_eq!(names.len(), 3);
    }

    #[test]
    fn unsafe_and_long_names_are_changed_with_a_hash() {
        let long = "x".repeat(80);
        let names = Namespace::build([("my server", "get.file"), ("s", long.as_str())]);
        let sanitized = names.qualified("my server", "get.file").unwrap_or_default();
        assert!(sanitized.starts_with("my_server__get_file_"), "{sanitized}");
        assert_eq!(sanitized.len(), "my_server__get_file_".len() + 6);
        let cut = names.qualified("s", &long).unwrap_or_default();
        assert_eq!(cut.len(), MAX_LEN);
        assert!(cut.starts_with("s__xxxx"));
        let renamed = names.renamed();
        assert_eq!(renamed.len(), 2);
        assert!(renamed[0].sanitized && !renamed[0].shortened);
        assert!(renamed[1].shortened && !renamed[1].sanitized);
        assert_eq!(
            renamed[0].to_string(),
            format!(
                "`get.file` of `my server` is `{sanitized}` (characters outside A-Z, a-z, 0-9, \
                 `_` and `-` replaced)"
            )
        );
    }

    #[test]
    fn colliding_names_both_change_and_are_reported() {
        let names = Namespace::build([("a__b", "c"), ("a", "b__c"), ("a", "plain")]);
        let one = names.qualified("a__b", "c").unwrap_or_default();
        let two = names.qualified("a", "b__c").unwrap_or_default();
        assert_ne!(one, two);
        assert!(one.starts_with("a__b__c_") && two.starts_with("a__b__c_"));
        assert_eq!(names.resolve(one), Some(("a__b", "c")));
        assert_eq!(names.resolve(two), Some(("a", "b__c")));
        assert_eq!(names.qualified("a", "plain"), Some("a__plain"));
        let renamed = names.renamed();
        assert_eq!(renamed.len(), 2);
        assert_eq!(
            renamed[0].collided_with,
            [("a__b".to_owned(), "c".to_owned())]
        );
        assert!(
            renamed[0]
                .to_string()
                .contains("the same name as `c` of `a__b`")
        );
        // A sanitized name meeting a plain one.
        let names = Namespace::build([("a", "b c"), ("a", "b_c")]);
        assert_eq!(names.qualified("a", "b_c"), Some("a__b_c"));
        assert_ne!(names.qualified("a", "b c"), Some("a__b_c"));
    }

    #[test]
    fn a_plain_name_equal_to_a_changed_one_is_told_apart() {
        let changed = Namespace::build([("a b", "c")]);
        let taken = changed.qualified("a b", "c").unwrap_or_default().to_owned();
        let (server, tool) = taken.split_once(SEPARATOR).unwrap_or_default();
        let names = Namespace::build([("a b", "c"), (server, tool)]);
        let one = names.qualified("a b", "c").unwrap_or_default();
        let two = names.qualified(server, tool).unwrap_or_default();
        assert_ne!(one, two);
        assert_eq!(names.resolve(one), Some(("a b", "c")));
        assert_eq!(names.resolve(two), Some((server, tool)));
        assert!(is_safe(one) && is_safe(two));
    }

    #[test]
    fn resources_are_addressed_per_server() {
        let uris = UriNamespace::build(["music", "my files"]);
        let address = uris.qualify("music", "music://playlist/rock");
        assert_eq!(
            address.as_deref(),
            Some("nexo://music/music://playlist/rock")
        );
        assert_eq!(
            address.as_deref().and_then(|a| uris.resolve(a)),
            Some(("music", "music://playlist/rock"))
        );
        let files = uris.qualify("my files", "file:///a b").unwrap_or_default();
        assert!(files.starts_with("nexo://my_files_"), "{files}");
        assert_eq!(uris.resolve(&files), Some(("my files", "file:///a b")));
        assert_eq!(uris.resolve("nexo://nobody/x"), None);
        assert_eq!(uris.resolve("file:///x"), None);
        assert_eq!(uris.qualify("nobody", "x"), None);
    }

    /// Names as servers really send them, and worse.
    fn name() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]{1,8}",
            "[a-z_]{0,6}__[a-z_]{0,6}",
            "[A-Za-z0-9_.: /ñ-]{0,12}",
            "[a-z]{60,70}",
        ]
    }

    proptest! {
        #[test]
        fn every_name_is_safe_unique_and_reversible(
            pairs in proptest::collection::vec((name(), name()), 0..24)
        ) {
            let names = Namespace::build(pairs.iter().map(|(s, n)| (s.as_str(), n.as_str())));
            let distinct: BTreeSet<&(String, String)> = pairs.iter().collect();
            prop_assert_eq!(names.len(), distinct.len());
            for (server, name) in &pairs {
                let qualified = names.qualified(server, name);
                prop_assert!(qualified.is_some());
                let qualified = qualified.unwrap_or_default();
                prop_assert!(is_safe(qualified), "{}", qualified);
                prop_assert_eq!(names.resolve(qualified), Some((server.as_str(), name.as_str())));
                let plain = format!("{server}__{name}");
                let renamed = names.renamed().iter().any(|r| &r.server == server && &r.name == name);
                prop_assert_eq!(qualified != plain, renamed);
            }
        }

        #[test]
        fn the_order_of_the_pairs_does_not_matter(
            pairs in proptest::collection::vec((name(), name()), 0..16),
            seed in any::<u64>()
        ) {
            let mut shuffled = pairs.clone();
            // A rotation and a reversal driven by the seed.
            if !shuffled.is_empty() {
                let turn = (seed as usize) % shuffled.len();
                shuffled.rotate_left(turn);
            }
            if seed % 2 == 0 {
                shuffled.reverse();
            }
            let one = Namespace::build(pairs.iter().map(|(s, n)| (s.as_str(), n.as_str())));
            let two = Namespace::build(shuffled.iter().map(|(s, n)| (s.as_str(), n.as_str())));
            prop_assert!(one.iter().eq(two.iter()));
            prop_assert_eq!(one.renamed(), two.renamed());
        }
    }
}
