//! The control thread: one writer for the rooms of a service. It holds one
//! controller per room ([`Room`], each with its own rule: the percentage
//! [`control::percentage_rule::Controller`], or in FIFO mode the [`control::fifo_rule::FifoController`],
//! and its own target and state), routes every record to its room by its `room=`
//! field (none: the service room), ticks the rooms together on the wall clock,
//! sends every room's write of a tick in one update through the one sink, paced
//! by the API budget ([`Pacer`]), and answers state requests.

use std::collections::{HashMap, VecDeque};
use std::io::Write as _;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use control::fifo_rule::FifoController;
use control::frame::{Frame, Policy};
use control::percentage_rule::Controller;
use control::record::Record;
use control::store_write::StoreWrite as _;
use waiting_room::settings::config::QueueingMethod;
use waiting_room::settings::room::RoomName;

use crate::alerts::{self, Counts, Figures, OriginFigures, RoomFigures};
use crate::budget::Pacer;
use crate::cli::ControlArgs;
use crate::clock::{rfc3339, unix_now};
use crate::ingest::Msg;
use crate::notify::{Notifier, Transitions};
use crate::sink::Sink;
use crate::state::{BadCounts, Info, SERIES_SECONDS, View, Views};

/// How far past a whole second of the wall clock a tick fires.
pub const TICK_PHASE: Duration = Duration::from_millis(100);

/// The time from now until [`TICK_PHASE`] past the wall clock's Unix second
/// `second`, at most `every` seconds and a second (a wall clock set back must
/// not stop the ticks).
fn until(second: u64, every: u64) -> Duration {
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let at = i128::from(second) * 1_000_000_000 + TICK_PHASE.as_nanos() as i128;
    Duration::from_nanos(u64::try_from(at - now).unwrap_or(0))
        .min(Duration::from_secs(every.saturating_add(1)))
}

/// One room's controller, as the control thread drives it (any rule: see [`Room`]).
pub trait Held {
    /// The room held (`None`: the service room).
    fn room(&self) -> Option<&RoomName>;
    /// Takes in one of the room's records, read at clock time `now`.
    fn observe(&mut self, record: &Record, now: u64);
    /// A batch of lines was taken in, of which `bad` were lines of this room
    /// that could not be read.
    fn batch_seen(&mut self, bad: u64);
    /// The room's tick at clock time `now`: its items to write (keys as stored),
    /// if a write is due. Report what became of them with [`Held::finish`] or
    /// [`Held::hold`].
    fn tick(&mut self, now: u64) -> Ticked;
    /// The write of the last tick was sent (`ok`: taken) at clock time `now`;
    /// returns the line that says so, after its time (`verb`: what was done).
    fn finish(&mut self, now: u64, ok: bool, verb: &str) -> String;
    /// The heartbeat alone, written at clock time `now` when another room's
    /// write makes an update and this room has none of its own (none while it
    /// is deaf, or has a write): every room's heartbeat rides on every update.
    /// Report it as a tick's write.
    fn beat(&mut self, now: u64) -> Option<Vec<(String, String)>>;
    /// The write of the last tick was not sent (the writer's pacing): the next
    /// tick decides afresh.
    fn hold(&mut self);
    /// The room's state, with the stream's bad lines `bad`.
    fn view(&self, bad: BadCounts) -> View;
    /// The room's counters alone (no series: what the alerts count at each tick).
    fn counters(&self) -> control::snapshot::Counters;
    /// Seconds between two ticks.
    fn tick_seconds(&self) -> u64;
    /// Holds `per_minute` during each named event instead of the base target.
    fn set_event_targets(&mut self, targets: &[(String, f64)]);
    /// Holds room `room` instead (only its lines count; the keys are named as before).
    fn set_room(&mut self, room: Option<RoomName>);
    /// The origin's answer to another room's request (the origin's health is
    /// every room's behind it).
    fn other_room_origin(&mut self, record: &Record);
    /// The origin rule's ceiling, when the room's target follows the origin.
    fn origin_ceiling(&self) -> Option<f64>;
    /// Holds `share` of the origin's load at its aim.
    fn share_origin(&mut self, share: f64);
}

/// What a room's tick came to.
#[derive(Debug, Default)]
pub struct Ticked {
    /// The items to write, keys as stored.
    pub items: Option<Vec<(String, String)>>,
    /// Seconds of log silence, when the room has just stopped writing for it.
    pub went_deaf: Option<u64>,
}

