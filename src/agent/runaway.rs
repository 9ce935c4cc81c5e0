//! A reply that has fallen into a loop, told as it streams in: a small
//! model sometimes writes one line over and over with a number counting on
//! (`self.assertEqual(clamp(15, 15, -27), -27)`, then -28, …), or a whole
//! block again and again (a file inside a JSON string), until the token
//! limit.

/// Lines of one shape in a row that make a reply a loop. Qwen2.5-Coder
/// 1.5B, asked for "unittest tests for clamp", wrote 2,048 tokens of such
/// assertions in 213 s on 2 cores and the answer did not parse (eval, new-
/// mathutil-tests); an earlier run lost the agent's whole 300 s the same
/// way. Twenty alike lines is more than any answer of the eval sets wrote
/// on purpose.
pub const RUNAWAY_LINES: usize = 20;

/// Copies of one block in a row that make a reply a loop.
const CYCLE_COPIES: usize = 3;

/// The shortest block counted as a cycle: shorter repeats (a row of `0, `
/// in a table) are the line rule's or nobody's business.
const CYCLE_MIN: usize = 64;

/// The end of the reply looked for earlier in it, to find a cycle.
const CYCLE_KEY: usize = 32;

/// Watches a reply as it streams, and keeps what it heard.
#[derive(Debug, Default)]
pub struct Runaway {
    heard: String,
    /// How much of `heard` is split into lines.
    read: usize,
    shape: String,
    line: String,
    run: usize,
    /// The first line of a block repeated [`CYCLE_COPIES`] times in a row,
    /// or [`BLANK`] for a run of blank space.
    cycle: Option<String>,
}

/// Blank characters in a row that make a reply a loop: under a JSON
/// grammar, 1.5B wrote 7,000 characters of spaces and tabs before the
/// closing brace (eval, item-repr: 231 s). No answer needs 200.
const BLANK_RUN: usize = 200;

/// What a run of blank space is called where a loop's line is shown.
pub const BLANK: &str = "(blank space)";

