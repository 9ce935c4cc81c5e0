//! Where everything the core says goes. An [`Event`] is heard by every
//! listener (the API's feed) and then by the editor; what only the editor
//! is asked ([`ForEditor`]: answers to its requests, buffer edits) goes to
//! the editor alone. Both in the core's words: the editor puts them into
//! its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::event::Level;
use crate::event::{Event, Listener};
use crate::port::{EditorSink, ForEditor, Said};

pub struct Outlet {
    editor: Arc<dyn EditorSink>,
    listeners: Vec<Arc<dyn Listener>>,
    root: PathBuf,
}

impl Outlet {
    pub fn new(editor: Arc<dyn EditorSink>, root: &Path) -> Self {
        Outlet {
            editor,
            listeners: Vec::new(),
            root: root.to_path_buf(),
        }
    }

    /// This outlet, with `listener` hearing its events too.
    pub fn heard_by(mut self, listener: Option<Arc<dyn Listener>>) -> Self {
        self.listeners.extend(listener);
        self
    }

    /// Tells every client that `event` happened.
    pub fn event(&self, event: Event) {
        for l in &self.listeners {
            l.heard(&event);
        }
        self.editor.hear(Said::Event(event), &self.root);
    }

    /// A notice for every client.
    pub fn notify(&self, level: Level, message: impl Into<String>) {
        self.event(Event::notice(level, message));
    }

    /// Asks the editor alone: an answer to its request, a buffer edit —
    /// never what other clients must hear too.
    pub fn direct(&self, asked: ForEditor) {
        self.editor.hear(Said::Asked(asked), &self.root);
    }

    /// Whether a person reads the editor, or follows a listener (the
    /// dashboard), and can answer a question.
    pub fn asks_the_human(&self) -> bool {
        self.editor.asks_the_human() || self.listeners.iter().any(|l| l.answers())
    }
}
