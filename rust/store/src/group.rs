//! Groups whose members come and go, as a process sees them: a [`Member`] of a named group of
//! a store, with a rank the store hands out (or one it asks for), a heartbeat, the group's
//! events, and membership changes serialized per group; and [`Store::serve_or_join`], by which
//! processes that share only a store address make the store (whoever binds it first) and
//! reach it.
//!
//! A member holds two connections of its own and two threads: the *control* connection holds
//! the membership (the store reports the member down when it ends or stays silent past its
//! bound) and carries the heartbeat, sent by one thread, and the short requests of
//! [`Member::own`], [`Member::leave`] and the beginning and end of a change; the *events*
//! connection is read by the other thread, which waits for the group's events, takes part in
//! every change (the application calls nothing for it) and queues what the application reads
//! with [`Member::next_event`]. Both threads are stopped and joined, and both connections
//! closed, by [`Member::leave`] or on drop.
//!
//! A membership change (a join or a leave) is one at a time per group: its initiator swaps the
//! group's event key from absent to the change's tag (retrying every 100 ms while another
//! change runs, up to the control timeout); every member then (the initiator among them)
//! publishes its info under the change's keys and reads the others', each other member marks
//! its part done under the change's keys, and the initiator, once all have or the control
//! timeout has passed, removes the change's keys and the event key. A member that the store
//! reports down (its connection ended, or its heartbeat stopped past its loss bound) or that
//! leaves while the change runs stops counting for it at once: no one waits for it any longer,
//! and the [`Change`] names it among the [`Change::down`]. A member still alive that did not
//! take part within the control timeout is named among the [`Change::missing`]; the change
//! does not wait longer.
//!
//! When a member's own connection to the store fails, its application is told
//! ([`MemberEvent::Lost`]), a change it is making ends at once with an error, and
//! [`Member::leave`] and drop return promptly.
//!
//! Keys under `shmem/group/` are the groups'.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::client::{Client, TcpDial};
use crate::wire::{GroupEvent, GroupEventKind};
use crate::{BootstrapError, Server};

/// Most events a member keeps for its application; older ones are dropped (and counted, see
/// [`Member::dropped_events`]) when it does not read them.
pub const MEMBER_EVENT_QUEUE: usize = 1024;

/// Stack of a member's threads: they parse frames and keep a few values.
const THREAD_STACK: usize = 256 * 1024;

/// Pause between tries to begin a change while another runs.
const CHANGE_RETRY: Duration = Duration::from_millis(100);

/// Longest wait for one key of a change before the member looks again for members reported
/// down since the change began.
const DOWN_POLL: Duration = Duration::from_millis(100);

/// How a process joins a group ([`Member::join`]).
#[derive(Debug, Clone)]
pub struct GroupOptions {
    /// Most members the group holds at once; its ranks are `0..size`. Every member must say
    /// the same.
    pub size: u32,
    /// The rank to hold; `None`: the store picks the lowest free rank at or after its cursor
    /// for the group, which then moves past it (ranks asked for explicitly are skipped).
    pub rank: Option<u32>,
    /// How often the member's heartbeat is sent (default 2 s).
    pub heartbeat: Duration,
    /// How long the member may stay silent before the store reports it down (default 6 s:
    /// three heartbeats). A member whose connection ends is reported at once.
    pub loss: Duration,
    /// Whether the keys a member owns ([`Member::own`]) are removed when it leaves or is
    /// reported down (the group's first member decides; default true).
    pub drop_owned: bool,
    /// Bound of each membership change: the wait for the group's event key, and the exchange
    /// (default 120 s).
    pub control_timeout: Duration,
    /// What this member publishes to the others in every change (its address, say).
    pub info: Vec<u8>,
}

impl GroupOptions {
    /// Options for a group of `size` with the defaults.
    pub fn new(size: u32) -> GroupOptions {
        GroupOptions {
            size,
            rank: None,
            heartbeat: Duration::from_secs(2),
            loss: Duration::from_secs(6),
            drop_owned: true,
            control_timeout: Duration::from_secs(120),
            info: Vec::new(),
        }
    }
}

/// Whether a change adds or removes its initiator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// The initiator joins the exchange of the group.
    Join,
    /// The initiator leaves the group.
    Leave,
}

