//! Credentials for `http(s)://` sources, and the client that sends them
//! only to the source's own origin.
//!
//! A source's credentials come, for its `Authorization` header, from the
//! first of: the user info of its URL (`https://user:password@host/…`,
//! sent as basic authentication, as curl and pip do), a `--header`, the
//! `PTEFS_HTTP_HEADERS` variable (one `Name: value` per line), and the
//! `machine` entry for its host (or the `default` entry) of `~/.netrc` (or
//! the file `NETRC` names). Any other header comes from `--header`, then
//! `PTEFS_HTTP_HEADERS`.
//!
//! These headers go with requests to the source's origin (scheme, host
//! and port) only: redirects are followed here, one hop at a time, and a
//! hop to another origin is made without them.

use std::sync::{Arc, Mutex};

use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpRequestBody,
    HttpResponse, HttpService,
};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{Method, redirect};

use super::limits::{connect_timeout, request_timeout};
use crate::source::redact::{Secrets, percent_decode};

/// The variable holding headers for every `http(s)` source.
pub const HEADERS_VAR: &str = "PTEFS_HTTP_HEADERS";

/// Redirects followed for one request, as browsers and reqwest allow.
const MAX_REDIRECTS: usize = 10;

/// Headers given on the command line (`--header`), for every `http(s)`
/// source the process opens.
static GIVEN: Mutex<Vec<(HeaderName, HeaderValue)>> = Mutex::new(Vec::new());

/// Why a header given for `http(s)` sources, or a source's URL, cannot be
/// used.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// A header without the colon between its name and value.
    #[error("a header is written `Name: value`")]
    NoColon,
    /// A header name with characters no header name may hold.
    #[error("{0:?} is not a valid header name")]
    Name(String),
    /// A header value with characters no header value may hold.
    #[error("the value of {0} holds characters a header cannot")]
    Value(HeaderName),
    /// A bad header of `--header`.
    #[error("--header: {0}")]
    Given(Box<CredentialsError>),
    /// [`HEADERS_VAR`] is not UTF-8.
    #[error("{HEADERS_VAR}: is not valid UTF-8")]
    VarNotUtf8,
    /// A bad header on `line` (from 1) of [`HEADERS_VAR`].
    #[error("{HEADERS_VAR}: line {line}: {error}")]
    Var {
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with its header.
        error: Box<CredentialsError>,
    },
    /// The source's URL does not parse.
    #[error("not a valid URL: {0}")]
    Url(#[from] url::ParseError),
}

/// One `Name: value` header, checked.
pub fn parse_header(line: &str) -> Result<(HeaderName, HeaderValue), CredentialsError> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(CredentialsError::NoColon);
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| CredentialsError::Name(name.trim().to_owned()))?;
    let mut value =
        HeaderValue::from_str(value.trim()).map_err(|_| CredentialsError::Value(name.clone()))?;
    value.set_sensitive(true);
    Ok((name, value))
}

/// Sets the headers given on the command line (`Name: value` each) for
/// every `http(s)` source opened after.
pub fn set_given_headers(lines: &[String]) -> Result<(), CredentialsError> {
    let parsed = lines
        .iter()
        .map(|l| parse_header(l).map_err(|e| CredentialsError::Given(Box::new(e))))
        .collect::<Result<Vec<_>, _>>()?;
    *GIVEN.lock().unwrap_or_else(|e| e.into_inner()) = parsed;
    Ok(())
}

/// The headers of [`HEADERS_VAR`]: one per line, blank lines skipped.
fn env_headers() -> Result<Vec<(HeaderName, HeaderValue)>, CredentialsError> {
    let Some(text) = std::env::var_os(HEADERS_VAR) else {
        return Ok(Vec::new());
    };
    let text = text
        .into_string()
        .map_err(|_| CredentialsError::VarNotUtf8)?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            parse_header(l).map_err(|e| CredentialsError::Var {
                line: i + 1,
                error: Box::new(e),
            })
        })
        .collect()
}

/// What connecting to one `http(s)` source takes.
pub struct Access {
    /// The URL without its user info.
    pub url: url::Url,
    /// Headers for requests to the URL's origin only.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Where the `Authorization` header came from, for messages: `None`
    /// when there is none.
    pub authorization: Option<&'static str>,
    /// Every secret: in the URL, and the values of the headers.
    pub secrets: Secrets,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Access")
            .field("origin", &self.url.origin().ascii_serialization())
            .field("headers", &names)
            .field("authorization", &self.authorization)
            .finish()
    }
}

