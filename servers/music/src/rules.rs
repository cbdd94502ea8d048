//! Which playlists a song belongs in, by the rules kept in the database
//! (table `playlist_rules`, seeded by a migration; see the crate README).
//! Pure functions over a song and the rules; this module knows nothing of
//! SQL or MCP.
//!
//! A rule has a kind (the field it reads: `genre`, `decade`, `tag`,
//! `artist`), an optional `match_key` (the normalized value it is for; none
//! means any value), and a playlist name in which `{value}` stands for the
//! value, displayed with capitals (`rock` -> `Rock`, 1994 -> `1990s`). For a
//! given value, rules naming it win over rules for any value of that kind.
//! Artist rules apply once the workspace holds at least `min_artist_songs`
//! songs by the artist, the new one included.

use crate::song::{self, MAX_PLAYLIST, NewSong};

/// What `{value}` is replaced with in a rule's playlist name.
pub const PLACEHOLDER: &str = "{value}";

/// The field a rule reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleKind {
    Genre,
    Decade,
    Tag,
    Artist,
}

impl RuleKind {
    /// The kind as the `kind` column spells it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "genre" => Some(Self::Genre),
            "decade" => Some(Self::Decade),
            "tag" => Some(Self::Tag),
            "artist" => Some(Self::Artist),
            _ => None,
        }
    }
}

/// One row of `playlist_rules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub kind: RuleKind,
    /// The normalized value ([`song::key`]) this rule is for; `None`: any.
    pub match_key: Option<String>,
    /// The playlist's name, with [`PLACEHOLDER`] for the value.
    pub playlist: String,
    /// Artist rules: how many songs by the artist, the new one included,
    /// the workspace must hold.
    pub min_artist_songs: u64,
}

/// The values of `kind` in `song`, each as it is matched and as it is shown.
fn values(kind: RuleKind, song: &NewSong) -> Vec<(String, String)> {
    let shown = |value: &str| (song::key(value), song::title_case(value));
    match kind {
        RuleKind::Genre => song.genre.as_deref().map(shown).into_iter().collect(),
        RuleKind::Decade => song
            .year
            .map(|year| {
                let decade = format!("{}s", year - year.rem_euclid(10));
                (decade.clone(), decade)
            })
            .into_iter()
            .collect(),
        RuleKind::Tag => song.tags.iter().map(|tag| shown(tag)).collect(),
        RuleKind::Artist => vec![(song.artist_key(), song.artist.clone())],
    }
}

/// The playlists `rules` propose for `song`, in rule order, each once (by
/// [`song::key`]); `artist_songs` counts the songs by its artist already
/// in the workspace.
pub fn propose(rules: &[Rule], song: &NewSong, artist_songs: u64) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for rule in rules {
        if rule.kind == RuleKind::Artist && artist_songs + 1 < rule.min_artist_songs {
            continue;
        }
        for (value_key, shown) in values(rule.kind, song) {
            let applies = match &rule.match_key {
                Some(match_key) => *match_key == value_key,
                None => !rules.iter().any(|other| {
                    other.kind == rule.kind && other.match_key.as_ref() == Some(&value_key)
                }),
            };
            if !applies {
                continue;
            }
            let name: String = rule
                .playlist
                .replace(PLACEHOLDER, &shown)
                .chars()
                .take(MAX_PLAYLIST)
                .collect();
            let name = name.trim().to_owned();
            if !name.is_empty() && !names.iter().any(|seen| song::key(seen) == song::key(&name)) {
                names.push(name);
            }
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: RuleKind, match_key: Option<&str>, playlist: &str) -> Rule {
        Rule {
            kind,
            match_key: match_key.map(str::to_owned),
            playlist: playlist.to_owned(),
            min_artist_songs: 1,
        }
    }

    fn rules() -> Vec<Rule> {
        vec![
            rule(RuleKind::Genre, None, "{value}"),
            rule(RuleKind::Genre, Some("hiphop"), "Hip-Hop"),
            rule(RuleKind::Decade, None, "{value}"),
            rule(RuleKind::Tag, Some("chill"), "Chill"),
            rule(RuleKind::Tag, Some("relax"), "Chill"),
            Rule {
                min_artist_songs: 3,
                ..rule(RuleKind::Artist, None, "Best of {value}")
            },
        ]
    }

    fn song(genre: Option<&str>, year: Option<i32>, tags: &[&str]) -> NewSong {
        NewSong {
            title: "Song".into(),
            artist: "Queen".into(),
            album: None,
            genre: genre.map(str::to_owned),
            year,
            duration_s: None,
            tags: tags.iter().map(|tag| (*tag).to_owned()).collect(),
        }
    }

    #[test]
    fn genre_decade_and_mood_tags_propose_in_rule_order() {
        let proposed = propose(&rules(), &song(Some("rock"), Some(1994), &["chill"]), 0);
        assert_eq!(proposed, ["Rock", "1990s", "Chill"]);
    }

    #[test]
    fn a_rule_for_a_value_wins_over_the_rule_for_any_value() {
        let proposed = propose(&rules(), &song(Some("Hip Hop"), None, &[]), 0);
        assert_eq!(proposed, ["Hip-Hop"], "not also `Hip Hop`");
    }

    #[test]
    fn tags_without_a_rule_and_repeated_playlists_propose_nothing_more() {
        let proposed = propose(&rules(), &song(None, None, &["chill", "relax", "live"]), 0);
        assert_eq!(proposed, ["Chill"]);
    }

    #[test]
    fn artist_rules_wait_for_enough_songs() {
        let bare = song(None, None, &[]);
        assert!(propose(&rules(), &bare, 1).is_empty(), "2 songs of 3");
        assert_eq!(propose(&rules(), &bare, 2), ["Best of Queen"]);
    }

    #[test]
    fn decades_of_any_year() {
        let decade = |year| propose(&rules(), &song(None, Some(year), &[]), 0);
        assert_eq!(decade(2000), ["2000s"]);
        assert_eq!(decade(1999), ["1990s"]);
        assert_eq!(decade(1000), ["1000s"]);
    }

    #[test]
    fn long_names_are_cut_to_the_playlist_limit() {
        let mut long = song(None, None, &[]);
        long.artist = "a".repeat(200);
        let proposed = propose(&rules(), &long, 5);
        assert_eq!(proposed[0].chars().count(), MAX_PLAYLIST);
    }
}
