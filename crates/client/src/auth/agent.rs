//! Authorization agents: who takes the authorization URL to the
//! authorization server and brings the redirect back.
//!
//! The flow in [`super`] is the same whoever does it. A person at a terminal
//! gets [`LoopbackAgent`]: nexo shows the URL, the person opens it in any
//! browser, and the server redirects to a listener nexo opened on
//! `127.0.0.1` (RFC 8252 §7.3). An authorization server that redirects
//! without asking anyone (a test server, the conformance suite's) gets
//! [`HeadlessAgent`]: one GET of the URL, redirects not followed, the
//! redirect read from `Location`. A server a hub supervises, with no one
//! waiting at a terminal, gets [`DeferredAgent`]: stored tokens are still
//! used and refreshed, and a new authorization is left to a person.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::transport::auth::AuthError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::OnceCell;
use url::Url;

/// Takes an authorization URL to the authorization server and returns the
/// full URL it redirected back to (with `code`, `state` and maybe `iss`).
pub trait AuthorizationAgent: Send + Sync {
    /// The `redirect_uri` to register and send.
    fn redirect_uri(&self) -> BoxFuture<'_, Result<String, AuthError>>;
    /// Runs the front-channel step for `authorization_url`.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>>;
}

/// Follows the authorization URL itself: for servers that redirect at once.
#[derive(Debug, Clone)]
pub struct HeadlessAgent {
    http: reqwest::Client,
    redirect_uri: String,
}

impl HeadlessAgent {
    pub fn new(timeout: Duration) -> Result<Self, AuthError> {
        let http = crate::http::client_builder(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .build()?;
        Ok(Self {
            http,
            // Never reached: the redirect is read, not followed.
            redirect_uri: "http://127.0.0.1/callback".into(),
        })
    }
}

impl AuthorizationAgent for HeadlessAgent {
    fn redirect_uri(&self) -> BoxFuture<'_, Result<String, AuthError>> {
        Box::pin(std::future::ready(Ok(self.redirect_uri.clone())))
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            let response = self.http.get(authorization_url).send().await?;
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .ok_or_else(|| {
                    AuthError::AuthorizationFailed(format!(
                        "the authorization server answered {status} without redirecting"
                    ))
                })?;
            let callback = Url::parse(authorization_url)?.join(location)?;
            Ok(callback.to_string())
        })
    }
}

/// Asks no one: the connection fails with
/// [`AuthError::AuthorizationRequired`] where a person would have to sign
/// in, before registering a client or opening anything. The token store is
/// read (and a token refreshed) before any agent is asked, so a server
/// authorized once by a person's command connects without one.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeferredAgent;

impl AuthorizationAgent for DeferredAgent {
    fn redirect_uri(&self) -> BoxFuture<'_, Result<String, AuthError>> {
        Box::pin(std::future::ready(Err(AuthError::AuthorizationRequired)))
    }

    fn authorize<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(std::future::ready(Err(AuthError::AuthorizationRequired)))
    }
}

/// Shows the authorization URL to a person and waits for the browser to be
/// redirected to a listener on `127.0.0.1` (a random port, bound on first use).
pub struct LoopbackAgent {
    listener: OnceCell<TcpListener>,
    show: Arc<dyn Fn(&str) + Send + Sync>,
    wait: Duration,
}

impl std::fmt::Debug for LoopbackAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackAgent")
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

/// The path the loopback listener answers.
const CALLBACK_PATH: &str = "/callback";

impl LoopbackAgent {
    /// `show` presents the URL to the person (the CLI writes it to stderr);
    /// `wait` bounds how long to wait for the browser to come back.
    pub fn new(show: Arc<dyn Fn(&str) + Send + Sync>, wait: Duration) -> Self {
        Self {
            listener: OnceCell::new(),
            show,
            wait,
        }
    }

    async fn listener(&self) -> Result<&TcpListener, AuthError> {
        self.listener
            .get_or_try_init(|| TcpListener::bind(("127.0.0.1", 0)))
            .await
            .map_err(|error| {
                AuthError::InternalError(format!("cannot listen on 127.0.0.1: {error}"))
            })
    }

    async fn port(&self) -> Result<u16, AuthError> {
        let address = self.listener().await?.local_addr().map_err(|error| {
            AuthError::InternalError(format!("cannot read the listener's address: {error}"))
        })?;
        Ok(address.port())
    }

