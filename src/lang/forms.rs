//! What a model's reply is taken for, and why it could not be used: the
//! types every splicer, syntax check and language hook returns. A leaf.

/// A syntax error in source text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxProblem {
    /// The language's name (`Python`).
    pub language: &'static str,
    /// 1-based line of the first error.
    pub line: usize,
    /// What is wrong, when it is more than "a syntax error".
    pub what: Option<String>,
    /// The lines around it, numbered.
    pub excerpt: String,
}

impl std::fmt::Display for SyntaxProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Python's own word, which the models know from tracebacks.
        let error = match self.language {
            "Python" => "SyntaxError".to_owned(),
            other => format!("{other} syntax error"),
        };
        match &self.what {
            Some(what) => write!(
                f,
                "{error} on line {}: {what}:\n{}",
                self.line, self.excerpt
            ),
            None => write!(f, "{error} near line {}:\n{}", self.line, self.excerpt),
        }
    }
}

/// The shape of a model's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyForm {
    /// A program calling host functions, to run in the sandbox.
    Program(String),
    /// Definitions (and imports) to splice into the target file.
    Definitions(String),
    /// The complete new content of the target file.
    WholeFile(String),
    /// Nothing usable (prose, or code without definitions).
    Nothing,
}

/// Why a reply could not be spliced.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpliceError {
    #[error("the reply has no function, class, import or assignment to put into the file")]
    NoDefinitions,
    #[error("the reply is not valid {}: {}", .0.language, .0)]
    Syntax(SyntaxProblem),
    #[error("the reply only repeats definitions without their bodies (the outline you were shown); give the complete new code of only the definitions you change")]
    OnlyOutline,
}
