//! Counting tokens, not lines: it holds which address holds which token (waiting,
//! live, admitted, held for the toll, lost, and when each waiting one draws on the
//! fixed beat); it reads each log record; it says what the record adds, an
//! arrival, a draw or a new session, so that tabs, devices behind one address and
//! retries presenting one token count once. The cases:
//! `docs/research/controller-rules.md`, counting tokens.

use super::holders::Holders;
use crate::record::Record;
use waiting_room::admission::decision::{Decision, Session, Transition};

/// What one record adds, counted per token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// An address that held no live wait token started waiting.
    pub arrival: bool,
    /// A wait token was drawn: `Some(true)` won, `Some(false)` lost.
    pub draw: Option<bool>,
    /// An allow token with `session=new` the address did not hold yet.
    pub new_session: bool,
    /// The draw won, but the POP's ceiling held it (`draw` is `Some(false)`:
    /// it made no session).
    pub held: bool,
    /// For a draw: seconds from the drawn token's end to the draw (0 when the
    /// address's token is not known).
    pub draw_lag: u64,
    /// A wait token the controller did not see handed out: the line waits or
    /// draws, its address held no token, and it is not an arrival (a token
    /// from before the log began, or one the controller forgot).
    pub stranger: bool,
}

/// Who holds which token: waiting addresses (their wait token's end, redeem
/// window included) and admitted ones (their allow token's end).
#[derive(Debug, Clone)]
pub struct Tokens {
    /// Addresses holding a live wait token.
    pub waiting: Holders,
    /// Addresses holding a live allow token.
    pub active: Holders,
    /// Addresses by the end of the last allow token counted as a new session.
    admitted: Holders,
    /// Addresses whose draw the bot toll held, by the end of the token it gave
    /// them (redeem window included), until they draw.
    unpaid: Holders,
    /// Addresses by the end of the token their last counted lost draw handed
    /// out (redeem window included): the other tabs of that draw repeat it.
    lost: Holders,
    /// Addresses holding a live wait token, by the second they will draw it
    /// if their pages come back every `beat` seconds.
    pub on_beat: Holders,
    /// Addresses holding a live wait token, by a beat after their last line
    /// (kept when `beat` is).
    pub paged: Holders,
    /// The room's redeem window: a wait token counts as held this long after its `exp`.
    redeem: u64,
    /// Seconds between two loads of a waiting page on the fixed beat (the
    /// room's wait period); 0: `on_beat` is not kept.
    beat: u64,
}

impl Tokens {
    /// No tokens yet; at most `capacity` addresses of each kind; waiting
    /// pages on the fixed beat come back every `beat` seconds (0: not asked).
    pub fn new(capacity: usize, redeem: u64, beat: u64) -> Tokens {
        Tokens {
            waiting: Holders::new(capacity),
            active: Holders::new(capacity),
            admitted: Holders::new(capacity),
            unpaid: Holders::new(capacity),
            lost: Holders::new(capacity),
            on_beat: Holders::new(capacity),
            paged: Holders::new(capacity),
            redeem,
            beat,
        }
    }

    /// Takes in one record: what it adds, per token.
    pub fn see(&mut self, record: &Record) -> Seen {
        let uid = record.uid.as_str();
        match record.decision {
            Some(Decision::Anon | Decision::Wait | Decision::ReWait) => {
                self.see_waiting(record, uid)
            }
            Some(Decision::Allow) => self.see_allowed(record, uid),
            Some(Decision::Deny) => {
                self.stop_waiting(uid);
                self.active.leave(uid);
                Seen::default()
            }
            None => Seen::default(),
        }
    }

