//! Respawning an opencode session whose server or TUI is gone (a delivery found it
//! dead): what is left of its tmux session is ended, a server is started again on a
//! new free port, takes the recorded opencode session back when its data has it (a
//! new one otherwise), the TUI opens on it, and the pending prompt goes in as its
//! first — delivered once.

use crate::channel::ChannelRecord;
use crate::events::{Event, EventType, Source};
use crate::harness::Harness;
use crate::session::delivery::{Delivered, DeliveryFailure};
use crate::session::registry::SessionRecord;
use crate::session::sessions::{SessionError, Sessions};
use crate::session::spawn::{PromptInputs, spawn_spec};

impl Sessions {
    /// Restarts `record`'s opencode server and TUI with `inputs`' prompt.
    pub(crate) async fn respawn_opencode(
        &self,
        record: &SessionRecord,
        inputs: &PromptInputs,
    ) -> Result<Delivered, DeliveryFailure> {
        let item = &record.work_item;
        let settings = self.settings();
        let failed = |error: SessionError| {
            let error = self.spawn_failed(item, Some(&record.harness), Source::Dispatch, error);
            DeliveryFailure::Transient(format!("respawn failed: {error}"))
        };
        if !record.cwd.is_dir() {
            return Err(failed(SessionError::NoWorkingDir {
                item: item.to_string(),
                path: record.cwd.clone(),
            }));
        }
        let harness =
            Harness::resolve(&record.harness, &settings.sessions).map_err(|e| failed(e.into()))?;
        harness
            .locate(settings.search_path.as_deref())
            .map_err(|e| failed(e.into()))?;
        let harness = self
            .with_opencode_server(harness, &record.cwd, false)
            .map_err(&failed)?;
        let tmux = self
            .tmux_of(record)
            .map_err(|e| DeliveryFailure::Transient(e.to_string()))?;
        // Whatever is left (a TUI attached to a dead server) goes with it.
        let _ = tmux.kill_session(&record.tmux_session).await;
        let resume = match &record.channel {
            Some(ChannelRecord::OpencodeServer { session, .. }) => Some(session.clone()),
            _ => record.harness_session_id.clone(),
        };
        let prompt = settings.templates.render_event(&inputs.vars(item));
        let policy = settings.opencode_policy(item);
        let spec = spawn_spec(&settings, record, None, Vec::new());
        let (pane, channel) = self
            .spawn_opencode(tmux.as_ref(), &harness, spec, &prompt, resume.as_deref())
            .await
            .map_err(&failed)?;
        let ChannelRecord::OpencodeServer { session, .. } = &channel else {
            return Err(failed(SessionError::Channel(
                "not an opencode server".into(),
            )));
        };
        let resumed = resume.as_deref() == Some(session.as_str());
        let (pane_str, id, kept) = (pane.to_string(), session.clone(), channel.clone());
        let (id_now, now) = (session.clone(), crate::time::now_ts());
        let recorded = self.registry.update(item, |r| {
            r.pane_id = Some(pane_str);
            r.harness_session_id = Some(id);
            r.channel = Some(kept);
            r.opencode_policy = Some(policy);
            // The old server's report is over; the new one took the prompt.
            r.reported = Some(super::state::prompted(&id_now, &now));
        });
        if let Err(error) = recorded {
            tracing::warn!(work_item = %item, "respawn not recorded: {error}");
        }
        self.emit(
            Event::new(Source::Dispatch, EventType::SessionRespawned)
                .with("work_item", item.to_string())
                .with("harness", harness.name())
                .with("resumed", resumed)
                .with("pane", pane.to_string())
                .with("harness_session_id", Some(session.clone()))
                .with("channel", channel.name()),
        );
        Ok(Delivered {
            pane,
            bytes: prompt.len(),
            respawned: Some(resumed),
            channel: Some(channel.name()),
        })
    }
}