impl Runaway {
    /// Takes the next piece of the reply: true once [`RUNAWAY_LINES`]
    /// lines of one shape came in a row, or one block
    /// [`CYCLE_COPIES`] times.
    pub fn feed(&mut self, piece: &str) -> bool {
        if self.cycle.is_some() {
            return true;
        }
        self.heard.push_str(piece);
        if self.cycled() || self.blank() {
            return true;
        }
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

    /// Whether the reply now ends in [`BLANK_RUN`] blank characters; if
    /// so, cuts them off.
    fn blank(&mut self) -> bool {
        let kept = self.heard.trim_end().len();
        if self.heard.len() - kept < BLANK_RUN {
            return false;
        }
        self.heard.truncate(kept);
        self.read = self.read.min(kept);
        self.cycle = Some(BLANK.to_owned());
        true
    }

    /// Whether the reply now ends in [`CYCLE_COPIES`] copies of one block
    /// of at least [`CYCLE_MIN`] characters; if so, cuts it after the first
    /// copy and keeps that copy's first line.
    fn cycled(&mut self) -> bool {
        let heard = self.heard.as_bytes();
        let len = heard.len();
        if len < CYCLE_MIN * CYCLE_COPIES {
            return false;
        }
        let key = &heard[len - CYCLE_KEY..];
        // Each earlier place the end of the reply was also written is a
        // period to try, nearest first.
        let mut before = len - CYCLE_KEY;
        while let Some(at) = heard[..before].windows(CYCLE_KEY).rposition(|w| w == key) {
            before = at + CYCLE_KEY - 1;
            let period = len - CYCLE_KEY - at;
            if period * CYCLE_COPIES > len {
                return false;
            }
            if !periodic(&heard[len - period * CYCLE_COPIES..], period) {
                continue;
            }
            // A short line again and again is the line rule's to judge
            // (its multiples would pass for long blocks here).
            if period < CYCLE_MIN {
                return false;
            }
            // Back to where the repeating began: one copy from there stays.
            let mut start = len - period * CYCLE_COPIES;
            while start > 0 && heard[start - 1] == heard[start - 1 + period] {
                start -= 1;
            }
            let mut cut = start + period;
            while !self.heard.is_char_boundary(cut) {
                cut += 1;
            }
            let block = &self.heard[start..cut];
            let first = block
                .split("\\n")
                .flat_map(|l| l.split('\n'))
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("");
            self.cycle = Some(first.chars().take(80).collect());
            self.heard.truncate(cut);
            self.read = self.read.min(cut);
            return true;
        }
        false
    }

    /// The first of the repeated lines, once it is a loop.
    pub fn looped(&self) -> Option<&str> {
        if let Some(line) = &self.cycle {
            return Some(line);
        }
        (self.run >= RUNAWAY_LINES).then_some(self.line.as_str())
    }

    /// The reply as heard (once a loop, up to the line that made it one).
    pub fn heard(&self) -> &str {
        &self.heard
    }
}

/// Whether `text` repeats itself every `period` bytes.
fn periodic(text: &[u8], period: usize) -> bool {
    text.iter().zip(&text[period..]).all(|(a, b)| a == b)
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

    /// Qwen2.5-Coder 1.5B in tool mode, asked to "make slugify also
    /// replace underscores with hyphens", wrote the file into a JSON string
    /// over and over (`\\n` escapes, no line ends) until 2,048 tokens: 234 s
    /// for nothing, twice (eval, slugify-underscore, seed 1).
    #[test]
    fn a_block_written_three_times_in_a_row_is_a_loop_even_on_one_line() {
        let file = "def slugify(text):\\n    return text.strip().lower().replace(\\\" \\\", \\\"-\\\")\\n\\n\\ndef truncate(text, n):\\n    if len(text) <= n:\\n        return text\\n    return text[:n]\\n\\n\\n";
        let head = "{\"tool\": \"write_definitions\", \"args\": {\"path\": \"inventory/text.py\", \"code\": \"";
        let mut r = Runaway::default();
        assert!(!r.feed(head));
        let mut fed = head.to_owned();
        let mut fired = None;
        for copy in 0..6 {
            // In pieces, as tokens come.
            for piece in file.as_bytes().chunks(7) {
                let piece = std::str::from_utf8(piece).unwrap();
                fed.push_str(piece);
                if r.feed(piece) {
                    fired = Some(copy);
                    break;
                }
            }
            if fired.is_some() {
                break;
            }
        }
        assert_eq!(fired, Some(2), "cut during the third copy");
        assert_eq!(r.heard(), format!("{head}{file}"), "one copy kept");
        assert_eq!(r.looped(), Some("def slugify(text):"));
    }

    #[test]
    fn a_long_reply_with_no_block_repeated_three_times_is_not_a_loop() {
        let mut r = Runaway::default();
        // Twice the same block is a copy, not a loop; then other text.
        let block = "x".repeat(50) + &"def f():\\n    return 1\\n".repeat(10);
        assert!(!r.feed(&block) && !r.feed(&block));
        for i in 0..200 {
            assert!(
                !r.feed(&format!("value_{i} = compute({i}, {})\\n", i * 7)),
                "fired at {i}"
            );
        }
        assert_eq!(r.looped(), None);
    }

    #[test]
    fn a_long_run_of_blank_space_is_a_loop_and_is_cut_off() {
        let mut r = Runaway::default();
        let head =
            "{\"tool\": \"write_file\", \"args\": {\"path\": \"a.py\", \"content\": \"x = 1\"} ";
        assert!(!r.feed(head));
        // Blank lines of eleven characters after a space, as tokens come.
        let mut fired = 0;
        for i in 1..100 {
            if r.feed("  \t\t\t\t\t\t  \n") {
                fired = i;
                break;
            }
        }
        assert_eq!(fired, 19, "cut at 200 blank characters");
        assert_eq!(r.heard(), head.trim_end());
        assert_eq!(r.looped(), Some(BLANK));
        // Code with blank lines and indentation is no loop.
        let mut r = Runaway::default();
        for _ in 0..50 {
            assert!(!r.feed("def f():\n\n\n        return 1\n\n    \n"));
        }
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
