//! The percentage rule, for a room that draws lots (`queueing_method = random`):
//! it holds its forecasts of the draws still to check, the trim (draws seen over
//! draws predicted) and the percentages written over the last draw period; it
//! reads the frame's per-second counts and the tokens' calendar of when each
//! waiting address draws; each tick it writes the `allow_percentage` that lets
//! the target's share of new sessions in over the tick the write governs,
//! `p = A / (yield × trim × draws predicted)`, within its bounds. The derivation,
//! the words and what was tried: `docs/research/controller-rules.md`, the
//! percentage rule.

use std::collections::VecDeque;

use crate::frame::{Frame, Policy};
use crate::options::{BadOptions, HEARTBEAT_KEY, Options, PERCENTAGE_KEY};
use crate::record::Record;
use crate::schedule::Timing;
use crate::store_write::StoreWrite;
use crate::tokens::Tokens;
use waiting_room::admission::decision::Decision;
use waiting_room::admission::grid::address_expiry;
use waiting_room::settings::config::{Heartbeat, QueueingMethod, Settings};
use waiting_room::settings::percentage::Percentage;

/// The most a written percentage rises over one draw period: twice the
/// lowest value written or in effect within it.
pub const MAX_RISE_PER_DRAW_PERIOD: f64 = 2.0;
/// The least relative change of the percentage that is written: below it, the
/// forecast's noise (a few per cent from tick to tick) would dither the
/// percentage up and down.
pub const LEAST_CHANGE: f64 = 0.03;
/// Of percentages written (time, value), oldest first, the largest write over
/// the lowest written within `period` before it (and the last one before that
/// period): what [`MAX_RISE_PER_DRAW_PERIOD`] bounds, for the simulator's
/// report and the tests to check. `None` before a second write. Times and
/// `period` in the same unit.
pub fn largest_rise(written: &[(u64, f64)], period: u64) -> Option<f64> {
    (1..written.len())
        .map(|i| {
            let (at, p) = written[i];
            let first = written[..i]
                .iter()
                .rposition(|&(t, _)| t + period <= at)
                .unwrap_or(0);
            let lowest = written[first..i]
                .iter()
                .fold(f64::INFINITY, |a, &(_, b)| a.min(b));
            p / lowest
        })
        .reduce(f64::max)
}

/// One write to the config store: the heartbeat, and the percentage when it changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PercentageWrite {
    /// The new `allow_percentage`, when it changed.
    pub allow_percentage: Option<Percentage>,
    /// `controller_heartbeat`: Unix seconds of this write.
    pub heartbeat: u64,
}

impl StoreWrite for PercentageWrite {
    fn items(&self) -> Vec<(&'static str, String)> {
        let mut items = Vec::with_capacity(2);
        if let Some(p) = self.allow_percentage {
            items.push((PERCENTAGE_KEY, p.to_string()));
        }
        items.push((HEARTBEAT_KEY, self.heartbeat.to_string()));
        items
    }

    fn heartbeat(&self) -> u64 {
        self.heartbeat
    }

    fn moved(&self) -> Option<u64> {
        self.allow_percentage.map(|p| u64::from(p.micros()))
    }

    fn land(&self, settings: &mut Settings) {
        if let Some(p) = self.allow_percentage {
            settings.allow_percentage = p;
        }
        settings.controller_heartbeat = Heartbeat::At(self.heartbeat);
    }
}

/// The percentage controller: the frame, deciding `allow_percentage`.
pub type Controller = Frame<PercentagePolicy>;

/// What the percentage rule keeps of its own (the frame keeps the rest).
#[derive(Debug, Clone, Default)]
pub struct PercentagePolicy {
    /// Log times of the newest wait token handed out on the address's own
    /// grid for the wait period the controller was given, and of the newest
    /// handed out off it (another grid, or another wait period).
    on_grid: Option<u64>,
    off_grid: Option<u64>,
    /// The log's lag: how late the newest line came (the clock when it was
    /// read, less its time).
    lag: u64,
    /// Predictions not yet checked (before the trim).
    predictions: VecDeque<Prediction>,
    /// The feedback on the forecast: draws seen over draws predicted.
    trim: Trim,
    /// Whether the last decision found the draws late (see
    /// [`Controller::drawn_on_time`]).
    late: bool,
    /// Percentages written, by clock time, over the last draw period.
    recent_writes: VecDeque<(u64, Percentage)>,
}

