//! One-time login links for the web dashboard, so that the API's token is
//! never on a command line (where every account on the machine reads it in
//! `ps`) nor printed. A link carries a code — an expiry, a nonce and a MAC
//! of both keyed with the token — that `POST /login` exchanges once, before
//! it expires, for the token. Any process that can read the token can make
//! one; only the server that holds the token can redeem it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a link opened by `:Chimera dashboard` is good for: the browser
/// opens it at once.
pub const OPENED: Duration = Duration::from_secs(60);
/// How long the link `chimera serve` prints is good for: a person copies it.
pub const PRINTED: Duration = Duration::from_secs(600);

/// Why a code was refused; the text is what the page shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginError {
    #[error("this login link is not one of this server's; open the dashboard again (:Chimera dashboard)")]
    Forged,
    #[error("this login link has expired; open the dashboard again (:Chimera dashboard)")]
    Expired,
    #[error("this login link was used already; open the dashboard again (:Chimera dashboard)")]
    Used,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn key(token: &str) -> [u8; 32] {
    *blake3::hash(token.as_bytes()).as_bytes()
}

fn mac(token: &str, body: &str) -> String {
    blake3::keyed_hash(&key(token), body.as_bytes()).to_hex()[..32].to_owned()
}

/// A code good for `lifetime`, made with the API's `token`.
pub fn mint(token: &str, lifetime: Duration) -> String {
    let nonce = crate::store::unique_digest().to_hex()[..16].to_owned();
    let body = format!("{}.{nonce}", now_ms() + lifetime.as_millis() as u64);
    format!("{body}.{}", mac(token, &body))
}

/// The codes this server redeemed, until they expire.
#[derive(Debug, Default)]
pub struct Redeemed(Mutex<HashMap<String, u64>>);

impl Redeemed {
    /// Takes `code` once: `Ok` the first time a good code is shown before
    /// it expires.
    pub fn redeem(&self, token: &str, code: &str) -> Result<(), LoginError> {
        let mut parts = code.trim().splitn(3, '.');
        let (Some(expiry), Some(nonce), Some(given)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(LoginError::Forged);
        };
        let body = format!("{expiry}.{nonce}");
        if !same(given.as_bytes(), mac(token, &body).as_bytes()) {
            return Err(LoginError::Forged);
        }
        let expiry: u64 = expiry.parse().map_err(|_| LoginError::Forged)?;
        let now = now_ms();
        if now > expiry {
            return Err(LoginError::Expired);
        }
        let mut used = self.0.lock().unwrap_or_else(|p| p.into_inner());
        used.retain(|_, until| *until >= now);
        if used.insert(body, expiry).is_some() {
            return Err(LoginError::Used);
        }
        Ok(())
    }
}

/// Equal, in a time that does not depend on where they differ.
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_logs_in_once_before_it_expires_and_only_with_its_token() {
        let redeemed = Redeemed::default();
        let code = mint("tok", Duration::from_secs(60));
        assert!(!code.contains("tok"));
        assert_eq!(redeemed.redeem("other", &code), Err(LoginError::Forged));
        assert_eq!(redeemed.redeem("tok", &code), Ok(()));
        assert_eq!(redeemed.redeem("tok", &code), Err(LoginError::Used));
        let second = mint("tok", Duration::from_secs(60));
        assert_ne!(second, code);
        assert_eq!(redeemed.redeem("tok", &second), Ok(()));
        let stale = mint("tok", Duration::ZERO);
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(redeemed.redeem("tok", &stale), Err(LoginError::Expired));
        // A later expiry with the old MAC is not a code.
        let (body, mac) = code.rsplit_once('.').unwrap();
        let (_, nonce) = body.split_once('.').unwrap();
        let forged = format!("{}.{nonce}.{mac}", now_ms() + 3_600_000);
        assert_eq!(redeemed.redeem("tok", &forged), Err(LoginError::Forged));
        assert_eq!(redeemed.redeem("tok", "garbage"), Err(LoginError::Forged));
    }
}
