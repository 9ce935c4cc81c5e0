//! A failing pytest assertion in the words a small model acts on: what the
//! call returned and what the test expects, with the test's own values in
//! place of its variable names.
//!
//! pytest says `assert 'Employee salary' == 'employee salary'` under the
//! line `assert human == inflection.humanize(underscore)`: which side is
//! the code's answer, and for which input, is left to the reader. On the
//! real `inflection` bugs Qwen2.5-Coder 1.5B, shown that, most often gave
//! the function back unchanged.

/// `source`, the assertion's line (`assert expected == f(x)`); `error`,
/// pytest's message for it (`AssertionError: assert 'a' == 'b'`);
/// `locals`, the test's variables as pytest's `-l` shows them. `None`
/// unless exactly one side of an `==` calls something.
pub fn explain(source: &str, error: &str, locals: &[(String, String)]) -> Option<String> {
    let source = source.trim().strip_prefix("assert ")?;
    let error = error.trim();
    let said = error
        .strip_prefix("AssertionError: ")
        .unwrap_or(error)
        .strip_prefix("assert ")?;
    let (left, right) = split_eq(source)?;
    let (left_value, right_value) = split_eq(said)?;
    let (call, returned, expected) = match (is_call(left), is_call(right)) {
        (true, false) => (left, left_value, right_value),
        (false, true) => (right, right_value, left_value),
        _ => return None,
    };
    Some(format!(
        "{} returned {returned}; the test expects {expected}",
        with_values(call, locals)
    ))
}

/// The two sides of the first `==` outside brackets and quotes.
fn split_eq(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let (mut depth, mut quote, mut escaped) = (0i32, None::<u8>, false);
    for (i, &b) in bytes.iter().enumerate() {
        if let Some(q) = quote {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                _ if b == q => quote = None,
                _ => {}
            }
            continue;
        }
        match b {
            b'\'' | b'"' => quote = Some(b),
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'=' if depth == 0 && text[i..].starts_with("== ") && text[..i].ends_with(' ') => {
                return Some((text[..i].trim(), text[i + 2..].trim()));
            }
            _ => {}
        }
    }
    None
}

/// Whether `side` calls something: a name right before a `(` outside quotes.
fn is_call(side: &str) -> bool {
    let first = side.chars().next();
    if matches!(first, Some('\'' | '"')) {
        return false;
    }
    side.char_indices().any(|(i, c)| {
        c == '('
            && side[..i]
                .chars()
                .last()
                .is_some_and(|p| p.is_alphanumeric() || p == '_')
    })
}

/// `call` with each of the test's variables it names replaced by its value
/// (short values only: a long one would hide the call).
fn with_values(call: &str, locals: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let mut after_dot = false;
    let flush = |word: &mut String, out: &mut String, after_dot: bool| {
        let value = (!after_dot)
            .then(|| locals.iter().find(|(name, _)| name == word))
            .flatten()
            .filter(|(_, value)| value.len() <= 80);
        match value {
            Some((_, value)) => out.push_str(value),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in call.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        flush(&mut word, &mut out, after_dot);
        after_dot = c == '.';
        out.push(c);
    }
    flush(&mut word, &mut out, after_dot);
    out
}

/// The variables pytest's `-l` lists under a failure's error
/// (`        name      = value`); the source above the error, indented
/// alike, is not read.
pub fn locals<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<(String, String)> {
    lines
        .skip_while(|l| !l.starts_with("E "))
        // pytest's own lines (`E   …`) start at the margin.
        .filter(|l| l.starts_with("        "))
        .filter_map(|l| {
            let (name, value) = l.trim().split_once(" = ")?;
            let name = name.trim();
            (!name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_'))
                .then(|| (name.to_owned(), value.trim().to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_call_its_input_and_both_values_are_named() {
        let said = explain(
            "    assert human == inflection.humanize(underscore)",
            "AssertionError: assert 'Employee salary' == 'employee salary'",
            &vars(&[
                ("human", "'Employee salary'"),
                ("underscore", "'employee_salary'"),
            ]),
        );
        assert_eq!(
            said.as_deref(),
            Some("inflection.humanize('employee_salary') returned 'employee salary'; the test expects 'Employee salary'")
        );
    }

    #[test]
    fn the_call_may_be_on_the_left() {
        let said = explain(
            "assert ordinal(number) == suffix",
            "AssertionError: assert 'nd' == 'st'",
            &vars(&[("number", "2"), ("suffix", "'st'")]),
        );
        assert_eq!(
            said.as_deref(),
            Some("ordinal(2) returned 'nd'; the test expects 'st'")
        );
    }

    #[test]
    fn an_equals_sign_inside_a_string_or_call_is_not_the_comparison() {
        let said = explain(
            "assert f(a, k='x == y') == 'a == b'",
            "AssertionError: assert 'c == d' == 'a == b'",
            &[],
        );
        assert_eq!(
            said.as_deref(),
            Some("f(a, k='x == y') returned 'c == d'; the test expects 'a == b'")
        );
    }

    #[test]
    fn without_exactly_one_call_nothing_is_said() {
        assert_eq!(
            explain(
                "assert result == expected",
                "AssertionError: assert 1 == 2",
                &[]
            ),
            None
        );
        assert_eq!(
            explain("assert f(1) == g(2)", "AssertionError: assert 1 == 2", &[]),
            None
        );
        assert_eq!(
            explain("assert f(1)", "AssertionError: assert None", &[]),
            None
        );
        assert_eq!(
            explain("assert f(x) == 1", "TypeError: bad operand", &[]),
            None
        );
    }

    #[test]
    fn an_attribute_that_shares_a_variables_name_is_left_alone() {
        let said = explain(
            "assert mod.word(word) == 'x'",
            "AssertionError: assert 'y' == 'x'",
            &vars(&[("word", "'w'")]),
        );
        assert_eq!(
            said.as_deref(),
            Some("mod.word('w') returned 'y'; the test expects 'x'")
        );
    }

    #[test]
    fn text_beyond_ascii_is_read_whole() {
        let said = explain(
            "assert übersetze(wort) == 'ǅ'",
            "AssertionError: assert 'ä == ö' == 'ǅ'",
            &vars(&[("wort", "'straße'")]),
        );
        assert_eq!(
            said.as_deref(),
            Some("übersetze('straße') returned 'ä == ö'; the test expects 'ǅ'")
        );
    }

    #[test]
    fn locals_are_read_from_pytests_listing() {
        let lines = [
            "    def test_h():",
            "        human = 'not a local: the source above the error'",
            "E   AssertionError: assert 'a' == 'b'",
            "E     - b",
            "        human      = 'Employee salary'",
            "        underscore = 'employee_salary'",
            "        Expected   = 3",
        ];
        assert_eq!(
            locals(lines.into_iter()),
            vars(&[
                ("human", "'Employee salary'"),
                ("underscore", "'employee_salary'"),
                ("Expected", "3")
            ])
        );
    }
}
