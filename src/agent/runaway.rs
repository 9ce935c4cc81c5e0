//! A reply that has fallen into a loop, told from the lines streaming in:
//! a small model sometimes writes one line over and over with a number
//! counting on (`self.assertEqual(clamp(15, 15, -27), -27)`, then -28, …)
//! until the token limit.

/// Lines of one shape in a row that make a reply a loop. Qwen2.5-Coder
/// 1.5B, asked for "unittest tests for clamp", wrote 2,048 tokens of such
/// assertions in 213 s on 2 cores and the answer did not parse (eval, new-
/// mathutil-tests); an earlier run lost the agent's whole 300 s the same
/// way. Twenty alike lines is more than any answer of the eval sets wrote
/// on purpose.
pub const RUNAWAY_LINES: usize = 20;

/// Watches a reply as it streams, and keeps what it heard.
#[derive(Debug, Default)]
pub struct Runaway {
    heard: String,
    /// How much of `heard` is split into lines.
    read: usize,
    shape: String,
    line: String,
    run: usize,
}

impl Runaway {
    /// Takes the next piece of the reply: true once [`RUNAWAY_LINES`]
    /// lines of one shape came in a row.
    pub fn feed(&mut self, piece: &str) -> bool {
        self.heard.push_str(piece);
        while let Some(end) = self.heard[self.read..].find('\n') {
            let line = self.heard[self.read..self.read + end].trim();
            self.read += end + 1;
            if line.is_empty() {
                continue;
            }
            let shape = shape(line);
            if shape == self.shape {
                self.run += 1;
            } else {
                self.shape = shape;
                self.line = line.to_owned();
                self.run = 1;
            }
            if self.run >= RUNAWAY_LINES {
                // Cut at the end of the line that made it a loop.
                self.heard.truncate(self.read);
                return true;
            }
        }
        false
    }

    /// The first of the repeated lines, once it is a loop.
    pub fn looped(&self) -> Option<&str> {
        (self.run >= RUNAWAY_LINES).then_some(self.line.as_str())
    }

    /// The reply as heard (once a loop, up to the line that made it one).
    pub fn heard(&self) -> &str {
        &self.heard
    }
}

/// A line with each number masked: the lines of a loop differ only in
/// numbers counting on (9, then 10).
fn shape(line: &str) -> String {
    let mut shape = String::with_capacity(line.len());
    for c in line.chars() {
        match c.is_ascii_digit() {
            true if shape.ends_with('#') => {}
            true => shape.push('#'),
            false => shape.push(c),
        }
    }
    shape
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertions_counting_on_are_a_loop_at_the_twentieth() {
        let mut r = Runaway::default();
        let head = "```python\nclass T:\n    def test(self):\n";
        assert!(!r.feed(head));
        let line = |i: usize| format!("        self.assertEqual(clamp(15, 15, -{i}), -{i})\n");
        for i in 0..RUNAWAY_LINES - 1 {
            // Pieces end anywhere, as tokens do.
            let whole = line(i);
            let (a, b) = whole.split_at(17);
            assert!(!r.feed(a) && !r.feed(b), "fired at line {i}");
        }
        assert_eq!(r.looped(), None);
        assert!(r.feed(&format!("{}        self.assert", line(99))));
        assert_eq!(r.looped(), Some("self.assertEqual(clamp(15, 15, -0), -0)"));
        let kept: String = (0..RUNAWAY_LINES - 1).map(line).collect();
        assert_eq!(r.heard(), format!("{head}{kept}{}", line(99)));
    }

    #[test]
    fn lines_of_different_shapes_are_not_a_loop() {
        let mut r = Runaway::default();
        for i in 0..100 {
            let line = match i % 2 {
                0 => format!("x{i} = {i}\n"),
                _ => format!("print(x{})\n\n", i - 1),
            };
            assert!(!r.feed(&line), "fired at {i}");
        }
        assert_eq!(r.looped(), None);
    }

    #[test]
    fn an_unended_line_is_not_counted() {
        let mut r = Runaway::default();
        for _ in 0..RUNAWAY_LINES - 1 {
            r.feed("assert f(1) == 1\n");
        }
        assert!(!r.feed("assert f(1) == 1"));
        assert!(r.feed("\n"));
    }
}
