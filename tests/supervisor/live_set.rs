//! `which_children` is exactly the live set after every step of a scripted
//! scenario, and a child leaves it (and frees its slot) before its `join`
//! returns. A dropped handle detaches its child, which stays tracked.

use std::collections::BTreeSet;
use std::sync::mpsc;

use sidejob::{ChildHandle, ChildId, Supervisor};

/// A child held until the test lets it go.
struct Held {
    handle: ChildHandle<ChildId>,
    release: mpsc::Sender<()>,
}

fn spawn_held(supervisor: &Supervisor) -> Held {
    let (release, hold) = mpsc::channel();
    let handle = supervisor
        .spawn(move |context| {
            let _ = hold.recv();
            context.id()
        })
        .unwrap();
    Held { handle, release }
}

fn live(supervisor: &Supervisor) -> BTreeSet<ChildId> {
    supervisor.which_children().into_iter().collect()
}

#[test]
fn which_children_follows_a_scripted_scenario() {
    let supervisor = Supervisor::builder().capacity(3).shards(2).build().unwrap();
    let mut model = BTreeSet::new();
    assert_eq!(live(&supervisor), model);

    let a = spawn_held(&supervisor);
    model.insert(a.handle.id());
    assert_eq!(live(&supervisor), model);

    let b = spawn_held(&supervisor);
    let c = spawn_held(&supervisor);
    model.extend([b.handle.id(), c.handle.id()]);
    assert_eq!(live(&supervisor), model);
    assert_eq!(supervisor.count(), 3);
    assert!(supervisor.spawn(|_| ()).unwrap_err().is_overload());
    assert_eq!(live(&supervisor), model, "a refused spawn adds nothing");

    // B ends: gone before its join returns.
    b.release.send(()).unwrap();
    let b_id = b.handle.join().unwrap();
    model.remove(&b_id);
    assert_eq!(live(&supervisor), model);

    let d = spawn_held(&supervisor);
    model.insert(d.handle.id());
    assert_eq!(live(&supervisor), model);

    // A's handle is dropped: detached, but tracked until it ends.
    let a_id = a.handle.id();
    drop(a.handle);
    assert_eq!(live(&supervisor), model);
    a.release.send(()).unwrap();
    while supervisor.which_children().contains(&a_id) {
        std::thread::yield_now();
    }
    model.remove(&a_id);
    assert_eq!(live(&supervisor), model);

    for held in [c, d] {
        held.release.send(()).unwrap();
        let id = held.handle.join().unwrap();
        model.remove(&id);
        assert_eq!(live(&supervisor), model);
    }
    assert!(model.is_empty());
    let stats = supervisor.stats();
    assert_eq!((stats.spawned, stats.finished, stats.rejected), (4, 4, 1));
    assert!(stats.shards.iter().all(|s| s.usage == 0 && s.live == 0));
}

#[test]
fn is_finished_means_gone_from_the_live_set() {
    let supervisor = Supervisor::new(2);
    let child = supervisor.spawn(|_| 5).unwrap();
    let id = child.id();
    while !child.is_finished() {
        std::thread::yield_now();
    }
    assert!(!supervisor.which_children().contains(&id));
    assert_eq!(child.join().unwrap(), 5);
}
