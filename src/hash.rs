//! Content hashes (blake3, as hex) and fresh identities: what the store
//! names blobs by and what new IDs and tokens are made of. A leaf: it
//! depends on nothing of the crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// The content hash of a blob (blake3, hex).
pub type Hash = String;

/// The hash a blob is stored under.
pub fn hash_bytes(data: &[u8]) -> Hash {
    blake3::hash(data).to_hex().to_string()
}

/// 32 random bytes from the system, as hex: tokens and keys.
pub fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// 32 bytes no other call of this or any other process returns (the time,
/// a counter and the process, hashed): the stuff of new IDs.
pub fn unique_digest() -> blake3::Hash {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&nanos.to_le_bytes());
    hasher.update(
        &COUNTER
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_le_bytes(),
    );
    hasher.update(&std::process::id().to_le_bytes());
    hasher.finalize()
}