/// One room's controller: its rule (a [`Frame`] of policy `P`), its options as
/// shown, its event targets, and the write its last tick decided.
pub struct Room<P: Policy> {
    controller: Frame<P>,
    info: Arc<Info>,
    /// The room held; `None`: the service room.
    room: Option<RoomName>,
    /// Whether its keys are written as `room.NAME.<key>` here (else the sink's
    /// business, as [`crate::sink::InRoom`]).
    prefix_keys: bool,
    /// Whether the controller had stopped writing for want of log lines at the last tick.
    deaf: bool,
    /// Whether the lines were said not to match the mode (said once).
    warned_mode: bool,
    /// `--event-target`: the target during each event.
    event_targets: Vec<(String, f64)>,
    /// `--target-per-minute`.
    base_target: f64,
    /// The newest line's time and event.
    newest: Option<(u64, Option<String>)>,
    /// The write the last tick decided, until sent or held.
    pending: Option<P::Write>,
}

impl<P: Policy> Room<P> {
    /// The controller of room `room` (`None`: the service room), whose keys it
    /// writes as the room's (`room.NAME.allow_percentage`, …).
    pub fn new(controller: Frame<P>, info: Info, room: Option<RoomName>) -> Room<P> {
        Room {
            base_target: info.target_per_minute,
            info: Arc::new(info),
            controller,
            room,
            prefix_keys: true,
            deaf: false,
            warned_mode: false,
            event_targets: Vec::new(),
            newest: None,
            pending: None,
        }
    }

    /// Holds `per_minute` during each named event instead of the base target.
    pub fn with_event_targets(mut self, targets: &[(String, f64)]) -> Room<P> {
        self.set_event_targets(targets);
        self
    }

    /// The items of `write`, keys as stored.
    fn keyed(&self, write: &P::Write) -> Vec<(String, String)> {
        write
            .items()
            .into_iter()
            .map(|(key, value)| match (&self.room, self.prefix_keys) {
                (Some(room), true) => (room.key(key), value),
                _ => (key.to_string(), value),
            })
            .collect()
    }

    /// Holds the target of the event the newest line names (`--event-target`), or
    /// the base target: the edge's clock decides when an event runs.
    fn follow_schedule(&mut self) {
        let event = self.newest.as_ref().and_then(|(_, e)| e.as_deref());
        let target = event
            .and_then(|e| self.event_targets.iter().find(|(name, _)| name == e))
            .map_or(self.base_target, |(_, n)| *n);
        if target != self.info.target_per_minute {
            self.controller.set_target(target);
            self.info = Arc::new(Info {
                target_per_minute: target,
                ..Info::clone(&self.info)
            });
            eprintln!(
                "wrctl: {}{}: holding {target} new sessions a minute",
                self.room
                    .as_ref()
                    .map_or(String::new(), |r| format!("room {r}, ")),
                event.map_or("no event".to_string(), |e| format!("event {e}"))
            );
        }
    }

    /// Says once, even with --quiet, when a decided line was written in the
    /// other queueing mode than the controller runs (it carries `cutoff=` only in
    /// FIFO mode): the room's `queueing_method` and `--queueing` disagree, and the
    /// controller's writes change nothing at the edge.
    fn check_mode(&mut self, record: &Record) {
        if self.warned_mode || record.decision.is_none() {
            return;
        }
        let fifo = P::QUEUEING == QueueingMethod::Fifo;
        if record.fifo != fifo {
            self.warned_mode = true;
            let (lines, flag) = if record.fifo {
                ("FIFO lines (cutoff=)", "--queueing fifo")
            } else {
                ("lottery lines (no cutoff=)", "--queueing random")
            };
            eprintln!(
                "wrctl: warning: the room{} logs {lines}: is its queueing_method what the \
                 controller holds? Run with {flag} to hold the target in that mode",
                self.room
                    .as_ref()
                    .map_or(String::new(), |r| format!(" {r}"))
            );
        }
    }
}

impl<P: Policy> Held for Room<P> {
    fn room(&self) -> Option<&RoomName> {
        self.room.as_ref()
    }