/// A membership change as one member saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Its tag (the event key's value while it ran).
    pub tag: String,
    /// A join or a leave.
    pub kind: ChangeKind,
    /// Rank of the member that made it.
    pub rank: u32,
    /// Id of the member that made it.
    pub member: String,
    /// The info each member taking part published, by rank.
    pub infos: Vec<(u32, Vec<u8>)>,
    /// Ranks that were to take part, still alive, but did not within the control timeout.
    pub missing: Vec<u32>,
    /// Ranks that were to take part but were reported down (their connection ended, or their
    /// heartbeat stopped past their loss bound) or left while the change ran, before they
    /// had done their part: the change did not wait for them.
    pub down: Vec<u32>,
}

/// What a member's application learns about its group, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberEvent {
    /// Another member joined the group with this rank.
    Joined {
        /// Its rank.
        rank: u32,
        /// Its id.
        member: String,
    },
    /// Another member left.
    Left {
        /// Its rank.
        rank: u32,
        /// Its id.
        member: String,
    },
    /// Another member is gone: its connection ended, or it was silent past its bound.
    Down {
        /// Its rank.
        rank: u32,
        /// Its id.
        member: String,
        /// What the store saw.
        reason: String,
    },
    /// This member took part in another member's change.
    Changed(Change),
    /// The member's events or control connection failed (the text says which and why): no
    /// more events come, and the store reports this member down.
    Lost(String),
}

/// Events a thread queues for an application to read, oldest first. At most `cap` are kept:
/// when the application does not read them, the oldest are dropped, and counted.
pub struct EventQueue<T> {
    cap: usize,
    queue: Mutex<VecDeque<T>>,
    arrived: Condvar,
    dropped: AtomicU64,
}

impl<T> EventQueue<T> {
    /// An empty queue keeping at most `cap` events.
    pub fn new(cap: usize) -> EventQueue<T> {
        EventQueue {
            cap,
            queue: Mutex::new(VecDeque::new()),
            arrived: Condvar::new(),
            dropped: AtomicU64::new(0),
        }
    }

