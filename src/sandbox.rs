//! Runs model-written Python in the Monty sandbox. The program reaches the
//! outside world only through the host functions a [`Host`] provides; any
//! OS call (`open()`, `os.*`) is refused with a clear error, and CPU time,
//! memory and recursion are limited.

use std::time::{Duration, Instant};

use monty::{MontyRun, RunProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyException, MontyObject, NameLookupResult,
    OsFunctionCall, PrintWriter, ResourceLimits, ResourceTracker,
};

pub use monty_types::MontyObject as Value;

/// Why a host function did not do what a program asked. Its words are
/// the exception the program sees (`RuntimeError`); its kind is for the
/// host's audit (a refusal is logged as one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The capabilities or the project's rules refuse it.
    #[error("{0}")]
    Denied(String),
    /// Anything else: a bad argument, a missing file, a tool that failed.
    #[error("{0}")]
    Failed(String),
}

impl HostError {
    /// A failure, in the words of `e`.
    pub fn failed(e: impl std::fmt::Display) -> Self {
        HostError::Failed(e.to_string())
    }

    /// The same error as host function `fname` says it (a refusal stays
    /// one).
    pub fn within(self, fname: &str) -> Self {
        match self {
            HostError::Denied(w) => HostError::Denied(format!("{fname}(): {w}")),
            HostError::Failed(w) => HostError::Failed(format!("{fname}(): {w}")),
        }
    }
}

impl From<String> for HostError {
    fn from(s: String) -> Self {
        HostError::Failed(s)
    }
}

impl From<&str> for HostError {
    fn from(s: &str) -> Self {
        HostError::Failed(s.to_owned())
    }
}

/// Host functions offered to the sandboxed program.
pub trait Host {
    /// Whether `name` is a host function (resolved when the program uses it).
    fn has_function(&self, name: &str) -> bool;
    /// Runs host function `name`. An `Err` is raised in Python as `RuntimeError`
    /// with the message, so the program (or the model, from the traceback)
    /// can react to it.
    fn call(
        &mut self,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Value, Value)>,
    ) -> Result<Value, HostError>;
    /// Checked at every host call; `true` stops the program at once.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Limits of one run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time the program itself may run; time spent inside host functions
    /// (waiting for the LLM) is not counted.
    pub cpu_time: Duration,
    pub max_recursion: usize,
    /// Host calls one program may make.
    pub max_host_calls: usize,
    /// Bytes the program may allocate (see [`crate::memory`]).
    pub max_memory: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_time: Duration::from_secs(5),
            max_recursion: 200,
            max_host_calls: 500,
            max_memory: 512 << 20,
        }
    }
}

/// Why a program did not complete.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SandboxError {
    /// The program raised (or did not parse); the traceback is for the model.
    #[error("{0}")]
    Raised(String),
    #[error("the program made more than {0} host calls")]
    TooManyCalls(usize),
    #[error("cancelled")]
    Cancelled,
}

/// A JSON value as a Python value (for tool calls made in JSON).
pub fn from_json(v: serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::None,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::String(s),
        serde_json::Value::Array(a) => Value::List(a.into_iter().map(from_json).collect()),
        serde_json::Value::Object(o) => Value::dict(
            o.into_iter()
                .map(|(k, v)| (Value::String(k), from_json(v)))
                .collect::<Vec<_>>(),
        ),
    }
}

