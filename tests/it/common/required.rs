//! Real components the tests need beyond the crate (FUSE, root, servers,
//! Graphviz, flatc, Chromium), and the time the slow tests take: a test
//! without what it needs is skipped loudly and counted by
//! scripts/test-summary.sh, and fails instead when the run requires every
//! real component (`PTEFS_REQUIRE_ALL=1`, which CI sets; the older
//! `PTEFS_REQUIRE_FUSE=1` means the same).

use std::path::PathBuf;

use super::mounted::which;

/// Whether this run requires every real component rather than skipping
/// the tests that lack one.
pub fn required() -> bool {
    ["PTEFS_REQUIRE_ALL", "PTEFS_REQUIRE_FUSE"]
        .iter()
        .any(|v| std::env::var(v).as_deref() == Ok("1"))
}

/// Whether this run includes the slow tests (the 30 s soak, the memory
/// bounds, sources that could block, remote servers): `PTEFS_SLOW_TESTS=1`,
/// which CI sets.
pub fn slow_tests() -> bool {
    std::env::var("PTEFS_SLOW_TESTS").as_deref() == Ok("1")
}

/// True when the slow tests run; otherwise skips `test` loudly, saying how
/// to run it, or panics when the run requires every test.
pub fn slow_or_skip(test: &str) -> bool {
    let why = "a slow test, run only with PTEFS_SLOW_TESTS=1 (as .ci/run sets)";
    skip_unless(test, (!slow_tests()).then_some(why))
}

/// True when `why` is `None`; otherwise skips `test` loudly, or panics
/// when the run requires every component.
pub fn skip_unless(test: &str, why: Option<&str>) -> bool {
    match why {
        None => true,
        Some(why) if required() => panic!("{test}: PTEFS_REQUIRE_ALL=1 but {why}"),
        Some(why) => {
            report_skip(test, why);
            false
        }
    }
}

/// The path of `program`, or `None` after skipping `test` as
/// [`skip_unless`] does; `installer` says what installs it.
pub fn tool_or_skip(test: &str, program: &str, installer: &str) -> Option<PathBuf> {
    let found = which(program);
    let why = format!("{program} is missing ({installer} installs it)");
    if skip_unless(test, found.is_none().then_some(why.as_str())) {
        found
    } else {
        None
    }
}

/// Says loudly that `test` did not run, and records it in the file named
/// by `PTEFS_SKIP_LOG` (set by scripts/test.sh, whose summary lists it):
/// a skipped test passes as far as the test runner knows. The line goes
/// to stderr itself, past the test runner's capture of a passing test's
/// output, so that a plain `cargo test` shows it too.
pub fn report_skip(test: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!!!!! SKIPPED {test}: {why}; set PTEFS_REQUIRE_ALL=1 to make this fail !!!!!!!!\n"
    );
    if let Some(log) = std::env::var_os("PTEFS_SKIP_LOG") {
        let line = format!("{test}: {why}\n");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            eprintln!("cannot record the skip in {}: {e}", log.to_string_lossy());
        }
    }
}
