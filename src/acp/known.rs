//! What Chimera knows of the agents users bring, by the name they are
//! configured under (`agents.external.claude`) or their `kind`: the hosts
//! their provider answers at, the variables that hold their login, and
//! the files of the user's home that carry that login into the agent's
//! own home ([`super::home`]). Nothing here is chosen by a word of a
//! command line: an agent configured as `npx claude codex` is none of
//! these unless its name or `kind` says so.

/// One agent Chimera knows.
#[derive(Debug)]
pub struct Known {
    pub kind: &'static str,
    /// `host:port` its provider answers at.
    pub hosts: &'static [&'static str],
    /// The user's variables it is given: its key, its provider's address.
    pub keys: &'static [&'static str],
    /// Files of the user's home (relative to it) copied into its own
    /// home when missing there or older: its login and settings.
    pub seeds: &'static [&'static str],
    /// Files it cannot start without, made in its own home (with this
    /// text) when no seed brought them: Claude Code ends at its first
    /// session without `~/.claude.json`.
    pub made: &'static [(&'static str, &'static str)],
    /// The session mode it is put in when it offers it. Claude Code: one
    /// where it asks before it edits or runs, so the preset decides (its
    /// successor adapter starts in "auto", whose classifier blocks every
    /// call when the provider is not Anthropic's own). Codex: without a
    /// sandbox of its own, which cannot start inside Chimera's (bubblewrap:
    /// "setting up uid map: Permission denied"), so every edit and command
    /// failed; Chimera's confinement bounds what it runs instead.
    pub mode: Option<&'static str>,
    /// Its ACP login methods that read a variable, with that variable:
    /// when it asks to be logged in, the first whose variable it was
    /// given is used (Codex asks, even with `OPENAI_API_KEY` set).
    pub logins: &'static [(&'static str, &'static str)],
}

const KNOWN: &[Known] = &[
    Known {
        kind: "claude",
        hosts: &["api.anthropic.com:443"],
        keys: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_MODEL",
            "CLAUDE_CODE_OAUTH_TOKEN",
        ],
        seeds: &[
            ".claude.json",
            ".claude/.credentials.json",
            ".claude/settings.json",
        ],
        made: &[(".claude.json", "{}\n")],
        mode: Some("default"),
        logins: &[],
    },
    Known {
        kind: "codex",
        hosts: &["api.openai.com:443", "chatgpt.com:443"],
        keys: &["OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY"],
        seeds: &[".codex/auth.json", ".codex/config.toml"],
        made: &[],
        mode: Some("full-access"),
        logins: &[
            ("codex-api-key", "CODEX_API_KEY"),
            ("openai-api-key", "OPENAI_API_KEY"),
        ],
    },
    Known {
        kind: "gemini",
        hosts: &[
            "generativelanguage.googleapis.com:443",
            "cloudcode-pa.googleapis.com:443",
            "oauth2.googleapis.com:443",
        ],
        keys: &[
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GOOGLE_CLOUD_PROJECT",
            "GOOGLE_CLOUD_LOCATION",
            "GOOGLE_GENAI_USE_VERTEXAI",
        ],
        seeds: &[
            ".gemini/settings.json",
            ".gemini/oauth_creds.json",
            ".gemini/google_accounts.json",
            ".gemini/installation_id",
        ],
        made: &[],
        mode: None,
        logins: &[],
    },
    Known {
        kind: "opencode",
        hosts: &["models.dev:443"],
        keys: &[
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENROUTER_API_KEY",
            "GEMINI_API_KEY",
        ],
        seeds: &[
            ".local/share/opencode/auth.json",
            ".config/opencode/opencode.json",
            ".config/opencode/opencode.jsonc",
            ".config/opencode/config.json",
        ],
        made: &[],
        mode: None,
        logins: &[],
    },
];

/// The agent of kind `kind`, if Chimera knows it.
pub fn known(kind: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|k| k.kind == kind)
}

/// The kinds Chimera knows, for messages.
pub fn kinds() -> Vec<&'static str> {
    KNOWN.iter().map(|k| k.kind).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_agent_is_known_by_its_kind_alone() {
        assert_eq!(super::known("claude").unwrap().kind, "claude");
        assert!(super::known("npx claude codex").is_none());
        assert!(super::known("claude-code").is_none());
        assert_eq!(super::kinds(), ["claude", "codex", "gemini", "opencode"]);
    }
}