/// A Python value as JSON (for host functions that pass a program's
/// values on, e.g. an MCP tool's arguments). Values JSON cannot carry
/// (bytes, dates, exceptions, …) are refused by their type's name.
pub fn to_json(v: &Value) -> Result<serde_json::Value, String> {
    use serde_json::Value as J;
    Ok(match v {
        Value::None => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::BigInt(b) => b
            .to_string()
            .parse::<serde_json::Number>()
            .map(J::Number)
            .map_err(|_| format!("the integer {b} does not fit in JSON"))?,
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(J::Number)
            .ok_or_else(|| format!("{f} is not a JSON number"))?,
        Value::String(s) => J::String(s.clone()),
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            J::Array(items.iter().map(to_json).collect::<Result<_, _>>()?)
        }
        Value::Dict(pairs) => {
            let mut map = serde_json::Map::new();
            for (k, v) in pairs {
                let Value::String(key) = k else {
                    return Err(format!(
                        "a JSON object's keys are strings, not {}",
                        args::type_name(k)
                    ));
                };
                map.insert(key.clone(), to_json(v)?);
            }
            J::Object(map)
        }
        other => {
            return Err(format!(
                "a {} cannot be sent as JSON",
                args::type_name(other)
            ))
        }
    })
}

/// What a completed program left behind.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Everything it printed.
    pub printed: String,
}

const PRINT_CAP: usize = 64 * 1024;

/// Runs `code` to completion against `host`.
pub fn run(code: &str, host: &mut dyn Host, limits: Limits) -> Result<Outcome, SandboxError> {
    let mut printed = String::new();
    let raised = |e: MontyException| SandboxError::Raised(e.to_string());
    let runner = MontyRun::new(
        code.to_owned(),
        "agent.py",
        vec![],
        CompileOptions::default(),
    )
    .map_err(raised)?;
    let resource = ResourceLimits {
        max_duration: Some(limits.cpu_time),
        max_memory: Some(limits.max_memory),
        max_recursion_depth: limits.max_recursion,
        ..ResourceLimits::default()
    };
    let _budget = crate::memory::Budget::start();
    let mut progress = runner
        .start(
            vec![],
            ResourceTracker::new(resource),
            PrintWriter::CollectString(&mut printed, Some(PRINT_CAP)),
        )
        .map_err(raised)?;
    let mut calls = Calls {
        host,
        limits,
        made: 0,
        host_time: Duration::ZERO,
    };
    loop {
        if calls.host.cancelled() {
            return Err(SandboxError::Cancelled);
        }
        let print = PrintWriter::CollectString(&mut printed, Some(PRINT_CAP));
        progress = match progress {
            RunProgress::Complete(_) => return Ok(Outcome { printed }),
            RunProgress::NameLookup(lookup) => {
                let answer = if calls.host.has_function(&lookup.name) {
                    NameLookupResult::Value(MontyObject::Function {
                        name: lookup.name.clone(),
                        docstring: None,
                    })
                } else {
                    NameLookupResult::Undefined
                };
                lookup.resume(answer, print).map_err(raised)?
            }
            RunProgress::FunctionCall(mut call) => {
                let args = std::mem::take(&mut call.args);
                let kwargs = std::mem::take(&mut call.kwargs);
                let answer = calls.function(&call.function_name, args, kwargs)?;
                // Host time is added to the budget so only the program's
                // own time counts.
                call.tracker_mut()
                    .set_max_duration(limits.cpu_time + calls.host_time);
                call.resume(answer, print).map_err(raised)?
            }
            RunProgress::OsCall(call) => {
                let answer = calls.os(&call.function_call)?;
                call.resume(answer, print).map_err(raised)?
            }
            RunProgress::ResolveFutures(state) => {
                let exc = MontyException::new(
                    ExcType::RuntimeError,
                    Some("async code is not supported; call host functions directly".into()),
                );
                state.abort(exc, print).map_err(raised)?
            }
        };
    }
}

/// A program's calls to its host, counted against its limits.
struct Calls<'h> {
    host: &'h mut dyn Host,
    limits: Limits,
    made: usize,
    /// Time spent in the host, which the program's budget does not count.
    host_time: Duration,
}

