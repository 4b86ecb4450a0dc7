//! How long a remote operation may take. One limit bounds a whole
//! operation (opening, which may ask twice; one range read, retries
//! included), and the limits of its parts derive from it: a server that
//! stops answering fails the operation once, after that limit, not once
//! per part.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The variable that sets [`limit`], in seconds (`2.5` allowed).
pub const TIMEOUT_VAR: &str = "PTEFS_REMOTE_TIMEOUT";

/// [`limit`] unless [`TIMEOUT_VAR`] says otherwise.
const DEFAULT: Duration = Duration::from_secs(16);

/// The time one remote operation may take, tries and fallbacks included:
/// [`TIMEOUT_VAR`] when it holds a positive number of seconds (a value
/// that is not one is warned about once and the default kept), else 16 s.
pub fn limit() -> Duration {
    static LIMIT: OnceLock<Duration> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let Some(v) = std::env::var_os(TIMEOUT_VAR) else {
            return DEFAULT;
        };
        match v.to_str().and_then(|s| s.trim().parse::<f64>().ok()) {
            Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Duration::from_secs_f64(s),
            _ => {
                log::warn!(
                    "{TIMEOUT_VAR}={}: not a positive number of seconds; the limit stays {} s",
                    v.to_string_lossy(),
                    DEFAULT.as_secs()
                );
                DEFAULT
            }
        }
    })
}

/// When an operation started now must have ended.
pub fn deadline() -> Instant {
    Instant::now() + limit()
}

/// One try of a request, connecting included: half the limit, so that a
/// try that fails at once (a dropped connection) leaves time for another.
pub fn request_timeout() -> Duration {
    limit() / 2
}

/// Connecting: a quarter of the limit.
pub fn connect_timeout() -> Duration {
    limit() / 4
}

/// All tries of one request together, backoff included: the limit.
pub fn retry_timeout() -> Duration {
    limit()
}

/// `d` in the form the object store's options take (`1.5s`).
pub fn option(d: Duration) -> String {
    format!("{}ms", d.as_millis().max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_fit_within_the_limit() {
        assert!(request_timeout() < limit());
        assert!(connect_timeout() < request_timeout());
        assert_eq!(retry_timeout(), limit());
        assert_eq!(option(Duration::from_millis(1500)), "1500ms");
    }
}
