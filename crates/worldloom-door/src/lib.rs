//! The door of Worldloom's HTTP servers: what every request must show
//! before it reaches a route, written once for `worldloom serve` (the
//! studio), `worldloom serve-model` (the OpenAI-compatible endpoint) and
//! `worldloom serve-env` (the OpenEnv environment).
//!
//! - **Host.** On a loopback address the `Host` header must name that
//!   address's port as `127.0.0.1:PORT`, `localhost:PORT` or `[::1]:PORT`
//!   ([`loopback_hosts`]), so a DNS rebinding page cannot talk to the server
//!   (403, [`Refused::Host`]).
//! - **Origin.** A request carrying an `Origin` that is not this server
//!   (`http://` and one of the loopback hosts, or the bound address) is
//!   refused (403, [`Refused::Origin`]).
//! - **Key.** Where the route needs it, `Authorization: Bearer KEY` (the
//!   studio also takes `?token=`) must equal the server's secret, compared
//!   in constant time ([`constant_time_eq`]; 401, [`Refused::Key`]).
//! - **Content type.** Servers whose bodies are JSON refuse a `POST` that
//!   is not `Content-Type: application/json` (415, [`Refused::ContentType`]),
//!   which also stops form-like cross-origin posts.
//!
//! The crate knows headers only ([`http`]); each server words the refusal
//! in its own error shape from [`Refusal`].

use std::net::SocketAddr;

use http::{HeaderMap, Method, StatusCode, header};

/// Which check refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// The `Host` header does not name this loopback server.
    Host,
    /// The `Origin` header names another site.
    Origin,
    /// The key or token is missing or wrong.
    Key,
    /// A `POST` whose body is not declared as JSON.
    ContentType,
}

impl Refused {
    /// The HTTP status of this refusal: 403 for Host and Origin, 401 for
    /// the key, 415 for the content type.
    pub fn status(self) -> StatusCode {
        match self {
            Self::Host | Self::Origin => StatusCode::FORBIDDEN,
            Self::Key => StatusCode::UNAUTHORIZED,
            Self::ContentType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }
}

/// Why [`check_door`] refuses a request: the HTTP status, a message for
/// the client, and a short machine-readable code (`forbidden`,
/// `invalid_api_key`, or none for a wrong content type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The check that failed.
    pub refused: Refused,
    /// 403 (Host or Origin), 401 (key) or 415 (content type).
    pub status: StatusCode,
    /// What was wrong, for the client.
    pub message: String,
    /// `forbidden`, `invalid_api_key`, or `None`.
    pub code: Option<&'static str>,
}

impl Refusal {
    fn new(refused: Refused, message: &str, code: Option<&'static str>) -> Self {
        Self {
            refused,
            status: refused.status(),
            message: message.to_owned(),
            code,
        }
    }
}

/// The message of a refused `Host` header.
pub const HOST_MESSAGE: &str = "the Host header must name this server's loopback address and port";
/// The message of a refused `Origin` header.
pub const ORIGIN_MESSAGE: &str = "cross-origin requests are refused";
/// The message of a missing or wrong API key (`serve-model`, `serve-env`).
pub const KEY_MESSAGE: &str = "missing or wrong API key: send `Authorization: Bearer KEY`";
/// The message of a `POST` whose body is not declared as JSON.
pub const CONTENT_TYPE_MESSAGE: &str =
    "the request body must be sent as `Content-Type: application/json`";

