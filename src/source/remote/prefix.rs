//! The objects under a prefix of an object store (`s3://bucket/dir/`),
//! with their sizes and identities, and writing whole objects there: what
//! `ptefs index` lists and where it may write its catalog.

use std::future::Future;
use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::limits::limit;
use super::store::{store_at, with_lower_scheme};
use crate::source::SourceError;
use crate::source::redact::{Secrets, redact};

/// Schemes whose URLs may name a prefix.
const PREFIX_SCHEMES: &[&str] = &["s3", "gs", "az"];

/// Objects listed at most, so a hostile or mistaken prefix ends.
const MAX_OBJECTS: usize = 10_000_000;

/// True when `url` names a prefix of an object store rather than one
/// object: an `s3://`, `gs://` or `az://` URL ending in `/`.
pub fn is_prefix(url: &str) -> bool {
    let url = with_lower_scheme(url);
    url.ends_with('/')
        && url
            .split_once("://")
            .is_some_and(|(s, _)| PREFIX_SCHEMES.contains(&s))
}

/// One object listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Its URL: the prefix's scheme and bucket, and its key.
    pub url: String,
    /// Bytes.
    pub size: u64,
    /// Its entity tag, when the store gives one.
    pub etag: Option<String>,
    /// When it was last modified, nanoseconds since the epoch.
    pub modified: i64,
}

/// A prefix of an object store, connected.
pub struct Prefix {
    store: Arc<dyn ObjectStore>,
    path: Path,
    /// `scheme://bucket/`, which each key is appended to.
    root: String,
    shown: String,
    secrets: Secrets,
    runtime: tokio::runtime::Runtime,
}

impl Prefix {
    /// Connects to the store `url` (a prefix) is in.
    pub fn open(url: &str) -> Result<Prefix, SourceError> {
        let shown = redact(url);
        let secrets = Secrets::of_url(url);
        let url = with_lower_scheme(url);
        let error = |e: String| SourceError::Remote {
            url: shown.clone(),
            error: secrets.scrub(&e),
        };
        let (store, path) = store_at(&url, None).map_err(|e| error(e.to_string()))?;
        let parsed = url::Url::parse(&url).map_err(|e| error(e.to_string()))?;
        let root = format!("{}://{}/", parsed.scheme(), parsed.host_str().unwrap_or(""));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| error(format!("starting the I/O runtime: {e}")))?;
        Ok(Prefix {
            store,
            path,
            root,
            shown,
            secrets,
            runtime,
        })
    }

    fn error(&self, e: impl std::fmt::Display) -> SourceError {
        SourceError::Remote {
            url: self.shown.clone(),
            error: self.secrets.scrub(&e.to_string()),
        }
    }

    /// Runs `f` within one [`limit`].
    fn run<T>(&self, f: impl Future<Output = object_store::Result<T>>) -> Result<T, SourceError> {
        self.runtime.block_on(async {
            match tokio::time::timeout(limit(), f).await {
                Ok(r) => r.map_err(|e| self.error(e)),
                Err(_) => Err(self.error(format_args!(
                    "no answer within {:.1} s",
                    limit().as_secs_f64()
                ))),
            }
        })
    }

    /// The path under the prefix `rel` (`files/part-1.parquet`) names.
    fn under(&self, rel: &str) -> Path {
        let base = self.path.as_ref().trim_end_matches('/');
        if base.is_empty() {
            Path::from(rel)
        } else {
            Path::from(format!("{base}/{rel}"))
        }
    }

    /// Every object under `rel` (the whole prefix when empty), in key
    /// order, walked one level at a time.
    pub fn list(&self, rel: &str) -> Result<Vec<Object>, SourceError> {
        let mut out = Vec::new();
        let mut dirs = vec![if rel.is_empty() {
            self.path.clone()
        } else {
            self.under(rel)
        }];
        while let Some(dir) = dirs.pop() {
            let at = (!dir.as_ref().is_empty()).then_some(&dir);
            let listed = self.run(self.store.list_with_delimiter(at))?;
            for o in listed.objects {
                out.push(Object {
                    url: format!("{}{}", self.root, o.location),
                    size: o.size,
                    etag: o.e_tag,
                    modified: o.last_modified.timestamp_nanos_opt().unwrap_or_default(),
                });
            }
            if out.len() > MAX_OBJECTS {
                return Err(self.error(format_args!(
                    "more than {MAX_OBJECTS} objects; list a narrower prefix"
                )));
            }
            dirs.extend(listed.common_prefixes.into_iter().rev());
        }
        out.sort_by(|a, b| a.url.cmp(&b.url));
        Ok(out)
    }

    /// The bytes of the object `rel` under the prefix.
    pub fn get(&self, rel: &str) -> Result<Vec<u8>, SourceError> {
        let path = self.under(rel);
        let bytes = self.run(async { self.store.get(&path).await?.bytes().await })?;
        Ok(bytes.to_vec())
    }

    /// Writes `bytes` as the object `rel` under the prefix: whole, as one
    /// put, so no reader sees part of it.
    pub fn put(&self, rel: &str, bytes: Vec<u8>) -> Result<(), SourceError> {
        let path = self.under(rel);
        self.run(self.store.put(&path, PutPayload::from(bytes)))
            .map(|_| ())
    }

    /// Removes the object `rel` under the prefix.
    pub fn delete(&self, rel: &str) -> Result<(), SourceError> {
        let path = self.under(rel);
        self.run(self.store.delete(&path))
    }

    /// `url` relative to the prefix, for an object [`Prefix::list`] gave.
    pub fn relative<'u>(&self, url: &'u str) -> &'u str {
        let full = format!("{}{}", self.root, self.path.as_ref().trim_end_matches('/'));
        url.strip_prefix(&full)
            .map_or(url, |r| r.trim_start_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_store_urls_ending_in_a_slash() {
        assert!(is_prefix("s3://bucket/models/"));
        assert!(is_prefix("S3://bucket/"));
        assert!(is_prefix("gs://b/x/"));
        assert!(!is_prefix("s3://bucket/m.pte"));
        assert!(!is_prefix("https://host/models/"));
        assert!(!is_prefix("models/"));
    }
}
