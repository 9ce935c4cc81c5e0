//! An agent's change held as a value: each file its overlay touches, as the
//! human had it and as the change leaves it. The agent's corrections and
//! its gate read and rewrite this, never the store; the overlay is written
//! once from it ([`super::Workspace::put`]).

use crate::lang::{self, Language};
use crate::store::{Store, StoreError};

/// One file of a change.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    pub path: String,
    /// The text the change is of (`None`: the change creates the file).
    pub was: Option<String>,
    /// The text the change leaves (`None`: it deletes the file).
    now: Option<String>,
    /// `now` is the file as it was (its bytes, when read from the store).
    same: bool,
    /// `now` was corrected since it was read: the overlay must be written.
    edited: bool,
}

impl FileChange {
    /// The text the change leaves (`None`: deleted).
    pub fn now(&self) -> Option<&str> {
        self.now.as_deref()
    }

    /// Whether the file differs from the text the change is of.
    pub fn changed(&self) -> bool {
        !self.same
    }

    /// Whether the change writes the file (not a deletion).
    pub fn written(&self) -> bool {
        self.now.is_some()
    }

    /// The language Chimera knows the file in, if any.
    pub fn language(&self) -> Option<&'static Language> {
        lang::for_path(&self.path)
    }

    /// Both texts, when the change rewrites a file that was there.
    pub fn rewritten(&self) -> Option<(&str, &str)> {
        Some((self.was.as_deref()?, self.now.as_deref()?))
    }

    /// Replaces the text the change leaves with `text`.
    pub fn set(&mut self, text: String) {
        self.same = self.was.as_deref() == Some(text.as_str());
        self.now = Some(text);
        self.edited = true;
    }

    /// Whether `now` was corrected since it was read.
    pub fn edited(&self) -> bool {
        self.edited
    }
}

/// Every file an agent's overlay touches, in path order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Change {
    files: Vec<FileChange>,
}

impl Change {
    /// `agent`'s overlay, read once. Bytes that are not UTF-8 are read
    /// lossily: no correction touches such a file, so it is never
    /// written back.
    pub fn read(store: &Store, agent: &str) -> Result<Change, StoreError> {
        let text = |h: &Option<String>| h.as_deref().map(|h| store.blob_text(h)).transpose();
        let mut files = Vec::new();
        for (path, entry) in store.overlay_entries(agent)? {
            let same = entry.hash == entry.base_hash;
            let was = text(&entry.base_hash)?;
            // A file written back as it was is read once.
            let now = match same {
                true => was.clone(),
                false => text(&entry.hash)?,
            };
            files.push(FileChange {
                was,
                now,
                same,
                edited: false,
                path,
            });
        }
        Ok(Change { files })
    }

    /// A change of `files`, each `(path, was, now)`, built in memory for
    /// tests.
    #[cfg(test)]
    pub fn of(files: &[(&str, Option<&str>, Option<&str>)]) -> Change {
        Change {
            files: files
                .iter()
                .map(|(path, was, now)| FileChange {
                    path: (*path).to_owned(),
                    was: was.map(str::to_owned),
                    now: now.map(str::to_owned),
                    same: was == now,
                    edited: false,
                })
                .collect(),
        }
    }

    /// Every file the overlay touches, changed or written back as it was.
    pub fn files(&self) -> &[FileChange] {
        &self.files
    }

    pub fn files_mut(&mut self) -> impl Iterator<Item = &mut FileChange> {
        self.files.iter_mut()
    }

    /// The files that differ from the text they are a change of.
    pub fn changed(&self) -> impl Iterator<Item = &FileChange> {
        self.files.iter().filter(|f| f.changed())
    }

    /// The paths of [`Change::changed`].
    pub fn changed_paths(&self) -> Vec<String> {
        self.changed().map(|f| f.path.clone()).collect()
    }

    /// The paths of every file the overlay touches.
    pub fn paths(&self) -> Vec<String> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    /// Whether the overlay touches no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub fn get_mut(&mut self, path: &str) -> Option<&mut FileChange> {
        self.files.iter_mut().find(|f| f.path == path)
    }

    /// The files corrected since they were read, to write; each is marked
    /// written.
    pub(crate) fn take_edited(&mut self) -> Vec<(String, String)> {
        self.files
            .iter_mut()
            .filter(|f| f.edited)
            .filter_map(|f| {
                f.edited = false;
                Some((f.path.clone(), f.now.clone()?))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrected_file_is_written_once_and_is_unchanged_when_put_back_as_it_was() {
        let mut change = Change::of(&[
            ("a.py", Some("x = 1\n"), Some("x = 2\n")),
            ("b.py", Some("y = 1\n"), Some("y = 1\n")),
        ]);
        assert_eq!(change.changed_paths(), ["a.py"]);
        change.get_mut("a.py").unwrap().set("x = 1\n".into());
        assert!(change.changed_paths().is_empty(), "put back as it was");
        assert_eq!(change.take_edited(), [("a.py".into(), "x = 1\n".into())]);
        assert!(change.take_edited().is_empty(), "written once");
        assert_eq!(change.paths(), ["a.py", "b.py"]);
    }
}