/// A prediction of the draws of the tokens ending in the log seconds `from..to`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Prediction {
    /// The newest log second when it was made.
    made: u64,
    from: u64,
    to: u64,
    /// Draws predicted, of which the first draws of arrivals still to come.
    draws: f64,
    arrivals: f64,
    /// Seconds from an arrival's first token's end to its draw.
    lag: u64,
}

/// When a waiting token is drawn, for the calendar.
#[derive(Debug, Clone, Copy)]
enum Drawn {
    /// A second after its end: pages come back when their token ends.
    AtEnd,
    /// At its pages' first load after its end on their fixed beat
    /// ([`Tokens::on_beat`]); on average `lag` seconds after its end.
    OnBeat { lag: u64 },
}

/// The feedback on a forecast: draws seen over draws predicted.
#[derive(Debug, Clone)]
struct Trim {
    /// The median of `ratios`, within [`TRIM_RANGE`].
    value: f64,
    /// The ratios of draws seen to draws predicted, newest last, over the
    /// last [`TRIM_PERIODS`] draw periods of checks.
    ratios: VecDeque<f64>,
}

impl Default for Trim {
    fn default() -> Trim {
        Trim {
            value: 1.0,
            ratios: VecDeque::new(),
        }
    }
}

impl Trim {
    /// Takes in one checked ratio, keeping the newest `kept`.
    fn learn(&mut self, ratio: f64, kept: usize) {
        self.ratios.push_back(ratio);
        while self.ratios.len() > kept {
            self.ratios.pop_front();
        }
        let mut sorted: Vec<f64> = self.ratios.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        self.value = sorted[sorted.len() / 2].clamp(TRIM_RANGE.0, TRIM_RANGE.1);
    }
}

/// Draw periods of checked predictions the trim is the median of.
const TRIM_PERIODS: u64 = 3;
/// Bounds of the trim.
const TRIM_RANGE: (f64, f64) = (0.25, 4.0);
/// Bounds of the yield.
const YIELD_RANGE: (f64, f64) = (0.5, 8.0);
/// Chances (and new sessions) assumed before any are seen, so that the first
/// few draws cannot swing the yield.
const YIELD_PRIOR: f64 = 10.0;
/// Draw periods the yield is measured over.
const YIELD_PERIODS: u64 = 4;
/// Predictions of fewer draws than this are too noisy to move the trim.
const LEAST_CHECKED_DRAWS: f64 = 5.0;
/// The calendar is trusted while draws come, on average, less than this share
/// of a wait period after their tokens end: prompt pages draw a second after
/// it, pages on the VCL's fixed beat half a wait period after it.
const LATE_DRAW_SHARE: f64 = 0.25;

impl Policy for PercentagePolicy {
    type Options = Options;
    type Value = Percentage;
    type Write = PercentageWrite;
    const QUEUEING: QueueingMethod = QueueingMethod::Random;

    fn start(options: &Options) -> Result<(Self, Timing, Tokens), BadOptions> {
        options.check()?;
        let policy = PercentagePolicy::default();
        let tokens = Tokens::new(
            options.capacity,
            options.redeem_window(),
            options.wait_period,
        );
        Ok((policy, options.timing(), tokens))
    }

    fn target(options: &mut Options) -> &mut f64 {
        &mut options.target_per_minute
    }

    fn waiting(c: &Controller) -> (u64, u64) {
        (c.tokens.waiting.len(), c.tokens.waiting.overflow)
    }

    fn observe(c: &mut Controller, record: &Record, now: u64) {
        if let Some(p) = record.percentage {
            c.schedule
                .measure_propagation(record.t, |written| written == p);
        }
        if c.intake.newest() == Some(record.t) {
            c.policy.lag = now.saturating_sub(record.t);
        }
        c.note_grid(record);
    }

    /// Forgets writes older than a draw period (keeping the last one before it).
    fn close_second(c: &mut Controller, _: u64, now: u64) {
        let horizon = now.saturating_sub(c.options.draw_period());
        let writes = &mut c.policy.recent_writes;
        while writes.len() > 1 && writes.get(1).is_some_and(|&(at, _)| at <= horizon) {
            writes.pop_front();
        }
    }

    fn decide(c: &mut Controller, _: u64) {
        c.note_lateness();
        c.check_predictions();
        let computed = c.percentage();
        if c.knows_the_crowd() {
            c.predict();
        }
        c.wanted = computed.or(c.wanted).or(c.options.start);
    }

