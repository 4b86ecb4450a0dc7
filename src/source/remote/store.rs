//! Which arguments are URLs, and the object store client for each kind.
//!
//! `http(s)://host/path` is read with plain range GETs (any server with
//! range support, such as a static nginx); `s3://bucket/key`,
//! `gs://bucket/object` and `az://container/blob` through the object
//! store's own API, with credentials and endpoints from the usual
//! environment variables (`AWS_ACCESS_KEY_ID`, `AWS_REGION`,
//! `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, `GOOGLE_SERVICE_ACCOUNT`,
//! `AZURE_STORAGE_ACCOUNT_NAME`, ...).

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path;
use object_store::{BackoffConfig, ClientConfigKey, ClientOptions, ObjectStore, RetryConfig};

use super::credentials::{Access, Connector};
use super::limits::{connect_timeout, option, request_timeout, retry_timeout};

/// URL schemes read as remote objects.
const SCHEMES: &[&str] = &["http", "https", "s3", "gs", "az"];

/// True when `arg` is a URL of a kind read remotely (rather than a path).
/// Schemes are compared without regard to case, as RFC 3986 says.
pub fn is_url(arg: &str) -> bool {
    arg.split_once("://").is_some_and(|(scheme, rest)| {
        SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) && !rest.is_empty()
    })
}

/// `url` with its scheme in lower case (`HTTP://h/m` as `http://h/m`),
/// the form the clients below match on.
pub fn with_lower_scheme(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{}://{rest}", scheme.to_ascii_lowercase()),
        None => url.to_owned(),
    }
}

/// The name a remote object is shown by: the last segment of the URL's
/// path as written, without the query, the fragment or the user info (a
/// URL with no path is named by its host).
pub fn base_name(url: &str) -> String {
    let Some(p) = super::super::redact::Parts::of(url) else {
        return url.to_owned();
    };
    let path = p.path.trim_end_matches('/');
    match path.rsplit_once('/') {
        Some((_, last)) if !last.is_empty() => last.to_owned(),
        _ => p.host.to_owned(),
    }
}

fn retry() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: 3,
        retry_timeout: retry_timeout(),
    }
}

/// Why no store can be built for a URL.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The URL does not parse.
    #[error("not a valid URL: {0}")]
    Url(#[from] url::ParseError),
    /// The URL's path is no object path.
    #[error("not a valid object path: {0}")]
    Path(#[from] object_store::path::Error),
    /// The URL's path is empty.
    #[error("names no object (the path is empty)")]
    NoObject,
    /// A scheme other than `http(s)`, `s3`, `gs` and `az`.
    #[error("URL scheme {0}:// is not one ptefs reads")]
    Scheme(String),
    /// The object store's client refused its configuration.
    #[error("{0}")]
    Client(#[from] object_store::Error),
}

/// The store holding the object `url` names, and the object's path in it.
/// An `http(s)` URL is connected through `access`: its URL without user
/// info, and the headers that go to its origin (see [`super::credentials`]).
pub fn store(
    url: &str,
    access: Option<&Access>,
) -> Result<(Arc<dyn ObjectStore>, Path), StoreError> {
    let (store, path) = store_at(url, access)?;
    if path.as_ref().is_empty() {
        return Err(StoreError::NoObject);
    }
    Ok((store, path))
}

/// The store `url` is in, and the path it names there: an object, or a
/// prefix (empty for a whole bucket).
pub fn store_at(
    url: &str,
    access: Option<&Access>,
) -> Result<(Arc<dyn ObjectStore>, Path), StoreError> {
    let parsed = match access {
        Some(a) => a.url.clone(),
        None => url::Url::parse(url)?,
    };
    let path = Path::from_url_path(parsed.path())?;
    let timeout = |key| [(key, option(request_timeout()))];
    let store: Arc<dyn ObjectStore> = match parsed.scheme() {
        "http" | "https" => {
            // The object's path is added to this; the query (a presigned
            // URL's signature) stays with every request.
            let mut base = parsed.clone();
            base.set_path("");
            base.set_fragment(None);
            let options = ClientOptions::new()
                .with_allow_http(true)
                .with_timeout(request_timeout())
                .with_connect_timeout(connect_timeout());
            let mut b = HttpBuilder::new()
                .with_url(base.as_str())
                .with_client_options(options)
                .with_retry(retry());
            if let Some(a) = access.filter(|a| !a.headers.is_empty()) {
                b = b.with_http_connector(Connector::new(a));
            }
            Arc::new(b.build()?)
        }
        "s3" => {
            let mut b = AmazonS3Builder::from_env()
                .with_url(url)
                .with_retry(retry());
            for (k, v) in timeout(ClientConfigKey::Timeout) {
                b = b.with_config(AmazonS3ConfigKey::Client(k), v);
            }
            b = b.with_config(
                AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                option(connect_timeout()),
            );
            Arc::new(b.build()?)
        }
        "gs" => {
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_url(url)
                .with_retry(retry());
            for (k, v) in timeout(ClientConfigKey::Timeout) {
                b = b.with_config(GoogleConfigKey::Client(k), v);
            }
            Arc::new(b.build()?)
        }
        "az" => {
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_url(url)
                .with_retry(retry());
            for (k, v) in timeout(ClientConfigKey::Timeout) {
                b = b.with_config(AzureConfigKey::Client(k), v);
            }
            Arc::new(b.build()?)
        }
        other => return Err(StoreError::Scheme(other.to_owned())),
    };
    Ok((store, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths_are_told_apart() {
        assert!(is_url("https://example.com/m.pte"));
        assert!(is_url("s3://bucket/m.pte"));
        assert!(!is_url("model.pte"));
        assert!(!is_url("/tmp/https://x"));
        assert!(!is_url("ftp://host/m.pte"));
        assert!(!is_url("http://"));
        assert!(is_url("HTTP://example.com/m.pte"));
        assert!(is_url("S3://bucket/m.pte"));
        assert_eq!(with_lower_scheme("HtTpS://H/M.pte"), "https://H/M.pte");
    }

    #[test]
    fn base_names_leave_out_queries_and_credentials() {
        for (url, name) in [
            ("https://u:pw@h/models/m.pte?X-Amz-Signature=a/b", "m.pte"),
            ("s3://bucket/dir/m.ptd", "m.ptd"),
            ("http://h/dir/", "dir"),
            ("http://u:pw@h:8080", "h:8080"),
            ("http://h/a%20b.pte#sig=1", "a%20b.pte"),
        ] {
            assert_eq!(base_name(url), name, "{url}");
        }
    }

    #[test]
    fn bad_urls_are_refused_with_a_reason() {
        let e = store("http://host", None).err().unwrap();
        assert!(matches!(e, StoreError::NoObject), "{e:?}");
        assert!(e.to_string().contains("names no object"), "{e}");
        let e = store("http://[bad/x.pte", None).err().unwrap();
        assert!(matches!(e, StoreError::Url(_)), "{e:?}");
        assert!(e.to_string().contains("not a valid URL"), "{e}");
    }
}
