//! Who holds a listener's connection slots, and who gives one up when all are taken
//! (SPEC §14.2).
//!
//! A listener has `max_connections` slots and [`RESERVED`] more for health checks. A new
//! connection takes, in this order:
//! 1. a free slot;
//! 2. the slot of the connection that has waited longest without a request in flight —
//!    half-open (its head unfinished) before idle (kept alive) — which is closed:
//!    *evicted*;
//! 3. the reserved slot, free or held by a connection still waiting for its head;
//! 4. nothing: it is closed at once (`over_cap`).
//!
//! A connection whose request is in flight (its body arriving, its handler running) is
//! never evicted. So a flood of half-open connections only ever displaces itself, and
//! the reserved slot is needed only when every slot carries a request; there it serves
//! one `GET /healthz` under a short deadline (`serve.rs`), and a slow client in it is
//! displaced by the next newcomer, so it cannot be held.

use super::conn::Clock;
use std::sync::{Arc, Mutex};

/// Slots beyond `max_connections`, for `GET /healthz` only.
pub const RESERVED: usize = 1;

/// Which slots a connection holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// One of `max_connections`: any request.
    Main,
    /// The reserved slot: one `GET /healthz`, briefly.
    Reserved,
}

/// A listener's slot table.
#[derive(Debug)]
pub struct Slots {
    table: Mutex<Table>,
}

#[derive(Debug)]
struct Table {
    main: usize,
    reserved: usize,
    next_id: u64,
    held: Vec<Held>,
}

#[derive(Debug)]
struct Held {
    id: u64,
    pool: Pool,
    clock: Arc<Clock>,
}

impl Table {
    fn capacity(&self, pool: Pool) -> usize {
        match pool {
            Pool::Main => self.main,
            Pool::Reserved => self.reserved,
        }
    }

    /// The index of the connection in `pool` that gives way first, if any may.
    fn gives_way(&self, pool: Pool) -> Option<usize> {
        self.held
            .iter()
            .enumerate()
            .filter(|(_, h)| h.pool == pool)
            .filter_map(|(i, h)| h.clock.waiting().map(|w| (w, i)))
            .min()
            .map(|(_, i)| i)
    }
}

/// A connection admitted: its slot (released on drop) and whether another connection
/// was evicted for it.
#[derive(Debug)]
pub struct Admitted {
    pub slot: Slot,
    pub evicted: bool,
}

/// One held slot; dropping it frees the slot (unless it was taken by an eviction).
#[derive(Debug)]
pub struct Slot {
    id: u64,
    pool: Pool,
    slots: Arc<Slots>,
}

impl Slot {
    pub fn pool(&self) -> Pool {
        self.pool
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut table = self.slots.lock();
        if let Some(i) = table.held.iter().position(|h| h.id == self.id) {
            table.held.swap_remove(i);
        }
    }
}

impl Slots {
    /// `max` slots for any connection (at least 1) and `reserved` for health checks.
    pub fn new(max: usize, reserved: usize) -> Arc<Self> {
        Arc::new(Self {
            table: Mutex::new(Table {
                main: max.max(1),
                reserved,
                next_id: 0,
                held: Vec::new(),
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Finds a new connection a slot (see the module docs); `clock` makes its clock for
    /// the pool it lands in. `None`: no slot, close it.
    pub fn admit(
        self: &Arc<Self>,
        clock: impl FnOnce(Pool) -> Arc<Clock>,
    ) -> Option<(Admitted, Arc<Clock>)> {
        let mut table = self.lock();
        for pool in [Pool::Main, Pool::Reserved] {
            let capacity = table.capacity(pool);
            let held = table.held.iter().filter(|h| h.pool == pool).count();
            let mut evicted = false;
            if held >= capacity {
                let Some(i) = table.gives_way(pool) else {
                    continue;
                };
                table.held.swap_remove(i).clock.evict();
                evicted = true;
            }
            let id = table.next_id;
            table.next_id += 1;
            let clock = clock(pool);
            table.held.push(Held {
                id,
                pool,
                clock: Arc::clone(&clock),
            });
            let slot = Slot {
                id,
                pool,
                slots: Arc::clone(self),
            };
            return Some((Admitted { slot, evicted }, clock));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::Timeouts;
    use std::time::Duration;

    fn admit(slots: &Arc<Slots>) -> Option<(Admitted, Arc<Clock>)> {
        slots.admit(|_| Clock::new(Timeouts::default()))
    }

    #[tokio::test(start_paused = true)]
    async fn the_longest_waiting_half_open_connection_gives_way() {
        let slots = Slots::new(2, 1);
        let (first, first_clock) = admit(&slots).unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        let (second, second_clock) = admit(&slots).unwrap();
        assert!(!first.evicted && !second.evicted);

        let (third, _) = admit(&slots).unwrap();
        assert!(third.evicted);
        assert_eq!(third.slot.pool(), Pool::Main);
        assert!(first_clock.is_evicted(), "the oldest went");
        assert!(!second_clock.is_evicted());
        // The evicted connection's slot is already the newcomer's: dropping it frees
        // nothing more.
        drop(first);
        let (fourth, _) = admit(&slots).unwrap();
        assert!(fourth.evicted && second_clock.is_evicted());
    }

    #[tokio::test(start_paused = true)]
    async fn requests_in_flight_are_never_evicted_and_the_reserved_slot_takes_over() {
        let slots = Slots::new(1, 1);
        let (busy, busy_clock) = admit(&slots).unwrap();
        busy_clock.head_parsed();
        let (health, health_clock) = admit(&slots).unwrap();
        assert_eq!(health.slot.pool(), Pool::Reserved);
        assert!(!health.evicted && !busy_clock.is_evicted());

        // A slow client in the reserved slot is displaced by the next one...
        let (next, next_clock) = admit(&slots).unwrap();
        assert_eq!((next.slot.pool(), next.evicted), (Pool::Reserved, true));
        assert!(health_clock.is_evicted());
        // ...but a request being answered there is not: no slot left, closed at once.
        next_clock.head_parsed();
        assert!(admit(&slots).is_none());
        drop(busy);
        assert_eq!(admit(&slots).unwrap().0.slot.pool(), Pool::Main);
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_gives_way_before_idle() {
        let slots = Slots::new(2, 0);
        let (_idle, idle_clock) = admit(&slots).unwrap();
        idle_clock.head_parsed();
        idle_clock.body_done();
        idle_clock.response_done();
        tokio::time::advance(Duration::from_secs(5)).await;
        let (_half, half_clock) = admit(&slots).unwrap();
        let (newcomer, _) = admit(&slots).unwrap();
        assert!(newcomer.evicted);
        assert!(half_clock.is_evicted() && !idle_clock.is_evicted());
    }
}