    fn observe(&mut self, record: &Record, now: u64) {
        self.controller.observe(record, now);
        self.check_mode(record);
        if self.newest.as_ref().is_none_or(|(t, _)| record.t >= *t) {
            self.newest = Some((record.t, record.event.clone()));
        }
    }

    fn batch_seen(&mut self, bad: u64) {
        self.follow_schedule();
        for _ in 0..bad {
            self.controller.bad_line();
        }
    }

    fn tick(&mut self, now: u64) -> Ticked {
        let was_deaf = self.deaf;
        self.pending = self.controller.tick(now);
        self.deaf = self.controller.deaf(now);
        let went_deaf =
            (self.deaf && !was_deaf).then(|| self.controller.log_silence().unwrap_or(0));
        let items = self.pending.as_ref().map(|write| self.keyed(write));
        Ticked { items, went_deaf }
    }

    fn beat(&mut self, now: u64) -> Option<Vec<(String, String)>> {
        if self.pending.is_some() || self.deaf {
            return None;
        }
        let write = P::heartbeat_alone(now);
        let items = self.keyed(&write);
        self.pending = Some(write);
        Some(items)
    }

    fn finish(&mut self, now: u64, ok: bool, verb: &str) -> String {
        let Some(write) = self.pending.take() else {
            return String::new();
        };
        if ok {
            self.controller.written(&write, now);
        } else {
            self.controller.failed(now);
        }
        let view = self.view(BadCounts::default());
        let minute = view.last_minute();
        let s = &view.snapshot;
        let origin = s.origin.as_ref().map_or(String::new(), |o| {
            format!(
                " | origin {} p95 {} ms errors {:.1} %",
                o.state,
                o.reading.p95_ms.map_or("-".into(), |p| p.to_string()),
                o.reading.error_share * 100.0,
            )
        });
        format!(
            "{verb} {} heartbeat={} | waiting {}, active {}, new sessions last minute {} / target {}{origin}",
            self.controller.describe(&write),
            write.heartbeat(),
            s.waiting,
            s.active,
            minute.admissions,
            view.target_per_minute(),
        )
    }

    fn hold(&mut self) {
        self.pending = None;
    }

    fn view(&self, bad: BadCounts) -> View {
        View {
            snapshot: self.controller.snapshot(SERIES_SECONDS),
            bad,
            info: Arc::clone(&self.info),
            fifo: self.controller.fifo_status(SERIES_SECONDS),
        }
    }

    fn counters(&self) -> control::snapshot::Counters {
        self.controller.snapshot(0).counters
    }

    fn tick_seconds(&self) -> u64 {
        self.controller.tick_seconds()
    }

    fn set_event_targets(&mut self, targets: &[(String, f64)]) {
        self.event_targets = targets.to_vec();
    }

    fn other_room_origin(&mut self, record: &Record) {
        if let Some(answer) = record.origin {
            self.controller.other_room_origin(record.t, answer);
        }
    }

    fn origin_ceiling(&self) -> Option<f64> {
        self.controller.origin_ceiling()
    }

    fn share_origin(&mut self, share: f64) {
        self.controller.share_origin(share);
    }

    fn set_room(&mut self, room: Option<RoomName>) {
        self.room = room;
    }
}

/// What the controller says on stderr, at start and every
/// [`UNAUTHENTICATED_WARN_EVERY`] seconds, while it takes log lines without a
/// secret on `--accept-unauthenticated-logs`.
pub const UNAUTHENTICATED_LOGS: &str = "log lines are taken from anyone who can reach \
--listen (--accept-unauthenticated-logs, no WRCTL_LOG_SECRET): forged lines steer the \
controller; set WRCTL_LOG_SECRET and the log endpoint's Authorization header";

/// Seconds between two warnings of [`UNAUTHENTICATED_LOGS`].
pub const UNAUTHENTICATED_WARN_EVERY: u64 = 60;

