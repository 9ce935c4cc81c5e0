-- The plugin's version; the native library must carry the same stamp.
-- Kept equal to `version` in Cargo.toml (a test checks it).
return "0.1.0"
