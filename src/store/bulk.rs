//! The import's bulk work on the stable layer: what it holds read at once,
//! files written in parts, and the WAL left uncopied until the end.

use super::*;

impl Store {
    /// What the import compares the disk with: each file of the stable
    /// layer's path and [`Look`], given to `each`. One query: a look per
    /// file costs a transaction each.
    pub fn stable_looks(&self, each: &mut dyn FnMut(String, Look)) -> Result<()> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached("SELECT path, size, mtime_ns, mode FROM stable")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let look = Look {
                size: r.get::<_, i64>(1)? as u64,
                mtime_ns: r.get(2)?,
                mode: r.get(3)?,
            };
            each(r.get(0)?, look);
        }
        Ok(())
    }

    /// The content of each of `paths` the stable layer holds (not one kept
    /// by its size alone), given to `each` in no set order: one statement
    /// for many files, where a read each costs two lookups and a lock. A
    /// file not read yet is read from the disk and left unread (see
    /// [`Store::look_unread`]).
    pub fn stable_contents(
        &self,
        paths: &[&str],
        each: &mut dyn FnMut(String, Vec<u8>),
    ) -> Result<()> {
        self.look_unread(paths, each)?;
        // Well under SQLite's limit of parameters in one statement.
        for part in paths.chunks(2000) {
            let marks = vec!["?"; part.len()].join(",");
            let conn = self.conn();
            let mut stmt = conn.prepare(&format!(
                "SELECT s.path, b.data FROM stable s JOIN blobs b ON b.hash = s.hash
                 WHERE s.too_large = 0 AND s.unread = 0 AND s.path IN ({marks})"
            ))?;
            let mut rows = stmt.query(rusqlite::params_from_iter(part))?;
            while let Some(row) = rows.next()? {
                each(row.get(0)?, row.get(1)?);
            }
        }
        Ok(())
    }

    /// Imports many files in one transaction (a part of the import).
    pub fn stable_import(&self, files: &[DiskFile], max_bytes: u64) -> Result<usize> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let mut changed = 0;
        for f in files.iter().filter(|f| !self.secrets.is_match(&f.path)) {
            if stable_put_file(&tx, f, max_bytes)? {
                changed += 1;
            }
        }
        tx.commit()?;
        Ok(changed)
    }

    /// Runs `f` (writes of a whole project) as a bulk write: without the
    /// WAL copied into the database file at each commit that crosses the
    /// checkpoint size (half an import's time; the copy is left to
    /// [`Store::checkpoint`], which the runtime runs once the project is
    /// ready), and with a small page cache: an import writes new pages it
    /// never reads again, and a full cache was a third of a monorepo
    /// command's memory.
    pub fn bulk_write<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        let set = |checkpoint_pages: i64, cache_kib: i64| -> Result<()> {
            let conn = self.conn();
            conn.pragma_update(None, "wal_autocheckpoint", checkpoint_pages)?;
            conn.pragma_update(None, "cache_size", -cache_kib)?;
            Ok(())
        };
        set(0, BULK_CACHE_KIB).map_err(E::from)?;
        let done = f();
        set(WAL_AUTOCHECKPOINT_PAGES, CACHE_KIB).map_err(E::from)?;
        done
    }
}

/// The page cache of a bulk write, in KiB.
const BULK_CACHE_KIB: i64 = 2_000;
