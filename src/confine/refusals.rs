//! What the kernel refused a confined program, read from what it printed:
//! each "Permission denied" or "Operation not permitted" names the path or
//! the call it was about (`cat: /home/u/.ssh/id_rsa: Permission denied`,
//! `PermissionError: [Errno 13] Permission denied: '/p/.env'`). A program
//! the confinement stopped learns it from its error; the human learns it
//! from these.

/// The longest a refusal is said, in characters.
const LONGEST: usize = 160;

/// The refusals in `text`, each the thing refused (a path where the line
/// names one, else the line), in order, each once.
pub fn refusals(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some(what) = refused_in(line) else {
            continue;
        };
        if !out.contains(&what) {
            out.push(what);
        }
    }
    out
}

/// What one line says was refused.
fn refused_in(line: &str) -> Option<String> {
    const SAID: [&str; 4] = [
        "Permission denied",
        "Operation not permitted",
        "EACCES",
        "EPERM",
    ];
    let (at, said) = SAID.iter().find_map(|s| line.find(s).map(|at| (at, *s)))?;
    let unquote = |s: &str| {
        s.trim()
            .trim_matches(|c| matches!(c, '\'' | '"' | '`' | '‘' | '’'))
            .to_owned()
    };
    // Python's and Node's: the path after it (`…denied: '/p/.env'`,
    // `EACCES: permission denied, open '/p/.env'`).
    let after = &line[at + said.len()..];
    if let Some(path) = after
        .split(['\'', '"'])
        .nth(1)
        .filter(|p| p.starts_with(['/', '.', '~']))
    {
        return Some(shorten(path));
    }
    // Shells' and coreutils': `prog: PATH: Permission denied`, `ls: cannot
    // open directory '/root/.ssh': Permission denied`.
    let before = line[..at].trim_end().trim_end_matches(':');
    let last = before.rsplit(": ").next().unwrap_or(before);
    let last = last
        .rsplit_once(" '")
        .map_or(last, |(_, quoted)| quoted)
        .trim_end_matches('\'');
    // dash's `cannot create /p/x`, `cannot open …`: the path after the verb.
    let last = last.find(" /").map_or(last, |at| &last[at + 1..]);
    let path = unquote(last);
    if path.starts_with(['/', '.', '~']) || path.contains('/') {
        return Some(shorten(&path));
    }
    // A system call the kernel refused (`ping: socket: Operation not
    // permitted`); an agent's own "Permission denied: …" about its rules
    // is no refusal of the kernel's.
    (said == "Operation not permitted" && before.contains(": ")).then(|| shorten(line))
}

/// Which rule refused `what`, in words: the project, the user's home,
/// or anything else outside the folders the program was given.
pub fn rule_of(what: &str, root: &std::path::Path, home: Option<&std::path::Path>) -> &'static str {
    let path = std::path::Path::new(what);
    if !what.starts_with(['/', '.', '~']) {
        "a call its confinement does not allow"
    } else if path.starts_with(root) {
        "the project itself: it works on its own copy"
    } else if what.starts_with('~') || home.is_some_and(|h| path.starts_with(h)) {
        "your home: it has one of its own"
    } else {
        "outside the folders it is given"
    }
}

/// `what` as a person reads it: the home as `~`.
pub fn said(what: &str, home: Option<&std::path::Path>) -> String {
    match home.and_then(|h| std::path::Path::new(what).strip_prefix(h).ok()) {
        Some(rest) if rest.as_os_str().is_empty() => "~".to_owned(),
        Some(rest) => format!("~/{}", rest.display()),
        None => what.to_owned(),
    }
}

/// The refusals of a run in one sentence, the first few named.
pub fn sentence(refused: &[String]) -> Option<String> {
    const NAMED: usize = 3;
    let (n, first) = (refused.len(), refused.iter().take(NAMED));
    let names = first.cloned().collect::<Vec<_>>().join(", ");
    let more = if n > NAMED {
        format!(" and {} more", n - NAMED)
    } else {
        String::new()
    };
    (n > 0).then(|| {
        format!(
            "the sandbox refused {n} access{} outside its folder: {names}{more}",
            if n == 1 { "" } else { "es" }
        )
    })
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= LONGEST {
        return s.to_owned();
    }
    format!("{}…", s.chars().take(LONGEST - 1).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_is_the_thing_refused() {
        let text = "cat: /proj/.env: Permission denied\n\
                    ls: cannot open directory '/root/.ssh': Permission denied\n\
                    bash: line 1: /proj/pwned: Permission denied\n\
                    sh: 1: cannot create /proj/made: Permission denied\n\
                    PermissionError: [Errno 13] Permission denied: '/home/u/.aws/credentials'\n\
                    Error: EACCES: permission denied, open '/proj/app.py'\n\
                    cat: /proj/.env: Permission denied\n\
                    all fine here\n\
                    ping: socket: Operation not permitted\n";
        assert_eq!(
            refusals(text),
            [
                "/proj/.env",
                "/root/.ssh",
                "/proj/pwned",
                "/proj/made",
                "/home/u/.aws/credentials",
                "/proj/app.py",
                "ping: socket: Operation not permitted",
            ]
        );
        assert!(refusals("3 passed in 0.1s\n").is_empty());
        // Claude Code's own rules saying no: not the kernel's.
        assert!(refusals("Permission denied: Auto mode could not evaluate this action").is_empty());
        let (root, home) = (
            std::path::Path::new("/proj"),
            Some(std::path::Path::new("/home/u")),
        );
        assert_eq!(
            rule_of("/proj/.env", root, home),
            "the project itself: it works on its own copy"
        );
        assert_eq!(
            rule_of("/home/u/.ssh", root, home),
            "your home: it has one of its own"
        );
        assert_eq!(
            rule_of("/etc/shadow", root, home),
            "outside the folders it is given"
        );
        assert_eq!(said("/home/u/.ssh/id_rsa", home), "~/.ssh/id_rsa");
        assert_eq!(said("/home/u", home), "~");
        let four: Vec<String> = ["a", "b", "c", "d"].map(String::from).into();
        assert_eq!(
            sentence(&four).unwrap(),
            "the sandbox refused 4 accesses outside its folder: a, b, c and 1 more"
        );
        assert_eq!(sentence(&[]), None);
    }
}