impl Access {
    /// The credentials for `url` (see the module's documentation).
    pub fn of(url: &str) -> Result<Access, CredentialsError> {
        let mut secrets = Secrets::of_url(url);
        let mut parsed = url::Url::parse(url)?;
        let user = percent_decode(parsed.username()).into_owned();
        let password = parsed.password().map(|p| percent_decode(p).into_owned());
        let from_url = (!user.is_empty() || password.is_some())
            .then(|| basic(&user, password.as_deref().unwrap_or("")));
        // Neither reqwest nor the object store sends user info: it becomes
        // a header here, and leaves the URL.
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
        let given = GIVEN.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let header_from = if given.iter().any(|(n, _)| *n == AUTHORIZATION) {
            "--header"
        } else {
            HEADERS_VAR
        };
        let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
        for (name, value) in given.into_iter().chain(env_headers()?) {
            if !headers.iter().any(|(n, _)| *n == name) {
                headers.push((name, value));
            }
        }
        let given_auth = headers.iter().position(|(n, _)| *n == AUTHORIZATION);
        let authorization = match (from_url, given_auth) {
            (Some(v), Some(i)) => {
                headers[i].1 = v;
                Some("the URL's user info")
            }
            (Some(v), None) => {
                headers.push((AUTHORIZATION, v));
                Some("the URL's user info")
            }
            (None, Some(_)) => Some(header_from),
            (None, None) => match parsed.host_str().and_then(netrc_login) {
                Some((login, password)) => {
                    secrets.add(&password);
                    headers.push((AUTHORIZATION, basic(&login, &password)));
                    Some(
                        if std::env::var_os("NETRC").is_some_and(|p| !p.is_empty()) {
                            "the file NETRC names"
                        } else {
                            "~/.netrc"
                        },
                    )
                }
                None => None,
            },
        };
        for (_, v) in &headers {
            if let Ok(v) = v.to_str() {
                secrets.add(v);
                // A scheme's credentials alone, as a server may echo them.
                if let Some((_, cred)) = v.split_once(' ') {
                    secrets.add(cred.trim());
                }
            }
        }
        Ok(Access {
            url: parsed,
            headers,
            authorization,
            secrets,
        })
    }
}

/// `Basic base64(user:password)`, marked sensitive.
fn basic(user: &str, password: &str) -> HeaderValue {
    let encoded = base64(format!("{user}:{password}").as_bytes());
    let mut v = HeaderValue::from_str(&format!("Basic {encoded}"))
        .unwrap_or_else(|_| HeaderValue::from_static("Basic"));
    v.set_sensitive(true);
    v
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The netrc file: `NETRC`, else `~/.netrc`.
fn netrc_path() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("NETRC").filter(|p| !p.is_empty()) {
        return Some(p.into());
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| std::path::Path::new(&h).join(".netrc"))
}

/// The login and password the netrc file gives for `host`.
fn netrc_login(host: &str) -> Option<(String, String)> {
    let text = std::fs::read_to_string(netrc_path()?).ok()?;
    netrc_lookup(&text, host)
}

/// The login and password of `host`'s `machine` entry in netrc `text`,
/// else of its `default` entry (as curl and Python's netrc read it:
/// tokens separated by white space, values in double quotes may hold
/// spaces, `macdef` bodies run to a blank line).
fn netrc_lookup(text: &str, host: &str) -> Option<(String, String)> {
    #[derive(Default)]
    struct NetrcEntry {
        machine: Option<String>,
        login: Option<String>,
        password: Option<String>,
    }
    let mut entries: Vec<NetrcEntry> = Vec::new();
    let mut tokens = netrc_tokens(text).into_iter();
    while let Some(t) = tokens.next() {
        match t.as_str() {
            "machine" => entries.push(NetrcEntry {
                machine: Some(tokens.next().unwrap_or_default()),
                ..NetrcEntry::default()
            }),
            "default" => entries.push(NetrcEntry::default()),
            "login" | "password" | "account" => {
                let value = tokens.next().unwrap_or_default();
                if let Some(e) = entries.last_mut() {
                    match t.as_str() {
                        "login" => e.login = Some(value),
                        "password" => e.password = Some(value),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let found = |e: &&NetrcEntry| {
        e.machine
            .as_deref()
            .is_some_and(|m| m.eq_ignore_ascii_case(host))
    };
    let e = entries
        .iter()
        .find(found)
        .or_else(|| entries.iter().find(|e| e.machine.is_none()))?;
    if e.login.is_none() && e.password.is_none() {
        return None;
    }
    Some((
        e.login.clone().unwrap_or_default(),
        e.password.clone().unwrap_or_default(),
    ))
}

/// The tokens of a netrc file, `macdef` bodies left out.
fn netrc_tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut chars = line.chars().peekable();
        let mut in_macdef = false;
        loop {
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
            let Some(&c) = chars.peek() else { break };
            if c == '#' && out.last().is_none_or(|t: &String| t != "password") {
                break;
            }
            let mut token = String::new();
            if c == '"' {
                chars.next();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => token.extend(chars.next()),
                        c => token.push(c),
                    }
                }
            } else {
                while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                    token.push(c);
                }
            }
            in_macdef |= token == "macdef";
            out.push(token);
        }
        if in_macdef {
            for body in lines.by_ref() {
                if body.trim().is_empty() {
                    break;
                }
            }
        }
    }
    out
}

/// Scheme, host and port: where credentials may go.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin(url::Origin);