    /// Queues `event`, dropping the oldest when the queue is full.
    pub fn push(&self, event: T) {
        let mut q = lock(&self.queue);
        if q.len() >= self.cap {
            q.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        q.push_back(event);
        self.arrived.notify_all();
    }

    /// Waits up to `timeout` for the next event; `None` at the timeout.
    pub fn next(&self, timeout: Duration) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut q = lock(&self.queue);
        loop {
            if let Some(e) = q.pop_front() {
                return Some(e);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            q = self
                .arrived
                .wait_timeout(q, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Events dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// What a member's threads share with it.
struct Shared {
    group: String,
    rank: u32,
    id: String,
    info: Vec<u8>,
    control_timeout: Duration,
    stop: AtomicBool,
    /// Stop, and the heartbeat's sleep, under one lock.
    wake: (Mutex<()>, Condvar),
    events: EventQueue<MemberEvent>,
    /// Where the events thread sends the result of a change this member began.
    own_change: Mutex<Option<(String, Sender<Change>)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn push(&self, event: MemberEvent) {
        self.events.push(event);
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }
}

/// This process's membership of a group of a store (see the module's documentation).
pub struct Member {
    shared: Arc<Shared>,
    control: Arc<Client>,
    events: Arc<Client>,
    threads: Vec<JoinHandle<()>>,
    joined: Change,
    left: bool,
}

impl std::fmt::Debug for Member {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Member")
            .field("group", &self.shared.group)
            .field("rank", &self.shared.rank)
            .field("id", &self.shared.id)
            .finish_non_exhaustive()
    }
}

/// Keys of a change's exchange.
fn change_prefix(group: &str, tag: &str) -> String {
    format!("shmem/group/{group}/x/{tag}/")
}

/// A tag no other change of this store has: the initiator's rank, its process and a count.
fn change_tag(kind: ChangeKind, rank: u32) -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let k = match kind {
        ChangeKind::Join => 'J',
        ChangeKind::Leave => 'L',
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{k}{rank}.{}.{}.{nanos}",
        std::process::id(),
        COUNT.fetch_add(1, Ordering::Relaxed)
    )
}

impl Member {
    /// Joins `group` of the store `dial` names as `id` (unique in the group; its `ip:port`,
    /// say), connecting with retries for up to `connect_timeout`; then makes the join's
    /// membership change with the members there (see the module's documentation). Fails
    /// naming the group when the store refuses the member (group full: its size; size
    /// differs; rank or id taken) or the change cannot begin within the control timeout.
    pub fn join(
        dial: &TcpDial,
        group: &str,
        id: &str,
        options: &GroupOptions,
        connect_timeout: Duration,
    ) -> Result<Member, BootstrapError> {
        if let Some(rank) = options.rank.filter(|&r| r >= options.size) {
            return Err(BootstrapError::Protocol {
                op: "group join",
                message: format!(
                    "group '{group}': rank {rank} out of range for its size {}",
                    options.size
                ),
            });
        }
        let control = Arc::new(Client::connect_open(dial, connect_timeout)?);
        let events = Arc::new(Client::connect_open(dial, connect_timeout)?);
        let start = events.group_watch(group, u64::MAX, Duration::ZERO)?.last;
        let rank = control.group_join(
            group,
            id,
            options.size,
            options.rank,
            options.loss,
            options.drop_owned,
        )?;
        let shared = Arc::new(Shared {
            group: group.into(),
            rank,
            id: id.into(),
            info: options.info.clone(),
            control_timeout: options.control_timeout,
            stop: AtomicBool::new(false),
            wake: (Mutex::new(()), Condvar::new()),
            events: EventQueue::new(MEMBER_EVENT_QUEUE),
            own_change: Mutex::new(None),
        });
        let mut member = Member {
            shared: Arc::clone(&shared),
            control: Arc::clone(&control),
            events: Arc::clone(&events),
            threads: Vec::new(),
            joined: Change {
                tag: String::new(),
                kind: ChangeKind::Join,
                rank,
                member: id.into(),
                infos: Vec::new(),
                missing: Vec::new(),
                down: Vec::new(),
            },
            left: false,
        };
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .stack_size(THREAD_STACK)
                .spawn(f)
                .map_err(|source| BootstrapError::Io {
                    op: "group join",
                    source,
                })
        };
        let (s, c, beat) = (Arc::clone(&shared), control, options.heartbeat);
        member.threads.push(spawn(
            "shmem-group-beat",
            Box::new(move || heartbeat(&s, &c, beat)),
        )?);
        let (s, e) = (Arc::clone(&shared), events);
        member.threads.push(spawn(
            "shmem-group-events",
            Box::new(move || watch_events(&s, &e, start, beat)),
        )?);
        member.joined = member.change(ChangeKind::Join)?;
        Ok(member)
    }

    /// The rank this member holds.
    pub fn rank(&self) -> u32 {
        self.shared.rank
    }

    /// This member's id.
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The group's name.
    pub fn group(&self) -> &str {
        &self.shared.group
    }

    /// The join's change: who took part and what they published.
    pub fn joined(&self) -> &Change {
        &self.joined
    }

    /// Events dropped because the application did not read them ([`MEMBER_EVENT_QUEUE`]).
    pub fn dropped_events(&self) -> u64 {
        self.shared.events.dropped()
    }

    /// The group's members now, as (rank, id).
    pub fn members(&self) -> Result<Vec<(u32, String)>, BootstrapError> {
        Ok(self
            .control
            .group_watch(&self.shared.group, u64::MAX, Duration::ZERO)?
            .members)
    }

    /// Records `key` as this member's: it is removed when the member leaves or is reported
    /// down, if the group was made so ([`GroupOptions::drop_owned`]).
    pub fn own(&self, key: &str) -> Result<(), BootstrapError> {
        self.control.group_own(&self.shared.group, key)
    }

    /// Waits up to `timeout` for the next event of the group; `None` at the timeout.
    pub fn next_event(&self, timeout: Duration) -> Option<MemberEvent> {
        self.shared.events.next(timeout)
    }

    /// Leaves the group: makes the leave's membership change with the members, then ends the
    /// membership, stops the member's threads and closes its connections. Returns the change.
    pub fn leave(mut self) -> Result<Change, BootstrapError> {
        let change = self.change(ChangeKind::Leave);
        let left = self.control.group_leave(&self.shared.group);
        self.left = true;
        self.stop();
        let change = change?;
        left?;
        Ok(change)
    }

    /// Makes a membership change of kind `kind`: waits for the group's event key, lets the
    /// events thread run the exchange, ends the change.
    fn change(&self, kind: ChangeKind) -> Result<Change, BootstrapError> {
        let group = &self.shared.group;
        let bound = self.shared.control_timeout;
        let deadline = Instant::now() + bound;
        let tag = change_tag(kind, self.shared.rank);
        let (tx, rx) = mpsc::channel();
        *lock(&self.shared.own_change) = Some((tag.clone(), tx));
        let op = "group change";
        loop {
            let (begun, current) = match self.control.group_change(group, true, &tag) {
                Ok(answer) => answer,
                Err(e) => {
                    *lock(&self.shared.own_change) = None;
                    return Err(e);
                }
            };
            if begun {
                break;
            }
            if Instant::now() >= deadline {
                *lock(&self.shared.own_change) = None;
                let current = String::from_utf8_lossy(&current.unwrap_or_default()).into_owned();
                return Err(BootstrapError::Protocol {
                    op,
                    message: format!(
                        "group '{group}': member {} could not begin its change within {:.1} s \
                         (the control timeout): change '{current}' of another member still runs",
                        self.shared.rank,
                        bound.as_secs_f64()
                    ),
                });
            }
            std::thread::sleep(
                CHANGE_RETRY.min(deadline.saturating_duration_since(Instant::now())),
            );
        }
        // The events thread runs the exchange when it sees the change begun; it gives up at
        // the same deadline. It drops the sender when its connection fails.
        let result = rx.recv_timeout(bound + Duration::from_secs(5));
        *lock(&self.shared.own_change) = None;
        let ended = self.control.group_change(group, false, &tag);
        let change = result.map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => BootstrapError::Timeout {
                op,
                key: wire_key(group),
                after: bound,
            },
            mpsc::RecvTimeoutError::Disconnected => BootstrapError::Protocol {
                op,
                message: format!(
                    "group '{group}': member {}'s change '{tag}' ended unfinished: its events \
                     connection to the store failed",
                    self.shared.rank
                ),
            },
        })?;
        ended?;
        Ok(change)
    }