/// The control thread's state: the rooms, the one sink and its pacer.
pub struct Control {
    rooms: Vec<Box<dyn Held>>,
    /// Where each named room is in `rooms`.
    named: HashMap<String, usize>,
    /// Where the service room is, if held.
    service: Option<usize>,
    sink: Box<dyn Sink>,
    pacer: Pacer,
    bad: BadCounts,
    /// Room lines of rooms not held here.
    other_room_lines: u64,
    quiet: bool,
    /// On `--accept-unauthenticated-logs` (log POSTs taken without a secret):
    /// when the warning was last said.
    unauthenticated_logs: Option<u64>,
    /// Clock time the controller started.
    started: u64,
    /// The counts the alerts read, taken at each tick over the last
    /// [`alerts::WINDOW_SECONDS`] (and at the start).
    samples: VecDeque<(u64, Counts)>,
    /// With `WRCTL_WEBHOOK_URL`: the notifier, and the alerts last said to it.
    notifier: Option<(Notifier, Transitions)>,
}

impl Control {
    /// A control thread's state for one room held by `controller` (either
    /// rule), writing to `sink`: the service room's lines unless
    /// [`Control::in_room`], its keys as they are (a named room's are the
    /// sink's business: [`crate::sink::InRoom`]), and no budget unless
    /// [`Control::with_pacer`].
    pub fn new<P: Policy + 'static>(
        controller: Frame<P>,
        sink: Box<dyn Sink>,
        info: Info,
        quiet: bool,
    ) -> Control {
        let mut room = Room::new(controller, info, None);
        room.prefix_keys = false;
        Control::of_rooms(vec![Box::new(room)], sink, quiet)
    }

    /// A control thread's state for `rooms` (each a [`Room`], one per room:
    /// a second controller of the same room is dropped; at least one), all
    /// writing through `sink`, with no budget unless [`Control::with_pacer`].
    pub fn of_rooms(rooms: Vec<Box<dyn Held>>, sink: Box<dyn Sink>, quiet: bool) -> Control {
        let mut control = Control {
            rooms: Vec::new(),
            named: HashMap::new(),
            service: None,
            sink,
            pacer: Pacer::unlimited(),
            bad: BadCounts::default(),
            other_room_lines: 0,
            quiet,
            unauthenticated_logs: None,
            started: unix_now(),
            samples: VecDeque::new(),
            notifier: None,
        };
        control
            .samples
            .push_back((control.started, Counts::default()));
        assert!(
            !rooms.is_empty(),
            "a control thread holds at least one room"
        );
        for room in rooms {
            if control.rooms.iter().all(|r| r.room() != room.room()) {
                control.rooms.push(room);
            }
        }
        control.index();
        control.share_origin();
        control
    }

    /// Rooms whose targets follow the origin share its load at the aim in
    /// proportion to their ceilings.
    fn share_origin(&mut self) {
        let total: f64 = self.rooms.iter().filter_map(|r| r.origin_ceiling()).sum();
        for room in &mut self.rooms {
            if let Some(ceiling) = room.origin_ceiling() {
                room.share_origin(ceiling / total);
            }
        }
    }

    fn index(&mut self) {
        self.named.clear();
        self.service = None;
        for (i, room) in self.rooms.iter().enumerate() {
            match room.room() {
                Some(name) => {
                    self.named.insert(name.to_string(), i);
                }
                None => self.service = Some(i),
            }
        }
    }

    /// Started at clock time `t` (a replay's clock: the log's first second).
    pub fn start_at(&mut self, t: u64) {
        self.started = t;
        self.samples.clear();
        self.samples.push_back((t, Counts::default()));
    }

    /// Paces the updates with `pacer` (the Fastly API's budget).
    pub fn with_pacer(mut self, pacer: Pacer) -> Control {
        self.pacer = pacer;
        self
    }

    /// Takes log lines without a secret (`--accept-unauthenticated-logs`, when
    /// `on`): says so every [`UNAUTHENTICATED_WARN_EVERY`] seconds and raises
    /// the alert `unauthenticated-logs`.
    pub fn with_unauthenticated_logs(mut self, on: bool) -> Control {
        self.unauthenticated_logs = on.then_some(unix_now());
        self
    }

    /// Posts every transition of the alerts to `notifier` (`WRCTL_WEBHOOK_URL`),
    /// evaluated at each tick after its write.
    pub fn with_notifier(mut self, notifier: Notifier) -> Control {
        self.notifier = Some((notifier, Transitions::default()));
        self
    }

    /// Holds `per_minute` during each named event instead of the base target
    /// (of the first room).
    pub fn with_event_targets(mut self, targets: &[(String, f64)]) -> Control {
        self.rooms[0].set_event_targets(targets);
        self
    }

    /// Holds the named room `room` (`None`: the service room) with the first
    /// room's controller: only its lines count.
    pub fn in_room(mut self, room: Option<&RoomName>) -> Control {
        self.rooms[0].set_room(room.cloned());
        self.index();
        self
    }

    /// Runs until every sender of `rx` is gone (stdin ended and no listener), then
    /// ticks a last time and returns. Each tick fires [`TICK_PHASE`] past a whole
    /// second of the wall clock, so that the ticks' clock times (whole seconds)
    /// are exactly `--tick` apart however late the thread wakes (under 0.9 s):
    /// the rules' and the pacer's spacing then never see a tick a second short.
    pub fn run(mut self, rx: Receiver<Msg>) {
        let every = self.rooms.iter().map(|r| r.tick_seconds()).min();
        let every = every.unwrap_or(10).max(1);
        let mut second = unix_now() + every;
        let mut next_tick = Instant::now() + until(second, every);
        loop {
            let wait = next_tick.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(msg) => self.handle(msg),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.tick(unix_now());
                    return;
                }
            }
            if Instant::now() >= next_tick {
                let now = unix_now();
                self.tick(now);
                second += every;
                if second <= now {
                    // Fell behind (a slow write): the next tick is one interval away.
                    second = now + every;
                }
                next_tick = Instant::now() + until(second, every);
            }
        }
    }

    /// The room a record of `room` (its `room=` field) belongs to, if held here.
    fn route(&self, room: Option<&str>) -> Option<usize> {
        match room {
            Some(name) => self.named.get(name).copied(),
            None => self.service,
        }
    }

    /// Takes in one message.
    pub fn handle(&mut self, msg: Msg) {
        self.handle_at(msg, unix_now());
    }

    /// Takes in one message at clock time `now` (the tests' clock).
    pub fn handle_at(&mut self, msg: Msg, now: u64) {
        match msg {
            Msg::Batch(batch) => {
                for record in &batch.records {
                    // Another room's line is none of these controllers' business,
                    // but what the origin answered it: the origin is theirs too.
                    let held = self.route(record.room.as_deref());
                    match held {
                        Some(i) => self.rooms[i].observe(record, now),
                        None => self.other_room_lines += 1,
                    }
                    if record.origin.is_some() {
                        for (i, room) in self.rooms.iter_mut().enumerate() {
                            if held != Some(i) {
                                room.other_room_origin(record);
                            }
                        }
                    }
                }
                // A bad line counts for the room it names, if it can be read.
                let mut bad = vec![0; self.rooms.len()];
                for room in &batch.bad_rooms {
                    if let Some(i) = self.route(room.as_deref()) {
                        bad[i] += 1;
                    }
                }
                for (room, bad) in self.rooms.iter_mut().zip(bad) {
                    room.batch_seen(bad);
                }
                self.bad.merge(&batch.bad);
            }
            Msg::View(reply) => {
                let _ = reply.try_send(self.views_at(now));
            }
        }
    }

    /// The first room's state as the listener shows it.
    pub fn view(&self) -> View {
        self.rooms[0].view(self.bad)
    }

    /// Every room's state and the writer's, as the listener shows them.
    pub fn views(&self) -> Views {
        self.views_at(unix_now())
    }

    /// Every room's state and the writer's at clock time `now`, with the
    /// alerts the controller raises ([`alerts::ALERTS`]).
    pub fn views_at(&self, now: u64) -> Views {
        let rooms: Vec<View> = self.rooms.iter().map(|r| r.view(self.bad)).collect();
        let writer = self.pacer.status(now);
        let alerts = alerts::evaluate(&self.figures(now, &rooms, &writer));
        Views {
            rooms,
            writer: Arc::new(writer),
            api: self.sink.budgeted(),
            other_room_lines: self.other_room_lines,
            alerts,
            webhook: self.notifier.as_ref().map(|(n, _)| n.counters()),
        }
    }

    /// The counts the alerts read, now: every room's, the stream's and the writer's.
    fn counts(&self) -> Counts {
        let mut counts = Counts {
            bad_lines: self.bad.missing_field + self.bad.unreadable_field,
            throttled: self.pacer.counters().throttled,
            ..Counts::default()
        };
        for room in &self.rooms {
            let c = room.counters();
            counts.lines += c.lines;
            counts.unreadable_lines += c.unreadable_lines;
            counts.writes += c.writes;
            counts.write_failures += c.write_failures;
        }
        counts
    }

    /// What the alerts read at clock time `now`, from the rooms' `views` and
    /// the `writer`'s state.
    fn figures(&self, now: u64, views: &[View], writer: &crate::budget::Status) -> Figures {
        let since = now.saturating_sub(alerts::WINDOW_SECONDS);
        let earlier = self
            .samples
            .iter()
            .find(|(t, _)| *t >= since)
            .or(self.samples.back())
            .map(|(_, c)| *c)
            .unwrap_or_default();
        let rooms = views
            .iter()
            .map(|v| RoomFigures {
                last_write: v.snapshot.last_write,
                admissions_last_minute: v.last_minute().admissions,
                target_per_minute: v.target_per_minute(),
                waiting: v.snapshot.waiting,
                origin: v.snapshot.origin.as_ref().map(|o| OriginFigures {
                    slow: o.state == control::origin_rule::State::OriginSlow,
                    p95_ms: o.reading.p95_ms,
                    p95_bound_ms: o.healthy.p95_ms,
                    error_share: o.reading.error_share,
                    error_bound: o.healthy.error_share,
                }),
            })
            .collect();
        Figures {
            now,
            up_seconds: now.saturating_sub(self.started),
            rooms,
            recent: self.counts().since(&earlier),
            rate_limit_remaining: writer.remaining,
            unauthenticated_logs: self.unauthenticated_logs.is_some(),
        }
    }

    /// Takes the counts of clock time `now` for the alerts' window.
    fn sample(&mut self, now: u64) {
        let counts = self.counts();
        self.samples.push_back((now, counts));
        // Keep the newest sample at or before the window's start: the counts
        // since then cover the whole window.
        let since = now.saturating_sub(alerts::WINDOW_SECONDS);
        while self.samples.len() > 1 && self.samples[1].0 <= since {
            self.samples.pop_front();
        }
    }

    /// The writer's state at clock time `now`.
    pub fn writer(&self, now: u64) -> crate::budget::Status {
        self.pacer.status(now)
    }

    /// One tick at clock time `now`: every room decides; what they have to write
    /// goes in one update, when the pacer lets it; each room is told the outcome.
    /// Then, with a notifier, the alerts' transitions are queued for it (never
    /// waited on).
    pub fn tick(&mut self, now: u64) {
        self.tick_rooms(now);
        self.notify(now);
    }

    /// Queues the alerts' transitions since the last tick for the notifier.
    fn notify(&mut self, now: u64) {
        if self.notifier.is_none() {
            return;
        }
        let views: Vec<View> = self.rooms.iter().map(|r| r.view(self.bad)).collect();
        let writer = self.pacer.status(now);
        let figures = self.figures(now, &views, &writer);
        let names: Vec<Option<String>> = self
            .rooms
            .iter()
            .map(|r| r.room().map(ToString::to_string))
            .collect();
        if let Some((notifier, transitions)) = &mut self.notifier {
            for transition in transitions.update(&figures, &names) {
                notifier.notify(transition);
            }
        }
    }

    fn tick_rooms(&mut self, now: u64) {
        let several = self.rooms.len() > 1;
        let tag = |room: Option<&RoomName>| match (several, room) {
            (false, _) => String::new(),
            (true, Some(r)) => format!("[{r}] "),
            (true, None) => "[service room] ".into(),
        };
        self.sample(now);
        if let Some(said) = self.unauthenticated_logs
            && now >= said + UNAUTHENTICATED_WARN_EVERY
        {
            // Said even with --quiet.
            eprintln!("{} warning: {UNAUTHENTICATED_LOGS}", rfc3339(now));
            self.unauthenticated_logs = Some(now);
        }
        let mut items = vec![None; self.rooms.len()];
        for (i, room) in self.rooms.iter_mut().enumerate() {
            let ticked = room.tick(now);
            if let Some(silence) = ticked.went_deaf {
                // Said even with --quiet: the edge will fall back.
                eprintln!(
                    "{} {}no log line for {silence} s: writing nothing (heartbeat included) \
                     until lines come",
                    rfc3339(now),
                    tag(room.room())
                );
            }
            items[i] = ticked.items;
        }
        if items.iter().all(Option::is_none) {
            return;
        }
        if !self.pacer.may_send(now) {
            self.pacer.held();
            for room in &mut self.rooms {
                room.hold();
            }
            return;
        }
        // Every other room's heartbeat rides on the update: one update keeps
        // them all fresh, and they fall due together rather than one by one.
        for (room, items) in self.rooms.iter_mut().zip(items.iter_mut()) {
            if items.is_none() {
                *items = room.beat(now);
            }
        }
        let writing: Vec<usize> = (0..items.len()).filter(|&i| items[i].is_some()).collect();
        let items: Vec<(String, String)> = items.into_iter().flatten().flatten().collect();
        let result = self.sink.write_items(&items);
        let note = self.pacer.sent(now, result.is_ok(), self.sink.answer());
        if let Err(error) = &result {
            // Failures are reported even with --quiet.
            eprintln!("{} write failed: {error}", rfc3339(now));
        }
        if let Some(note) = note {
            eprintln!("{} {note}", rfc3339(now));
        }
        let verb = match (&result, self.sink.is_dry_run()) {
            (Err(_), _) => "not written",
            (Ok(()), true) => "would write",
            (Ok(()), false) => "wrote",
        };
        let mut err = std::io::stderr().lock();
        for i in writing {
            let line = self.rooms[i].finish(now, result.is_ok(), verb);
            if !self.quiet {
                let _ = writeln!(err, "{} {}{line}", rfc3339(now), tag(self.rooms[i].room()));
            }
        }
    }
}