    /// Accepts connections until one is the redirect; answers each.
    async fn accept_callback(&self) -> Result<String, AuthError> {
        let listener = self.listener().await?;
        let port = self.port().await?;
        loop {
            let (mut stream, _) = listener.accept().await.map_err(|error| {
                AuthError::InternalError(format!("cannot accept the redirect: {error}"))
            })?;
            let mut head = Vec::new();
            let mut buffer = [0_u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(read) => head.extend_from_slice(&buffer[..read]),
                }
            }
            let target = request_target(&String::from_utf8_lossy(&head));
            let (status, body, found) = match target {
                Some(path) if path.split('?').next() == Some(CALLBACK_PATH) => (
                    "200 OK",
                    "nexo received the authorization; you can close this tab.",
                    Some(path),
                ),
                _ => ("404 Not Found", "not the authorization redirect", None),
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
            if let Some(path) = found {
                return Ok(format!("http://127.0.0.1:{port}{path}"));
            }
        }
    }
}

/// The request-target of an HTTP/1 `GET` request head.
fn request_target(head: &str) -> Option<String> {
    let line = head.lines().next()?;
    let mut words = line.split_whitespace();
    (words.next()? == "GET").then_some(())?;
    let target = words.next()?;
    target.starts_with('/').then(|| target.to_owned())
}

impl AuthorizationAgent for LoopbackAgent {
    fn redirect_uri(&self) -> BoxFuture<'_, Result<String, AuthError>> {
        Box::pin(async move {
            let port = self.port().await?;
            Ok(format!("http://127.0.0.1:{port}{CALLBACK_PATH}"))
        })
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> BoxFuture<'a, Result<String, AuthError>> {
        Box::pin(async move {
            self.listener().await?;
            (self.show)(authorization_url);
            tokio::time::timeout(self.wait, self.accept_callback())
                .await
                .map_err(|_| {
                    AuthError::AuthorizationFailed(format!(
                        "the browser did not come back within {} s",
                        self.wait.as_secs()
                    ))
                })?
        })
    }
}

/// The error an authorization server put in its redirect (RFC 6749
/// §4.1.2.1), if any.
pub fn redirect_error(callback_url: &str) -> Option<AuthError> {
    let url = Url::parse(callback_url).ok()?;
    let mut error = None;
    let mut description = None;
    for (key, value) in url.query_pairs() {
        match key.as_ref() {
            "error" => error = Some(value.into_owned()),
            "error_description" => description = Some(value.into_owned()),
            _ => {}
        }
    }
    let error = error?;
    Some(AuthError::AuthorizationFailed(match description {
        Some(description) => format!("the authorization server refused: {error} ({description})"),
        None => format!("the authorization server refused: {error}"),
    }))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "tests fail loudly")]
mod tests {
    use super::*;

    #[test]
    fn request_targets() {
        assert_eq!(
            request_target("GET /callback?code=x&state=y HTTP/1.1\r\nHost: a\r\n\r\n").as_deref(),
            Some("/callback?code=x&state=y")
        );
        assert_eq!(request_target("POST /callback HTTP/1.1\r\n"), None);
        assert_eq!(request_target("GET http://evil/ HTTP/1.1\r\n"), None);
        assert_eq!(request_target(""), None);
    }

    #[test]
    fn redirect_errors() {
        assert!(redirect_error("http://127.0.0.1:1/callback?code=a&state=b").is_none());
        let refused =
            redirect_error("http://127.0.0.1:1/callback?error=access_denied&error_description=no")
                .unwrap();
        assert!(refused.to_string().contains("access_denied (no)"));
    }

    #[tokio::test]
    async fn loopback_agent_returns_the_redirect() {
        let shown = Arc::new(std::sync::Mutex::new(String::new()));
        let record = shown.clone();
        let agent = LoopbackAgent::new(
            Arc::new(move |url: &str| *record.lock().unwrap() = url.to_owned()),
            Duration::from_secs(10),
        );
        let redirect = agent.redirect_uri().await.unwrap();
        crate::http::install_tls_provider();
        let browser = {
            let redirect = redirect.clone();
            tokio::spawn(async move {
                // A stray request first, as browsers send for favicons.
                let base = redirect.trim_end_matches(CALLBACK_PATH).to_owned();
                let _ = reqwest::get(format!("{base}/favicon.ico")).await;
                reqwest::get(format!("{redirect}?code=c1&state=s1"))
                    .await
                    .unwrap()
                    .status()
            })
        };
        let callback = agent
            .authorize("https://as.example/authorize?x=1")
            .await
            .unwrap();
        assert_eq!(callback, format!("{redirect}?code=c1&state=s1"));
        assert_eq!(browser.await.unwrap(), reqwest::StatusCode::OK);
        assert_eq!(*shown.lock().unwrap(), "https://as.example/authorize?x=1");
    }
}