    fn stop(&mut self) {
        {
            let _g = lock(&self.shared.wake.0);
            self.shared.stop.store(true, Ordering::SeqCst);
            self.shared.wake.1.notify_all();
        }
        self.events.shutdown();
        self.control.shutdown();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn wire_key(group: &str) -> String {
    crate::wire::group_event_key(group)
}

impl Drop for Member {
    /// Stops the member's threads and closes its connections without leaving: the others see
    /// it down (its connection ended), as they would if the process died.
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop();
        }
    }
}

/// The heartbeat thread: a short request on the control connection every `every`.
fn heartbeat(shared: &Shared, control: &Client, every: Duration) {
    loop {
        {
            let g = lock(&shared.wake.0);
            if shared.stopped() {
                return;
            }
            let _ = shared.wake.1.wait_timeout(g, every);
        }
        if shared.stopped() {
            return;
        }
        if let Err(e) = control.group_watch(&shared.group, u64::MAX, Duration::ZERO) {
            if !shared.stopped() {
                tracing::warn!(
                    "group '{}': member {}'s heartbeat failed: {e}",
                    shared.group,
                    shared.rank
                );
                shared.push(MemberEvent::Lost(format!("heartbeat: {e}")));
            }
            return;
        }
    }
}

/// The events thread: reads the group's events after `after`, takes part in changes, queues
/// what the application reads.
fn watch_events(shared: &Shared, events: &Client, mut after: u64, slice: Duration) {
    while !shared.stopped() {
        let view = match events.group_watch(&shared.group, after, slice) {
            Ok(view) => view,
            Err(e) => {
                // A change this member makes waits for this thread no longer.
                *lock(&shared.own_change) = None;
                if !shared.stopped() {
                    shared.push(MemberEvent::Lost(format!("events: {e}")));
                }
                return;
            }
        };
        for e in view.events {
            after = after.max(e.seq);
            handle_event(shared, events, e);
        }
    }
}

