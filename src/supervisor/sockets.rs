//! The supervisor's Unix sockets: the operator's, and one per host for its agents.

use super::Parts;
use crate::operator::{OperatorApi, OperatorSocket};
use std::sync::Arc;

impl Parts {
    /// The routes served by this supervisor's own sessions, client and event log.
    fn operator_api(&self) -> Arc<OperatorApi> {
        Arc::new(OperatorApi::new(
            Arc::clone(&self.sessions),
            Arc::clone(&self.client),
            self.events.clone(),
        ))
    }

    /// One socket per host for its agents (`operator::serve_host`). A host whose
    /// socket cannot be bound still runs its sessions; its agents' requests then fail
    /// and say so.
    pub(super) fn agent_sockets(&self, config: &crate::config::Config) -> Vec<OperatorSocket> {
        let mut sockets = Vec::new();
        for host in self.sessions.hosts().iter() {
            let served = crate::operator::serve_host(
                self.operator_api(),
                host,
                &self.paths.ssh_dir(),
                crate::server::limits(&config.server),
                self.events.clone(),
            );
            match served {
                Ok(socket) => sockets.push(socket),
                Err(e) => {
                    tracing::warn!(host = host.name(), "no socket for the host's agents: {e}")
                }
            }
        }
        sockets
    }

    /// Binds `<state>/operator.sock` with the operator's routes.
    pub(super) fn operator_socket(
        &self,
        config: &crate::config::Config,
    ) -> Result<OperatorSocket, String> {
        let api = self.operator_api();
        let app = crate::server::guarded(api.router(), &[], self.events.clone());
        OperatorSocket::bind(
            &self.paths.operator_socket(),
            app,
            crate::server::limits(&config.server),
        )
        .map_err(|e| e.to_string())
    }
}