/// A room's rule, chosen once per room.
pub enum Chosen {
    /// The percentage.
    Percentage(Controller),
    /// The FIFO cutoff.
    Fifo(FifoController),
}

/// Each room `args` holds (the service room's, or each `--room`'s), with its
/// own options and its rule; the usage error otherwise (naming the room when
/// there are several).
pub fn choose(args: &ControlArgs) -> Result<Vec<(Option<RoomName>, ControlArgs, Chosen)>, String> {
    if args.target_per_minute.is_none() && args.room.is_empty() {
        return Err(args.target().unwrap_err());
    }
    let rooms = args.rooms()?;
    let mut chosen = Vec::with_capacity(rooms.len());
    for (name, room_args) in rooms {
        let named = |e: String| match &name {
            Some(room) if args.room.len() > 1 || args.service_room => format!("--room {room}: {e}"),
            _ => e,
        };
        let origin = room_args.origin().map_err(named)?;
        let rule = if room_args.fifo() {
            let options = room_args.fifo_options().map_err(named)?;
            let rule = FifoController::new(options)
                .and_then(|rule| match origin {
                    Some(origin) => rule.following_origin(origin),
                    None => Ok(rule),
                })
                .map_err(|e| named(e.to_string()))?;
            Chosen::Fifo(rule)
        } else {
            let options = room_args.options().map_err(named)?;
            let rule = Controller::new(options)
                .and_then(|rule| match origin {
                    Some(origin) => rule.following_origin(origin),
                    None => Ok(rule),
                })
                .map_err(|e| named(e.to_string()))?;
            Chosen::Percentage(rule)
        };
        chosen.push((name, room_args, rule));
    }
    Ok(chosen)
}

/// The rooms [`choose`] chose, as the control thread holds them: `described`
/// says where the writes go, `dry_run` whether anywhere.
pub fn held(
    rooms: Vec<(Option<RoomName>, ControlArgs, Chosen)>,
    args: &ControlArgs,
    described: &str,
    dry_run: bool,
) -> Vec<Box<dyn Held>> {
    rooms
        .into_iter()
        .map(|(room, room_args, rule)| {
            let info = Info {
                target_per_minute: room_args.target_per_minute.unwrap_or_default(),
                max_active: room_args.max_active,
                min: room_args.min,
                max: room_args.max,
                dry_run,
                sink: described.to_string(),
                room: room.as_ref().map(ToString::to_string),
                room_dashboards: args.room_dashboard.clone(),
            };
            let targets = room_args.event_target.clone();
            match rule {
                Chosen::Percentage(rule) => {
                    Box::new(Room::new(rule, info, room).with_event_targets(&targets))
                        as Box<dyn Held>
                }
                Chosen::Fifo(rule) => {
                    Box::new(Room::new(rule, info, room).with_event_targets(&targets))
                }
            }
        })
        .collect()
}
