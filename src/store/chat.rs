//! The free chat's conversations: every message the human wrote, every
//! tool step and every reply, in order, kept across restarts.

use rusqlite::params;
use serde::Serialize;

use super::{now_ms, Result, Store};

/// One entry of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatEntry {
    pub seq: i64,
    /// `user`, `assistant`, `tool` (a call and its result) or `status`.
    pub role: String,
    pub content: String,
    /// The agent (turn) that produced it.
    pub agent_id: Option<String>,
    /// Milliseconds since the epoch.
    pub created_at: i64,
}

impl Store {
    /// Appends an entry; returns it as stored.
    pub fn chat_append(
        &self,
        conversation: &str,
        role: &str,
        content: &str,
        agent: Option<&str>,
    ) -> Result<ChatEntry> {
        let conn = self.conn();
        let created_at = now_ms();
        conn.prepare_cached(
            "INSERT INTO chat_messages (conversation, role, content, agent_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![conversation, role, content, agent, created_at])?;
        Ok(ChatEntry {
            seq: conn.last_insert_rowid(),
            role: role.to_owned(),
            content: content.to_owned(),
            agent_id: agent.map(str::to_owned),
            created_at,
        })
    }

    /// The whole conversation, oldest first.
    pub fn chat_entries(&self, conversation: &str) -> Result<Vec<ChatEntry>> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT seq, role, content, agent_id, created_at FROM chat_messages
             WHERE conversation = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([conversation], |r| {
            Ok(ChatEntry {
                seq: r.get(0)?,
                role: r.get(1)?,
                content: r.get(2)?,
                agent_id: r.get(3)?,
                created_at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Forgets a conversation.
    pub fn chat_clear(&self, conversation: &str) -> Result<()> {
        self.conn()
            .prepare_cached("DELETE FROM chat_messages WHERE conversation = ?1")?
            .execute([conversation])?;
        Ok(())
    }
}