    /// None when the percentage has not changed (enough: [`LEAST_CHANGE`]) and
    /// the heartbeat is not yet due.
    fn write(c: &Controller, now: u64) -> Option<PercentageWrite> {
        // One write a tick at most, however often the caller ticks.
        if !c.schedule.a_tick_on(now) {
            return None;
        }
        let changed = c.schedule.changed(c.wanted).filter(|&p| c.worth_writing(p));
        (changed.is_some() || c.schedule.heartbeat_due(now)).then_some(PercentageWrite {
            allow_percentage: changed,
            heartbeat: now,
        })
    }

    fn heartbeat_alone(now: u64) -> PercentageWrite {
        PercentageWrite {
            allow_percentage: None,
            heartbeat: now,
        }
    }

    fn written(c: &mut Controller, write: &PercentageWrite, now: u64) {
        c.schedule.succeeded(write.allow_percentage, now);
        if let Some(p) = write.allow_percentage {
            c.policy.recent_writes.push_back((now, p));
        }
    }

    fn shown(p: Percentage) -> Option<Percentage> {
        Some(p)
    }

    fn describe(c: &Controller, write: &PercentageWrite) -> String {
        match write.allow_percentage {
            Some(p) => format!("allow_percentage={p}"),
            None => format!(
                "allow_percentage unchanged ({})",
                c.schedule
                    .written()
                    .map_or("none".into(), |p| p.to_string())
            ),
        }
    }
}

impl Controller {
    /// Whether `p` differs enough from the percentage written to be worth a
    /// write: by [`LEAST_CHANGE`] of it, or it is a bound. Smaller changes are
    /// noise in the forecast (a draw period's lumps of tokens), and writing
    /// them would only dither the percentage up and down from tick to tick.
    fn worth_writing(&self, p: Percentage) -> bool {
        let Some(written) = self.schedule.written() else {
            return true;
        };
        p == self.options.min
            || p == self.options.max
            || (p.fraction() / written.fraction() - 1.0).abs() >= LEAST_CHANGE
    }

    /// The percentage that holds the target, from what the log has shown
    /// (`None`: no draws are expected, nothing to say).
    pub fn percentage(&self) -> Option<Percentage> {
        let newest = self.intake.newest()?;
        let period = self.options.draw_period();
        let series = self.intake.series();
        let since = (newest + 1).saturating_sub(period);
        let in_effect = self.in_effect(newest);
        let tick = self.options.tick.max(1);
        let share = tick as f64 / period as f64;
        let forecast = self.forecast()?;
        // Draws a tick at the rate forecast.
        let mut expected = forecast.draws * tick as f64 / (forecast.to - forecast.from) as f64
            * self.policy.trim.value;
        let open = in_effect.is_some_and(|p| p >= Percentage::HUNDRED)
            && series
                .range(since, newest)
                .filter(|(_, s)| s.percentage_micros == Some(Percentage::HUNDRED.micros()))
                .count() as u64
                * 2
                > period;
        let drawless = series.sum(since, newest + 1, |s| s.admissions - s.drawn_admissions);
        if open {
            expected = expected.max(drawless as f64 * share);
        }
        let expected = expected * self.yield_per_chance();
        if expected < 1.0 {
            return None;
        }
        let p = Percentage::from_fraction(self.allowed() * share / expected);
        // A room at 100 % draws nobody: it lets every waiting visitor in at
        // their next page, drawn or not, and tolls nobody. So the percentage
        // stays under 100 while the bot toll holds draws (bots that skip it
        // would walk in), and while opening would let in more than the target
        // (under 100 % they come in as their tokens are drawn, over a draw
        // period): on prompt pages, while more wait than the target lets in
        // over a wait period; on the fixed beat, as soon as they would come.
        let tolling = series.sum(since, newest + 1, |s| s.toll_held) > 0;
        let flood = if self.drawn_on_time(newest) {
            let wait_share = self.options.wait_period as f64 / period as f64;
            self.tokens.waiting.len() as f64 * self.yield_per_chance() > self.allowed() * wait_share
        } else {
            self.opening_floods(newest)
        };
        let max = if tolling || flood {
            let under = Percentage::from_micros(Percentage::HUNDRED.micros() - 1);
            self.options.max.min(under)
        } else {
            self.options.max
        };
        let p = p
            .min(self.rise_cap(in_effect))
            .clamp(self.options.min.min(max), max);
        if self.whole_period() {
            return Some(p);
        }
        // Before a whole period: only lower than what is in effect and written.
        let lowest = match (in_effect, self.schedule.written()) {
            (Some(e), Some(w)) => e.min(w),
            (Some(e), None) => e,
            (None, w) => w?,
        };
        (p < lowest).then_some(p)
    }

