//! The shared stream budget with real outboxes.

use std::sync::Arc;

use bytes::Bytes;

use super::{Coalescible, StreamBudget};
use crate::stream::frame::Frame;
use crate::stream::outbox::{Next, Outbox, Pushed};

fn frame(size: usize) -> Arc<Frame> {
    Arc::new(Frame {
        from: Arc::from("a"),
        to: Arc::from("b"),
        bytes: Bytes::from(vec![b'x'; size]),
    })
}

#[test]
fn a_stream_whose_writer_is_stuck_gives_way_before_one_that_keeps_up() {
    let budget = StreamBudget::new(2000);
    let keeping_up = Outbox::new(&budget, 1000);
    let stuck = Outbox::new(&budget, 1000);
    let _unsent = stuck.writing(Bytes::from(vec![0u8; 200]));
    assert_eq!(stuck.pinned_bytes(), 200);
    assert_eq!(keeping_up.push(frame(700)), Pushed::Queued);
    assert_eq!(stuck.push(frame(700)), Pushed::Queued);
    // 1600 + 500 > 2000: down to 1500 - 500 = 1000, one coalescing.
    budget.make_room(500);
    assert_eq!(stuck.queued_bytes(), 0, "the stuck stream pins more");
    assert_eq!(keeping_up.queued_bytes(), 700);
    assert_eq!(budget.used(), 900);
}

#[tokio::test]
async fn the_largest_queues_are_coalesced_first_to_make_room() {
    let budget = StreamBudget::new(1000);
    let small = Outbox::new(&budget, 1000);
    let large = Outbox::new(&budget, 1000);
    let middle = Outbox::new(&budget, 1000);
    assert_eq!(small.push(frame(100)), Pushed::Queued);
    assert_eq!(large.push(frame(500)), Pushed::Queued);
    assert_eq!(middle.push(frame(300)), Pushed::Queued);
    assert_eq!(budget.queued(), 900);
    // 900 + 200 > 1000: down to 750 - 200 = 550 by coalescing the largest (500).
    budget.make_room(200);
    assert_eq!(budget.queued(), 400);
    assert_eq!(budget.coalesced(), 1);
    assert_eq!(middle.push(frame(200)), Pushed::Queued);
    assert!(
        matches!(large.next().await, Next::Lagged),
        "gets a snapshot"
    );
    assert!(matches!(small.next().await, Next::Frame(_)));
    assert_eq!(budget.queued(), 500);
}

#[test]
fn a_frame_that_does_not_fit_lags_its_own_stream_and_holds_nothing() {
    let budget = StreamBudget::new(100);
    let outbox = Outbox::new(&budget, 1000);
    assert_eq!(outbox.push(frame(150)), Pushed::Lagged);
    assert_eq!(budget.queued(), 0);
    assert_eq!(outbox.queued_bytes(), 0);
}

#[test]
fn bytes_being_written_count_until_the_writer_lets_go() {
    let budget = StreamBudget::new(1000);
    let outbox = Outbox::new(&budget, 1000);
    let held = outbox.writing(Bytes::from(vec![1u8; 700]));
    assert_eq!(budget.being_written(), 700);
    assert_eq!(&held[..3], &[1, 1, 1]);
    assert_eq!(outbox.push(frame(400)), Pushed::Lagged, "700 + 400 > 1000");
    let part = held.slice(0..10);
    drop(held);
    assert_eq!(budget.being_written(), 700, "a slice still holds them");
    drop(part);
    assert_eq!(budget.being_written(), 0);
    assert_eq!(outbox.pinned_bytes(), 0);
}

#[test]
fn a_dropped_outbox_releases_its_bytes_and_leaves_the_registry() {
    let budget = StreamBudget::new(1000);
    let outbox = Outbox::new(&budget, 1000);
    outbox.push(frame(300));
    assert_eq!(budget.queued(), 300);
    drop(outbox);
    assert_eq!(budget.queued(), 0);
    assert!(budget.lock().is_empty(), "forgotten");
    budget.make_room(2000); // nothing left to coalesce: no panic, no deadlock
}

#[test]
fn no_pass_is_made_when_the_queues_cannot_free_a_quarter_of_the_budget() {
    let budget = StreamBudget::new(1000);
    let stuck = Outbox::new(&budget, 1000);
    let _unsent = stuck.writing(Bytes::from(vec![0u8; 850]));
    let small = Outbox::new(&budget, 1000);
    assert_eq!(small.push(frame(100)), Pushed::Queued);
    // 950 + 100 > 1000, but the queues hold 100 < 250: no pass, nothing coalesced.
    budget.make_room(100);
    assert_eq!(budget.coalesced(), 0);
    assert_eq!(small.queued_bytes(), 100);
    let other = Outbox::new(&budget, 1000);
    assert_eq!(
        other.push(frame(100)),
        Pushed::Lagged,
        "the frame lags its own stream"
    );
}
