//! The web dashboard: one page, its script and its style, built into the
//! binary (no build step, nothing fetched from elsewhere). It asks for the
//! project's token once and talks to the API like any other client.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

const PAGE: &str = include_str!("../../web/dashboard.html");
const SCRIPT: &str = include_str!("../../web/dashboard.js");
const STYLE: &str = include_str!("../../web/dashboard.css");

/// Served without the token: there is nothing secret in them.
pub fn router() -> Router {
    Router::new()
        .route("/", get(|| file("text/html; charset=utf-8", PAGE)))
        .route(
            "/dashboard.js",
            get(|| file("text/javascript; charset=utf-8", SCRIPT)),
        )
        .route(
            "/dashboard.css",
            get(|| file("text/css; charset=utf-8", STYLE)),
        )
}

async fn file(kind: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, kind),
            // The page runs only its own script and style, and may be
            // framed by no one.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; frame-ancestors 'none'",
            ),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
}