impl Calls<'_> {
    fn count(&mut self) -> Result<(), SandboxError> {
        self.made += 1;
        match self.made > self.limits.max_host_calls {
            true => Err(SandboxError::TooManyCalls(self.limits.max_host_calls)),
            false => Ok(()),
        }
    }

    /// What a call of host function `name` gives the program: its value,
    /// or the exception its error raises.
    fn function(
        &mut self,
        name: &str,
        args: Vec<Value>,
        kwargs: Vec<(Value, Value)>,
    ) -> Result<ExtFunctionResult, SandboxError> {
        self.count()?;
        if !self.host.has_function(name) {
            let msg = format!("name '{name}' is not defined");
            return Ok(MontyException::new(ExcType::NameError, Some(msg)).into());
        }
        let started = Instant::now();
        let result = self.host.call(name, args, kwargs);
        self.host_time += started.elapsed();
        if self.host.cancelled() {
            return Err(SandboxError::Cancelled);
        }
        Ok(match result {
            Ok(value) => value.into(),
            Err(e) => MontyException::new(ExcType::RuntimeError, Some(e.to_string())).into(),
        })
    }

    /// What an OS call gives the program: the environment is the host's
    /// `env` function, under its rules; every other OS call is refused.
    fn os(&mut self, call: &OsFunctionCall) -> Result<ExtFunctionResult, SandboxError> {
        let env_args = match call {
            OsFunctionCall::Getenv(g) if self.host.has_function("env") => {
                Some(vec![Value::String(g.key.clone()), g.default.clone()])
            }
            OsFunctionCall::GetEnviron if self.host.has_function("env") => Some(vec![]),
            _ => None,
        };
        let Some(env_args) = env_args else {
            let msg = format!(
                "{call} is not available in the sandbox: use the host functions (read_file, write_file, list_dir, ...) instead"
            );
            return Ok(MontyException::new(ExcType::PermissionError, Some(msg)).into());
        };
        self.count()?;
        Ok(match self.host.call("env", env_args, vec![]) {
            Ok(value) => value.into(),
            Err(e) => MontyException::new(ExcType::PermissionError, Some(e.to_string())).into(),
        })
    }
}

/// Helpers to read host-call arguments with errors the model can act on.
pub mod args {
    use super::Value;

