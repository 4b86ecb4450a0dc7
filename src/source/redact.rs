//! How a source is shown to people and to the system. A URL may carry
//! secrets: a password in its user info (`https://user:PASSWORD@host/…`),
//! a signature or token in its query (a presigned S3 or GCS URL, an Azure
//! SAS). Every place that shows a source — the mount's fsname in
//! `/proc/mounts`, the daemon's command line, errors, warnings, notes and
//! logs, the files of the tree, `inspect`, `diff` and `stat` output —
//! shows [`redact`]ed text, where each secret is `***`:
//!
//! ```
//! use ptefs::source::redact::redact;
//! assert_eq!(
//!     redact("https://alice:hunter22@example.com/m.pte?X-Amz-Signature=abc&x-id=GetObject"),
//!     "https://alice:***@example.com/m.pte?X-Amz-Signature=***&x-id=GetObject",
//! );
//! assert_eq!(redact("models/m.pte"), "models/m.pte");
//! ```
//!
//! Text that may quote a URL in some other form (an HTTP client's error,
//! which prints the URL it parsed and normalised) is scrubbed with the
//! source's [`Secrets`] as well.

use std::borrow::Cow;
use std::path::Path;

/// What a secret is replaced by.
pub const MASK: &str = "***";

/// Query parameters that carry a secret, by their whole name (compared
/// without regard to case): an Azure SAS's signature `sig` and the fields
/// it signs (`se` expiry, `sp` permissions, `sv` version), and the names
/// tokens go by.
const SECRET_PARAMS: &[&str] = &["sig", "se", "sp", "sv", "token", "access_token"];

/// Query parameters whose name contains one of these words (without
/// regard to case) carry a secret: `X-Amz-Signature`, `X-Amz-Credential`,
/// `X-Amz-Security-Token`, `X-Goog-Signature`, `Signature`, `api_key`,
/// `client_secret`, `password`, ...
const SECRET_WORDS: &[&str] = &[
    "key",
    "secret",
    "token",
    "signature",
    "password",
    "passwd",
    "credential",
    "auth",
];

/// Secrets shorter than this are not searched for in free text (a
/// password `ab` would mask every `ab`); in URLs they are masked by
/// position whatever their length.
const MIN_SCRUBBED: usize = 4;

/// True when a query parameter named `name` carries a secret.
pub fn is_secret_param(name: &str) -> bool {
    let name = percent_decode(name).to_ascii_lowercase();
    SECRET_PARAMS.contains(&name.as_str()) || SECRET_WORDS.iter().any(|w| name.contains(w))
}

