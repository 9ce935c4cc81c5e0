//! Failpoints for the crash harness: `CHIMERA_FAILPOINTS=NAME=K[,…]`
//! makes the K-th pass (from 1) through point NAME abort the process, as a
//! SIGKILL would at that instant; `NAME=K:error` makes it fail instead.
//! Read once; with the variable unset a point costs one check of a
//! `OnceLock`.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// What one armed point does on its K-th pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arm {
    Abort(usize),
    Error(usize),
}

fn armed() -> &'static Option<HashMap<String, Arm>> {
    static ARMED: OnceLock<Option<HashMap<String, Arm>>> = OnceLock::new();
    ARMED.get_or_init(|| {
        let spec = std::env::var("CHIMERA_FAILPOINTS").ok()?;
        let mut points = HashMap::new();
        for item in spec.split(',').filter(|s| !s.is_empty()) {
            let (name, when) = item.split_once('=')?;
            let arm = match when.split_once(':') {
                Some((k, "error")) => Arm::Error(k.parse().ok()?),
                None => Arm::Abort(when.parse().ok()?),
                Some(_) => return None,
            };
            points.insert(name.to_owned(), arm);
        }
        Some(points)
    })
}

/// Passes point `name`: aborts the process, or returns `true` (fail here),
/// on the pass it is armed for; else `false`.
pub fn hit(name: &str) -> bool {
    let Some(points) = armed() else {
        return false;
    };
    let Some(arm) = points.get(name) else {
        return false;
    };
    static PASSES: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);
    let pass = {
        let mut passes = PASSES.lock().unwrap_or_else(|p| p.into_inner());
        let n = passes
            .get_or_insert_with(HashMap::new)
            .entry(name.to_owned())
            .or_insert(0);
        *n += 1;
        *n
    };
    match *arm {
        Arm::Abort(k) if k == pass => std::process::abort(),
        Arm::Error(k) => k == pass,
        Arm::Abort(_) => false,
    }
}