    /// On pages that draw late (the fixed beat): whether a write of 100 % made
    /// now would let more in than the target, over the first `x` seconds
    /// after it lands, for some `x` up to a wait period. Each address still
    /// waiting then comes in at its next page, and as many load a page in any
    /// `x` seconds as loaded one in the last `x` ([`Tokens::paged`]): a crowd
    /// with many tabs comes in within seconds. Until the write lands, the
    /// draws take at most the target's share.
    fn opening_floods(&self, newest: u64) -> bool {
        let d = self.options.wait_period.max(1);
        let tick = self.options.tick.clamp(1, d);
        let per_second = self.allowed() / self.options.draw_period() as f64;
        let loaded = |x: u64| {
            let from = (newest + 1 + d).saturating_sub(x);
            self.tokens.paged.ending_within(from, newest + 1 + d) as f64
        };
        let all = loaded(d);
        if all < 1.0 {
            return false;
        }
        let landing = per_second * self.landing_after() as f64;
        let left = (all * self.yield_per_chance() - landing).max(0.0);
        (1..=d.div_ceil(tick))
            .map(|k| (k * tick).min(d))
            .any(|x| left * loaded(x) / all > per_second * x as f64)
    }

    /// Whether the log holds a whole draw period since its first record: every
    /// waiting address has drawn in it, so the calendar holds every token.
    fn whole_period(&self) -> bool {
        match (self.intake.newest(), self.intake.first_record()) {
            (Some(newest), Some(first)) => {
                newest + 1 >= first.saturating_add(self.options.draw_period())
            }
            _ => false,
        }
    }

    /// Whether the calendar holds every waiting token: after a whole draw
    /// period of log, or before it while every token the log showed was handed
    /// out in it (a controller started with its room, not in the middle of a
    /// crowd). Only then is a forecast kept to teach the trim: a calendar that
    /// misses the tokens of a crowd already waiting would teach it a shortfall
    /// that ends with the period.
    fn knows_the_crowd(&self) -> bool {
        self.whole_period() || !self.intake.stranger_seen()
    }

    /// The draws expected once a write made now lands: on the address grid,
    /// in the tick it governs, from the calendar, which knows them: each token
    /// drawn at its end, or, when the draws there come late (pages on the
    /// fixed beat), at the first of its pages' loads after its end. Past the
    /// calendar's horizon, the draw period's average: for late draws the
    /// busier of the draw period centred on the tick (a crowd draining counts
    /// as it stands at the tick) and the one after it (a lump of draws to come
    /// is prepared for: a percentage too low for a tick costs less than one
    /// too high), each token drawn the draws' mean lag after its end; on the
    /// global grid, the draw period after the tick, as a crowd that arrived
    /// together there draws in every other wait period. `None` before any
    /// record.
    fn forecast(&self) -> Option<Prediction> {
        let newest = self.intake.newest()?;
        let lands = newest + self.landing_after();
        if !self.address_grid(newest) {
            return Some(self.period_draws(newest, lands, 0));
        }
        if self.drawn_on_time(newest) {
            return Some(
                self.calendar_draws(Drawn::AtEnd)
                    .unwrap_or_else(|| self.period_draws(newest, lands, 0)),
            );
        }
        let lag = self.draw_lag(newest);
        if let Some(on_beat) = self.calendar_draws(Drawn::OnBeat { lag }) {
            return Some(on_beat);
        }
        let centred =
            self.period_draws(newest, lands.saturating_sub(self.options.wait_period), lag);
        let ahead = self.period_draws(newest, lands, lag);
        Some(if ahead.draws > centred.draws {
            ahead
        } else {
            centred
        })
    }

