//! A conversation cut to fit the model's context. Repair rounds grow it:
//! on a 4,096-token llama.cpp server the 1.5B model's third round asked
//! for 4,249 tokens and the task ended on the server's refusal. What
//! matters least goes first — old repair rounds, then the middle of the
//! longest message — and an overflow the server still reports is retried
//! once, cut to the size it names.

use crate::llm::{ChatMessage, LlmError};

/// Characters a token takes, about, in code (small models' tokenizers):
/// the estimate prompts are sized by.
pub const CHARS_PER_TOKEN: usize = 3;

fn size(messages: &[ChatMessage]) -> usize {
    messages.iter().map(|m| m.content.len()).sum()
}

/// `messages` in at most `budget` characters. The first two (the system
/// prompt and the task) and the last (what is asked now) always stay:
/// the oldest repair rounds between them go first, then the middle of the
/// longest message is cut, said in its place.
pub fn fit(messages: &[ChatMessage], budget: usize) -> Vec<ChatMessage> {
    let mut out = messages.to_vec();
    // A repair round is the model's answer and what it was told of it.
    while size(&out) > budget && out.len() > 4 {
        out.drain(2..4);
    }
    while size(&out) > budget {
        let Some((longest, len)) = out
            .iter()
            .enumerate()
            .map(|(i, m)| (i, m.content.len()))
            .max_by_key(|&(_, len)| len)
        else {
            break;
        };
        let over = size(&out) - budget;
        // Cut nothing shorter than a note of what was cut (about 70
        // bytes, which the cut must pay for too).
        if len < 400 || over + NOTE >= len {
            break;
        }
        let cut = cut_middle(&out[longest].content, len - over - NOTE);
        if cut.len() >= len {
            break;
        }
        out[longest].content = cut;
    }
    out
}

/// Room for the note that says what was cut.
const NOTE: usize = 100;

/// `text` kept to about `keep` bytes: its start and end, the middle said
/// to be left out (a file's head and the code around the end stay).
fn cut_middle(text: &str, keep: usize) -> String {
    let half = keep / 2;
    let mut head = half.min(text.len());
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len().saturating_sub(half).max(head);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} characters left out to fit the model's context …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

/// The server refused a request for the model's context: its context size
/// and, when it says it, the request's, in tokens. llama.cpp says
/// `"n_prompt_tokens": 4249, "n_ctx": 4096` (and "request (4249 tokens)
/// exceeds the available context size (4096 tokens)"); OpenAI "maximum
/// context length is 8192 tokens … resulted in 9000 tokens".
pub fn overflow(e: &LlmError) -> Option<(u64, Option<u64>)> {
    let LlmError::Status {
        status: 400, body, ..
    } = e
    else {
        return None;
    };
    let lower = body.to_lowercase();
    if !lower.contains("context") {
        return None;
    }
    let field = |name: &str| {
        let at = body.find(&format!("\"{name}\""))? + name.len() + 2;
        let digits: String = body[at..]
            .trim_start_matches([':', ' '])
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<u64>().ok()
    };
    if let Some(ctx) = field("n_ctx") {
        return Some((ctx, field("n_prompt_tokens")));
    }
    // Every "N tokens" said: the smallest is the context, the largest the
    // request.
    let words: Vec<&str> = body
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .collect();
    let counts: Vec<u64> = words
        .windows(2)
        .filter(|w| w[1].trim_matches(|c: char| !c.is_alphanumeric()) == "tokens")
        .filter_map(|w| w[0].replace(',', "").parse().ok())
        .collect();
    let context = *counts.iter().min()?;
    let request = counts.iter().max().copied().filter(|r| *r > context);
    Some((context, request))
}

/// The characters a request may take on a server of `context` tokens that
/// refused `sent` characters as `request` tokens (when it said so): the
/// measured ratio, else the estimate, with room for the reply (`reply`
/// tokens) and a tenth to spare.
pub fn after_overflow(context: u64, request: Option<u64>, sent: usize, reply: u64) -> usize {
    let room = context.saturating_sub(reply) as f64 * 0.9;
    let chars_per_token = match request {
        Some(r) if r > 0 => sent as f64 / r as f64,
        _ => CHARS_PER_TOKEN as f64,
    };
    (room * chars_per_token) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Vec<ChatMessage> {
        vec![
            ChatMessage::system("s".repeat(500)),
            ChatMessage::user(format!("task {}", "f".repeat(3000))),
            ChatMessage::assistant("a1 ".repeat(300)),
            ChatMessage::user("repair 1 ".repeat(50)),
            ChatMessage::assistant("a2 ".repeat(300)),
            ChatMessage::user("repair 2 ".repeat(50)),
        ]
    }

    #[test]
    fn old_repair_rounds_go_first_then_the_middle_of_the_longest_message() {
        let all = conversation();
        assert_eq!(fit(&all, 100_000), all, "what fits is sent as it is");
        let fitted = fit(&all, size(&all) - 500);
        assert_eq!(fitted.len(), 4, "the oldest round went");
        assert_eq!(fitted[2].content, all[4].content, "the last answer stays");
        assert_eq!(fitted[3].content, all[5].content);
        let fitted = fit(&all, 3000);
        assert!(size(&fitted) <= 3000, "{}", size(&fitted));
        assert!(fitted[1].content.starts_with("task "));
        assert!(fitted[1]
            .content
            .contains("characters left out to fit the model's context"));
        assert_eq!(
            fitted[0].content, all[0].content,
            "the system prompt is whole"
        );
    }

    #[test]
    fn every_budget_ends_and_keeps_the_system_prompt_the_task_and_the_question() {
        let all = conversation();
        for budget in (0..7000).step_by(37) {
            let fitted = fit(&all, budget);
            assert!(fitted.len() >= 3, "{budget}");
            assert_eq!(fitted[0], all[0]);
            assert!(fitted[1].content.starts_with("task "));
            assert_eq!(fitted.last(), all.last());
        }
    }

    #[test]
    fn an_overflow_says_the_context_and_the_request() {
        let status = |body: &str| LlmError::Status {
            status: 400,
            body: body.into(),
            retry_after: None,
        };
        let llama = status(
            r#"{"error":{"code":400,"message":"request (4249 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4249,"n_ctx":4096}}"#,
        );
        assert_eq!(overflow(&llama), Some((4096, Some(4249))));
        let words =
            status("request (4249 tokens) exceeds the available context size (4096 tokens)");
        assert_eq!(overflow(&words), Some((4096, Some(4249))));
        let openai = status("This model's maximum context length is 8192 tokens. However, your messages resulted in 9,000 tokens.");
        assert_eq!(overflow(&openai), Some((8192, Some(9000))));
        assert_eq!(overflow(&status("bad request")), None);
        assert_eq!(
            overflow(&LlmError::Status {
                status: 500,
                body: "context size".into(),
                retry_after: None
            }),
            None
        );
        // 12,747 characters were 4,249 tokens: 3 a token, room for 512.
        assert_eq!(after_overflow(4096, Some(4249), 12_747, 512), 9676);
    }
}
