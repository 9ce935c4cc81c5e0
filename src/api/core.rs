//! A core with its API, as a process that runs one starts it (Neovim, a
//! `chimera` command): the project's control socket is taken before the
//! start returns, API clients hear what the editor hears, and the routes
//! are served on the socket (and HTTP, `api.enabled`) while the core runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::control::{self, Held};
use super::events::EventBus;
use crate::config::Config;
use crate::port::Command;
use crate::port::EditorSink;
use crate::port::Told;
use crate::remora::shared::SharedIndex;
use crate::runtime::{self, FrontEnd, Port};
/// The started core, and why it could not start: what a client that
/// starts one holds.
pub use crate::runtime::{CoreHandle, Indexing, RuntimeError};
use crate::store::Store;

/// Starts the core for the project at `root` and serves its API.
pub fn start(
    config: Config,
    root: PathBuf,
    sink: Arc<dyn EditorSink>,
    indexing: Indexing,
) -> Result<CoreHandle, RuntimeError> {
    // Cheap and synchronous: a `chimera` command typed a moment after this
    // returns finds the socket held and waits for this core to answer.
    let held = control::hold(&root);
    let events = Arc::new(EventBus::new());
    let door = Door {
        root: root.clone(),
        events: events.clone(),
        held: Some(held),
    };
    runtime::start(config, root, sink, Some(Box::new(door)), indexing)
}

/// The API as the core's front end.
struct Door {
    root: PathBuf,
    events: Arc<EventBus>,
    /// What [`control::hold`] gave at the start, until the door opens.
    held: Option<std::io::Result<Option<Held>>>,
}

impl FrontEnd for Door {
    fn open(&mut self, port: Port) {
        let api = &port.config().api;
        let serving = control::Serving {
            root: self.root.clone(),
            http_port: api.enabled.then_some(api.port),
            first: self.held.take().unwrap_or(Ok(None)),
            stop: port.stopping(),
            router: super::router(Arc::new(Served {
                port: port.clone(),
                events: self.events.clone(),
            })),
        };
        let (trouble, taken) = (port.clone(), port);
        control::spawn(
            serving,
            move |message| trouble.warn(message),
            move || taken.take_over(),
        );
    }

    fn close(&mut self) {
        self.events.close();
        super::http::withdraw(&self.root);
    }

    fn listener(&self) -> Option<Arc<dyn crate::event::Listener>> {
        Some(self.events.clone())
    }
}

/// The core as the routes reach it, with its feed.
struct Served {
    port: Port,
    events: Arc<EventBus>,
}

impl super::Backend for Served {
    fn store(&self) -> &Store {
        self.port.store()
    }
    fn root(&self) -> &Path {
        self.port.root()
    }
    fn call(&self, msg: Command) -> BoxFuture<'static, Told> {
        self.port.call(msg)
    }
    fn events(&self) -> Arc<EventBus> {
        self.events.clone()
    }
    fn index(&self) -> Option<SharedIndex> {
        self.port.index()
    }
    fn indexed(&self) -> BoxFuture<'_, Option<SharedIndex>> {
        Box::pin(self.port.indexed())
    }
    fn config(&self) -> Option<&Config> {
        Some(self.port.config())
    }
    fn settled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.port.settled())
    }
}
