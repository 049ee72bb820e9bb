//! The origin's capacity: a number of requests served at once (the places of a
//! tokio [`Semaphore`]), each holding its place for a service time (an async sleep)
//! before it is answered, and a queue limit beyond which a request is refused at
//! once. When requests come faster than places / service time a second, the queue
//! and the time to the answer grow, as at a loaded origin; all the waiting is
//! sleeping, so the capacity is far below what the machine serves and CPU
//! contention does not decide the result. Without a capacity (the default) every
//! request is answered at once.
//!
//! The capacity changes while the origin runs, for the requests that come next:
//! more places are added to the semaphore; fewer are forgotten, those free at once
//! and the others as the requests holding them end.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// The service time of a capacity when none is given.
pub const DEFAULT_SERVICE: Duration = Duration::from_millis(50);
/// The queue limit of a capacity when none is given: this many times its places.
pub const QUEUE_PER_PLACE: usize = 10;
/// The most places a capacity has (the demo needs far fewer).
pub const MAX_PLACES: usize = 100_000;
/// The longest service time.
pub const MAX_SERVICE: Duration = Duration::from_secs(60);
/// The longest queue.
pub const MAX_QUEUE: usize = 1_000_000;

/// How much the origin serves at once, and how fast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// Requests served at once (1 to [`MAX_PLACES`]).
    pub places: usize,
    /// How long each request holds its place before it is answered (at most
    /// [`MAX_SERVICE`]).
    pub service: Duration,
    /// Requests waiting for a place beyond which the origin answers 503 at once
    /// (0: refuse every request that finds no place free; at most [`MAX_QUEUE`]).
    pub queue: usize,
}

impl Capacity {
    /// `places` at once, each for [`DEFAULT_SERVICE`], with a queue of
    /// [`QUEUE_PER_PLACE`] × `places`.
    pub fn new(places: usize) -> Capacity {
        Capacity {
            places,
            service: DEFAULT_SERVICE,
            queue: places.saturating_mul(QUEUE_PER_PLACE),
        }
    }

    /// The same capacity with this service time.
    pub fn with_service(self, service: Duration) -> Capacity {
        Capacity { service, ..self }
    }

    /// The same capacity with this queue limit.
    pub fn with_queue(self, queue: usize) -> Capacity {
        Capacity { queue, ..self }
    }

    /// Whether every value is within its bounds; else what is not.
    pub fn check(&self) -> Result<(), String> {
        if !(1..=MAX_PLACES).contains(&self.places) {
            return Err(format!(
                "the capacity must be 1 to {MAX_PLACES} requests at once, not {}",
                self.places
            ));
        }
        if self.service > MAX_SERVICE {
            return Err(format!(
                "the service time must be at most {} ms",
                MAX_SERVICE.as_millis()
            ));
        }
        if self.queue > MAX_QUEUE {
            return Err(format!("the queue must be at most {MAX_QUEUE}"));
        }
        Ok(())
    }

    /// `{"n":4,"service_ms":50,"queue":40}`.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"n\":{},\"service_ms\":{},\"queue\":{}}}",
            self.places,
            self.service.as_millis(),
            self.queue
        )
    }

    /// The capacity a query string sets, as the flags do: `n=N` (or
    /// `n=unlimited`, which gives `None`), `service_ms=MS` ([`DEFAULT_SERVICE`]
    /// when absent) and `queue=N` ([`QUEUE_PER_PLACE`] × n when absent).
    pub fn from_query(query: &str) -> Result<Option<Capacity>, String> {
        let (mut n, mut service_ms, mut queue) = (None, None, None);
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let slot = match name {
                "n" => &mut n,
                "service_ms" => &mut service_ms,
                "queue" => &mut queue,
                _ => return Err(format!("unknown parameter {name:?} (n, service_ms, queue)")),
            };
            *slot = Some(value);
        }
        let number = |name: &str, value: &str| {
            value
                .parse::<u64>()
                .map_err(|_| format!("{name} must be a whole number, not {value:?}"))
        };
        let capacity = match n {
            None => return Err("n is missing (a number, or unlimited)".into()),
            Some("unlimited") if service_ms.is_none() && queue.is_none() => return Ok(None),
            Some("unlimited") => {
                return Err("an unlimited origin has no service_ms or queue".into());
            }
            Some(n) => Capacity::new(usize::try_from(number("n", n)?).unwrap_or(usize::MAX)),
        };
        let capacity = match service_ms {
            Some(ms) => capacity.with_service(Duration::from_millis(number("service_ms", ms)?)),
            None => capacity,
        };
        let capacity = match queue {
            Some(queue) => {
                capacity.with_queue(usize::try_from(number("queue", queue)?).unwrap_or(usize::MAX))
            }
            None => capacity,
        };
        capacity.check()?;
        Ok(Some(capacity))
    }
}