fn handle_event(shared: &Shared, events: &Client, e: GroupEvent) {
    let ours = e.rank == shared.rank && e.member == shared.id;
    match e.kind {
        GroupEventKind::Joined if !ours => shared.push(MemberEvent::Joined {
            rank: e.rank,
            member: e.member,
        }),
        GroupEventKind::Left if !ours => shared.push(MemberEvent::Left {
            rank: e.rank,
            member: e.member,
        }),
        GroupEventKind::Down if !ours => shared.push(MemberEvent::Down {
            rank: e.rank,
            member: e.member,
            reason: e.detail,
        }),
        GroupEventKind::ChangeBegun if e.ranks.contains(&shared.rank) => {
            let change = exchange(shared, events, &e, ours);
            if ours {
                let mine = lock(&shared.own_change);
                if let Some((tag, tx)) = mine.as_ref().filter(|(tag, _)| *tag == e.detail) {
                    debug_assert_eq!(*tag, change.tag);
                    let _ = tx.send(change);
                }
            } else {
                shared.push(MemberEvent::Changed(change));
            }
        }
        _ => {}
    }
}

/// Members of a change reported down (or gone) since it began, as the group's events say.
struct Gone {
    group: String,
    /// Number of the last event looked at.
    after: u64,
    ranks: Vec<u32>,
}

impl Gone {
    /// Reads the group's events since the last look (without waiting); a failure leaves the
    /// set as it was (the wait for the key then reports the failure).
    fn refresh(&mut self, c: &Client, taking_part: &[u32]) {
        loop {
            let Ok(view) = c.group_watch(&self.group, self.after, Duration::ZERO) else {
                return;
            };
            if view.events.is_empty() {
                return;
            }
            for ev in view.events {
                self.after = self.after.max(ev.seq);
                let gone = matches!(ev.kind, GroupEventKind::Down | GroupEventKind::Left);
                if gone && taking_part.contains(&ev.rank) && !self.ranks.contains(&ev.rank) {
                    self.ranks.push(ev.rank);
                }
            }
        }
    }
}

/// What became of one key a member of a change was to write.
enum Awaited {
    Written(Vec<u8>),
    /// Its member was reported down or left first.
    Down,
    /// Not written by the deadline, or the store could not be asked.
    Missing,
}

/// Waits until `key` is written, its member `rank` is reported down, or `deadline` passes,
/// looking for reports every [`DOWN_POLL`].
fn await_key(
    c: &Client,
    key: &str,
    rank: u32,
    taking_part: &[u32],
    gone: &mut Gone,
    deadline: Instant,
) -> Awaited {
    loop {
        // Looked at first: a member down before it wrote never will, and a key written in
        // time is taken even when its member went down after.
        let left = deadline.saturating_duration_since(Instant::now());
        match c.watch(key, None, left.min(DOWN_POLL)) {
            Ok(Some(v)) => return Awaited::Written(v),
            Ok(None) | Err(BootstrapError::Timeout { .. }) => {}
            Err(_) => return Awaited::Missing,
        }
        gone.refresh(c, taking_part);
        if gone.ranks.contains(&rank) {
            return Awaited::Down;
        }
        if deadline <= Instant::now() {
            return Awaited::Missing;
        }
    }
}