    /// Draws expected in the tick a write made now governs, from the calendar
    /// of the waiting tokens' draws (`drawn`): the tokens drawn in it, and
    /// arrivals' first tokens. Within a draw period of now the calendar holds
    /// every other token that will be drawn then (a loser's next token ends
    /// `2d` after its draw, and those draws are in the log already); further
    /// ahead it would have to guess which of the draws to come lose, and the
    /// guesses, fed back through the crowd a period later, swing: `None` there.
    fn calendar_draws(&self, drawn: Drawn) -> Option<Prediction> {
        let newest = self.intake.newest()?;
        let d = self.options.wait_period.max(1);
        let tick = self.options.tick.clamp(1, d);
        // The tick the write governs, from when it lands.
        let h = self.landing_after().saturating_sub(self.options.tick / 2);
        if h + tick > 2 * d {
            return None;
        }
        // Widened to at least a wait period, by as much on either side as the
        // calendar allows: the lumps of tokens even out, and a crowd growing or
        // draining counts as it stands at the tick. Pages on one beat draw in
        // lumps a wait period apart: their window is one wait period, centred
        // on the tick within the calendar's reach. Before the newest line, the
        // draws are the log's.
        let (lands, width) = match drawn {
            Drawn::AtEnd => {
                let half = h.max(d / 2).min(2 * d - h - tick);
                ((newest + h).saturating_sub(half), tick + 2 * half)
            }
            Drawn::OnBeat { .. } => {
                let middle = newest + h + tick / 2;
                (middle.saturating_sub(d / 2).min(newest + d), d)
            }
        };
        let future = lands.max(newest);
        // A token ending at `e` is drawn from `e + 1`.
        let (known, lag) = match drawn {
            // The crowd keeps each token until its end plus the redeem window.
            Drawn::AtEnd => {
                let redeem = self.options.redeem_window();
                let known = self.tokens.waiting.ending_within(
                    future.saturating_add(redeem),
                    (lands + width).saturating_add(redeem),
                );
                (known, 0)
            }
            Drawn::OnBeat { lag } => {
                let known = self
                    .tokens
                    .on_beat
                    .ending_within(future + 1, lands + width + 1);
                (known, lag)
            }
        };
        let past = self.intake.series().sum(lands + 1, future + 1, |s| s.draws) as f64;
        let arrivals = self.arrivals_drawing(
            (future - newest).saturating_sub(lag),
            lands + width - future,
        );
        Some(Prediction {
            made: newest,
            from: lands,
            to: lands + width,
            draws: past + known as f64 + arrivals,
            arrivals,
            lag,
        })
    }

    /// Notes whether a wait token handed out now (to a newcomer or a loser)
    /// ends where the address grid puts it for the wait period the controller
    /// was given.
    fn note_grid(&mut self, record: &Record) {
        let (Some(Decision::Anon | Decision::ReWait), Some(exp)) = (record.decision, record.exp)
        else {
            return;
        };
        let on = exp == address_expiry(record.t, &record.uid, self.options.wait_period);
        let seen = if on {
            &mut self.policy.on_grid
        } else {
            &mut self.policy.off_grid
        };
        *seen = Some(record.t);
    }

    /// Whether the calendar can be trusted: over the last two draw periods of
    /// log every wait token handed out ended on its address's grid for the
    /// controller's wait period. On the VCL's global grid, with a wait period
    /// other than the room's, or with tokens that follow no grid, the calendar
    /// would not know when losers draw again.
    fn address_grid(&self, newest: u64) -> bool {
        let recent = |t: Option<u64>| {
            t.is_some_and(|t| t.saturating_add(2 * self.options.draw_period()) >= newest)
        };
        recent(self.policy.on_grid) && !recent(self.policy.off_grid)
    }

    /// Whether the last draw period's draws came when their tokens ended: on
    /// average less than [`LATE_DRAW_SHARE`] of a wait period after. Pages
    /// that come back every wait period (`refresh_mode = fixed`) draw a token
    /// at the first visit after its end, on each visitor's own beat: a crowd
    /// that arrived together then draws in lumps the calendar does not know,
    /// and only a whole draw period's count is right.
    fn drawn_on_time(&self, newest: u64) -> bool {
        self.draw_lag(newest) as f64 <= LATE_DRAW_SHARE * self.options.wait_period as f64
    }

    /// Once the draws are found late, the trim forgets what it learnt from
    /// the calendar, which counted them at their tokens' ends: its errors are
    /// no guide to the forecast that replaces it.
    fn note_lateness(&mut self) {
        let Some(newest) = self.intake.newest() else {
            return;
        };
        let late = !self.drawn_on_time(newest);
        if late && !self.policy.late {
            self.policy.trim = Trim::default();
            self.policy.predictions.clear();
        }
        self.policy.late = late;
    }

