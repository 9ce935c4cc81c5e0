//! What a shell line runs, read without running it: the program of each
//! of its simple commands (`cd src && python3 -m pytest | tail -5` runs
//! `python3` and `tail`), so that an agent's shell line is allowed or
//! refused by what it runs, as a program with arguments is. A line whose
//! programs cannot be known before it runs — a command substitution, a
//! subshell, a compound command, a program named by a variable, a
//! here-document — is [`Unjudged`], never guessed.

/// Shell builtins that run no program and change nothing a rule guards:
/// a line may use them whatever the rules list.
const HARMLESS: &[&str] = &[
    "cd", "pwd", "echo", "printf", "true", "false", ":", "test", "[", "set", "exit", "wait",
];

/// Words that begin a compound command: what runs depends on the run.
const COMPOUND: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "function", "select", "coproc", "time", "!", "[[", "]]", "{", "}",
];

/// Variables that would change which program a name runs, or run code of
/// their own, when set before a command (`PATH=. tool`).
fn steers(name: &str) -> bool {
    matches!(
        name,
        "PATH" | "BASH_ENV" | "ENV" | "IFS" | "SHELLOPTS" | "BASHOPTS" | "PROMPT_COMMAND"
    ) || name.starts_with("LD_")
}

/// Why a line's programs cannot be known before it runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unjudged {
    #[error("it substitutes a command's output (`$(…)` or backquotes)")]
    Substitution,
    #[error("it runs a subshell or a group (`(…)`)")]
    Subshell,
    #[error("it has a compound command (`{0}`)")]
    Compound(String),
    #[error("a program is named by a variable or a pattern (`{0}`)")]
    Variable(String),
    #[error("it sets {0} for a command, which changes what runs")]
    Steers(String),
    #[error("it has a here-document (`<<`)")]
    HereDocument,
    #[error("a quote is not closed")]
    Unclosed,
    #[error("it runs nothing")]
    Empty,
}

/// One piece of a line: a word, or what separates commands.
#[derive(Debug, PartialEq)]
enum Token {
    /// A word as written, and whether any of it was quoted.
    Word(String, bool),
    /// `;`, `&`, `|`, `&&`, `||` or a line break.
    Separator,
    /// `>`, `>>`, `<`, `2>`, `&>`, `>&`, …: the next word is a file.
    Redirect,
}

/// The programs `line` runs, in order, without the [`HARMLESS`] builtins.
pub fn programs(line: &str) -> Result<Vec<String>, Unjudged> {
    let mut out = Vec::new();
    let mut at_start = true;
    let mut file_next = false;
    let mut ran_any = false;
    for token in tokens(line)? {
        match token {
            Token::Separator => {
                at_start = true;
                file_next = false;
            }
            Token::Redirect => file_next = true,
            Token::Word(_, _) if file_next => file_next = false,
            Token::Word(word, quoted) if at_start => {
                if let Some((name, _)) = word.split_once('=').filter(|(n, _)| is_name(n)) {
                    if !quoted && steers(name) {
                        return Err(Unjudged::Steers(name.to_owned()));
                    }
                    continue;
                }
                if !quoted && COMPOUND.contains(&word.as_str()) {
                    return Err(Unjudged::Compound(word));
                }
                if word.contains(['$', '*', '?', '[']) && word != "[" {
                    return Err(Unjudged::Variable(word));
                }
                at_start = false;
                ran_any = true;
                if !HARMLESS.contains(&word.as_str()) {
                    out.push(word);
                }
            }
            Token::Word(_, _) => {}
        }
    }
    if !ran_any {
        return Err(Unjudged::Empty);
    }
    Ok(out)
}

fn is_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Splits `line` as a shell reads it, far enough to find its commands.
fn tokens(line: &str) -> Result<Vec<Token>, Unjudged> {
    let mut lex = Lexer::default();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => lex.single_quoted(&mut chars)?,
            '"' => lex.double_quoted(&mut chars)?,
            '\\' => {
                lex.quoted_word();
                match chars.next() {
                    // A line continued on the next.
                    Some('\n') | None => {}
                    Some(c) => lex.word.push(c),
                }
            }
            '`' => return Err(Unjudged::Substitution),
            '$' if chars.peek() == Some(&'(') => return Err(Unjudged::Substitution),
            '(' | ')' => return Err(Unjudged::Subshell),
            '#' if !lex.in_word => {
                // A comment, to the end of its line.
                while chars.next_if(|c| *c != '\n').is_some() {}
            }
            ' ' | '\t' => lex.end_word(),
            ';' | '\n' => lex.separate(),
            '|' => {
                chars.next_if_eq(&'|');
                chars.next_if_eq(&'&');
                lex.separate();
            }
            '&' if chars.next_if_eq(&'>').is_some() => {
                chars.next_if_eq(&'>');
                lex.end_word();
                lex.out.push(Token::Redirect);
            }
            '&' => {
                chars.next_if_eq(&'&');
                lex.separate();
            }
            '<' | '>' => lex.redirect(c, &mut chars)?,
            c => {
                lex.in_word = true;
                lex.word.push(c);
            }
        }
    }
    lex.end_word();
    Ok(lex.out)
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

/// The tokens read so far and the word being read.
#[derive(Default)]
struct Lexer {
    out: Vec<Token>,
    word: String,
    quoted: bool,
    in_word: bool,
}

