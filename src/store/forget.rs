//! Takes out of the store what it must never have kept: the content of
//! secret files (`capabilities.secrets`), which older versions imported like
//! any other file. Their rows go from the stable layer, overlays, proposals
//! and checkpoints, their lines from snapshot manifests, and the blobs only
//! they referenced are deleted with their pages overwritten and the WAL
//! emptied, so no copy is left in `.chimera/`.

use rusqlite::{params, OptionalExtension, Transaction};

use super::{blob, delete_unreferenced_blobs, history, put_blob, Result, Store};

/// The tables that name a file by `path`.
const TABLES: &[&str] = &[
    "stable",
    "overlays",
    "agent_bases",
    "proposal_files",
    "checkpoint_files",
];

impl Store {
    /// Forgets every secret the store holds; returns how many files' rows
    /// (and snapshot lines) went. Done once per set of secret patterns:
    /// the store keeps out what they match from then on.
    pub fn forget_secrets(&self) -> Result<usize> {
        let mut conn = self.conn();
        let done: Option<String> = conn
            .query_row(
                "SELECT value FROM settings WHERE key = 'secrets_forgotten'",
                [],
                |r| r.get(0),
            )
            .optional()?;
        if done.as_deref() == Some(self.secrets.patterns()) {
            return Ok(0);
        }
        let tx = conn.transaction()?;
        tx.execute(
            "INSERT INTO settings (key, value) VALUES ('secrets_forgotten', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [self.secrets.patterns()],
        )?;
        let mut forgotten = 0;
        for table in TABLES {
            let paths: Vec<String> = tx
                .prepare(&format!("SELECT DISTINCT path FROM {table}"))?
                .query_map([], |r| r.get(0))?
                .collect::<std::result::Result<_, _>>()?;
            for path in paths.iter().filter(|p| self.secrets.is_match(p)) {
                forgotten += tx.execute(&format!("DELETE FROM {table} WHERE path = ?1"), [path])?;
            }
        }
        forgotten += self.forget_in_manifests(&tx)?;
        if forgotten == 0 {
            tx.commit()?;
            return Ok(0);
        }
        // Deleted pages keep their bytes until reused; these are zeroed.
        tx.pragma_update(None, "secure_delete", "ON")?;
        delete_unreferenced_blobs(&tx)?;
        tx.commit()?;
        conn.pragma_update(None, "secure_delete", "OFF")?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(forgotten)
    }

    /// Rewrites each snapshot's manifest without its secret files.
    fn forget_in_manifests(&self, tx: &Transaction<'_>) -> Result<usize> {
        let snapshots: Vec<(String, String)> = tx
            .prepare("SELECT id, manifest FROM snapshots")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<std::result::Result<_, _>>()?;
        let mut forgotten = 0;
        for (id, manifest) in snapshots {
            let text = String::from_utf8_lossy(&blob(tx, &manifest)?).into_owned();
            let entries = history::parse_manifest(&text);
            let kept: Vec<_> = entries
                .iter()
                .filter(|e| !self.secrets.is_match(&e.path))
                .collect();
            if kept.len() == entries.len() {
                continue;
            }
            forgotten += entries.len() - kept.len();
            let rewritten: String = kept.iter().map(|e| history::manifest_line(e)).collect();
            let new = put_blob(tx, rewritten.as_bytes())?;
            tx.execute(
                "UPDATE snapshots SET manifest = ?1, files = ?2 WHERE id = ?3",
                params![new, kept.len() as i64, id],
            )?;
        }
        Ok(forgotten)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::Store;

    #[test]
    fn secrets_an_older_store_kept_are_forgotten_everywhere_and_their_bytes_are_gone() {
        let root = tempfile::tempdir().unwrap();
        let db = root.path().join(".chimera/chimera.db");
        {
            // As an older Chimera kept them: no secret patterns at all.
            let old =
                Store::open_with(root.path(), crate::capabilities::Secrets::new(&[]).unwrap())
                    .unwrap();
            old.stable_put(".env", b"ENV_SECRET_1=abc\n", 0o600, 0, 1 << 20)
                .unwrap();
            old.stable_put("keys/id_rsa", b"RSA_SECRET_2\n", 0o600, 0, 1 << 20)
                .unwrap();
            old.stable_put("app.py", b"x = 1\n", 0o644, 0, 1 << 20)
                .unwrap();
            old.snapshot_create("before").unwrap();
        }
        let raw = std::fs::read(&db).unwrap();
        let wal = std::fs::read(root.path().join(".chimera/chimera.db-wal")).unwrap_or_default();
        let holds =
            |bytes: &[u8], what: &str| bytes.windows(what.len()).any(|w| w == what.as_bytes());
        assert!(
            holds(&raw, "ENV_SECRET_1") || holds(&wal, "ENV_SECRET_1"),
            "the setup kept it"
        );

        let store = Store::open(root.path()).unwrap();
        assert_eq!(store.forget_secrets().unwrap(), 4);
        assert_eq!(store.stable_paths().unwrap(), vec!["app.py"]);
        let snapshot = &store.snapshots().unwrap()[0];
        let manifest = store.snapshot_manifest(&snapshot.id).unwrap();
        assert_eq!(manifest.len(), 1, "{manifest:?}");
        assert_eq!(snapshot.files, 1);
        // New secrets are not kept either, whichever door they come by.
        store
            .stable_put(".ENV.local", b"ENV_SECRET_3\n", 0o600, 0, 1 << 20)
            .unwrap();
        assert_eq!(store.stable_paths().unwrap(), vec!["app.py"]);
        drop(store);
        let mut bytes = std::fs::read(&db).unwrap();
        bytes
            .extend(std::fs::read(root.path().join(".chimera/chimera.db-wal")).unwrap_or_default());
        for secret in ["ENV_SECRET_1", "RSA_SECRET_2", "ENV_SECRET_3"] {
            assert!(!holds(&bytes, secret), "{secret} is still in .chimera/");
        }
        assert_eq!(
            Store::open(root.path()).unwrap().forget_secrets().unwrap(),
            0
        );
        // New patterns: looked through again.
        let wider = crate::capabilities::Secrets::new(&["*.py".into()]).unwrap();
        let store = Store::open_with(root.path(), wider).unwrap();
        assert_eq!(
            store.forget_secrets().unwrap(),
            2,
            "app.py and its snapshot line"
        );
        assert!(store.stable_paths().unwrap().is_empty());
    }
}
