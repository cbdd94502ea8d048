//! Credentials a user hands nexo, in types whose `Debug` and `Display`
//! never show them: [`Secret`] (a token, a client secret, an environment
//! value given with `-e`), [`Header`] (a `--header`, redacted when its name
//! marks a credential), [`EnvVar`] (a `-e KEY=VALUE`) and [`TargetUrl`] (a
//! `--url`, whose userinfo is redacted). Whatever prints a target, an option
//! or an error goes through these, so a token cannot reach a log line, an
//! error message or the JSON error line by being formatted.

use std::borrow::Cow;
use std::fmt;

use http::{HeaderName, HeaderValue};

use crate::ClientError;
use crate::arguments::split_pair;

/// What every redacted value prints as: the one spelling, the trace's.
pub use nexo_trace::REDACTED;

/// A secret whose `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({REDACTED})")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// Whether a header of this name carries a credential; decided in
/// nexo-trace, so that the headers a trace redacts and the ones this crate
/// never prints are the same.
pub use nexo_trace::is_credential_header;

/// One extra HTTP request header (`--header 'Name: value'`), checked when it
/// is read. A credential's value is marked sensitive (HTTP/2 never indexes
/// it) and never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    name: HeaderName,
    value: HeaderValue,
}

impl Header {
    /// Reads `Name: value`. The error names the header, never its value.
    pub fn parse(text: &str) -> Result<Self, ClientError> {
        let hint = || Some("write headers as --header 'Name: value'".to_owned());
        let Some((name, value)) = split_pair(text, ':') else {
            return Err(ClientError::usage(
                "a `--header` is not of the form 'Name: value'",
                hint(),
            ));
        };
        Self::new(name, value)
    }

    /// A header from its name and value. The error names the header, never
    /// its value.
    pub fn new(name: &str, value: &str) -> Result<Self, ClientError> {
        let hint = || Some("write headers as --header 'Name: value'".to_owned());
        let Ok(header_name) = HeaderName::try_from(name) else {
            // Only the first word: what follows a blank may be a token
            // written without its colon (`Authorization Bearer abc: x`).
            let shown = match name.split_once(char::is_whitespace) {
                Some((first, _)) => format!("{first} …"),
                None => name.to_owned(),
            };
            return Err(ClientError::usage(
                format!("`{shown}` is not a valid HTTP header name"),
                hint(),
            ));
        };
        // The blanks around a field value are not part of it (RFC 9110 §5.5).
        let Ok(mut header_value) = HeaderValue::try_from(value.trim()) else {
            return Err(ClientError::usage(
                format!(
                    "the value of the `{name}` header holds a character HTTP does not allow \
                     (a control character or a line break)"
                ),
                hint(),
            ));
        };
        header_value.set_sensitive(is_credential_header(name));
        Ok(Self {
            name: header_name,
            value: header_value,
        })
    }

    pub fn name(&self) -> &HeaderName {
        &self.name
    }

    /// The value itself, for the request that sends it.
    pub fn value(&self) -> &HeaderValue {
        &self.value
    }

    pub fn is_credential(&self) -> bool {
        self.value.is_sensitive()
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Header({self})")
    }
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value.to_str() {
            Ok(value) if !self.is_credential() => write!(f, "{}: {value}", self.name),
            _ => write!(f, "{}: {REDACTED}", self.name),
        }
    }
}

/// One environment variable for a stdio child (`-e KEY=VALUE`); the value
/// is never printed, whatever the name.
#[derive(Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub key: String,
    pub value: Secret,
}

impl EnvVar {
    /// Reads `KEY=VALUE`. The error never shows the value.
    pub fn parse(text: &str) -> Result<Self, ClientError> {
        match split_pair(text, '=') {
            Some((key, value)) => Ok(Self {
                key: key.to_owned(),
                value: Secret::new(value),
            }),
            None => Err(ClientError::usage(
                "an environment variable given with `-e` is not of the form KEY=VALUE",
                Some("write each as -e KEY=VALUE".to_owned()),
            )),
        }
    }
}

impl fmt::Debug for EnvVar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EnvVar({}={REDACTED})", self.key)
    }
}

/// A server's URL as the user gave it, userinfo included (reqwest sends
/// `user:password@` as Basic authorization); printed with the userinfo
/// redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct TargetUrl(String);