/// What the origin did since it started, and what it does now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests answered through the capacity (every path but the waiting pages
    /// and the admin paths), with or without a capacity.
    pub served: u64,
    /// Requests answered 503 because the queue was full.
    pub refused: u64,
    /// Requests being served now (holding a place, when there is a capacity).
    pub in_flight: usize,
    /// Requests waiting for a place now.
    pub queued: usize,
    /// The capacity now; `None`: unlimited.
    pub capacity: Option<Capacity>,
}

impl Stats {
    /// `{"served":…,"refused":…,"in_flight":…,"queued":…,"capacity":{…} or null}`.
    pub fn to_json(&self) -> String {
        format!(
            "{{\"served\":{},\"refused\":{},\"in_flight\":{},\"queued\":{},\"capacity\":{}}}",
            self.served,
            self.refused,
            self.in_flight,
            self.queued,
            capacity_json(self.capacity)
        )
    }
}

/// A capacity's JSON, `null` for none.
pub fn capacity_json(capacity: Option<Capacity>) -> String {
    capacity.map_or_else(|| "null".to_string(), |c| c.to_json())
}

/// The gate every request served through the capacity passes.
#[derive(Debug)]
pub(crate) struct Gate {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    capacity: Option<Capacity>,
    /// The places; replaced (the old one closed, so its waiters go through) when
    /// the origin becomes unlimited.
    semaphore: Arc<Semaphore>,
    /// Permits of `semaphore` to forget as they come back, after a shrink that
    /// found fewer free than it took away.
    debt: usize,
    served: u64,
    refused: u64,
    in_flight: usize,
    queued: usize,
}

/// A request's place: given back (or forgotten, after a shrink) when dropped.
#[derive(Debug)]
pub(crate) struct Place {
    gate: Arc<Gate>,
    permit: Option<OwnedSemaphorePermit>,
    /// How long to hold it: the service time when the place was taken.
    pub(crate) service: Duration,
}

/// The queue was full: the request is refused.
#[derive(Debug)]
pub(crate) struct Full(pub(crate) Capacity);

