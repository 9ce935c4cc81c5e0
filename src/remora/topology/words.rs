//! Which files define a word: a definition of that name, or one that
//! belongs to something of that name (`Store.add` counts for `add` and for
//! `Store`). A task names what it is about; this finds the files at once,
//! where a pass over every definition of a monorepo takes tens of
//! milliseconds.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::super::parent_name;

#[derive(Debug, Default)]
pub(super) struct Words {
    files: HashMap<Box<str>, Vec<Arc<str>>>,
}

impl Words {
    /// `path`'s words were `before` and are now `after`.
    pub(super) fn change(
        &mut self,
        path: &str,
        before: &BTreeSet<String>,
        after: &BTreeSet<String>,
    ) {
        for word in before.difference(after) {
            if let Some(files) = self.files.get_mut(word.as_str()) {
                files.retain(|f| &**f != path);
                if files.is_empty() {
                    self.files.remove(word.as_str());
                }
            }
        }
        let mut shared: Option<Arc<str>> = None;
        for word in after.difference(before) {
            let path = shared.get_or_insert_with(|| Arc::from(path)).clone();
            self.files
                .entry(Box::from(word.as_str()))
                .or_default()
                .push(path);
        }
    }

    /// The files with `word`, in no set order.
    pub(super) fn files(&self, word: &str) -> impl Iterator<Item = &str> {
        self.files.get(word).into_iter().flatten().map(|f| &**f)
    }
}

/// The words of definitions `(name, qualified name)`: their names and what
/// they belong to.
pub(super) fn words_of<'n>(defs: impl Iterator<Item = (&'n str, &'n str)>) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for (name, qualname) in defs {
        words.insert(name.to_owned());
        words.extend(parent_name(qualname, name).map(str::to_owned));
    }
    words
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::remora::index::Indexer;
    use crate::store::Store;

    fn naming(ix: &Indexer, word: &str) -> Vec<String> {
        let mut files: Vec<String> = ix
            .topology()
            .files_naming(word)
            .map(str::to_owned)
            .collect();
        files.sort();
        files
    }

    #[test]
    fn the_files_of_a_word_follow_every_change_and_a_reload() {
        let store = Store::open_in_memory(Path::new("/project")).unwrap();
        let mut ix = Indexer::default();
        let cart = "class Cart:\n    def total(self):\n        return 0\n";
        ix.index_text(&store, "cart.py", cart).unwrap();
        ix.index_text(&store, "util.py", "def total(xs):\n    return 0\n")
            .unwrap();
        assert_eq!(naming(&ix, "total"), ["cart.py", "util.py"]);
        // A method belongs to its class: the file holds words of both.
        assert_eq!(naming(&ix, "Cart"), ["cart.py"]);
        // Renamed in one file, the old word leaves it.
        ix.index_text(&store, "util.py", "def grand_total(xs):\n    return 0\n")
            .unwrap();
        assert_eq!(naming(&ix, "total"), ["cart.py"]);
        assert_eq!(naming(&ix, "grand_total"), ["util.py"]);
        // An edit that keeps the definitions changes nothing.
        ix.index_text(&store, "cart.py", &cart.replace("0", "1"))
            .unwrap();
        assert_eq!(naming(&ix, "total"), ["cart.py"]);
        assert_eq!(naming(&ix, "Cart"), ["cart.py"]);
        ix.remove(&store, "cart.py").unwrap();
        assert!(naming(&ix, "total").is_empty());
        assert!(naming(&ix, "Cart").is_empty());
        // The topology loaded from the store has the same words.
        ix.index_text(&store, "cart.py", cart).unwrap();
        let loaded = Indexer::load(&store).unwrap();
        for word in ["total", "Cart", "grand_total", "nothing"] {
            assert_eq!(naming(&loaded, word), naming(&ix, word), "{word}");
        }
        assert_eq!(naming(&loaded, "Cart"), ["cart.py"]);
    }
}