    /// Seconds from a wait token's end to its draw, on average over the last
    /// draw period's draws (0 before any).
    fn draw_lag(&self, newest: u64) -> u64 {
        let series = self.intake.series();
        let since = (newest + 1).saturating_sub(self.options.draw_period());
        let draws = series.sum(since, newest + 1, |s| s.draws);
        let lag = series.sum(since, newest + 1, |s| s.draw_lag_seconds);
        lag.checked_div(draws).unwrap_or(0)
    }

    /// Arrivals a second: the lower of the last tick's rate and the last draw
    /// period's, so that a flash crowd that has stopped arriving is not taken
    /// to go on.
    fn arriving(&self) -> f64 {
        let Some(newest) = self.intake.newest() else {
            return 0.0;
        };
        let series = self.intake.series();
        let period = self.options.draw_period();
        let tick = self.options.tick.clamp(1, period);
        let rate = |seconds: u64| {
            series.sum((newest + 1).saturating_sub(seconds), newest + 1, |s| {
                s.arrivals
            }) as f64
                / seconds as f64
        };
        rate(tick).min(rate(period))
    }

    /// Draws expected in the draw period from `from`, before the trim, a token
    /// drawn `lag` seconds after its end.
    ///
    /// Every waiting address draws once a period. Of the period's part still
    /// to come, from `f`: the addresses waiting, less those whose token ends
    /// after the period (a first token ends one to three wait periods after its
    /// arrival), less those the percentage in effect admits before `f` (a token
    /// ending before then is drawn first; the losers come back in the period),
    /// plus the arrivals to come whose first token ends in the period. Of its
    /// part before the newest line, the draws the log showed.
    fn period_draws(&self, newest: u64, from: u64, lag: u64) -> Prediction {
        let period = self.options.draw_period();
        let redeem = self.options.redeem_window();
        let waiting = &self.tokens.waiting;
        let to = from + period;
        let f = from.max(newest);
        // The crowd keeps each token until its end plus the redeem window.
        let ending_before =
            |t: u64| waiting.ending_within(0, t.saturating_sub(lag).saturating_add(redeem)) as f64;
        let later = waiting.len() as f64 - ending_before(to);
        // Drawn before `f` (and, a period earlier, again): only past the newest line.
        let drawn_first = if f > newest {
            ending_before(f) + ending_before(f - period)
        } else {
            0.0
        };
        let in_effect = self.in_effect(newest).map_or(0.0, Percentage::fraction);
        let arrivals = self.arrivals_drawing(f - newest, to - f);
        let past = self.intake.series().sum(from + 1, f + 1, |s| s.draws) as f64;
        let future = waiting.len() as f64 - later - in_effect * drawn_first + arrivals;
        Prediction {
            made: newest,
            from,
            to,
            draws: past + future.max(0.0),
            arrivals,
            lag: 0,
        }
    }

    /// First draws expected in the `width` seconds `h` seconds on from
    /// arrivals still to come.
    fn arrivals_drawing(&self, h: u64, width: u64) -> f64 {
        self.arriving() * first_draws_within(self.options.wait_period, h, width)
    }

    /// Seconds of log time from the newest line until a write made now lands
    /// (the middle of the tick it governs): the log's lag (how late the newest
    /// line came, so that a log gone quiet does not move the estimate), the
    /// propagation delay (as measured, or expected), half a tick.
    fn landing_after(&self) -> u64 {
        self.policy.lag + self.schedule.propagation_delay() + self.options.tick / 2
    }

    /// Keeps this tick's forecast, to check it once the log has shown its window.
    fn predict(&mut self) {
        if let Some(forecast) = self.forecast() {
            self.policy.predictions.push_back(forecast);
        }
    }

