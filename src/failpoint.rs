//! Failpoints for the crash harness: `CHIMERA_FAILPOINTS=NAME=K[,…]`
//! makes the K-th pass (from 1) through point NAME abort the process, as a
//! SIGKILL would at that instant; `NAME=K:error` makes it fail instead.
//! Read once; with the variable unset a point costs one check of a
//! `OnceLock`. A test running many cuts in one process arms a point on its
//! own thread instead ([`cut_here`]): the pass unwinds with [`Cut`], as far
//! as the thread's work is concerned a process that died there.

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

/// The payload of a pass cut by [`cut_here`].
#[derive(Debug)]
pub struct Cut;

thread_local! {
    static HERE: std::cell::Cell<Option<(&'static str, usize)>> = const { std::cell::Cell::new(None) };
}

/// Arms point `name` on this thread: its `k`-th pass from now unwinds
/// with [`Cut`] (`k` = 0: disarmed).
pub fn cut_here(name: &'static str, k: usize) {
    HERE.with(|h| h.set((k > 0).then_some((name, k))));
}

/// Passes point `name`: aborts the process, or returns `true` (fail here),
/// on the pass it is armed for; else `false`.
pub fn hit(name: &str) -> bool {
    HERE.with(|h| match h.get() {
        Some((armed, 1)) if armed == name => {
            h.set(None);
            std::panic::panic_any(Cut);
        }
        Some((armed, k)) if armed == name => h.set(Some((armed, k - 1))),
        _ => {}
    });
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
