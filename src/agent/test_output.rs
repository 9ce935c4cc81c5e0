//! What a test run printed, read as a person reads it: the tests that
//! failed (pytest's, unittest's, cargo's, Go's, TAP's), the runner's last
//! line or its counts, whether any test ran at all, where the kernel
//! refused it access, and a digest of the failures for a model to read.

use crate::command;

/// Failing tests as a person names them: `test_single`, not the
/// runner's whole line; at most five, then how many more.
/// A failing test as [`failures`] reads it, without the runner's words
/// and path: `test_x[1]`.
pub(super) fn short_id(id: &str) -> &str {
    let t = [
        "FAIL ",
        "● ",
        "FAILED ",
        "ERROR ",
        "FAIL: ",
        "ERROR: ",
        "test ",
        "--- FAIL: ",
        "not ok - ",
    ]
    .iter()
    .find_map(|p| id.strip_prefix(p))
    .unwrap_or(id);
    // unittest: `test_x (module.Class.test_x)`; pytest: `file::Class::test_x`.
    let t = t.split(" (").next().unwrap_or(t);
    t.rsplit("::").next().unwrap_or(t)
}

pub(super) fn names(tests: &[String]) -> String {
    let short: Vec<&str> = tests.iter().take(5).map(|t| short_id(t)).collect();
    match tests.len().saturating_sub(5) {
        0 => short.join(", "),
        n => format!("{} and {n} more", short.join(", ")),
    }
}

