//! What every door holds: the [`Engine`] that decides, and the [`ServerSettings`] the doors are
//! held to. Cheap to clone; the engine's methods are reached through it.

use std::ops::Deref;
use std::sync::Arc;

use gateway_engine::Engine;

use crate::settings::ServerSettings;

/// The engine and the doors' settings, shared by every route.
#[derive(Clone, Debug)]
pub(crate) struct Gateway {
    engine: Engine,
    server: Arc<ServerSettings>,
}

impl Gateway {
    /// The doors over `engine`, held to `server`.
    pub(crate) fn new(engine: Engine, server: ServerSettings) -> Self {
        Self {
            engine,
            server: Arc::new(server),
        }
    }

    /// The doors' settings.
    pub(crate) fn server(&self) -> &ServerSettings {
        &self.server
    }
}

impl Deref for Gateway {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}
