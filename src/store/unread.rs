//! The files the import recorded by their look alone ([`Content::Unread`]),
//! read from the disk the first time anything needs their content: a
//! monorepo's first task starts without a copy of every file. A whole-layer
//! read (a snapshot, the scratch copy of a test run, the Remora index)
//! reads them all first, in parts and on every core.

use std::sync::atomic::Ordering;

use super::*;
use crate::paths::ProjectPath;
use crate::rootfs;

/// How many unread files are read between two writes, and how much of
/// their recorded size: what a part holds in memory.
const PART_FILES: usize = 1024;
const PART_BYTES: u64 = 4 << 20;

/// Fewer files than this are read on the calling thread.
const READ_ALONE: usize = 32;

impl Store {
    /// The limit of a file's size the stable layer keeps content under,
    /// for the unread files it reads later (`sync.max_file_bytes`).
    pub fn set_file_limit(&self, max_bytes: u64) {
        self.file_limit.store(max_bytes, Ordering::Relaxed);
    }

    /// Reads every unread file into the stable layer; returns how many.
    /// One thread reads a part while this one writes the part before, in
    /// one transaction each; the reading holds no lock.
    pub fn fill_all(&self) -> Result<usize> {
        let todo = self.unread_among(None)?;
        let parts = parts(&todo);
        let write_parts = || {
            let (send, read) = std::sync::mpsc::sync_channel(1);
            std::thread::scope(|scope| {
                scope.spawn(move || {
                    for part in parts {
                        let files = self.read_now(&part);
                        // The writer stopped on an error: nobody listens.
                        if send.send((part, files)).is_err() {
                            return;
                        }
                    }
                });
                for (part, files) in read {
                    let files = files?;
                    self.transaction(|tx| self.put_read(tx, &part, files))?;
                }
                Ok::<_, StoreError>(todo.len())
            })
        };
        if todo.len() > PART_FILES {
            self.bulk_write(write_parts)
        } else {
            write_parts()
        }
    }

    /// Gives `each` the content the disk holds now for each unread file
    /// among `paths` (a file too large, gone or a secret left out), and
    /// leaves them unread: a look through thousands of files (`locate`)
    /// stores none of them. The paths the layer holds read are the
    /// caller's to give (`stable_contents` reads them in one statement).
    pub(super) fn look_unread(
        &self,
        paths: &[&str],
        each: &mut dyn FnMut(String, Vec<u8>),
    ) -> Result<()> {
        let todo = self.unread_among(Some(paths))?;
        let max = self.file_limit.load(Ordering::Relaxed);
        // The content alone: no look at the file's time and mode first.
        let content = |disk: &rootfs::Root<'_>, path: &str| {
            let path = ProjectPath::parse(path).ok()?;
            disk.read(&path, max).ok().flatten()
        };
        for part in parts(&todo) {
            for (path, data) in part.iter().zip(self.read_each(&part, content)?) {
                if let Some(data) = data.filter(|_| !self.is_secret(path)) {
                    each(path.clone(), data);
                }
            }
        }
        Ok(())
    }

    /// Reads one part of the unread files (a step of a fill in the
    /// background); how many it read, 0 once none is left.
    pub fn fill_next(&self) -> Result<usize> {
        let part: Vec<String> = {
            let conn = self.conn();
            let mut stmt =
                conn.prepare_cached("SELECT path FROM stable WHERE unread = 1 LIMIT ?1")?;
            let rows = stmt.query_map([PART_FILES as i64], |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        if part.is_empty() {
            return Ok(0);
        }
        let read = self.read_now(&part)?;
        self.transaction(|tx| self.put_read(tx, &part, read))?;
        Ok(part.len())
    }

    /// Reads the unread files among `paths` and writes them on `conn`
    /// (inside its transaction, if it is one).
    pub(super) fn fill_in(&self, conn: &Connection, paths: &[String]) -> Result<()> {
        let read = self.read_now(paths)?;
        self.put_read(conn, paths, read)
    }

    /// `(path, recorded size)` of each unread file among `paths`.
    fn unread_among(&self, paths: Option<&[&str]>) -> Result<Vec<(String, u64)>> {
        let conn = self.conn();
        let row = |r: &rusqlite::Row<'_>| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64));
        let Some(paths) = paths else {
            let mut stmt = conn.prepare_cached("SELECT path, size FROM stable WHERE unread = 1")?;
            let rows = stmt.query_map([], row)?;
            return Ok(rows.collect::<Result<_, _>>()?);
        };
        let mut out = Vec::new();
        // Well under SQLite's limit of parameters in one statement.
        for part in paths.chunks(2000) {
            let marks = vec!["?"; part.len()].join(",");
            // `+unread`: each path looked up by its key. Else SQLite may
            // pick the index of unread files and visit every one of them
            // (a monorepo's first task: five times slower).
            let mut stmt = conn.prepare(&format!(
                "SELECT path, size FROM stable WHERE +unread = 1 AND path IN ({marks})"
            ))?;
            let rows = stmt.query_map(rusqlite::params_from_iter(part), row)?;
            for r in rows {
                out.push(r?);
            }
        }
        Ok(out)
    }

    /// What the disk holds now at each of `paths`, in order, read on
    /// every core when there are many.
    fn read_now(&self, paths: &[String]) -> Result<Vec<Option<DiskFile>>> {
        let max = self.file_limit.load(Ordering::Relaxed);
        self.read_each(paths, |disk, path| {
            disk::read_now(&self.root, disk, path, max)
        })
    }

    /// `read` of each of `paths` under the root held open, in order: on
    /// every core when there are many.
    fn read_each<T: Send>(
        &self,
        paths: &[String],
        read: impl Fn(&rootfs::Root<'_>, &str) -> T + Sync,
    ) -> Result<Vec<T>> {
        let read_part = |part: &[String]| -> Result<Vec<T>> {
            let disk = rootfs::Root::open(&self.root).map_err(StoreError::Disk)?;
            Ok(part.iter().map(|p| read(&disk, p)).collect())
        };
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        if paths.len() < READ_ALONE || threads == 1 {
            return read_part(paths);
        }
        let each = paths.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let readers: Vec<_> = paths
                .chunks(each)
                .map(|part| scope.spawn(|| read_part(part)))
                .collect();
            let mut out = Vec::with_capacity(paths.len());
            for r in readers {
                let read = r.join().unwrap_or_else(|e| std::panic::resume_unwind(e))?;
                out.extend(read);
            }
            Ok(out)
        })
    }

    /// Writes what was read for `paths` on `conn`, for each row still
    /// unread (a buffer's text or a newer read of the disk may have come
    /// first); a path the disk no longer holds as a file leaves the layer.
    fn put_read(
        &self,
        conn: &Connection,
        paths: &[String],
        read: Vec<Option<DiskFile>>,
    ) -> Result<()> {
        let max = self.file_limit.load(Ordering::Relaxed);
        for (path, file) in paths.iter().zip(read) {
            if !stable_row(conn, path)?.is_some_and(|row| row.unread) {
                continue;
            }
            match file {
                Some(f) if !self.is_secret(path) => {
                    stable_put_file(conn, &f, max)?;
                }
                _ => {
                    conn.prepare_cached("DELETE FROM stable WHERE path = ?1")?
                        .execute([path])?;
                }
            }
        }
        Ok(())
    }
}