impl Gate {
    pub(crate) fn new(capacity: Option<Capacity>) -> Arc<Gate> {
        let places = capacity.map_or(0, |c| c.places);
        Arc::new(Gate {
            state: Mutex::new(State {
                capacity,
                semaphore: Arc::new(Semaphore::new(places)),
                debt: 0,
                served: 0,
                refused: 0,
                in_flight: 0,
                queued: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding it; a poisoned lock still holds good counts.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for one request: at once when one is free or there is no capacity,
    /// after waiting in the queue otherwise, or [`Full`] when the queue is.
    pub(crate) async fn enter(self: &Arc<Self>) -> Result<Place, Full> {
        let semaphore = {
            let mut state = self.lock();
            let Some(capacity) = state.capacity else {
                return Ok(self.place(&mut state, None));
            };
            match state.semaphore.clone().try_acquire_owned() {
                Ok(permit) => return Ok(self.place(&mut state, Some(permit))),
                Err(TryAcquireError::NoPermits | TryAcquireError::Closed) => {}
            }
            if state.queued >= capacity.queue {
                state.refused += 1;
                return Err(Full(capacity));
            }
            state.queued += 1;
            state.semaphore.clone()
        };
        let waiting = Waiting(self);
        // Closed: the origin became unlimited while the request waited.
        let permit = semaphore.acquire_owned().await.ok();
        drop(waiting);
        let mut state = self.lock();
        Ok(self.place(&mut state, permit))
    }

    fn place(self: &Arc<Self>, state: &mut State, permit: Option<OwnedSemaphorePermit>) -> Place {
        state.in_flight += 1;
        Place {
            gate: self.clone(),
            permit,
            service: state.capacity.map_or(Duration::ZERO, |c| c.service),
        }
    }

    /// Counts a request answered.
    pub(crate) fn served(&self) {
        self.lock().served += 1;
    }

    pub(crate) fn stats(&self) -> Stats {
        let state = self.lock();
        Stats {
            served: state.served,
            refused: state.refused,
            in_flight: state.in_flight,
            queued: state.queued,
            capacity: state.capacity,
        }
    }

    pub(crate) fn capacity(&self) -> Option<Capacity> {
        self.lock().capacity
    }

    /// Sets the capacity for the requests that come next (and those waiting).
    pub(crate) fn set(&self, capacity: Option<Capacity>) {
        let mut state = self.lock();
        match (state.capacity, capacity) {
            (_, None) => {
                // Every waiter goes through; the places of a later capacity are new.
                state.semaphore.close();
                state.semaphore = Arc::new(Semaphore::new(0));
                state.debt = 0;
            }
            (None, Some(new)) => {
                state.semaphore = Arc::new(Semaphore::new(new.places));
                state.debt = 0;
            }
            (Some(old), Some(new)) if new.places > old.places => {
                let grow = new.places - old.places;
                let repaid = grow.min(state.debt);
                state.debt -= repaid;
                state.semaphore.add_permits(grow - repaid);
            }
            (Some(old), Some(new)) => {
                let shrink = old.places - new.places;
                let forgotten = state.semaphore.forget_permits(shrink);
                state.debt += shrink - forgotten;
            }
        }
        state.capacity = capacity;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut state = self.gate.lock();
        state.in_flight -= 1;
        if let Some(permit) = self.permit.take()
            && state.debt > 0
            && Arc::ptr_eq(permit.semaphore(), &state.semaphore)
        {
            state.debt -= 1;
            permit.forget();
        }
        // Else the permit (if any) goes back here, under the lock, as a shrink's
        // count of free permits expects.
    }
}

/// A request in the queue: counted out when it gets its place or goes away.
struct Waiting<'a>(&'a Gate);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.lock().queued -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block_on<T>(future: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(future)
    }

    /// Whether `gate` gives a place within a few milliseconds.
    async fn enters(gate: &Arc<Gate>) -> Option<Place> {
        tokio::time::timeout(Duration::from_millis(20), gate.enter())
            .await
            .ok()
            .map(|entered| entered.expect("the queue is not full"))
    }

    #[test]
    fn the_query_sets_a_capacity_as_the_flags_do() {
        let four = Capacity::new(4);
        assert_eq!(Capacity::from_query("n=4"), Ok(Some(four)));
        assert_eq!(four.service, DEFAULT_SERVICE);
        assert_eq!(four.queue, 40);
        assert_eq!(
            Capacity::from_query("n=2&service_ms=100&queue=0"),
            Ok(Some(
                Capacity::new(2)
                    .with_service(Duration::from_millis(100))
                    .with_queue(0)
            ))
        );
        assert_eq!(Capacity::from_query("n=unlimited"), Ok(None));
        for wrong in [
            "",
            "service_ms=5",
            "n=0",
            "n=-1",
            "n=x",
            "n=4&service_ms=60001",
            "n=4&color=red",
            "n=unlimited&queue=3",
            "n=100001",
        ] {
            assert!(Capacity::from_query(wrong).is_err(), "{wrong}");
        }
        assert_eq!(four.to_json(), r#"{"n":4,"service_ms":50,"queue":40}"#);
    }

    #[test]
    fn without_a_capacity_every_request_enters_at_once() {
        let gate = Gate::new(None);
        block_on(async {
            let mut places = Vec::new();
            for _ in 0..100 {
                places.push(enters(&gate).await.expect("a place at once"));
            }
            assert!(places.iter().all(|p| p.service.is_zero()));
            assert_eq!((gate.stats().in_flight, gate.stats().queued), (100, 0));
        });
        assert_eq!(gate.stats().in_flight, 0);
    }

    #[test]
    fn the_queue_waits_for_a_place_and_refuses_beyond_its_limit() {
        let gate = Gate::new(Some(Capacity::new(2).with_queue(1)));
        block_on(async {
            let a = enters(&gate).await.expect("a free place");
            let _b = enters(&gate).await.expect("a free place");
            assert_eq!(a.service, DEFAULT_SERVICE);
            let waiter = {
                let gate = gate.clone();
                tokio::spawn(async move { gate.enter().await.is_ok() })
            };
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!((gate.stats().in_flight, gate.stats().queued), (2, 1));
            // The queue is full: refused at once.
            let refused = tokio::time::timeout(Duration::from_millis(20), gate.enter()).await;
            assert!(matches!(refused, Ok(Err(Full(_)))), "{refused:?}");
            assert_eq!(gate.stats().refused, 1);
            drop(a);
            assert!(waiter.await.unwrap());
            assert_eq!(gate.stats().queued, 0);
        });
        assert_eq!(gate.stats().in_flight, 0);
    }

    #[test]
    fn a_shrink_forgets_places_as_they_come_back_and_a_growth_repays_first() {
        let gate = Gate::new(Some(Capacity::new(2)));
        block_on(async {
            let a = enters(&gate).await.expect("a free place");
            let b = enters(&gate).await.expect("a free place");
            gate.set(Some(Capacity::new(1)));
            // a's place is forgotten: b holds the only one.
            drop(a);
            assert!(enters(&gate).await.is_none());
            drop(b);
            let c = enters(&gate).await.expect("the one place");
            assert!(enters(&gate).await.is_none());
            gate.set(Some(Capacity::new(3)));
            let _d = enters(&gate).await.expect("a new place");
            let _e = enters(&gate).await.expect("a new place");
            assert!(enters(&gate).await.is_none());
            // Shrink while all three are held, grow by one: that repays the debt.
            gate.set(Some(Capacity::new(1)));
            gate.set(Some(Capacity::new(2)));
            drop(c);
            assert!(enters(&gate).await.is_none(), "d and e hold both places");
        });
        assert_eq!(gate.stats().in_flight, 0);
        // Given back, the two places are free again, and no more.
        block_on(async {
            let _f = enters(&gate).await.expect("a free place");
            let _g = enters(&gate).await.expect("a free place");
            assert!(enters(&gate).await.is_none());
        });
    }

    #[test]
    fn an_unlimited_origin_lets_its_queue_through() {
        let gate = Gate::new(Some(Capacity::new(1)));
        block_on(async {
            let _a = enters(&gate).await.expect("a free place");
            let waiter = {
                let gate = gate.clone();
                tokio::spawn(async move { gate.enter().await.map(|p| p.service) })
            };
            tokio::time::sleep(Duration::from_millis(10)).await;
            assert_eq!(gate.stats().queued, 1);
            gate.set(None);
            assert_eq!(waiter.await.unwrap().unwrap(), Duration::ZERO);
            // And limited again: fresh places, as many as the capacity.
            gate.set(Some(Capacity::new(1)));
            let _b = enters(&gate).await.expect("a fresh place");
            assert!(enters(&gate).await.is_none());
        });
    }
}