    /// Checks the predictions the log has now shown: the trim is the median
    /// ratio of draws seen to draws predicted over the last [`TRIM_PERIODS`]
    /// draw periods of checks (one a tick), so that it follows a lasting
    /// difference within a period or two, and a wave that came in one period
    /// (draws nobody could predict) does not move it.
    fn check_predictions(&mut self) {
        let Some(newest) = self.intake.newest() else {
            return;
        };
        let period = self.options.draw_period();
        // A window's draws are in the log once the log is a tick past it.
        let settled = newest.saturating_sub(self.options.tick + 1);
        let kept = (TRIM_PERIODS * period / self.options.tick.max(1)).max(1) as usize;
        while let Some(prediction) = self.policy.predictions.front().copied() {
            if prediction.to > settled {
                break;
            }
            self.policy.predictions.pop_front();
            if prediction.draws < LEAST_CHECKED_DRAWS {
                continue;
            }
            let series = self.intake.series();
            // A token ending at `e` is drawn from `e + 1`.
            let seen = series.sum(prediction.from + 1, prediction.to + 1, |s| s.draws) as f64;
            // The arrivals that came instead of those foreseen: the trim learns
            // how the crowd draws, not arrivals nobody could predict.
            let d = self.options.wait_period;
            let came: f64 = series
                .range(prediction.made + 1, prediction.to)
                .map(|(a, s)| {
                    s.arrivals as f64
                        * first_draw_share(d, a + prediction.lag, prediction.from, prediction.to)
                })
                .sum();
            let predicted = prediction.draws - prediction.arrivals + came;
            if predicted < LEAST_CHECKED_DRAWS {
                continue;
            }
            self.policy.trim.learn(seen / predicted, kept);
        }
    }

    /// New sessions per chance (the sum of the percentages the draws saw) over
    /// the last [`YIELD_PERIODS`] draw periods, with a prior of
    /// [`YIELD_PRIOR`] chances that each made one.
    fn yield_per_chance(&self) -> f64 {
        let Some(newest) = self.intake.newest() else {
            return 1.0;
        };
        let from = (newest + 1).saturating_sub(YIELD_PERIODS * self.options.draw_period());
        let series = self.intake.series();
        let chances = series.sum(from, newest + 1, |s| s.chances_micros) as f64
            / f64::from(Percentage::HUNDRED.micros());
        // A win the POP's ceiling held is the room's doing, not the crowd's: it
        // counts as won.
        let won = series.sum(from, newest + 1, |s| s.drawn_admissions + s.held_wins) as f64;
        ((won + YIELD_PRIOR) / (chances + YIELD_PRIOR)).clamp(YIELD_RANGE.0, YIELD_RANGE.1)
    }

    /// The highest percentage a write may carry now: [`MAX_RISE_PER_DRAW_PERIOD`]
    /// times the lowest percentage written over the last draw period (and the
    /// last written before it); before any write (a start, a restart), times
    /// the one the lines show in effect.
    fn rise_cap(&self, in_effect: Option<Percentage>) -> Percentage {
        let written = self.policy.recent_writes.iter().map(|&(_, p)| p).min();
        let lowest = written.or(in_effect);
        match lowest {
            Some(p) => Percentage::from_fraction(p.fraction() * MAX_RISE_PER_DRAW_PERIOD),
            None => self.options.max,
        }
    }

    /// The percentage the newest lines show in effect.
    fn in_effect(&self, newest: u64) -> Option<Percentage> {
        self.intake
            .series()
            .range(newest.saturating_sub(self.options.draw_period()), newest)
            .rev()
            .find_map(|(_, s)| s.percentage_micros)
            .map(Percentage::from_micros)
    }

    /// New sessions the target allows in one draw period (capped at the free
    /// places under `max_active`).
    fn allowed(&self) -> f64 {
        let mut allowed = self.options.target_per_minute * self.options.draw_period() as f64 / 60.0;
        if let Some(max_active) = self.options.max_active {
            allowed = allowed.min(max_active.saturating_sub(self.tokens.active.len()) as f64);
        }
        allowed
    }
}

/// Seconds' worth of arrivals, from now on, whose first draw falls in the
/// `width` seconds starting `h` seconds from now, with wait period `d`: an
/// arrival at `a` draws first evenly within `a + d .. a + 3d` (its address's
/// first point at least `d` ahead), so each second of arrivals counts for the
/// share of that span inside the window.
fn first_draws_within(d: u64, h: u64, width: u64) -> f64 {
    (0..h + width)
        .map(|a| first_draw_share(d, a, h, h + width))
        .sum()
}

/// The share of an arrival at `a` whose first draw falls in `from..to`: its
/// first draw comes evenly within `a + d .. a + 3d`.
fn first_draw_share(d: u64, a: u64, from: u64, to: u64) -> f64 {
    let (lo, hi) = ((a + d).max(from), (a + 3 * d).min(to));
    hi.saturating_sub(lo) as f64 / (2 * d) as f64
}

#[cfg(test)]
mod tests;