/// Whether `a` and `b` are equal, in a time that depends on their lengths
/// only (not on where they first differ), so a secret cannot be guessed
/// byte by byte from response times.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The `Host` values a loopback server on `addr` answers to:
/// `127.0.0.1:PORT`, `localhost:PORT` and `[::1]:PORT`.
pub fn loopback_hosts(addr: SocketAddr) -> [String; 3] {
    let port = addr.port();
    [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The `Host` check: on a loopback `addr` the header must be one of
/// [`loopback_hosts`]; any `Host` passes on other addresses (they are
/// protected by a key instead).
///
/// # Errors
/// [`Refused::Host`] (403, code `forbidden`).
pub fn check_host(addr: SocketAddr, headers: &HeaderMap) -> Result<(), Refusal> {
    if addr.ip().is_loopback()
        && !header_str(headers, header::HOST)
            .is_some_and(|h| loopback_hosts(addr).iter().any(|own| own == h))
    {
        return Err(Refusal::new(Refused::Host, HOST_MESSAGE, Some("forbidden")));
    }
    Ok(())
}

/// The `Origin` check: no `Origin`, or `http://` followed by one of
/// [`loopback_hosts`] or the bound `addr`.
///
/// # Errors
/// [`Refused::Origin`] (403, code `forbidden`).
pub fn check_origin(addr: SocketAddr, headers: &HeaderMap) -> Result<(), Refusal> {
    if let Some(origin) = header_str(headers, header::ORIGIN) {
        let own = loopback_hosts(addr)
            .iter()
            .chain(std::iter::once(&addr.to_string()))
            .any(|h| origin.strip_prefix("http://") == Some(h.as_str()));
        if !own {
            return Err(Refusal::new(
                Refused::Origin,
                ORIGIN_MESSAGE,
                Some("forbidden"),
            ));
        }
    }
    Ok(())
}

/// The `Authorization: Bearer VALUE` value, trimmed; `None` without one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    header_str(headers, header::AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

/// The key check: `given` must equal `secret`, compared in constant time.
/// `message` tells the client how to send it.
///
/// # Errors
/// [`Refused::Key`] (401, code `invalid_api_key`).
pub fn check_key(given: Option<&str>, secret: &str, message: &str) -> Result<(), Refusal> {
    if given.is_some_and(|g| constant_time_eq(g.as_bytes(), secret.as_bytes())) {
        Ok(())
    } else {
        Err(Refusal::new(Refused::Key, message, Some("invalid_api_key")))
    }
}

/// The content-type check: a `POST` must declare
/// `Content-Type: application/json` (parameters such as `charset` allowed).
///
/// # Errors
/// [`Refused::ContentType`] (415, no code).
pub fn check_json_post(method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    if method == Method::POST {
        let json = header_str(headers, header::CONTENT_TYPE).is_some_and(|c| {
            c.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
        if !json {
            return Err(Refusal::new(
                Refused::ContentType,
                CONTENT_TYPE_MESSAGE,
                None,
            ));
        }
    }
    Ok(())
}

/// The whole door of a JSON server with an optional key (`serve-model`,
/// `serve-env`): [`check_host`], [`check_origin`], then, with `api_key` set
/// (and not empty) and `key_needed` (the route is protected), the bearer
/// key ([`check_key`] with [`KEY_MESSAGE`]), then [`check_json_post`].
/// `None` lets the request in.
pub fn check_door(
    addr: SocketAddr,
    api_key: Option<&str>,
    key_needed: bool,
    method: &Method,
    headers: &HeaderMap,
) -> Option<Refusal> {
    check_host(addr, headers)
        .and_then(|()| check_origin(addr, headers))
        .and_then(|()| match api_key.filter(|k| !k.is_empty()) {
            Some(key) if key_needed => check_key(bearer(headers), key, KEY_MESSAGE),
            _ => Ok(()),
        })
        .and_then(|()| check_json_post(method, headers))
        .err()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(
                header::HeaderName::from_bytes(name.as_bytes()).expect("name"),
                value.parse().expect("value"),
            );
        }
        map
    }

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 8123))
    }

    #[test]
    fn host_must_name_the_loopback_port() {
        for host in ["127.0.0.1:8123", "localhost:8123", "[::1]:8123"] {
            assert_eq!(check_host(loopback(), &headers(&[("host", host)])), Ok(()));
        }
        for host in ["evil.example:8123", "127.0.0.1:8124", "localhost"] {
            let refusal = check_host(loopback(), &headers(&[("host", host)])).unwrap_err();
            assert_eq!(refusal.refused, Refused::Host);
            assert_eq!(refusal.status, StatusCode::FORBIDDEN);
            assert_eq!(refusal.code, Some("forbidden"));
        }
        assert!(check_host(loopback(), &HeaderMap::new()).is_err());
        // Off loopback the key protects the server, not the Host header.
        let public = SocketAddr::from(([0, 0, 0, 0], 8123));
        assert_eq!(
            check_host(public, &headers(&[("host", "example.org")])),
            Ok(())
        );
    }

    #[test]
    fn origin_must_be_this_server() {
        assert_eq!(check_origin(loopback(), &HeaderMap::new()), Ok(()));
        for origin in ["http://127.0.0.1:8123", "http://localhost:8123"] {
            assert_eq!(
                check_origin(loopback(), &headers(&[("origin", origin)])),
                Ok(())
            );
        }
        for origin in [
            "http://evil.example",
            "https://127.0.0.1:8123",
            "http://127.0.0.1:8124",
            "null",
        ] {
            let refusal = check_origin(loopback(), &headers(&[("origin", origin)])).unwrap_err();
            assert_eq!(refusal.refused, Refused::Origin);
            assert_eq!(refusal.message, ORIGIN_MESSAGE);
        }
    }

    #[test]
    fn key_is_compared_whole() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret2"));
        assert_eq!(check_key(Some("k1"), "k1", KEY_MESSAGE), Ok(()));
        let refusal = check_key(None, "k1", KEY_MESSAGE).unwrap_err();
        assert_eq!(refusal.status, StatusCode::UNAUTHORIZED);
        assert_eq!(refusal.code, Some("invalid_api_key"));
        assert_eq!(
            bearer(&headers(&[("authorization", "Bearer  k1 ")])),
            Some("k1")
        );
        assert_eq!(bearer(&headers(&[("authorization", "Basic k1")])), None);
    }

    #[test]
    fn the_whole_door_checks_in_order() {
        let host = ("host", "127.0.0.1:8123");
        let json = ("content-type", "application/json; charset=utf-8");
        let post = Method::POST;
        let door = |key_needed, pairs: &[(&str, &str)]| {
            check_door(loopback(), Some("k1"), key_needed, &post, &headers(pairs))
                .map(|r| (r.status.as_u16(), r.refused))
        };
        assert_eq!(
            door(true, &[host, json, ("authorization", "Bearer k1")]),
            None
        );
        assert_eq!(door(false, &[host, json]), None);
        assert_eq!(door(true, &[host, json]), Some((401, Refused::Key)));
        assert_eq!(
            door(true, &[("host", "evil.example"), json]),
            Some((403, Refused::Host))
        );
        assert_eq!(
            door(false, &[host, ("content-type", "text/plain")]),
            Some((415, Refused::ContentType))
        );
        // An empty key asks for none.
        assert_eq!(
            check_door(loopback(), Some(""), true, &post, &headers(&[host, json])),
            None
        );
        // GET needs no content type.
        assert_eq!(
            check_door(loopback(), None, true, &Method::GET, &headers(&[host])),
            None
        );
    }
}
