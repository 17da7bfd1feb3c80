//! Time, read through one seam. Expiries, lifetimes, timestamps and rate buckets ask a
//! [`Clock`]: the [`SystemClock`] in production, a [`ManualClock`] that a test moves by hand,
//! so that "the token expired", "the session ended" or "explain as of 14:02" are tested without
//! sleeping. The domain never reads a clock (it is given times); everything above it that needs
//! the time now reads it here.
//!
//! [`unix_now`] is the one definition of "seconds since the epoch" for code that is not handed
//! a clock yet; new code takes a clock.

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};

/// Where the time comes from.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The wall-clock time now.
    fn now(&self) -> DateTime<Utc>;

    /// Whole seconds since the epoch (`iat`, `exp`, `nbf`); a time before 1970 counts as 1970.
    fn unix_now(&self) -> i64 {
        self.now().timestamp().max(0)
    }

    /// Time since an arbitrary origin that never goes back, whatever the wall clock does (it
    /// may be stepped): what rate buckets refill by and intervals are measured with.
    fn monotonic(&self) -> Duration;
}

/// The operating system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn monotonic(&self) -> Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        ORIGIN.get_or_init(Instant::now).elapsed()
    }
}

/// A clock that stands still until it is moved: for tests of what happens at a time.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<DateTime<Utc>>,
    /// How far it has been moved forward in all ([`Clock::monotonic`]); a `set` is a step of
    /// the wall clock and does not move it.
    moved: Mutex<Duration>,
}

impl ManualClock {
    /// A clock showing `now`.
    pub fn at(now: DateTime<Utc>) -> ManualClock {
        ManualClock {
            now: Mutex::new(now),
            moved: Mutex::new(Duration::ZERO),
        }
    }

    /// Moves the clock forward by `by` (saturating at the end of time).
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(PoisonError::into_inner);
        let std_by = by;
        let by = TimeDelta::from_std(by).unwrap_or(TimeDelta::MAX);
        *now = now
            .checked_add_signed(by)
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        let mut moved = self.moved.lock().unwrap_or_else(PoisonError::into_inner);
        *moved = moved.saturating_add(std_by);
    }

    /// Sets the clock to `now` (backwards too: a clock stepped back by NTP).
    pub fn set(&self, now: DateTime<Utc>) {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.now.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn monotonic(&self) -> Duration {
        *self.moved.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Whole seconds since the epoch by the system clock ([`Clock::unix_now`] of [`SystemClock`]).
pub fn unix_now() -> i64 {
    SystemClock.unix_now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let start = DateTime::<Utc>::from_timestamp(1_800_000_000, 0).expect("a time");
        let clock = ManualClock::at(start);
        assert_eq!(clock.unix_now(), 1_800_000_000);
        clock.advance(Duration::from_secs(90));
        assert_eq!(clock.unix_now(), 1_800_000_090);
        assert_eq!(clock.monotonic(), Duration::from_secs(90));
        clock.set(DateTime::<Utc>::from_timestamp(-5, 0).expect("a time"));
        assert_eq!(clock.unix_now(), 0, "before 1970 counts as 1970");
        assert_eq!(
            clock.monotonic(),
            Duration::from_secs(90),
            "a step is not a move"
        );
        clock.advance(Duration::MAX);
        assert_eq!(clock.now(), DateTime::<Utc>::MAX_UTC);
    }

    #[test]
    fn the_system_clock_is_the_systems() {
        let before = Utc::now().timestamp();
        let read = unix_now();
        assert!(read >= before && read <= Utc::now().timestamp());
        let (first, second) = (SystemClock.monotonic(), SystemClock.monotonic());
        assert!(second >= first);
    }
}
