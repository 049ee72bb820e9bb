//! The words a decision is logged in: each value one word in the log line and the
//! JSON, read back by the controller.

use std::fmt;
use std::str::FromStr;

/// Defines an enum whose every value has one word in the log and the JSON: its
/// `ALL` values in order, `name()`, `Display` and `FromStr` (which the controller
/// runs on every line, so it compares text and allocates nothing).
macro_rules! log_words {
    ($(#[$meta:meta])* pub enum $name:ident {
        $($(#[$doc:meta])* $value:ident = $word:literal,)*
    }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$doc])* $value,)*
        }

        impl $name {
            /// Every value, in order.
            pub const ALL: [$name; [$($word),*].len()] = [$($name::$value),*];

            /// The word for it.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $($name::$value => $word,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl FromStr for $name {
            type Err = UnknownWord;
            fn from_str(word: &str) -> Result<$name, UnknownWord> {
                $name::ALL.into_iter().find(|v| v.name() == word).ok_or(UnknownWord)
            }
        }
    };
}

log_words! {
    /// The room's decision for one protected request.
    pub enum Decision {
        /// Forward to the origin.
        Allow = "allow",
        /// Closed (`allow_percentage = 0`): waiting will not help.
        Deny = "deny",
        /// Unknown visitor: starts waiting.
        Anon = "anon",
        /// Waiting, token not yet expired.
        Wait = "wait",
        /// Waited, lost the lottery: waits again.
        ReWait = "re-wait",
    }
}

log_words! {
    /// What happened to a valid token on the way to the decision.
    pub enum Transition {
        /// An expired allow token: the session timed out.
        SessionExpired = "session-expired",
        /// An expired wait token that won the lottery.
        LotteryWon = "lottery-won",
        /// An expired wait token that lost the lottery.
        LotteryLost = "lottery-lost",
        /// A new session (a won draw, or a room open at 100 %) while the POP had
        /// started `pop_new_sessions_per_minute` in the last minute: held, the
        /// visitor waits on with a new wait token, as after a loss ([`crate::admission::ceiling`]).
        CeilingReached = "ceiling-reached",
        /// A wait token due for its draw while the room holds everyone (`queue_all`):
        /// not drawn, it waits on with a new wait token.
        QueueAll = "queue-all",
        /// A wait token presented after its redeem window: it re-waits without a draw,
        /// so a copy of a winning token cannot be replayed for new sessions forever.
        /// (In FIFO mode the visitor arrives anew.)
        RedeemWindowPassed = "redeem-window-passed",
        /// FIFO: a waiting visitor whose arrival is at or before `fifo_cutoff`: admitted.
        CutoffReached = "cutoff-reached",
        /// FIFO: a place whose hold ended: the visitor arrives anew.
        HoldExpired = "hold-expired",
        /// FIFO: a lottery wait token joined the line (at `exp - 2d`).
        JoinedLine = "joined-line",
        /// A FIFO place presented in random mode: it waits for its address's next
        /// draw, without a draw of its own.
        LeftLine = "left-line",
        /// A wait token due for its draw (random) or admission (FIFO) whose bot toll
        /// is unpaid: held, without a draw. In random mode it waits on with a new
        /// wait token, which owes the toll again; in FIFO mode it keeps its place.
        TollUnpaid = "toll-unpaid",
    }
}

log_words! {
    /// What an admitted request does to the visitor's session.
    pub enum Session {
        /// A new session: the lottery was won, or the room admits everyone and the
        /// visitor held no live allow token.
        New = "new",
        /// A live session, with a renewed allow token.
        Renewed = "renewed",
        /// A live session whose allow token is kept as it is.
        Kept = "kept",
    }
}

/// A word that names none of an enum's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownWord;

impl fmt::Display for UnknownWord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unknown word")
    }
}

impl std::error::Error for UnknownWord {}
