//! How a source is shown to people and to the system. A URL may carry
//! secrets: a password in its user info (`https://user:PASSWORD@host/…`),
//! a signature or token in its query (a presigned S3 or GCS URL, an Azure
//! SAS) or in parameters after `;`. Every place that shows a source — the
//! mount's fsname in `/proc/mounts`, the daemon's command line, errors,
//! warnings, notes and logs, the files of the tree, `inspect`, `diff` and
//! `stat` output — shows [`redact`]ed text, where each secret is `***`:
//!
//! ```
//! use ptefs::source::redact::redact;
//! assert_eq!(
//!     redact("https://alice:hunter22@example.com/m.pte?X-Amz-Signature=abc&x-id=GetObject"),
//!     "https://alice:***@example.com/m.pte?X-Amz-Signature=***&x-id=***",
//! );
//! assert_eq!(redact("models/m.pte"), "models/m.pte");
//! ```
//!
//! The rule names no parameter: no list of secret names can be complete
//! (`sig`, `hdnts`, `jwt`, `code`, ...), so every value of a query or
//! fragment is masked, and so is everything after a `;` in the path. Text
//! that looks like a URL but does not parse as one (a password holding an
//! unencoded `/`, `?` or `#`) has everything before its last `@` masked.
//!
//! Text that may quote a URL in some other form (an HTTP client's error,
//! which prints the URL it parsed and normalised) is scrubbed with the
//! source's [`Secrets`] as well.

use std::borrow::Cow;
use std::path::Path;

/// What a secret is replaced by.
pub const MASK: &str = "***";

/// Secrets shorter than this are not searched for in free text (a
/// password `ab` would mask every `ab`); in URLs they are masked by
/// position whatever their length.
const MIN_SCRUBBED: usize = 4;

/// `text` as it may be shown: every URL in it with its user info masked
/// (`user:***@`; a user name alone, which may itself be a token, or one
/// holding an escape, which may hide a `:`, as `***@`), every value of its
/// query and fragment masked (`name=***`), and anything after a `;` in its
/// path masked; anything else as it is. A `text` that is
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

/// Where the credentials of `url` end: the byte after the last `@` when
/// the URL does not parse as one, or parses with the `@` in its path while
/// its authority holds a `:` (a password holding an unencoded `/`, `?` or
/// `#` ends the authority early); `None` when its parts are as written.
fn garbled_credentials(url: &str, p: &Parts) -> Option<usize> {
    let after = url.rfind('@')? + 1;
    let parses = ::url::Url::parse(url).is_ok();
    (!parses || p.user_info.is_none() && p.host.contains(':')).then_some(after)
}

/// One URL redacted (see [`redact`]).
fn redact_url(url: &str) -> String {
    let Some(p) = Parts::of(url) else {
        return url.to_owned();
    };
    if let Some(after) = garbled_credentials(url, &p) {
        let rest = format!("{}{}", p.scheme, &url[after..]);
        let Some(rest) = Parts::of(&rest) else {
            return format!("{}{MASK}@", p.scheme);
        };
        return format!("{}{MASK}@{}", p.scheme, redact_rest(&rest));
    }
    let mut out = String::with_capacity(url.len());
    out.push_str(p.scheme);
    if let Some(info) = p.user_info {
        match info.split_once(':') {
            Some((user, _)) if !user.contains('%') => {
                out.push_str(user);
                out.push(':');
            }
            _ => {}
        }
        out.push_str(MASK);
        out.push('@');
    }
    out.push_str(&redact_rest(&p));
    out
}

