//! Values made once per source and shared by its calls (MCP sessions, OpenAPI documents),
//! made lazily, remade when the source changes, and bounded.
//!
//! Each source has one slot, keyed by the source id and a version (a hash of what the value
//! is made from: an edited source gets a new value, never one made from its old config). The
//! first call fills the slot while later ones wait for it (one handshake, one fetch); a
//! failure leaves the slot empty for the next call to try again. At most the pool's capacity of
//! sources are kept: the one used longest ago gives way, and `retire` sees every value that
//! leaves (an MCP session is ended there).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// A slot: filled at most once at a time.
type Slot<T> = Arc<tokio::sync::Mutex<Option<Made<T>>>>;

/// A value and when it was made.
struct Made<T> {
    value: Arc<T>,
    at: Instant,
}

struct Entry<T> {
    version: blake3::Hash,
    slot: Slot<T>,
    used: u64,
}

struct State<T> {
    entries: HashMap<String, Entry<T>>,
    clock: u64,
}

/// Per-source values; see the module documentation.
pub(super) struct Pool<T> {
    state: Mutex<State<T>>,
    capacity: usize,
    /// How long a value is used before it is made again (`None`: until it is forgotten).
    max_age: Option<Duration>,
    retire: fn(Arc<T>),
}

impl<T> Pool<T> {
    pub(super) fn new(capacity: usize, max_age: Option<Duration>, retire: fn(Arc<T>)) -> Pool<T> {
        Pool {
            state: Mutex::new(State {
                entries: HashMap::new(),
                clock: 0,
            }),
            capacity: capacity.max(1),
            max_age,
            retire,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // Only bookkeeping is done under this lock; a panic elsewhere leaves it consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value of `source_id` at `version`, made by `make` if there is none (or only one of
    /// another version, or one past its age). Returns whether this call made it.
    pub(super) async fn get<E, F>(
        &self,
        source_id: &str,
        version: blake3::Hash,
        make: impl FnOnce() -> F,
    ) -> Result<(Arc<T>, bool), E>
    where
        F: Future<Output = Result<T, E>>,
    {
        let slot = self.slot(source_id, version);
        let mut filled = slot.lock().await;
        if let Some(made) = filled.as_ref()
            && self.max_age.is_none_or(|age| made.at.elapsed() < age)
        {
            return Ok((Arc::clone(&made.value), false));
        }
        if let Some(old) = filled.take() {
            (self.retire)(old.value);
        }
        let value = Arc::new(make().await?);
        *filled = Some(Made {
            value: Arc::clone(&value),
            at: Instant::now(),
        });
        Ok((value, true))
    }

    /// Empties the slot of `source_id` if it still holds `stale` (a value found unusable, such
    /// as a session the server forgot), so that the next [`Pool::get`] makes a new one.
    pub(super) async fn forget(&self, source_id: &str, stale: &Arc<T>) {
        let slot = {
            let state = self.lock();
            match state.entries.get(source_id) {
                Some(entry) => Arc::clone(&entry.slot),
                None => return,
            }
        };
        let mut filled = slot.lock().await;
        if filled
            .as_ref()
            .is_some_and(|made| Arc::ptr_eq(&made.value, stale))
            && let Some(old) = filled.take()
        {
            (self.retire)(old.value);
        }
    }

    /// The slot of `source_id` at `version`: a new one when there is none or its version
    /// differs (the old value retired), evicting the least recently used past capacity.
    fn slot(&self, source_id: &str, version: blake3::Hash) -> Slot<T> {
        let mut retired = Vec::new();
        let slot = {
            let mut state = self.lock();
            state.clock += 1;
            let now = state.clock;
            match state.entries.get_mut(source_id) {
                Some(entry) if entry.version == version => {
                    entry.used = now;
                    Arc::clone(&entry.slot)
                }
                _ => {
                    if let Some(old) = state.entries.remove(source_id) {
                        retired.push(old.slot);
                    }
                    if state.entries.len() >= self.capacity
                        && let Some(oldest) = state
                            .entries
                            .iter()
                            .min_by_key(|(_, entry)| entry.used)
                            .map(|(id, _)| id.clone())
                        && let Some(old) = state.entries.remove(&oldest)
                    {
                        retired.push(old.slot);
                    }
                    let slot: Slot<T> = Arc::new(tokio::sync::Mutex::new(None));
                    state.entries.insert(
                        source_id.to_owned(),
                        Entry {
                            version,
                            slot: Arc::clone(&slot),
                            used: now,
                        },
                    );
                    slot
                }
            }
        };
        for old in retired {
            // A slot being filled right now is left to its caller; its value is not retired.
            if let Ok(mut filled) = old.try_lock()
                && let Some(made) = filled.take()
            {
                (self.retire)(made.value);
            }
        }
        slot
    }

    /// How many sources have a slot.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static RETIRED: AtomicUsize = AtomicUsize::new(0);

    fn count_retired(_: Arc<u32>) {
        RETIRED.fetch_add(1, Ordering::SeqCst);
    }

    fn version(text: &str) -> blake3::Hash {
        blake3::hash(text.as_bytes())
    }

    async fn get(pool: &Pool<u32>, id: &str, v: &str, value: u32) -> (u32, bool) {
        let (got, made) = pool
            .get(id, version(v), || async move { Ok::<_, ()>(value) })
            .await
            .expect("made");
        (*got, made)
    }

    #[tokio::test]
    async fn values_are_made_once_remade_for_a_new_version_and_after_forget() {
        let pool = Pool::new(8, None, count_retired);
        let before = RETIRED.load(Ordering::SeqCst);
        assert_eq!(get(&pool, "s", "v1", 1).await, (1, true));
        assert_eq!(get(&pool, "s", "v1", 2).await, (1, false), "reused");
        assert_eq!(
            get(&pool, "s", "v2", 3).await,
            (3, true),
            "the source changed"
        );
        let (current, _) = pool
            .get("s", version("v2"), || async { Ok::<_, ()>(9) })
            .await
            .expect("kept");
        pool.forget("s", &Arc::new(3)).await;
        assert_eq!(
            get(&pool, "s", "v2", 4).await,
            (3, false),
            "another value is not forgotten"
        );
        pool.forget("s", &current).await;
        assert_eq!(get(&pool, "s", "v2", 5).await, (5, true));
        assert!(RETIRED.load(Ordering::SeqCst) - before >= 2);
    }

    #[tokio::test]
    async fn a_failure_leaves_the_slot_empty_and_the_pool_is_bounded() {
        let pool: Pool<u32> = Pool::new(2, None, |_| {});
        let failed = pool
            .get("s", version("v"), || async { Err::<u32, _>("down") })
            .await;
        assert_eq!(failed.err(), Some("down"));
        assert_eq!(get(&pool, "s", "v", 1).await, (1, true));
        get(&pool, "a", "v", 2).await;
        get(&pool, "s", "v", 0).await;
        get(&pool, "b", "v", 3).await;
        assert_eq!(pool.len(), 2);
        assert_eq!(
            get(&pool, "s", "v", 7).await,
            (1, false),
            "the most recently used stays"
        );
        assert_eq!(get(&pool, "a", "v", 8).await, (8, true), "the oldest went");
    }

    #[tokio::test]
    async fn values_past_their_age_are_made_again() {
        let pool: Pool<u32> = Pool::new(2, Some(Duration::from_millis(20)), |_| {});
        assert_eq!(get(&pool, "s", "v", 1).await, (1, true));
        tokio::time::sleep(Duration::from_millis(40)).await;
        assert_eq!(get(&pool, "s", "v", 2).await, (2, true));
    }
}