/// `text` as it may be shown: every URL in it with its user info masked
/// (`user:***@`; a user name alone, which may itself be a token, as
/// `***@`) and the values of its query parameters that carry secrets (see
/// [`is_secret_param`]) masked; anything else as it is. A `text` that is
/// one URL is redacted whole; in longer text (a message, a `-o` option) a
/// URL ends at white space or a quote, and punctuation that ends a
/// sentence or closes a parenthesis after it is not taken as part of it.
/// Redacting redacted text changes nothing.
pub fn redact(text: &str) -> String {
    if url_scheme_len(text).is_some() && !text.contains(char::is_whitespace) {
        return redact_url(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((start, end)) = next_url(rest) {
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// [`redact`] of a path as [`Path::display`] shows it.
pub fn shown(path: &Path) -> String {
    redact(&path.to_string_lossy())
}

/// The length of `text`'s scheme when it starts with `scheme://`.
fn url_scheme_len(text: &str) -> Option<usize> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme.len())
}

/// The byte range of the first URL in `text`.
fn next_url(text: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(i) = text[from..].find("://").map(|i| i + from) {
        let start = text[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |j| j + 1);
        // The scheme starts with a letter.
        let start = text[start..i]
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or(i, |j| start + j);
        if start == i {
            from = i + 3;
            continue;
        }
        let len = text[i..]
            .find(|c: char| c.is_whitespace() || c.is_control() || "\"'<>`".contains(c))
            .unwrap_or(text.len() - i);
        let mut end = i + len;
        // Sentence punctuation after a URL, and a parenthesis closing
        // around it, are not part of it.
        while end > i + 3 {
            let last = text[..end].chars().next_back().unwrap_or(' ');
            let unbalanced = last == ')' && !text[start..end].contains('(');
            if ".,:;!?]}".contains(last) || unbalanced {
                end -= last.len_utf8();
            } else {
                break;
            }
        }
        return Some((start, end));
    }
    None
}

/// The parts of a URL as written (nothing normalised): `scheme://`, user
/// info, the rest of the authority, the path, the query and the fragment.
pub(crate) struct Parts<'a> {
    pub(crate) scheme: &'a str,
    pub(crate) user_info: Option<&'a str>,
    pub(crate) host: &'a str,
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    pub(crate) fragment: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// `url`'s parts, or `None` when it does not start with `scheme://`.
    pub(crate) fn of(url: &'a str) -> Option<Parts<'a>> {
        let scheme_end = url_scheme_len(url)? + 3;
        let (scheme, rest) = url.split_at(scheme_end);
        let (rest, fragment) = match rest.split_once('#') {
            Some((r, f)) => (r, Some(f)),
            None => (rest, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((r, q)) => (r, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (user_info, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        Some(Parts {
            scheme,
            user_info,
            host,
            path,
            query,
            fragment,
        })
    }
}

/// One URL redacted (see [`redact`]).
fn redact_url(url: &str) -> String {
    let Some(p) = Parts::of(url) else {
        return url.to_owned();
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(p.scheme);
    if let Some(info) = p.user_info {
        if let Some((user, _)) = info.split_once(':') {
            out.push_str(user);
            out.push(':');
        }
        out.push_str(MASK);
        out.push('@');
    }
    out.push_str(p.host);
    out.push_str(p.path);
    if let Some(q) = p.query {
        out.push('?');
        out.push_str(&redact_params(q));
    }
    if let Some(f) = p.fragment {
        out.push('#');
        out.push_str(&redact_params(f));
    }
    out
}

/// `a=1&sig=2` with the values of parameters that carry secrets masked.
fn redact_params(query: &str) -> Cow<'_, str> {
    if !query.split('&').any(|kv| secret_value(kv).is_some()) {
        return Cow::Borrowed(query);
    }
    let params: Vec<Cow<str>> = query
        .split('&')
        .map(|kv| match secret_value(kv) {
            Some(_) => Cow::Owned(format!("{}={MASK}", kv.split_once('=').map_or(kv, |p| p.0))),
            None => Cow::Borrowed(kv),
        })
        .collect();
    Cow::Owned(params.join("&"))
}

/// The value of `name=value` when it carries a secret (and is not
/// masked already).
fn secret_value(kv: &str) -> Option<&str> {
    let (name, value) = kv.split_once('=')?;
    (is_secret_param(name) && !value.is_empty() && value != MASK).then_some(value)
}

/// `%xx` escapes of `s` decoded (invalid ones kept as they are); `+` is
/// kept, as in a path.
pub fn percent_decode(s: &str) -> Cow<'_, str> {
    if !s.contains('%') {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// The secrets of one source: what [`redact`] masks in its URL (the
/// password, or a user name given alone; secret query values), and
/// credentials that reach it by other ways (header values, a `~/.netrc`
/// password), each as written and percent-decoded.
#[derive(Debug, Clone, Default)]
pub struct Secrets(Vec<String>);

impl Secrets {
    /// The secrets written in `url` (none for a path).
    pub fn of_url(url: &str) -> Secrets {
        let mut s = Secrets::default();
        let Some(p) = Parts::of(url) else {
            return s;
        };
        if let Some(info) = p.user_info {
            s.add(info.split_once(':').map_or(info, |(_, password)| password));
        }
        for params in [p.query, p.fragment].into_iter().flatten() {
            for kv in params.split('&') {
                if let Some(v) = secret_value(kv) {
                    s.add(v);
                }
            }
        }
        s
    }

    /// Adds `secret` (and its percent-decoded form).
    pub fn add(&mut self, secret: &str) {
        for s in [secret.to_owned(), percent_decode(secret).into_owned()] {
            if !s.is_empty() && s != MASK && !self.0.contains(&s) {
                self.0.push(s);
            }
        }
        // Longest first, so that a secret holding another is masked whole.
        self.0.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    /// `text` [`redact`]ed, then with every secret of at least
    /// [`MIN_SCRUBBED`] bytes masked wherever it appears.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = redact(text);
        for s in self.0.iter().filter(|s| s.len() >= MIN_SCRUBBED) {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), MASK);
            }
        }
        out
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_info_is_masked() {
        assert_eq!(
            redact("http://user:PASSWORD@host/x.pte"),
            "http://user:***@host/x.pte"
        );
        assert_eq!(redact("https://TOKEN@host/x.pte"), "https://***@host/x.pte");
        // `@` may appear in a password.
        assert_eq!(
            redact("http://u:p@ss@host:8080/x.pte"),
            "http://u:***@host:8080/x.pte"
        );
        assert_eq!(redact("http://u:@host/x"), "http://u:***@host/x");
        assert_eq!(redact("http://host/a@b.pte"), "http://host/a@b.pte");
    }

    #[test]
    fn secret_query_values_are_masked() {
        let presigned = "https://b.s3.amazonaws.com/m.pte?X-Amz-Algorithm=AWS4-HMAC-SHA256\
            &X-Amz-Credential=AKIAEXAMPLE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request\
            &X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host\
            &X-Amz-Security-Token=FwoGZX&X-Amz-Signature=0123abcd";
        assert_eq!(
            redact(presigned),
            "https://b.s3.amazonaws.com/m.pte?X-Amz-Algorithm=AWS4-HMAC-SHA256\
             &X-Amz-Credential=***&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600\
             &X-Amz-SignedHeaders=host&X-Amz-Security-Token=***&X-Amz-Signature=***"
        );
        let sas = "https://acct.blob.core.windows.net/c/m.pte?sv=2022-11-02&ss=b&srt=o\
            &sp=r&se=2026-01-01T00:00:00Z&st=2025-01-01&spr=https&sig=abc%2Bdef%3D";
        assert_eq!(
            redact(sas),
            "https://acct.blob.core.windows.net/c/m.pte?sv=***&ss=b&srt=o&sp=***&se=***\
             &st=2025-01-01&spr=https&sig=***"
        );
        for name in [
            "Signature",
            "token",
            "access_token",
            "api_key",
            "Key-Pair-Id",
            "client_secret",
            "password",
            "X-Goog-Signature",
            "X%2DAmz%2DSignature",
        ] {
            assert_eq!(
                redact(&format!("http://h/m?{name}=v&x=1")),
                format!("http://h/m?{name}=***&x=1"),
                "{name}"
            );
        }
        assert_eq!(redact("http://h/m?x=1&y=2"), "http://h/m?x=1&y=2");
        assert_eq!(
            redact("http://h/m#access_token=abc"),
            "http://h/m#access_token=***"
        );
    }

    #[test]
    fn paths_and_plain_text_are_unchanged() {
        for s in [
            "model.pte",
            "/models/a b.pte",
            "s3://bucket/m.pte",
            "gs://b/o",
            "ptefs: note: m.pte: attached w.ptd",
            "",
        ] {
            assert_eq!(redact(s), s);
            assert_eq!(shown(Path::new(s)), s);
        }
    }

    #[test]
    fn urls_in_text_are_found_and_punctuation_kept() {
        assert_eq!(
            redact(
                "ptefs: https://user:PASSWORD@host/x.pte: Generic HTTP error: Error performing \
                 HEAD https://user:PASSWORD@host/x.pte?sig=s3cret in 1ms (error sending request \
                 for url (http://u:pw@host/x.pte?sig=s3cret))."
            ),
            "ptefs: https://user:***@host/x.pte: Generic HTTP error: Error performing \
             HEAD https://user:***@host/x.pte?sig=*** in 1ms (error sending request \
             for url (http://u:***@host/x.pte?sig=***))."
        );
        // A value runs to the next `&`: a list of options is redacted
        // option by option.
        assert_eq!(
            redact("fsname=http://u:pw@h/m.pte?sig=1,ro"),
            "fsname=http://u:***@h/m.pte?sig=***"
        );
        assert_eq!(redact("\"http://u:pw@h/m\""), "\"http://u:***@h/m\"");
        assert_eq!(redact("not :// a url"), "not :// a url");
    }

    #[test]
    fn redacting_twice_changes_nothing() {
        for s in [
            "http://user:PASSWORD@host/x.pte?X-Amz-Signature=1&a=2",
            "https://TOKEN@host/x.pte#token=3",
            "error for http://u:p@h/x.",
        ] {
            let once = redact(s);
            assert_eq!(redact(&once), once);
            assert!(
                !once.contains("PASSWORD") && !once.contains("TOKEN"),
                "{once}"
            );
        }
    }

    #[test]
    fn secrets_are_scrubbed_from_text_in_any_form() {
        let url = "http://alice:pa%24%24word@host/m.pte?X-Amz-Signature=abcd%2Fef&n=1";
        let s = Secrets::of_url(url);
        // As a client normalises the URL, and as it decodes it.
        let text = "GET http://host/m.pte?X-Amz-Signature=abcd%2fef failed; \
                    auth pa$$word; sig abcd/ef";
        let out = s.scrub(text);
        assert_eq!(
            out,
            "GET http://host/m.pte?X-Amz-Signature=*** failed; auth ***; sig ***"
        );
        let mut s = Secrets::default();
        s.add("Bearer hf_abcdef");
        s.add("ab");
        assert_eq!(s.scrub("sent Bearer hf_abcdef; ab"), "sent ***; ab");
        assert!(Secrets::of_url("s3://b/m.pte").is_empty());
    }
}