impl Origin {
    fn of(url: &url::Url) -> Origin {
        Origin(url.origin())
    }
}

/// Makes the client of one `http(s)` source: redirects followed one hop
/// at a time by [`Service`], which adds the source's headers to requests
/// to its origin only.
pub struct Connector {
    origin: Origin,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("origin", &self.origin.0.ascii_serialization())
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// A connector for `access`.
    pub fn new(access: &Access) -> Connector {
        Connector {
            origin: Origin::of(&access.url),
            headers: Arc::new(access.headers.clone()),
        }
    }
}

impl HttpConnector for Connector {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        // The limits the object store's own client would have (see
        // `super::store::store`), and no redirects of its own.
        let client = reqwest::Client::builder()
            .user_agent(concat!("ptefs/", env!("CARGO_PKG_VERSION")))
            .timeout(request_timeout())
            .connect_timeout(connect_timeout())
            .redirect(redirect::Policy::none())
            .build()
            .map_err(|e| object_store::Error::Generic {
                store: "HTTP",
                source: Box::new(e),
            })?;
        Ok(HttpClient::new(Service {
            client,
            origin: self.origin.clone(),
            headers: self.headers.clone(),
        }))
    }
}

/// Sends requests, adding the source's headers to those for its origin,
/// and follows redirects of `GET` and `HEAD` requests itself.
#[derive(Debug)]
struct Service {
    client: reqwest::Client,
    origin: Origin,
    headers: Arc<Vec<(HeaderName, HeaderValue)>>,
}

impl Service {
    /// `headers` with the source's own added when `url` is of its origin.
    fn headers_for(&self, url: &url::Url, mut headers: HeaderMap) -> HeaderMap {
        if Origin::of(url) == self.origin {
            for (n, v) in self.headers.iter() {
                headers.insert(n.clone(), v.clone());
            }
        }
        headers
    }
}

fn request_error(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> HttpError {
    HttpError::new_boxed(HttpErrorKind::Request, e.into())
}

#[async_trait::async_trait]
impl HttpService for Service {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        let (parts, body) = req.into_parts();
        let mut url = url::Url::parse(&parts.uri.to_string()).map_err(request_error)?;
        let follows = parts.method == Method::GET || parts.method == Method::HEAD;
        let mut body = Some(body);
        for _ in 0..=MAX_REDIRECTS {
            let mut hop = http::Request::builder()
                .method(parts.method.clone())
                .uri(url.as_str())
                .version(parts.version)
                .body(body.take().unwrap_or_else(HttpRequestBody::empty))
                .map_err(request_error)?;
            *hop.headers_mut() = self.headers_for(&url, parts.headers.clone());
            let res = HttpService::call(&self.client, hop).await?;
            if !follows || !res.status().is_redirection() {
                return Ok(res);
            }
            let Some(next) = res
                .headers()
                .get(LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| url.join(l).ok())
            else {
                return Ok(res);
            };
            url = next;
        }
        Err(request_error(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_standard() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("user:pass word", "dXNlcjpwYXNzIHdvcmQ="),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn netrc_entries_are_found_by_host_then_default() {
        let text = "# comment\nmachine other.example login o password op\n\
                    machine Models.Example.com\n  login alice\n  password \"s3cret word\"\n\
                    macdef init\ncd /pub\nmachine models.example.com login nobody\n\n\
                    default login anon password guest\n";
        assert_eq!(
            netrc_lookup(text, "models.example.com"),
            Some(("alice".into(), "s3cret word".into()))
        );
        assert_eq!(
            netrc_lookup(text, "other.example"),
            Some(("o".into(), "op".into()))
        );
        assert_eq!(
            netrc_lookup(text, "elsewhere"),
            Some(("anon".into(), "guest".into()))
        );
        assert_eq!(netrc_lookup("machine a login b", "x"), None);
        assert_eq!(netrc_lookup("", "x"), None);
        // A password may start with `#`.
        assert_eq!(
            netrc_lookup("machine h login u password #x1", "h"),
            Some(("u".into(), "#x1".into()))
        );
    }

    #[test]
    fn headers_are_checked() {
        assert!(parse_header("Authorization: Bearer abc").is_ok());
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("bad name: x").is_err());
        assert!(parse_header("X: a\u{1}b").is_err());
    }

    #[test]
    fn user_info_becomes_basic_authentication() {
        let a = Access::of("http://alice:pa%20ss@h:8080/m.pte?sig=zz").unwrap();
        assert_eq!(a.url.as_str(), "http://h:8080/m.pte?sig=zz");
        assert_eq!(a.authorization, Some("the URL's user info"));
        let (_, v) = a.headers.iter().find(|(n, _)| *n == AUTHORIZATION).unwrap();
        assert_eq!(
            v.to_str().unwrap(),
            format!("Basic {}", base64(b"alice:pa ss"))
        );
        let shown = a.secrets.scrub("pa ss pa%20ss zz alice");
        assert_eq!(shown, "*** *** zz alice");
        assert!(!format!("{a:?}").contains("Basic"));
    }
}
