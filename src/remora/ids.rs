//! Node IDs: `rm_` followed by 8 characters from `[a-z0-9]`, and the comments
//! that carry them in source (`# rm_…` at the end of a definition line,
//! `# remora-file: rm_…` near the top of a file; `//` or `--` instead of `#`
//! in languages that comment so).

pub const PREFIX: &str = "rm_";
pub const BODY_LEN: usize = 8;
/// The marker of a file's own ID comment.
pub const FILE_MARKER: &str = "remora-file:";

const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// Whether `s` is exactly a node ID.
pub fn is_id(s: &str) -> bool {
    s.len() == PREFIX.len() + BODY_LEN
        && s.starts_with(PREFIX)
        && s[PREFIX.len()..]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// A new random ID. Callers check it against the IDs in use: 36⁸ ≈ 2.8·10¹²
/// makes a clash unlikely, not impossible.
pub fn fresh() -> String {
    let digest = crate::store::unique_digest();
    let mut id = String::with_capacity(PREFIX.len() + BODY_LEN);
    id.push_str(PREFIX);
    for b in &digest.as_bytes()[..BODY_LEN] {
        id.push(ALPHABET[usize::from(*b) % ALPHABET.len()] as char);
    }
    id
}

/// A node ID held in place, as the topology keeps it: copying one
/// allocates nothing, where a project's hundreds of thousands of nodes
/// each name their ID in several tables.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Id {
    len: u8,
    bytes: [u8; Id::MOST],
}

impl Id {
    /// The longest ID held: every ID is `rm_` and 8 characters.
    const MOST: usize = 15;

    /// `s` as an ID; `None` for a string too long to be one.
    pub fn new(s: &str) -> Option<Id> {
        let mut bytes = [0u8; Id::MOST];
        bytes.get_mut(..s.len())?.copy_from_slice(s.as_bytes());
        Some(Id {
            len: s.len() as u8,
            bytes,
        })
    }

    pub fn as_str(&self) -> &str {
        // Built from a `&str` of this length only.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Id {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Id::new(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("`{s}` is too long for a node ID")))
    }
}

impl std::fmt::Debug for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

/// A fresh [`Id`] for which `taken` is false.
pub fn fresh_id(mut taken: impl FnMut(Id) -> bool) -> Id {
    loop {
        // `fresh` makes IDs of 11 bytes, which `Id` holds.
        if let Some(id) = Id::new(&fresh()).filter(|&id| !taken(id)) {
            return id;
        }
    }
}

/// A fresh ID for which `taken` is false.
pub fn fresh_unused(mut taken: impl FnMut(&str) -> bool) -> String {
    fresh_id(|id| taken(id.as_str())).as_str().to_owned()
}

/// The ID a definition-line comment ends with, and its byte range inside
/// `comment`: `# rm_a1b2c3d4` and `# noqa    # rm_a1b2c3d4` both carry one
/// (`marker`: the language's line comment, `#` here).
pub fn trailing_id(comment: &str, marker: &str) -> Option<(usize, usize)> {
    let trimmed = comment.trim_end();
    let start = trimmed.len().checked_sub(PREFIX.len() + BODY_LEN)?;
    let candidate = trimmed.get(start..)?;
    if !is_id(candidate) {
        return None;
    }
    // The ID must be a comment of its own: the marker then optional spaces.
    let before = trimmed[..start].trim_end();
    before.ends_with(marker).then_some((start, trimmed.len()))
}

/// The ID of a file comment (`# remora-file: rm_…` with `marker` `#`),
/// with its byte range.
pub fn file_comment_id(line: &str, marker: &str) -> Option<(usize, usize)> {
    let body = line.trim_start().strip_prefix(marker)?.trim_start();
    let rest = body.strip_prefix(FILE_MARKER)?.trim();
    if !is_id(rest) {
        return None;
    }
    let start = line.find(rest)?;
    Some((start, start + rest.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_have_the_format_and_differ() {
        let a = fresh();
        let b = fresh();
        assert!(is_id(&a), "{a}");
        assert!(is_id(&b), "{b}");
        assert_ne!(a, b);
    }

    #[test]
    fn an_id_held_in_place_is_the_string_it_was_made_of() {
        for s in [fresh(), String::new(), "x".repeat(15)] {
            assert_eq!(Id::new(&s).map(|id| id.as_str().to_owned()), Some(s));
        }
        assert_eq!(Id::new(&"x".repeat(16)), None);
        // Stored as the string it is.
        let id = Id::new("rm_a1b2c3d4").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"rm_a1b2c3d4\"");
        assert_eq!(serde_json::from_str::<Id>("\"rm_a1b2c3d4\"").unwrap(), id);
        let long = serde_json::from_str::<Id>(&format!("\"{}\"", "x".repeat(16)));
        assert!(long
            .unwrap_err()
            .to_string()
            .contains("too long for a node ID"));
        assert_ne!(Id::new("rm_a"), Id::new("rm_a\0"));
    }

    #[test]
    fn is_id_rejects_near_misses() {
        assert!(is_id("rm_a1b2c3d4"));
        assert!(!is_id("rm_A1b2c3d4"));
        assert!(!is_id("rm_a1b2c3d"));
        assert!(!is_id("rm_a1b2c3d45"));
        assert!(!is_id("xx_a1b2c3d4"));
        assert!(!is_id("rm_a1b2-3d4"));
    }

    #[test]
    fn trailing_ids_are_found_after_a_hash_only() {
        assert_eq!(trailing_id("# rm_a1b2c3d4", "#"), Some((2, 13)));
        assert_eq!(
            trailing_id("# noqa    # rm_a1b2c3d4  ", "#"),
            Some((12, 23))
        );
        assert_eq!(trailing_id("#rm_a1b2c3d4", "#"), Some((1, 12)));
        assert_eq!(trailing_id("# see rm_a1b2c3d4", "#"), None);
        assert_eq!(trailing_id("# rm_a1b2c3d", "#"), None);
        assert_eq!(
            trailing_id("// why    // rm_a1b2c3d4", "//"),
            Some((13, 24))
        );
        assert_eq!(trailing_id("-- rm_a1b2c3d4", "--"), Some((3, 14)));
        assert_eq!(trailing_id("// rm_a1b2c3d4", "#"), None);
    }

    #[test]
    fn file_comments_carry_an_id() {
        assert_eq!(
            file_comment_id("# remora-file: rm_abcdefgh", "#"),
            Some((15, 26))
        );
        assert_eq!(
            file_comment_id("#remora-file:rm_abcdefgh\r", "#"),
            Some((13, 24))
        );
        assert_eq!(
            file_comment_id("// remora-file: rm_abcdefgh", "//"),
            Some((16, 27))
        );
        assert_eq!(file_comment_id("# remora-file: nope", "#"), None);
        assert_eq!(file_comment_id("x = 1", "#"), None);
    }
}