    /// The `i`-th argument (positional, else keyword `name`) as a string.
    pub fn string(
        fname: &str,
        args: &[Value],
        kwargs: &[(Value, Value)],
        i: usize,
        name: &str,
    ) -> Result<String, super::HostError> {
        match get(args, kwargs, i, name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "{fname}(): argument `{name}` must be a str, got {}",
                type_name(other)
            )
            .into()),
            None => Err(format!("{fname}(): missing argument `{name}`").into()),
        }
    }

    /// Like [`string`], but absent is `None`.
    pub fn opt_string(
        fname: &str,
        args: &[Value],
        kwargs: &[(Value, Value)],
        i: usize,
        name: &str,
    ) -> Result<Option<String>, super::HostError> {
        match get(args, kwargs, i, name) {
            None | Some(Value::None) => Ok(None),
            Some(_) => string(fname, args, kwargs, i, name).map(Some),
        }
    }

    /// A list of strings (a lone string counts as a list of one).
    pub fn string_list(
        fname: &str,
        args: &[Value],
        kwargs: &[(Value, Value)],
        i: usize,
        name: &str,
    ) -> Result<Vec<String>, super::HostError> {
        match get(args, kwargs, i, name) {
            None | Some(Value::None) => Ok(vec![]),
            Some(Value::String(s)) => Ok(vec![s.clone()]),
            Some(Value::List(items)) | Some(Value::Tuple(items)) | Some(Value::Set(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(format!(
                        "{fname}(): `{name}` must hold strings, got {}",
                        type_name(other)
                    )
                    .into()),
                })
                .collect(),
            Some(other) => Err(format!(
                "{fname}(): argument `{name}` must be a list of str, got {}",
                type_name(other)
            )
            .into()),
        }
    }

    /// Argument `i`, or keyword `name`, as it was passed.
    pub fn get<'a>(
        args: &'a [Value],
        kwargs: &'a [(Value, Value)],
        i: usize,
        name: &str,
    ) -> Option<&'a Value> {
        args.get(i).or_else(|| {
            kwargs.iter().find_map(|(k, v)| match k {
                Value::String(k) if k == name => Some(v),
                _ => None,
            })
        })
    }

    pub fn type_name(v: &Value) -> &'static str {
        match v {
            Value::None => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::String(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            _ => "object",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo {
        calls: Vec<(String, Vec<Value>)>,
    }

    impl Host for Echo {
        fn has_function(&self, name: &str) -> bool {
            matches!(name, "echo" | "fail" | "slow")
        }
        fn call(
            &mut self,
            name: &str,
            args: Vec<Value>,
            _kwargs: Vec<(Value, Value)>,
        ) -> Result<Value, super::HostError> {
            self.calls.push((name.to_owned(), args.clone()));
            match name {
                "echo" => Ok(args.into_iter().next().unwrap_or(Value::None)),
                "slow" => {
                    std::thread::sleep(Duration::from_millis(300));
                    Ok(Value::None)
                }
                _ => Err("it failed on purpose".into()),
            }
        }
    }

    fn host() -> Echo {
        Echo { calls: vec![] }
    }

    #[test]
    fn host_functions_are_called_with_their_arguments() {
        let mut h = host();
        let out = run(
            "x = echo('a' + 'b')\nprint(x.upper())",
            &mut h,
            Limits::default(),
        )
        .unwrap();
        assert_eq!(out.printed, "AB\n");
        assert_eq!(
            h.calls,
            vec![("echo".to_owned(), vec![Value::String("ab".into())])]
        );
    }

    #[test]
    fn host_errors_are_catchable_exceptions() {
        let mut h = host();
        let out = run(
            "try:\n    fail()\nexcept RuntimeError as e:\n    print('caught', e)",
            &mut h,
            Limits::default(),
        )
        .unwrap();
        assert_eq!(out.printed, "caught it failed on purpose\n");
        let err = run("fail()", &mut h, Limits::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains("RuntimeError: it failed on purpose"),
            "{err}"
        );
    }

    #[test]
    fn tracebacks_name_the_line() {
        let err = run("x = 1\ny = x / 0\n", &mut host(), Limits::default()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("ZeroDivisionError") && text.contains("line 2"),
            "{text}"
        );
        let err = run("def f(:\n", &mut host(), Limits::default()).unwrap_err();
        assert!(matches!(err, SandboxError::Raised(_)));
        let err = run("undefined_thing()", &mut host(), Limits::default()).unwrap_err();
        assert!(err.to_string().contains("NameError"), "{err}");
    }

    #[test]
    fn infinite_loops_and_recursion_are_stopped() {
        let limits = Limits {
            cpu_time: Duration::from_millis(200),
            ..Limits::default()
        };
        let start = Instant::now();
        let err = run("while True:\n    pass\n", &mut host(), limits).unwrap_err();
        assert!(err.to_string().contains("time limit"), "{err}");
        assert!(start.elapsed() < Duration::from_secs(3));
        let err = run(
            "def f(n):\n    return f(n + 1)\nf(0)\n",
            &mut host(),
            limits,
        )
        .unwrap_err();
        assert!(err.to_string().contains("RecursionError"), "{err}");
    }

    #[test]
    fn time_inside_host_functions_does_not_count() {
        let limits = Limits {
            cpu_time: Duration::from_millis(200),
            ..Limits::default()
        };
        run("slow()\nslow()\nprint('done')", &mut host(), limits).unwrap();
    }

    #[test]
    fn os_calls_are_refused_with_a_hint() {
        let err = run(
            "from pathlib import Path\nPath('/etc/passwd').read_text()",
            &mut host(),
            Limits::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("host functions"), "{err}");
    }

    #[test]
    fn host_call_budget() {
        let limits = Limits {
            max_host_calls: 3,
            ..Limits::default()
        };
        let err = run("for i in range(10):\n    echo(i)\n", &mut host(), limits).unwrap_err();
        assert_eq!(err, SandboxError::TooManyCalls(3));
    }
}