impl Lexer {
    fn end_word(&mut self) {
        if self.in_word {
            self.out
                .push(Token::Word(std::mem::take(&mut self.word), self.quoted));
        }
        self.quoted = false;
        self.in_word = false;
    }

    fn separate(&mut self) {
        self.end_word();
        self.out.push(Token::Separator);
    }

    fn quoted_word(&mut self) {
        self.in_word = true;
        self.quoted = true;
    }

    /// `'…'`: every character as it is.
    fn single_quoted(&mut self, chars: &mut Chars<'_>) -> Result<(), Unjudged> {
        self.quoted_word();
        loop {
            match chars.next() {
                Some('\'') => return Ok(()),
                Some(c) => self.word.push(c),
                None => return Err(Unjudged::Unclosed),
            }
        }
    }

    /// `"…"`: escapes read, a command substitution never judged.
    fn double_quoted(&mut self, chars: &mut Chars<'_>) -> Result<(), Unjudged> {
        self.quoted_word();
        loop {
            match chars.next() {
                Some('"') => return Ok(()),
                Some('\\') => self.word.extend(chars.next()),
                Some('`') => return Err(Unjudged::Substitution),
                Some('$') if chars.peek() == Some(&'(') => return Err(Unjudged::Substitution),
                Some(c) => self.word.push(c),
                None => return Err(Unjudged::Unclosed),
            }
        }
    }

    /// `<`, `>`, `>>`, `2>`, `>&2`, `<<<`: the word after names a file
    /// (or a descriptor); `<<` starts a here-document and `<(`/`>(` a
    /// command, neither judged.
    fn redirect(&mut self, c: char, chars: &mut Chars<'_>) -> Result<(), Unjudged> {
        // `2>` and `2>&1`: the number belongs to the redirect.
        if self.in_word && !self.quoted && self.word.chars().all(|c| c.is_ascii_digit()) {
            self.word.clear();
            self.in_word = false;
        }
        self.end_word();
        if c == '<' && chars.next_if_eq(&'<').is_some() {
            if chars.next_if_eq(&'<').is_none() {
                return Err(Unjudged::HereDocument);
            }
        } else if chars.peek() == Some(&'(') {
            return Err(Unjudged::Substitution);
        } else {
            chars.next_if(|n| *n == '>' || *n == '|');
        }
        if chars.next_if_eq(&'&').is_some() {
            // `>&2`: a descriptor, not a file word to skip.
            while chars.next_if(|c| c.is_ascii_digit() || *c == '-').is_some() {}
            return Ok(());
        }
        self.out.push(Token::Redirect);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(line: &str) -> Vec<String> {
        programs(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    #[test]
    fn a_line_runs_the_program_of_each_of_its_commands() {
        assert_eq!(ran("cat app.py"), ["cat"]);
        assert_eq!(
            ran("cd src && python3 -m pytest -q | tail -5; ls"),
            ["python3", "tail", "ls"]
        );
        assert_eq!(ran("CI=1 npm test 2>&1 || echo failed"), ["npm"]);
        assert_eq!(ran("grep -n 'a; b | rm -rf /' app.py > out.txt"), ["grep"]);
        assert_eq!(
            ran("python3 -c \"print('x')\" >> log 2> err < in"),
            ["python3"]
        );
        assert_eq!(ran("echo $HOME && ls \"$PWD\""), ["ls"]);
        assert_eq!(
            ran("make test # then rm -rf /\n  cargo build"),
            ["make", "cargo"]
        );
        assert_eq!(ran("sleep 1 & wait"), ["sleep"]);
        assert_eq!(ran("python3 a.py &> all.log"), ["python3"]);
        assert_eq!(ran("find . -name '*.py' -exec wc -l {} \\;"), ["find"]);
        assert_eq!(ran("cat <<< hello"), ["cat"]);
        assert_eq!(ran("ls \\\n  -la"), ["ls"]);
        // Quoted, a word is a program's name, not the shell's keyword.
        assert_eq!(ran("'if' x"), ["if"]);
        assert_eq!(ran("pwd"), Vec::<String>::new());
    }

    #[test]
    fn what_cannot_be_known_before_it_runs_is_never_guessed() {
        for (line, why) in [
            ("echo $(rm -rf ~)", Unjudged::Substitution),
            ("echo \"`id`\"", Unjudged::Substitution),
            ("ls \"$(whoami)\"", Unjudged::Substitution),
            ("diff <(ls a) <(ls b)", Unjudged::Substitution),
            ("(cd /; rm x)", Unjudged::Subshell),
            ("if true; then rm x; fi", Unjudged::Compound("if".into())),
            (
                "for f in *; do rm $f; done",
                Unjudged::Compound("for".into()),
            ),
            ("{ rm x; }", Unjudged::Compound("{".into())),
            ("$EDITOR app.py", Unjudged::Variable("$EDITOR".into())),
            ("./*.sh", Unjudged::Variable("./*.sh".into())),
            ("PATH=. pytest", Unjudged::Steers("PATH".into())),
            ("LD_PRELOAD=x.so ls", Unjudged::Steers("LD_PRELOAD".into())),
            ("cat <<EOF\nrm -rf /\nEOF", Unjudged::HereDocument),
            ("echo 'open", Unjudged::Unclosed),
            ("  ; ", Unjudged::Empty),
            ("X=1", Unjudged::Empty),
        ] {
            assert_eq!(programs(line), Err(why), "{line}");
        }
    }
}
