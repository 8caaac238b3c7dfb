//! Ship requests as the Questions pane lists them (SPEC §19.3): what each would push is
//! looked at through [`Shipper::preview`] in the background, once per request and head
//! (and again when the look is older than [`STALE_AFTER`], for the critic's verdict),
//! so a snapshot never waits on git and no frame runs it.

use crate::events::Source;
use crate::session::ship::{Order, Preview, ShipError, ShipRequest, Shipper};
use crate::tui::backend::{ActionError, ActionResult, ShipView};
use crate::work_item::WorkItemRef;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A look older than this is taken again (the shown one stays meanwhile).
pub const STALE_AFTER: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Look {
    at: Option<Instant>,
    running: bool,
    result: Option<Result<Preview, String>>,
}

/// The looks, by request id and head.
#[derive(Default, Clone)]
pub struct ShipPreviews {
    looks: Arc<Mutex<HashMap<(String, String), Look>>>,
}

impl ShipPreviews {
    /// The rows for `requests`, starting a look for each that needs one (inside a tokio
    /// runtime); `shipper`: why there is none, shown on every row.
    pub fn views(
        &self,
        requests: &[(WorkItemRef, ShipRequest)],
        shipper: &Result<Shipper, String>,
    ) -> Vec<ShipView> {
        let now = time::OffsetDateTime::now_utc();
        let mut looks = self.looks.lock().unwrap_or_else(|e| e.into_inner());
        looks.retain(|(id, head), _| requests.iter().any(|(_, r)| &r.id == id && &r.head == head));
        requests
            .iter()
            .map(|(item, request)| {
                let key = (request.id.clone(), request.head.clone());
                let look = looks.entry(key.clone()).or_default();
                let due = look.at.is_none_or(|at| at.elapsed() >= STALE_AFTER);
                let preview = match shipper {
                    Err(why) => Some(Err(why.clone())),
                    Ok(shipper) => {
                        if due && !look.running {
                            look.running = true;
                            self.look(shipper.clone(), item.clone(), key);
                        }
                        look.result.clone()
                    }
                };
                ShipView {
                    work_item: item.clone(),
                    request_id: request.id.clone(),
                    title: request.title.clone(),
                    branch: request.branch.clone(),
                    requested_at: crate::time::parse_ts(&request.requested_at).unwrap_or(now),
                    preview,
                }
            })
            .collect()
    }

    fn look(&self, shipper: Shipper, item: WorkItemRef, key: (String, String)) {
        let looks = Arc::clone(&self.looks);
        tokio::spawn(async move {
            let result = shipper.preview(&item).await.map_err(|e| e.to_string());
            let mut looks = looks.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(look) = looks.get_mut(&key) {
                look.running = false;
                look.at = Some(Instant::now());
                look.result = Some(result);
            }
        });
    }
}

impl super::LiveBackend {
    fn shipper(&self) -> Result<&Shipper, ActionError> {
        self.shipper
            .as_ref()
            .map_err(|why| ActionError::Refused(format!("cannot ship from here: {why}")))
    }

    pub(super) async fn ship_look(&self, item: &WorkItemRef) -> Result<Preview, ActionError> {
        self.shipper()?
            .preview(item)
            .await
            .map_err(|refusal| ActionError::Refused(refusal.to_string()))
    }

    /// Ships through the one [`Shipper::ship`], at the head the confirmation showed.
    pub(super) async fn do_ship(&self, item: &WorkItemRef, seen_head: &str) -> ActionResult {
        let order = Order {
            work_item: item.clone(),
            seen_head: seen_head.to_string(),
            title: None,
            body: None,
            draft: None,
            source: Source::Tui,
            actor: crate::session::ask::local_user(),
        };
        match self.shipper()?.ship(&order).await {
            Ok(shipped) => Ok(match &shipped.note_error {
                None => shipped.note(),
                Some(e) => format!("{} (the session did not get the note: {e})", shipped.note()),
            }),
            Err(ShipError::Refused(refusal)) => {
                Err(ActionError::Refused(format!("not shipped: {refusal}")))
            }
            Err(error @ ShipError::Failed { .. }) => Err(ActionError::Failed(error.to_string())),
        }
    }
}