/// The lines of a test run's output that name a failing test, the same
/// test the same way in every run: pytest's and unittest's, cargo's
/// (`test m::t ... FAILED`), Go's (`--- FAIL: TestX (0.01s)`) and TAP's
/// (`not ok 3 - adds`, as `node --test` reports).
pub(super) fn failures(ran: &command::Ran) -> Vec<String> {
    let mut out: Vec<String> = format!("{}\n{}", ran.stdout, ran.stderr)
        .lines()
        .filter_map(failing_test)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The failing test a line of output names, as [`failures`] says it.
fn failing_test(line: &str) -> Option<String> {
    if (line.starts_with("FAILED ") && !line.starts_with("FAILED ("))
        || line.starts_with("ERROR ")
        || line.starts_with("FAIL: ")
        || line.starts_with("ERROR: ")
    {
        return Some(line.split(" - ").next().unwrap_or(line).trim().to_owned());
    }
    let t = line.trim();
    if let Some(test) = t
        .strip_prefix("test ")
        .and_then(|r| r.strip_suffix(" ... FAILED"))
    {
        return Some(format!("test {test}"));
    }
    if let Some(rest) = t.strip_prefix("--- FAIL: ") {
        return Some(format!(
            "--- FAIL: {}",
            rest.split(" (").next().unwrap_or(rest)
        ));
    }
    // Vitest: ` FAIL  src/calc.test.js > adds`; Jest: `● Suite › adds`.
    if let Some(rest) = t.strip_prefix("FAIL ").filter(|r| r.contains(" > ")) {
        return Some(format!(
            "FAIL {}",
            rest.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    if let Some(rest) = t.strip_prefix("● ") {
        return Some(format!("● {rest}"));
    }
    // TAP numbers tests by their order: a new test renumbers the rest.
    let rest = t.strip_prefix("not ok ")?;
    let name = rest.split_once(" - ").map_or("", |(_, name)| name);
    Some(format!(
        "not ok - {}",
        name.split(" # ").next().unwrap_or(name)
    ))
}

/// The most failing tests a [`digest`] describes.
pub(super) const DIGEST_TESTS: usize = 3;

/// A test run's failures for a model to read: from pytest, each failing
/// test's name, the line that failed and its error, for the first
/// [`DIGEST_TESTS`]; from any other runner, the output's last `chars`.
/// Shown pytest's full tracebacks (diff markers, the same test ten times
/// with other parameters), Qwen2.5-Coder 1.5B lost the point of the
/// failure, and read 2,000 characters for it.
pub(super) fn digest(ran: &command::Ran, chars: usize) -> String {
    let text = format!("{}\n{}", ran.stdout, ran.stderr);
    let header = |l: &str| {
        let t = l.trim();
        t.starts_with("___") && t.ends_with("___") && !t.trim_matches('_').trim().is_empty()
    };
    let mut tests = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if !header(line) {
            continue;
        }
        let name = line.trim().trim_matches('_').trim();
        let mut body = Vec::new();
        while let Some(l) = lines.next_if(|l| !header(l) && !l.starts_with("====")) {
            body.push(l);
        }
        let first_error = body.iter().position(|l| l.starts_with("E "));
        let before = &body[..first_error.unwrap_or(body.len())];
        // Long tracebacks mark the failing line with `>`; short ones end
        // with it, indented, right above the error.
        let failed = before
            .iter()
            .rev()
            .find(|l| l.starts_with('>'))
            .map(|l| &l[1..])
            .or_else(|| before.iter().rev().find(|l| l.starts_with("    ")).copied())
            .map(str::trim);
        let error = first_error.map(|i| body[i][1..].trim());
        let explained = failed.zip(error).and_then(|(line, error)| {
            super::assertion::explain(line, error, &super::assertion::locals(body.iter().copied()))
        });
        tests.push(
            std::iter::once(name)
                .chain(failed)
                .chain(error)
                .chain(explained.as_deref())
                .collect::<Vec<_>>()
                .join("\n    "),
        );
    }
    if tests.is_empty() {
        return tap_digest(&text).unwrap_or_else(|| tail(ran, chars));
    }
    let more = tests.len().saturating_sub(DIGEST_TESTS);
    tests.truncate(DIGEST_TESTS);
    let mut out = tests.join("\n\n");
    if more > 0 {
        out.push_str(&format!("\n\n(and {more} more failing tests)"));
    }
    out
}

/// A TAP report's failures (`node --test`'s): each failing test's
/// `not ok` line with where it failed and its error, without the stack;
/// the first [`DIGEST_TESTS`]. `None` when no test failed so.
fn tap_digest(text: &str) -> Option<String> {
    let mut tests = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if !line.trim_start().starts_with("not ok ") {
            continue;
        }
        let mut kept = vec![line.trim().to_owned()];
        // The YAML block after it, up to `...`: `location:`, and `error:`
        // with the lines indented under it.
        let indent = |l: &str| l.len() - l.trim_start().len();
        let mut error: Option<usize> = None;
        while let Some(l) =
            lines.next_if(|l| !l.trim_start().starts_with("not ok ") && l.trim() != "...")
        {
            let t = l.trim();
            match error {
                Some(_) if t.is_empty() => continue,
                Some(key) if indent(l) > key => {
                    kept.push(t.to_owned());
                    continue;
                }
                _ => error = None,
            }
            if t.starts_with("location:") {
                kept.push(t.to_owned());
            }
            // busted says where and why in comments: `# spec/a_spec.lua @ 3`,
            // `# Failure message: …`, then what was passed and expected.
            if let Some(said) = l.strip_prefix("# ").filter(|_| kept.len() <= BUSTED_LINES) {
                kept.push(said.trim().to_owned());
            }
            if t.starts_with("error:") {
                error = Some(indent(l));
            }
        }
        tests.push(kept.join("\n    "));
    }
    if tests.is_empty() {
        return None;
    }
    let more = tests.len().saturating_sub(DIGEST_TESTS);
    tests.truncate(DIGEST_TESTS);
    let mut out = tests.join("\n\n");
    if more > 0 {
        out.push_str(&format!("\n\n(and {more} more failing tests)"));
    }
    Some(out)
}

/// The most comment lines of busted's kept for one failing test: where,
/// the message, what was passed and what was expected.
const BUSTED_LINES: usize = 6;

/// The last lines of a run's output: where test runners put the summary.
fn tail(ran: &command::Ran, chars: usize) -> String {
    let all = format!("{}\n{}", ran.stdout.trim_end(), ran.stderr.trim_end());
    let all = all.trim();
    let start = all.char_indices().rev().nth(chars).map_or(0, |(i, _)| i);
    all[start..].to_owned()
}

/// The one-line result a test runner printed last ("3 passed in 0.1s",
/// "Ran 4 tests … OK"); cargo's and TAP's counts added up.
pub(super) fn summary_line(ran: &command::Ran) -> String {
    let text = format!("{}\n{}", ran.stdout, ran.stderr);
    if let Some((passed, failed)) = counts(&text) {
        return format!("{passed} passed, {failed} failed");
    }
    // `go test`: a line per package, `ok  \tpath\t0.01s` or `FAIL\tpath…`.
    let packages: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("ok  \t") || l.starts_with("FAIL\t"))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    if !packages.is_empty() {
        return packages.join("; ");
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let ran_line = lines.iter().rev().find(|l| l.starts_with("Ran "));
    let last = lines.last().copied().unwrap_or("");
    match ran_line {
        Some(r) if *r != last => format!("{r}, {last}"),
        _ => last.to_owned(),
    }
}

/// How many tests passed and failed, from the counts cargo (`test
/// result: ok. 3 passed; 1 failed; …`, once per test program) and TAP
/// (`# pass 3`, `# fail 1`) print; `None` from other runners.
fn counts(text: &str) -> Option<(u64, u64)> {
    let number = |s: &str| s.trim().split(' ').next()?.parse::<u64>().ok();
    let mut seen = false;
    let (mut passed, mut failed) = (0, 0);
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("test result: ") {
            seen = true;
            for part in rest.split(';') {
                let part = part.rsplit(". ").next().unwrap_or(part).trim();
                match part.split_once(' ') {
                    Some((n, "passed")) => passed += number(n).unwrap_or(0),
                    Some((n, "failed")) => failed += number(n).unwrap_or(0),
                    _ => {}
                }
            }
        } else if let Some(rest) = line
            .strip_prefix("Tests:")
            .or_else(|| line.strip_prefix("Tests "))
        {
            // Jest: `Tests:  1 failed, 2 passed, 3 total`; Vitest:
            // `Tests  1 failed | 2 passed (3)`.
            for part in rest.split([',', '|']).map(str::trim) {
                let mut words = part.split_whitespace();
                let (Some(n), Some(what)) = (
                    words.next().and_then(|n| n.parse::<u64>().ok()),
                    words.next(),
                ) else {
                    continue;
                };
                seen = true;
                match what {
                    "passed" => passed += n,
                    "failed" => failed += n,
                    _ => {}
                }
            }
        } else if let Some(n) = line.strip_prefix("# pass ").and_then(number) {
            seen = true;
            passed += n;
        } else if let Some(n) = line.strip_prefix("# fail ").and_then(number) {
            failed += n;
        }
    }
    seen.then_some((passed, failed))
        .or_else(|| tap_counts(text))
}

/// TAP's own count where the runner prints no totals (busted's): the
/// top-level `ok N` and `not ok N` lines of a report with a plan (`1..N`).
fn tap_counts(text: &str) -> Option<(u64, u64)> {
    let numbered = |l: &str, word: &str| {
        l.strip_prefix(word)
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|n| n.parse::<u64>().is_ok())
    };
    let mut plan = false;
    let (mut passed, mut failed) = (0, 0);
    for line in text.lines() {
        plan |= line.starts_with("1..");
        passed += u64::from(numbered(line, "ok "));
        failed += u64::from(numbered(line, "not ok "));
    }
    plan.then_some((passed, failed))
}