    /// A waiting line (`anon`, `wait`, `re-wait`) of `uid`: an arrival, a
    /// lost draw, or a repeat of a token already held.
    fn see_waiting(&mut self, record: &Record, uid: &str) -> Seen {
        let mut seen = Seen::default();
        if record.transition == Some(Transition::SessionExpired) {
            self.active.leave(uid);
        }
        let Some(exp) = record.exp else {
            self.stop_waiting(uid);
            return seen;
        };
        let end = exp.saturating_add(self.redeem);
        if record.transition == Some(Transition::TollUnpaid) {
            self.stop_waiting(uid);
            self.unpaid.hold(uid, end);
            return seen;
        }
        if self.unpaid.until(uid) == Some(end) {
            return seen;
        }
        if self.beat > 0 {
            self.paged.hold(uid, record.t.saturating_add(self.beat));
        }
        // A lost draw (or a win the ceiling held): counted once an
        // address and next token.
        let lost = matches!(
            record.transition,
            Some(Transition::LotteryLost | Transition::CeilingReached)
        ) && self.lost.until(uid) != Some(end);
        if lost {
            self.lost.hold(uid, end);
            seen.draw = Some(false);
            seen.held = record.transition == Some(Transition::CeilingReached);
        }
        if self.waiting.until(uid) == Some(end) {
            self.see_beat(uid, record.t, exp, false);
            // Another device behind the address holds the token this
            // draw hands out; on the address grid the drawn one ended a
            // draw period (two wait periods, two beats) before it.
            if lost {
                let drawn = exp.saturating_sub(2 * self.beat);
                seen.draw_lag = record.t.saturating_sub(drawn);
            }
            return seen;
        }
        self.unpaid.leave(uid);
        let held = self.waiting.hold(uid, end);
        self.see_beat(uid, record.t, exp, true);
        seen.arrival = held.is_none() && record.is_arrival();
        seen.stranger = held.is_none() && !record.is_arrival();
        if lost {
            seen.draw_lag = self.lag(record.t, held);
        }
        seen
    }

    /// An allow line of `uid`: a new session when it hands out an allow
    /// token the address did not hold yet (and a won draw, when it says so).
    fn see_allowed(&mut self, record: &Record, uid: &str) -> Seen {
        let mut seen = Seen::default();
        // A new session spends the address's wait token (on the room's
        // grids everyone behind the address who holds it is admitted by
        // it); a live session's request leaves it as it is: another
        // device or person behind the address may still wait.
        let drawn = if record.session == Some(Session::New) {
            self.stop_waiting(uid)
        } else {
            None
        };
        if record.released {
            // The origin ended it: that token handed out again is a session again.
            self.active.leave(uid);
            self.admitted.leave(uid);
        } else if let Some(exp) = record.exp {
            self.active.hold(uid, exp);
            if record.session == Some(Session::New) && self.admitted.until(uid) != Some(exp) {
                self.admitted.hold(uid, exp);
                seen.new_session = true;
                if record.transition == Some(Transition::LotteryWon) {
                    seen.draw = Some(true);
                    seen.draw_lag = self.lag(record.t, drawn);
                    seen.stranger = drawn.is_none();
                }
            }
        }
        seen
    }

    /// `uid`'s page loaded at `t` with a wait token ending at `exp` (`fresh`:
    /// the first line of that token): on the fixed beat it comes back at
    /// `t + k × beat`, and draws at the first of those after `exp`. The
    /// address draws at the earliest of its lines' draws; a page that would
    /// come back past the redeem window does not draw that token.
    fn see_beat(&mut self, uid: &str, t: u64, exp: u64, fresh: bool) {
        if self.beat == 0 {
            return;
        }
        let loads = (exp + 1).saturating_sub(t).div_ceil(self.beat).max(1);
        let draw = t.saturating_add(loads * self.beat);
        // Another line of this token already foresaw an earlier draw.
        if !fresh && self.on_beat.until(uid).is_some_and(|d| d <= draw) {
            return;
        }
        if draw <= exp.saturating_add(self.redeem) {
            self.on_beat.hold(uid, draw);
        } else if fresh {
            self.on_beat.leave(uid);
        }
    }

    /// `uid` no longer waits; returns when its live wait token ended (redeem
    /// window included).
    fn stop_waiting(&mut self, uid: &str) -> Option<u64> {
        self.on_beat.leave(uid);
        self.paged.leave(uid);
        self.waiting.leave(uid)
    }

    /// Seconds from the end of a drawn wait token, held until `held` (its end
    /// and the redeem window), to its draw at `t`; 0 when not known.
    fn lag(&self, t: u64, held: Option<u64>) -> u64 {
        held.map_or(0, |until| {
            t.saturating_sub(until.saturating_sub(self.redeem))
        })
    }

