//! What every HTTP client of Chimera shares: the crypto provider rustls
//! needs, and the no-redirect client agents reach the web with.

/// The HTTP client of what agents reach (web search, A2A peers and their
/// cards), with the crypto provider its TLS needs. It follows no redirect:
/// where a request goes is checked against `capabilities.hosts` before it
/// is sent, and a redirect would take it elsewhere unchecked. The caller
/// reports a 3xx with where it pointed ([`redirect_target`]).
pub fn http_client() -> reqwest::Client {
    install_crypto_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        // Fails only where the TLS backend cannot start, where
        // `Client::new` fails the same way.
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// Where a redirect answer pointed, for the error that says it was not
/// followed; `None` for any other answer.
pub fn redirect_target(resp: &reqwest::Response) -> Option<String> {
    resp.status().is_redirection().then(|| {
        resp.headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .unwrap_or("nowhere")
            .to_owned()
    })
}

/// Installs the ring crypto provider once; reqwest's rustls needs one.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // An Err says a provider was installed first (by a library of
        // the process); rustls then uses that one, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