/// `todo`'s paths in parts of at most [`PART_FILES`] and about
/// [`PART_BYTES`] of recorded size.
fn parts(todo: &[(String, u64)]) -> Vec<Vec<String>> {
    let (mut out, mut part, mut bytes) = (Vec::new(), Vec::new(), 0);
    for (path, size) in todo {
        part.push(path.clone());
        bytes += size;
        if part.len() == PART_FILES || bytes >= PART_BYTES {
            out.push(std::mem::take(&mut part));
            bytes = 0;
        }
    }
    if !part.is_empty() {
        out.push(part);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::{import, OpenBuffers};
    use std::path::Path;

    fn imported(files: &[(impl AsRef<str>, impl AsRef<str>)]) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let abs = dir.path().join(path.as_ref());
            std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
            std::fs::write(abs, text.as_ref()).unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        import(&store, dir.path(), 1 << 20, &OpenBuffers::default()).unwrap();
        (dir, store)
    }

    /// Writes `text` (as long as what was there) at `path`, leaving its
    /// size and time as they were: only a read of the file sees it.
    fn rewrite_unseen(root: &Path, path: &str, text: &str) {
        let abs = root.join(path);
        let mtime = std::fs::metadata(&abs).unwrap().modified().unwrap();
        std::fs::write(&abs, text).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&abs)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
    }

    /// Whether any blob of the store holds `needle`.
    fn stored(store: &Store, needle: &str) -> bool {
        store
            .conn()
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM blobs WHERE instr(data, ?1) > 0)",
                [needle],
                |r| r.get(0),
            )
            .unwrap()
    }

    fn text(store: &Store, path: &str) -> String {
        store
            .blob_text(&store.stable_entry(path).unwrap().unwrap().hash)
            .unwrap()
    }

    #[test]
    fn the_import_reads_a_file_only_when_something_needs_it() {
        let (dir, store) = imported(&[("a.py", "one\n")]);
        rewrite_unseen(dir.path(), "a.py", "two\n");
        let e = store.stable_entry("a.py").unwrap().unwrap();
        assert_eq!(e.hash, hash_bytes(b"two\n"), "read at the first look");
        assert!(!e.unread);
        assert_eq!(text(&store, "a.py"), "two\n");
        // Read once: what the layer holds from then on.
        rewrite_unseen(dir.path(), "a.py", "six\n");
        assert_eq!(text(&store, "a.py"), "two\n");
    }

    #[test]
    fn a_second_import_leaves_what_was_read_as_it_is() {
        let (dir, store) = imported(&[("a.py", "a\n"), ("pkg/b.py", "b\n")]);
        assert_eq!(store.fill_all().unwrap(), 2);
        // The walk's look at each file (a stat in its folder) is the look
        // the read recorded (the file's metadata): nothing changed.
        import(&store, dir.path(), 1 << 20, &OpenBuffers::default()).unwrap();
        assert_eq!(store.fill_all().unwrap(), 0);
    }

    #[test]
    fn a_whole_layer_read_reads_every_unread_file_first() {
        let files: Vec<(String, String)> = (0..100)
            .map(|i| (format!("pkg{}/m{i}.py", i % 7), format!("x = {i}\n")))
            .collect();
        let (_dir, store) = imported(&files);
        let wanted: Vec<(String, String)> = {
            let mut w: Vec<_> = files
                .iter()
                .map(|(p, t)| (p.clone(), hash_bytes(t.as_bytes())))
                .collect();
            w.sort();
            w
        };
        let snapshot = store.snapshot_create("all").unwrap();
        let listed: Vec<(String, String)> = store
            .snapshot_manifest(&snapshot.id)
            .unwrap()
            .into_iter()
            .map(|e| (e.path, e.hash))
            .collect();
        assert_eq!(listed, wanted, "the snapshot names every file's content");
        assert_eq!(store.fill_all().unwrap(), 0, "nothing left unread");
        assert_eq!(store.stable_hashes().unwrap(), wanted);
    }

    #[test]
    fn a_look_at_many_files_reads_them_without_storing_them() {
        let files: Vec<(String, String)> = (0..50)
            .map(|i| (format!("m{i}.py"), format!("y = {i}\n")))
            .collect();
        let (_dir, store) = imported(&files);
        let asked: Vec<&str> = files.iter().take(40).map(|(p, _)| p.as_str()).collect();
        let mut got = Vec::new();
        store
            .stable_contents(&asked, &mut |p, data| got.push((p, data)))
            .unwrap();
        got.sort();
        let mut wanted: Vec<(String, Vec<u8>)> = files
            .iter()
            .take(40)
            .map(|(p, t)| (p.clone(), t.clone().into_bytes()))
            .collect();
        wanted.sort();
        assert_eq!(got, wanted);
        assert_eq!(
            store.fill_all().unwrap(),
            50,
            "the look stored none of them"
        );
    }

    #[test]
    fn an_unread_file_gone_or_made_a_link_leaves_the_layer() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "TOP_SECRET\n").unwrap();
        let (dir, store) = imported(&[("a.py", "a\n"), ("b.py", "b\n"), ("c.py", "c\n")]);
        std::fs::remove_file(dir.path().join("a.py")).unwrap();
        std::fs::remove_file(dir.path().join("b.py")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("b.py"))
            .unwrap();
        assert_eq!(store.stable_entry("a.py").unwrap(), None);
        assert_eq!(store.stable_entry("b.py").unwrap(), None);
        assert_eq!(store.stable_paths().unwrap(), ["c.py"]);
        let leaked = stored(&store, "TOP_SECRET");
        assert!(!leaked, "the link was followed");
    }

    #[test]
    fn a_file_named_a_secret_after_the_import_is_never_read_into_the_store() {
        let (dir, store) = imported(&[("keys.txt", "TOP_SECRET\n"), ("a.py", "a\n")]);
        drop(store);
        let secrets = crate::capabilities::Secrets::new(&["keys.txt".to_owned()]).unwrap();
        let store = Store::open_with(dir.path(), secrets).unwrap();
        let mut looked = Vec::new();
        store
            .stable_contents(&["keys.txt", "a.py"], &mut |p, _| looked.push(p))
            .unwrap();
        assert_eq!(looked, ["a.py"]);
        assert_eq!(store.stable_entry("keys.txt").unwrap(), None);
        store.fill_all().unwrap();
        let leaked = stored(&store, "TOP_SECRET");
        assert!(!leaked);
    }

    #[test]
    fn a_text_written_before_the_read_is_never_replaced_by_it() {
        let (dir, store) = imported(&[("a.py", "disk\n")]);
        // The editor's buffer comes first; a read of the disk started
        // before it lands after it.
        store
            .stable_put("a.py", b"buffer\n", 0o644, 1, 1 << 20)
            .unwrap();
        store.fill_in(&store.conn(), &["a.py".to_owned()]).unwrap();
        assert_eq!(text(&store, "a.py"), "buffer\n");
        drop(dir);
    }

    #[test]
    fn a_file_touched_since_the_agent_read_it_is_no_conflict() {
        let (dir, store) = imported(&[("a.py", "x = 1\n")]);
        crate::store::fixture::agent_writes(&store, "ag", "a.py", "x = 2\n");
        // Saved again unchanged: a new time, so the next import records
        // it unread once more.
        let abs = dir.path().join("a.py");
        std::fs::File::options()
            .write(true)
            .open(&abs)
            .unwrap()
            .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        import(&store, dir.path(), 1 << 20, &OpenBuffers::default()).unwrap();
        let unread: bool = store
            .conn()
            .query_row("SELECT unread FROM stable WHERE path = 'a.py'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(unread);
        let conflicts = crate::accept::build_proposal(&store, "ag").unwrap();
        assert!(conflicts.is_empty(), "{conflicts:?}");
        let files = store.proposal_files("ag").unwrap();
        assert_eq!(files[0].base_hash, Some(hash_bytes(b"x = 1\n")));
    }
}