impl TargetUrl {
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    /// The URL itself, userinfo included, for the requests that use it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl From<&str> for TargetUrl {
    fn from(url: &str) -> Self {
        Self::new(url)
    }
}

impl From<String> for TargetUrl {
    fn from(url: String) -> Self {
        Self::new(url)
    }
}

impl fmt::Display for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_userinfo(&self.0))
    }
}

impl fmt::Debug for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TargetUrl({self})")
    }
}

/// `url` with any userinfo (`user:password@`) replaced by [`REDACTED`].
/// Read by hand rather than with `url::Url`, so that text that is no valid
/// URL (which a user may still have put a password in) is redacted too.
pub fn redact_userinfo(url: &str) -> Cow<'_, str> {
    let start = url.find("://").map_or(0, |scheme| scheme + 3);
    let rest = &url[start..];
    let authority = rest.find(['/', '?', '#']).map_or(rest, |end| &rest[..end]);
    match authority.rfind('@') {
        Some(at) => Cow::Owned(format!("{}{REDACTED}{}", &url[..start], &url[start + at..])),
        None => Cow::Borrowed(url),
    }
}

#[cfg(test)]
mod tests {
    use nexo_hint::Hinted;

    use super::*;

    const TOKEN: &str = "tok-9f3a";

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new(TOKEN);
        assert!(!format!("{secret} {secret:?}").contains(TOKEN));
    }

    #[test]
    fn credential_headers_are_redacted_and_others_shown() -> Result<(), ClientError> {
        for name in [
            "Authorization",
            "proxy-authorization",
            "Cookie",
            "X-Api-Key",
            "X-Auth-Token",
            "Client-Secret",
            "apikey",
        ] {
            let header = Header::parse(&format!("{name}: Bearer {TOKEN}"))?;
            let shown = format!("{header} {header:?}");
            assert!(!shown.contains(TOKEN), "{name}: {shown}");
            assert!(header.value().is_sensitive(), "{name}");
            assert_eq!(header.value(), &format!("Bearer {TOKEN}"));
        }
        let plain = Header::parse("Accept-Language: es")?;
        assert_eq!(plain.to_string(), "accept-language: es");
        Ok(())
    }

    #[test]
    fn issue_15_a_bad_header_never_shows_its_value() {
        for text in [
            format!("Authorization: Bearer {TOKEN}\u{1}"),
            format!("Bad Name: {TOKEN}"),
            format!("Authorization Bearer {TOKEN}: x"),
            format!("X-Api-Key {TOKEN}"),
            format!("Authorization={TOKEN}"),
        ] {
            let error = Header::parse(&text).err().map(|error| {
                format!(
                    "{error} {error:?} {}",
                    error.hint().map(|hint| hint.terminal()).unwrap_or_default()
                )
            });
            let Some(shown) = error else {
                panic!("`{text}` was accepted");
            };
            assert!(!shown.contains(TOKEN), "{text:?}: {shown}");
        }
    }

    #[test]
    fn env_values_are_redacted() -> Result<(), ClientError> {
        let var = EnvVar::parse(&format!("API={TOKEN}"))?;
        assert_eq!((var.key.as_str(), var.value.expose()), ("API", TOKEN));
        assert!(!format!("{var:?}").contains(TOKEN));
        let error = EnvVar::parse(TOKEN).err().map(|e| format!("{e} {e:?}"));
        assert!(error.is_some_and(|shown| !shown.contains(TOKEN)));
        Ok(())
    }

    #[test]
    fn userinfo_is_redacted() {
        let cases = [
            (
                "http://user:pw@127.0.0.1:9/mcp",
                "http://[redacted]@127.0.0.1:9/mcp",
            ),
            ("https://tok@h/x?a=b@c", "https://[redacted]@h/x?a=b@c"),
            ("user:pw@host", "[redacted]@host"),
            ("http://127.0.0.1:9/mcp", "http://127.0.0.1:9/mcp"),
            ("not a url", "not a url"),
        ];
        for (url, shown) in cases {
            assert_eq!(TargetUrl::new(url).to_string(), shown);
            assert_eq!(
                format!("{:?}", TargetUrl::new(url)),
                format!("TargetUrl({shown})")
            );
        }
    }
}
