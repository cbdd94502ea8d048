//! Who may use the page, checked on every request before any handler
//! runs. The local pages of the Inspector and of MCPJam could be driven by
//! any web site the user visited (DNS rebinding, cross-site requests),
//! which made them remote-code-execution holes; this page admits only:
//!
//! - a `Host` that names the page's own loopback address and port (a
//!   rebound name such as `evil.example` pointing at 127.0.0.1 is refused);
//! - an `Origin`, when the browser sends one, that is the page itself;
//! - the launch token: a random secret in the URL nexo prints, traded on
//!   first load for an HttpOnly, SameSite=Strict cookie (the URL then drops
//!   it), both compared in constant time;
//! - on every state-changing request (POST), the page's CSRF token in the
//!   `X-CSRF-Token` header (htmx sends it from the page's `hx-headers`) and
//!   an `Origin`.
//!
//! Every answer carries a strict Content-Security-Policy (`script-src
//! 'self'`, no inline script or handler, frames from the apps' sandbox
//! only) and headers against framing and sniffing.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use nexo_client::Secret;
use subtle::ConstantTimeEq;

use std::sync::Arc;

use crate::Page;

/// The cookie that carries the launch token once the page is open.
pub const COOKIE: &str = "nexo_ui";
/// The header the page's scripts send the CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// A new random secret of 256 bits, as hex (nexo-client's [`Secret`]:
/// its Display and Debug never show it).
fn random_secret() -> Secret {
    Secret::new(format!(
        "{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    ))
}

/// Whether `given` is `secret`, in time that does not depend on where
/// they differ.
fn matches(secret: &Secret, given: &str) -> bool {
    secret.expose().as_bytes().ct_eq(given.as_bytes()).into()
}

/// What the guard checks against.
#[derive(Debug, Clone)]
pub struct Guard {
    /// The launch token (in the printed URL, then the cookie).
    pub token: Secret,
    /// The CSRF token every POST carries.
    pub csrf: Secret,
    /// The page's port on 127.0.0.1.
    pub port: u16,
    /// The port of the apps' sandbox (the only thing the page frames).
    pub sandbox_port: u16,
}

impl Guard {
    pub fn new(port: u16, sandbox_port: u16) -> Self {
        Self {
            token: random_secret(),
            csrf: random_secret(),
            port,
            sandbox_port,
        }
    }

    /// The page's Content-Security-Policy: its own scripts and styles only,
    /// and frames from the apps' sandbox alone.
    fn policy(&self) -> String {
        format!(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-src http://127.0.0.1:{}; \
             frame-ancestors 'none'; base-uri 'none'",
            self.sandbox_port
        )
    }

    /// The URL to open: the page, with the launch token.
    pub fn launch_url(&self) -> String {
        format!(
            "http://127.0.0.1:{}/?token={}",
            self.port,
            self.token.expose()
        )
    }

    /// Whether `host` (a `Host` header) names this page.
    fn host_allowed(&self, host: &str) -> bool {
        [
            format!("127.0.0.1:{}", self.port),
            format!("localhost:{}", self.port),
        ]
        .iter()
        .any(|allowed| allowed.eq_ignore_ascii_case(host))
    }

    /// Whether `origin` (an `Origin` header) is this page.
    fn origin_allowed(&self, origin: &str) -> bool {
        [
            format!("http://127.0.0.1:{}", self.port),
            format!("http://localhost:{}", self.port),
        ]
        .iter()
        .any(|allowed| allowed.eq_ignore_ascii_case(origin))
    }

    fn has_cookie(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|cookies| cookies.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == COOKIE && matches(&self.token, value))
    }
}

/// Why a request was refused, as the refused person sees it.
fn refuse(status: StatusCode, why: &str, what_to_do: &str) -> Response {
    let body = format!(
        "<!doctype html><meta charset=utf-8><title>nexo ui: refused</title>\
         <h1>Refused</h1><p>{}</p><p>{}</p>",
        crate::render::escape(why),
        crate::render::escape(what_to_do)
    );
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    secure(response.headers_mut());
    response
}

/// The guard, as axum middleware in front of every route.
pub async fn check(State(page): State<Arc<Page>>, request: Request<Body>, next: Next) -> Response {
    let guard = &page.guard;
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if !guard.host_allowed(host) {
        return refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "this page answers only at its own address",
            &format!("open http://127.0.0.1:{}/ as nexo printed it", guard.port),
        );
    }
    let origin = headers
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok());
    if let Some(origin) = origin
        && !guard.origin_allowed(origin)
    {
        return refuse(
            StatusCode::FORBIDDEN,
            "a request from another site was refused",
            "use the page itself; other sites may not drive it",
        );
    }
    if !guard.has_cookie(headers) {
        // The launch URL: trade the token for the cookie, and drop it from
        // the address bar.
        let token = request.uri().query().and_then(|query| {
            query
                .split('&')
                .filter_map(|pair| pair.split_once('='))
                .find(|(name, _)| *name == "token")
                .map(|(_, value)| value)
        });
        if request.method() == Method::GET
            && let Some(token) = token
            && matches(&guard.token, token)
        {
            let mut response = Redirect::to(request.uri().path()).into_response();
            let cookie = format!(
                "{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
                guard.token.expose()
            );
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            secure(response.headers_mut());
            return response;
        }
        return refuse(
            StatusCode::UNAUTHORIZED,
            "this page needs the link nexo printed when it started (it holds a one-time token)",
            "open the URL `nexo ui` printed in its terminal",
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        if origin.is_none() {
            return refuse(
                StatusCode::FORBIDDEN,
                "a change without an Origin was refused",
                "use the page's own buttons and forms",
            );
        }
        let header_token = headers
            .get(CSRF_HEADER)
            .and_then(|value| value.to_str().ok());
        if !header_token.is_some_and(|token| matches(&guard.csrf, token)) {
            return refuse(
                StatusCode::FORBIDDEN,
                "a change without the page's CSRF token was refused",
                "reload the page and try again",
            );
        }
    }
    let mut response = next.run(request).await;
    if let Ok(policy) = HeaderValue::from_str(&guard.policy()) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, policy);
    }
    secure(response.headers_mut());
    response
}

/// The headers every answer carries (a refusal's policy frames nothing).
fn secure(headers: &mut HeaderMap) {
    let fixed = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in fixed {
        if !headers.contains_key(&name) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
}
