//! Chimera's HTTP API: how clients outside Neovim reach a running core.
//! [`routes`] maps requests onto the core's messages and store;
//! [`control`] serves them on the project's control socket, which one core
//! per project holds; [`client`] is what the `chimera` CLI speaks it with.

mod a2a;
pub mod backend;
pub mod client;
pub mod control;
pub mod core;
mod dashboard;
pub mod events;
pub mod http;
pub mod login;
mod nodes;
mod peer;
pub mod routes;
mod serve;
pub mod sessions;
mod stream;

pub use backend::Backend;
pub use routes::router;