    /// Tokens that ended before `now` stop counting.
    pub fn expire(&mut self, now: u64) {
        self.waiting.expire(now);
        self.active.expire(now);
        self.admitted.expire(now);
        self.unpaid.expire(now);
        self.lost.expire(now);
        self.on_beat.expire(now);
        self.paged.expire(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Record {
        text.parse().unwrap()
    }

    /// A waiting line of 10.0.0.1 at `t` with a token ending at `exp`:
    /// `decision` and, for a draw, its transition (`re-wait transition=lottery-lost`).
    fn waiting(decision: &str, t: u64, exp: u64) -> Record {
        line(&format!(
            "waitingroom t={t} decision={decision} uid=10.0.0.1 p=5 exp={exp} path=/events"
        ))
    }

    #[test]
    fn tabs_presenting_one_token_count_once() {
        let mut tokens = Tokens::new(100, 30, 30);
        let anon = line("waitingroom t=100 decision=anon uid=10.0.0.1 p=5 exp=160 path=/events");
        assert_eq!(
            tokens.see(&anon),
            Seen {
                arrival: true,
                ..Seen::default()
            }
        );
        // A second tab, a second device behind the address: the same token.
        assert_eq!(tokens.see(&anon), Seen::default());
        let wait = line("waitingroom t=120 decision=wait uid=10.0.0.1 p=5 exp=160 path=/events");
        assert_eq!(tokens.see(&wait), Seen::default());
        // Three tabs draw the token and lose: one draw.
        let lost = line(
            "waitingroom t=161 decision=re-wait uid=10.0.0.1 p=5 transition=lottery-lost exp=220 path=/events",
        );
        assert_eq!(tokens.see(&lost).draw, Some(false));
        assert_eq!(tokens.see(&lost), Seen::default());
        assert_eq!(tokens.see(&lost), Seen::default());
        // They draw the next one and win: one new session, whichever second
        // each tab redeems it in (the session runs from the draw's first second).
        let won = |t: u64| {
            line(&format!(
                "waitingroom t={t} decision=allow uid=10.0.0.1 p=5 session=new transition=lottery-won exp=3821 path=/events"
            ))
        };
        let first = tokens.see(&won(221));
        assert_eq!((first.draw, first.new_session), (Some(true), true));
        assert_eq!(tokens.see(&won(221)), Seen::default());
        assert_eq!(tokens.see(&won(224)), Seen::default());
        assert_eq!(tokens.see(&won(250)), Seen::default());
        assert_eq!((tokens.waiting.len(), tokens.active.len()), (0, 1));
        // Another token of the address (a newcomer while the room admits
        // everyone, whose session starts at the request) is another session.
        let open = line(
            "waitingroom t=300 decision=allow uid=10.0.0.1 p=100 session=new exp=3900 path=/events",
        );
        assert!(tokens.see(&open).new_session);
    }

    #[test]
    fn devices_behind_an_address_holding_tokens_a_draw_period_apart_count_each_draw_once() {
        let mut tokens = Tokens::new(100, 30, 30);
        let wait = |t: u64, exp: u64| waiting("wait", t, exp);
        let lost = |t: u64, exp: u64| waiting("re-wait transition=lottery-lost", t, exp);
        let anon = |t: u64, exp: u64| waiting("anon", t, exp);
        assert!(tokens.see(&anon(100, 160)).arrival);
        // A second device joins a draw period later: the next grid point.
        assert_eq!(tokens.see(&anon(140, 220)), Seen::default());
        assert_eq!(tokens.see(&wait(130, 160)), Seen::default());
        assert_eq!(tokens.see(&wait(150, 220)), Seen::default());
        // The first device's draw hands it the second's token: one draw,
        // 6 s after its token ended, however its tabs repeat it.
        let first = tokens.see(&lost(166, 220));
        assert_eq!((first.draw, first.draw_lag), (Some(false), 6));
        assert_eq!(tokens.see(&lost(167, 220)), Seen::default());
        // A third device's line in between does not make a tab's repeat a draw.
        assert_eq!(tokens.see(&anon(180, 280)), Seen::default());
        assert_eq!(tokens.see(&lost(168, 220)), Seen::default());
        // Their next draw, one more.
        let next = tokens.see(&lost(221, 280));
        assert_eq!((next.draw, next.draw_lag), (Some(false), 1));
        assert_eq!(tokens.waiting.len(), 1);
    }

    #[test]
    fn a_token_handed_out_before_the_log_began_is_a_stranger() {
        let mut tokens = Tokens::new(100, 30, 30);
        // An arrival, its repeat, its lost draw and its win: all seen handed out.
        let seen = [
            "waitingroom t=100 decision=anon uid=10.0.0.1 p=5 exp=160 path=/events",
            "waitingroom t=120 decision=wait uid=10.0.0.1 p=5 exp=160 path=/events",
            "waitingroom t=161 decision=re-wait uid=10.0.0.1 p=5 transition=lottery-lost exp=220 path=/events",
            "waitingroom t=221 decision=allow uid=10.0.0.1 p=5 session=new transition=lottery-won exp=3821 path=/events",
        ];
        for text in seen {
            assert!(!tokens.see(&line(text)).stranger, "{text}");
        }
        // Addresses the log never showed arriving: a page polling, a lost draw
        // and a win, each on a token from before the log began.
        let strangers = [
            "waitingroom t=230 decision=wait uid=10.0.0.2 p=5 exp=260 path=/events",
            "waitingroom t=231 decision=re-wait uid=10.0.0.3 p=5 transition=lottery-lost exp=290 path=/events",
            "waitingroom t=232 decision=allow uid=10.0.0.4 p=5 session=new transition=lottery-won exp=3832 path=/events",
        ];
        for text in strangers {
            assert!(tokens.see(&line(text)).stranger, "{text}");
        }
        // The same address back after its session, as a newcomer: an arrival.
        let back = line("waitingroom t=3900 decision=anon uid=10.0.0.4 p=5 exp=3960 path=/events");
        assert!(!tokens.see(&back).stranger);
    }

    #[test]
    fn a_win_counts_once_whatever_lines_of_the_address_come_between_its_tabs() {
        let mut tokens = Tokens::new(100, 30, 30);
        let won = |t: u64| {
            line(&format!(
                "waitingroom t={t} decision=allow uid=10.0.0.1 p=5 session=new transition=lottery-won exp=3821 path=/events"
            ))
        };
        let kept = |t: u64| {
            line(&format!(
                "waitingroom t={t} decision=allow uid=10.0.0.1 p=5 session=kept exp=3700 path=/events"
            ))
        };
        // Someone else behind the address browses on an older session while
        // the winner's tabs come in one by one.
        assert!(!tokens.see(&kept(219)).new_session);
        assert!(tokens.see(&won(221)).new_session);
        assert_eq!(tokens.see(&kept(222)), Seen::default());
        assert_eq!(tokens.see(&won(223)), Seen::default());
        assert_eq!(tokens.see(&kept(224)), Seen::default());
        assert_eq!(tokens.see(&won(240)), Seen::default());
        // Released by the origin, the same token handed out again is a session again.
        let released = line(
            "waitingroom t=241 decision=allow uid=10.0.0.1 p=5 session=kept exp=3821 path=/events release=origin",
        );
        tokens.see(&released);
        assert!(tokens.see(&won(245)).new_session);
        // Once it ended, it stops counting.
        tokens.expire(3822);
        assert!(tokens.active.is_empty());
    }

    #[test]
    fn a_win_the_pops_ceiling_held_is_one_held_draw_per_token() {
        let mut tokens = Tokens::new(100, 30, 30);
        tokens.see(&line(
            "waitingroom t=100 decision=anon uid=10.0.0.1 p=5 exp=160 path=/events",
        ));
        let held = line(
            "waitingroom t=161 decision=re-wait uid=10.0.0.1 p=5 transition=ceiling-reached exp=220 path=/events",
        );
        let first = tokens.see(&held);
        assert_eq!(
            (first.draw, first.held, first.new_session),
            (Some(false), true, false)
        );
        // Its other tabs: the same token.
        assert_eq!(tokens.see(&held), Seen::default());
        assert_eq!((tokens.waiting.len(), tokens.active.len()), (1, 0));
    }

    #[test]
    fn an_address_back_after_its_token_ended_arrives_anew() {
        let mut tokens = Tokens::new(100, 30, 30);
        let anon = |t: u64, exp: u64| waiting("anon", t, exp);
        assert!(tokens.see(&anon(100, 160)).arrival);
        tokens.expire(300);
        assert!(tokens.see(&anon(300, 360)).arrival);
        // A new token for an address already waiting is not an arrival.
        assert!(!tokens.see(&anon(310, 380)).arrival);
    }

    #[test]
    fn a_live_session_behind_an_address_leaves_its_waiting_token_counted() {
        let mut tokens = Tokens::new(100, 30, 30);
        let wait = line("waitingroom t=100 decision=anon uid=10.0.0.9 p=5 exp=160 path=/events");
        let kept = line(
            "waitingroom t=101 decision=allow uid=10.0.0.9 p=5 session=kept exp=3700 path=/events",
        );
        assert!(tokens.see(&wait).arrival);
        // Someone else behind the address browses on: the waiting one still waits,
        // and their next poll is no arrival nor a new token.
        tokens.see(&kept);
        assert_eq!((tokens.waiting.len(), tokens.active.len()), (1, 1));
        assert_eq!(tokens.waiting.ending_within(160, 200), 1);
        let polled = line("waitingroom t=120 decision=wait uid=10.0.0.9 p=5 exp=160 path=/events");
        assert_eq!(tokens.see(&polled), Seen::default());
        // Their win spends the token.
        tokens.see(&line(
            "waitingroom t=161 decision=allow uid=10.0.0.9 p=5 session=new transition=lottery-won exp=3761 path=/events",
        ));
        assert_eq!(tokens.waiting.len(), 0);
    }

    #[test]
    fn a_draw_held_for_the_toll_takes_the_address_off_the_crowd_until_it_draws() {
        let mut tokens = Tokens::new(100, 30, 30);
        let uid = "uid=10.0.0.4 p=5";
        assert!(
            tokens
                .see(&line(&format!(
                    "waitingroom t=100 decision=anon {uid} exp=160 toll=8"
                )))
                .arrival
        );
        assert_eq!(tokens.waiting.len(), 1);
        // Its draw is held: no draw, and no longer waiting, nor on its tabs' repeats.
        let held = line(&format!(
            "waitingroom t=161 decision=re-wait {uid} transition=toll-unpaid exp=220 toll=8"
        ));
        assert_eq!(tokens.see(&held), Seen::default());
        let repeat = line(&format!(
            "waitingroom t=170 decision=wait {uid} exp=220 toll=8"
        ));
        assert_eq!(tokens.see(&repeat), Seen::default());
        assert_eq!(tokens.waiting.len(), 0);
        // Paid, it draws: a draw, and waiting again (no arrival).
        let lost = tokens.see(&line(&format!(
            "waitingroom t=221 decision=re-wait {uid} transition=lottery-lost exp=280 toll=paid"
        )));
        assert_eq!((lost.draw, lost.arrival), (Some(false), false));
        assert_eq!(tokens.waiting.len(), 1);
    }

    #[test]
    fn an_address_on_the_fixed_beat_draws_at_its_earliest_pages_first_load_after_its_token_ends() {
        let mut tokens = Tokens::new(100, 30, 30);
        let wait = |t: u64, exp: u64| {
            line(&format!(
                "waitingroom t={t} decision=wait uid=10.0.0.5 p=5 exp={exp} path=/events"
            ))
        };
        // A page loaded at 100 comes back at 130, 160, 190: the first after 170.
        tokens.see(&wait(100, 170));
        assert_eq!(tokens.on_beat.until("10.0.0.5"), Some(190));
        // A second tab, loaded at 112, comes back at 172: the address draws then.
        tokens.see(&wait(112, 170));
        assert_eq!(tokens.on_beat.until("10.0.0.5"), Some(172));
        // A later tab on a later beat changes nothing.
        tokens.see(&wait(125, 170));
        assert_eq!(tokens.on_beat.until("10.0.0.5"), Some(172));
        // The draw lost: the next token's draw, from the drawing page's beat.
        tokens.see(&line(
            "waitingroom t=172 decision=re-wait uid=10.0.0.5 p=5 transition=lottery-lost exp=230 path=/events",
        ));
        assert_eq!(tokens.on_beat.until("10.0.0.5"), Some(232));
        assert_eq!(tokens.on_beat.ending_within(232, 233), 1);
        // A win takes the address off the calendar.
        tokens.see(&line(
            "waitingroom t=232 decision=allow uid=10.0.0.5 p=5 session=new transition=lottery-won exp=3832 path=/events",
        ));
        assert!(tokens.on_beat.is_empty());
        // A page that would come back past the redeem window draws nothing.
        let mut short = Tokens::new(100, 5, 30);
        short.see(&wait(100, 170));
        assert!(short.on_beat.is_empty());
        // Not asked for: not kept.
        let mut fifo = Tokens::new(100, 0, 0);
        fifo.see(&wait(100, 170));
        assert!(fifo.on_beat.is_empty());
    }

    #[test]
    fn renewals_releases_and_denials_move_addresses_without_counting() {
        let mut tokens = Tokens::new(100, 30, 30);
        let kept = line(
            "waitingroom t=100 decision=allow uid=10.0.0.2 p=5 session=renewed exp=3700 path=/events",
        );
        assert_eq!(tokens.see(&kept), Seen::default());
        assert_eq!(tokens.active.len(), 1);
        let released = line(
            "waitingroom t=101 decision=allow uid=10.0.0.2 p=5 session=kept exp=3700 path=/events release=origin",
        );
        tokens.see(&released);
        assert!(tokens.active.is_empty());
        tokens.see(&line(
            "waitingroom t=102 decision=anon uid=10.0.0.3 p=5 exp=160 path=/events",
        ));
        tokens.see(&line(
            "waitingroom t=103 decision=deny uid=10.0.0.3 p=0 path=/events",
        ));
        assert!(tokens.waiting.is_empty());
    }
}