/// This member's part in the change `e` begun: publish its info, read the others', and mark
/// its part done (another's change) or wait for every other member's mark and remove the
/// change's keys (its own). Members reported down meanwhile are not waited for.
fn exchange(shared: &Shared, c: &Client, e: &GroupEvent, initiator: bool) -> Change {
    let deadline = Instant::now() + shared.control_timeout;
    let prefix = change_prefix(&shared.group, &e.detail);
    let kind = if e.detail.starts_with('L') {
        ChangeKind::Leave
    } else {
        ChangeKind::Join
    };
    let mut change = Change {
        tag: e.detail.clone(),
        kind,
        rank: e.rank,
        member: e.member.clone(),
        infos: Vec::new(),
        missing: Vec::new(),
        down: Vec::new(),
    };
    let warn = |what: &str, err: BootstrapError| {
        tracing::warn!(
            "group '{}': member {} could not {what} in change '{}': {err}",
            shared.group,
            shared.rank,
            e.detail
        );
    };
    if let Err(err) = c.set(&format!("{prefix}{}", shared.rank), &shared.info) {
        warn("publish its info", err);
    }
    let mut gone = Gone {
        group: shared.group.clone(),
        after: e.seq,
        ranks: Vec::new(),
    };
    for &r in &e.ranks {
        match await_key(c, &format!("{prefix}{r}"), r, &e.ranks, &mut gone, deadline) {
            Awaited::Written(info) => change.infos.push((r, info)),
            Awaited::Down => change.down.push(r),
            Awaited::Missing => change.missing.push(r),
        }
    }
    let done = |r: u32| format!("{prefix}done/{r}");
    if !initiator {
        if let Err(err) = c.set(&done(shared.rank), b"") {
            warn("mark its part done", err);
        }
        return change;
    }
    // Every other member marks its part done once it has read all infos.
    let mut late = Vec::new();
    for &r in e.ranks.iter().filter(|&&r| r != shared.rank) {
        if change.down.contains(&r) || change.missing.contains(&r) {
            continue;
        }
        match await_key(c, &done(r), r, &e.ranks, &mut gone, deadline) {
            Awaited::Written(_) => {}
            Awaited::Down => change.down.push(r),
            Awaited::Missing => late.push(r),
        }
    }
    if !late.is_empty() {
        // They published their info but did not finish reading the others' in time.
        tracing::warn!(
            "group '{}': change '{}': members {late:?} did not finish their part within \
             {:.1} s",
            shared.group,
            e.detail,
            shared.control_timeout.as_secs_f64()
        );
    }
    change.down.sort_unstable();
    if let Err(err) = c.delete_prefix(&prefix) {
        warn("remove the change's keys", err);
    }
    change
}

/// A store that the first process to bind its address serves, and every process reaches as a
/// client ([`Store::serve_or_join`]).
#[derive(Debug)]
pub struct Store {
    /// The store this process serves, when it won the bind.
    pub server: Option<Server>,
    /// This process's connection to the store (its own, when it serves it).
    pub client: Client,
}

impl Store {
    /// Binds the address `dial` names and serves a store of groups there ([`Server::open`],
    /// at most `max_clients` clients, TLS with `tls`), if this process is the first to; else
    /// (the address is in use, or is not this host's) connects to the store there as a client,
    /// retrying for up to `connect_timeout`. Either way returns a connected client.
    ///
    /// Where the port was in use but no store there answers this process (the one that held
    /// it is ending: a previous job's, or a process that lost interest), the bind is tried
    /// again every [`REBIND_EVERY`], so the address gets a server as soon as it is free. A
    /// holder that takes the connection but never answers HELLO is a store that hangs: its
    /// timeout ([`BootstrapError::Timeout`]) is the error, as for any client.
    pub fn serve_or_join(
        dial: &TcpDial,
        tls: Option<Arc<rustls::ServerConfig>>,
        max_clients: usize,
        connect_timeout: Duration,
    ) -> Result<Store, BootstrapError> {
        let deadline = Instant::now() + connect_timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let in_use = match dial.addr.bind() {
                Ok(listener) => {
                    let server = Server::open(&dial.job, max_clients);
                    server
                        .serve_tcp(listener, tls)
                        .map_err(|source| BootstrapError::Io {
                            op: "serve the store",
                            source,
                        })?;
                    let client = Client::connect_open(dial, left)?;
                    return Ok(Store {
                        server: Some(server),
                        client,
                    });
                }
                Err(e) => {
                    tracing::debug!("store at {}: another process serves it ({e})", dial.addr);
                    matches!(
                        e,
                        crate::addr::AddrError::PortInUse { .. }
                            | crate::addr::AddrError::RangeInUse { .. }
                    )
                }
            };
            let slice = if in_use { left.min(REBIND_EVERY) } else { left };
            match Client::connect_open(dial, slice) {
                Ok(client) => {
                    return Ok(Store {
                        server: None,
                        client,
                    })
                }
                Err(BootstrapError::Unreachable { .. }) if in_use && slice < left => {}
                // The error names the whole time this call tried, not its last slice.
                Err(BootstrapError::Unreachable {
                    who, addr, last, ..
                }) => {
                    return Err(BootstrapError::Unreachable {
                        who,
                        addr,
                        after: connect_timeout,
                        last,
                    })
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// How long [`Store::serve_or_join`] tries to reach the store that holds its port before it
/// tries the bind again.
pub const REBIND_EVERY: Duration = Duration::from_millis(500);