/// The host, path, query and fragment of `p`, redacted.
fn redact_rest(p: &Parts) -> String {
    let mut out = String::from(p.host);
    match p.path.split_once(';') {
        Some((path, params)) => {
            out.push_str(path);
            out.push(';');
            if !params.is_empty() {
                out.push_str(MASK);
            }
        }
        None => out.push_str(p.path),
    }
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

/// `a=1&b` as `a=***&***`: every value masked, and a part without a name.
fn redact_params(query: &str) -> String {
    query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((name, value)) if !value.is_empty() => format!("{name}={MASK}"),
            Some(_) => kv.to_owned(),
            None if kv.is_empty() => String::new(),
            None => MASK.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The secrets of a query or fragment: every value (see [`redact_params`]).
fn param_values(query: &str) -> impl Iterator<Item = &str> {
    query
        .split('&')
        .map(|kv| kv.split_once('=').map_or(kv, |(_, v)| v))
        .filter(|v| !v.is_empty() && *v != MASK)
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
    /// The secrets written in `url` (none for a path): what [`redact`]
    /// masks in it.
    pub fn of_url(url: &str) -> Secrets {
        let mut s = Secrets::default();
        s.add_url(url);
        s
    }

    /// The secrets of every URL in `text`, each taken to the end of
    /// `text` (white space included: an argument is one whole).
    pub fn of_text(text: &str) -> Secrets {
        let mut s = Secrets::default();
        let mut from = 0;
        while let Some((start, end)) = next_url(&text[from..]) {
            s.add_url(&text[from + start..]);
            from += end.max(start + 1);
        }
        s
    }

    /// Adds the secrets written in `url`.
    fn add_url(&mut self, url: &str) {
        let Some(p) = Parts::of(url) else {
            return;
        };
        if let Some(after) = garbled_credentials(url, &p) {
            self.add(&url[p.scheme.len()..after - 1]);
            self.add_rest(&format!("{}{}", p.scheme, &url[after..]));
            return;
        }
        if let Some(info) = p.user_info {
            match info.split_once(':') {
                Some((user, password)) if !user.contains('%') => self.add(password),
                _ => self.add(info),
            }
        }
        self.add_rest(url);
    }

    /// Adds every secret of `other`.
    pub fn extend(&mut self, other: Secrets) {
        for s in other.0 {
            self.add(&s);
        }
    }

    /// The secrets of `url`'s path parameters, query and fragment.
    fn add_rest(&mut self, url: &str) {
        let Some(p) = Parts::of(url) else {
            return;
        };
        if let Some((_, params)) = p.path.split_once(';') {
            self.add(params);
        }
        for params in [p.query, p.fragment].into_iter().flatten() {
            for v in param_values(params) {
                self.add(v);
            }
        }
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
    fn every_query_value_is_masked() {
        let presigned = "https://b.s3.amazonaws.com/m.pte?X-Amz-Algorithm=AWS4-HMAC-SHA256\
            &X-Amz-Credential=AKIAEXAMPLE%2F20260101%2Fus-east-1%2Fs3%2Faws4_request\
            &X-Amz-Signature=0123abcd";
        assert_eq!(
            redact(presigned),
            "https://b.s3.amazonaws.com/m.pte?X-Amz-Algorithm=***&X-Amz-Credential=***\
             &X-Amz-Signature=***"
        );
        // Names no list would hold.
        for name in [
            "sig",
            "pwd",
            "jwt",
            "hdnts",
            "code",
            "sessionid",
            "hmac",
            "passcode",
            "x",
        ] {
            assert_eq!(
                redact(&format!("http://h/m?{name}=v4lue&n=1")),
                format!("http://h/m?{name}=***&n=***"),
                "{name}"
            );
        }
        assert_eq!(redact("http://h/m?TOKENONLY"), "http://h/m?***");
        assert_eq!(redact("http://h/m?a=&b=1"), "http://h/m?a=&b=***");
        assert_eq!(
            redact("http://h/m#access_token=abc"),
            "http://h/m#access_token=***"
        );
    }

    #[test]
    fn path_parameters_are_masked() {
        assert_eq!(
            redact("https://h/m.pte;sig=S3CRET;x=1?a=1"),
            "https://h/m.pte;***?a=***"
        );
        assert_eq!(redact("https://h/a;"), "https://h/a;");
    }

    #[test]
    fn garbled_user_info_is_masked_whole() {
        for (url, shown) in [
            ("http://alice:TOP/SECRET@h/m.pte", "http://***@h/m.pte"),
            ("http://alice:TOP#SECRET@h/m.pte", "http://***@h/m.pte"),
            ("http://alice:TOP?SECRET@h/m.pte", "http://***@h/m.pte"),
            ("http://alice:12/SECRET@h/m.pte", "http://***@h/m.pte"),
            (
                "HTTP://alice:TOP/SECRET@h/m.pte?k=v",
                "HTTP://***@h/m.pte?k=***",
            ),
            ("Xyz://alice:TOP/SECRET@h", "Xyz://***@h"),
            ("http://alice%3ATOPSECRET@h/m.pte", "http://***@h/m.pte"),
            ("http://alice%3ATOP:SECRET@h/m.pte", "http://***@h/m.pte"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
            let s = Secrets::of_url(url);
            let text = format!("failed for {}", url.replace("://", ":// "));
            for word in ["TOP", "SECRET"] {
                assert!(!s.scrub(&text).contains(word), "{url}: {}", s.scrub(&text));
            }
        }
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
            "http://u:PASSWORD/x@host/m;TOKEN?a",
            "http://u%3APASSWORD@host/m",
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
        let s = Secrets::of_url("http://h/m.pte;sig=S3CRET");
        assert_eq!(s.scrub("for url h/m.pte;sig=S3CRET"), "for url h/m.pte;***");
        let mut s = Secrets::default();
        s.add("Bearer hf_abcdef");
        s.add("ab");
        assert_eq!(s.scrub("sent Bearer hf_abcdef; ab"), "sent ***; ab");
        assert!(Secrets::of_url("s3://b/m.pte").is_empty());
    }
}