/// Whether a run found no test to run: unittest's "Ran 0 tests" (a
/// pytest-style file under unittest passes so), pytest's exit code 5, a
/// cargo or TAP run that counted none.
pub(super) fn ran_no_test(ran: &command::Ran) -> bool {
    let said = summary_line(ran);
    (ran.status == Some(5) && said.contains("no tests ran"))
        || said.starts_with("Ran 0 tests")
        || (ran.status == Some(0) && said == "0 passed, 0 failed")
}

/// The first line of a run's output where the kernel refused it access
/// (`PermissionError: [Errno 13] Permission denied: '/home/u/.config'`,
/// `EACCES`), at most 200 characters.
pub(super) fn refused_access(ran: &command::Ran) -> Option<String> {
    let text = format!("{}\n{}", ran.stdout, ran.stderr);
    let line = text.lines().map(str::trim).find(|l| {
        l.contains("Permission denied")
            || l.contains("EACCES")
            || l.contains("Operation not permitted")
    })?;
    Some(line.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_digest_names_each_failing_test_its_line_and_its_error() {
        let block = |name: &str, want: &str| {
            format!("____________ {name} ____________\ntest_x.py:3: in {name}\n    assert camelize('a_b') == 'AB'\nE   AssertionError: assert {want} == 'AB'\nE     \nE     - ab\n")
        };
        let mut stdout = String::from("FF.\n================= FAILURES =================\n");
        for i in 0..5 {
            stdout.push_str(&block(&format!("test_c[{i}]"), "'ab'"));
        }
        stdout.push_str("========== short test summary info ==========\nFAILED test_x.py::test_c[0] - Asser...\n5 failed, 1 passed in 0.1s\n");
        let ran = command::Ran {
            status: Some(1),
            stdout,
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        let d = digest(&ran, 2000);
        assert_eq!(
            d.split("\n\n").next().unwrap(),
            "test_c[0]\n    assert camelize('a_b') == 'AB'\n    AssertionError: assert 'ab' == 'AB'\n    camelize('a_b') returned 'ab'; the test expects 'AB'"
        );
        assert_eq!(d.matches("AssertionError").count(), DIGEST_TESTS);
        assert!(d.ends_with("(and 2 more failing tests)"), "{d}");
        // A long traceback marks the failing line with `>`.
        let long = command::Ran {
            stdout: "___ test_m ___\n\n    def test_m():\n>       assert mean([1]) == 1\nE       assert 0.5 == 1\n\ntest_m.py:4: AssertionError\n".into(),
            ..ran.clone()
        };
        assert_eq!(
            digest(&long, 2000),
            "test_m\n    assert mean([1]) == 1\n    assert 0.5 == 1\n    mean([1]) returned 0.5; the test expects 1"
        );
        // Another runner's output is kept as it ends.
        let other = command::Ran {
            stdout: "FAIL: test_median (t.T)\nAssertionError: 2 != 3\n".into(),
            ..ran
        };
        assert_eq!(
            digest(&other, 2000),
            "FAIL: test_median (t.T)\nAssertionError: 2 != 3"
        );
    }

    #[test]
    fn a_run_that_found_no_test_is_no_pass() {
        let ran = |status, stdout: &str| command::Ran {
            status: Some(status),
            stdout: stdout.into(),
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        assert!(ran_no_test(&ran(
            0,
            "\n----\nRan 0 tests in 0.000s\n\nOK\n"
        )));
        assert!(ran_no_test(&ran(5, "\nno tests ran in 0.01s\n")));
        assert!(!ran_no_test(&ran(0, "Ran 2 tests in 0.001s\n\nOK\n")));
        assert!(!ran_no_test(&ran(0, "3 passed in 0.02s\n")));
    }

    #[test]
    fn failures_and_counts_are_read_from_cargo_go_and_tap_output() {
        let ran = |stdout: &str| command::Ran {
            status: Some(1),
            stdout: stdout.into(),
            stderr: String::new(),
            duration: Duration::ZERO,
        };
        let cargo = ran("running 2 tests\ntest tests::shows ... ok\ntest tests::adds ... FAILED\n\nfailures:\n    tests::adds\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.06s\n\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n");
        assert_eq!(failures(&cargo), ["test tests::adds"]);
        assert_eq!(summary_line(&cargo), "1 passed, 1 failed");
        assert_eq!(names(&failures(&cargo)), "adds");
        let tap = ran("TAP version 13\n# Subtest: adds\nnot ok 1 - adds\n  ---\n  ...\nok 2 - zero\n1..2\n# tests 2\n# pass 1\n# fail 1\n# duration_ms 76.7\n");
        assert_eq!(failures(&tap), ["not ok - adds"]);
        let yaml = "not ok 1 - adds\n  ---\n  duration_ms: 1.6\n  location: '/x/test/calc.test.js:7:1'\n  failureType: 'testCodeFailure'\n  error: |-\n    Expected values to be strictly equal:\n    \n    -1 !== 5\n    \n  code: 'ERR_ASSERTION'\n  stack: |-\n    TestContext.<anonymous> (/x/test/calc.test.js:8:10)\n  ...\nok 2 - zero\n";
        assert_eq!(
            tap_digest(yaml).unwrap(),
            "not ok 1 - adds\n    location: '/x/test/calc.test.js:7:1'\n    Expected values to be strictly equal:\n    -1 !== 5"
        );
        assert_eq!(summary_line(&tap), "1 passed, 1 failed");
        let busted = ran("not ok 1 - calc adds\n# spec/calc_spec.lua @ 3\n# Failure message: spec/calc_spec.lua:4: Expected objects to be equal.\n# Passed in:\n# (number) -1\n# Expected:\n# (number) 5\n# (one line too many)\nok 2 - calc adds zero\n1..2\n");
        assert_eq!(failures(&busted), ["not ok - calc adds"]);
        assert_eq!(summary_line(&busted), "1 passed, 1 failed");
        assert_eq!(
            tap_digest(&busted.stdout).unwrap(),
            "not ok 1 - calc adds\n    spec/calc_spec.lua @ 3\n    Failure message: spec/calc_spec.lua:4: Expected objects to be equal.\n    Passed in:\n    (number) -1\n    Expected:\n    (number) 5"
        );
        let vitest = ran(" FAIL  src/calc.test.js > math > adds\nAssertionError: expected -1 to be 5\n\n Test Files  1 failed (1)\n      Tests  1 failed | 2 passed (3)\n   Duration  319ms\n");
        assert_eq!(failures(&vitest), ["FAIL src/calc.test.js > math > adds"]);
        assert_eq!(summary_line(&vitest), "2 passed, 1 failed");
        let jest = ran("  ● math › adds\n\n    expect(received).toBe(expected)\n\nTests:       1 failed, 2 passed, 3 total\n");
        assert_eq!(failures(&jest), ["● math › adds"]);
        assert_eq!(summary_line(&jest), "2 passed, 1 failed");
        let go = ran("--- FAIL: TestAdd (0.00s)\n    calc_test.go:6: got 0\nFAIL\nFAIL\texample.com/calc\t0.002s\n");
        assert_eq!(failures(&go), ["--- FAIL: TestAdd"]);
        assert_eq!(summary_line(&go), "FAIL example.com/calc");
        let two = ran("ok  \texample.com/a\t0.01s\nFAIL\texample.com/b\t0.02s\nFAIL\n");
        assert_eq!(summary_line(&two), "ok example.com/a; FAIL example.com/b");
        assert_eq!(names(&failures(&go)), "TestAdd");
        let none = command::Ran {
            status: Some(0),
            ..ran("running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored\n")
        };
        assert!(ran_no_test(&none));
    }

    #[test]
    fn failures_are_read_from_pytest_and_unittest_output() {
        let ran = command::Ran {
            status: Some(1),
            stdout: "FAILED tests/test_a.py::test_mean - assert 3 == 2\n1 failed in 0.1s\n".into(),
            stderr: "FAIL: test_median (test_b.T.test_median)\n----\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n".into(),
            duration: Duration::ZERO,
        };
        assert_eq!(
            failures(&ran),
            [
                "FAIL: test_median (test_b.T.test_median)",
                "FAILED tests/test_a.py::test_mean"
            ]
        );
        assert_eq!(
            summary_line(&ran),
            "Ran 2 tests in 0.001s, FAILED (failures=1)"
        );
    }
}
