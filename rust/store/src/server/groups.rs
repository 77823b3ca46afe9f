//! Groups whose members come and go: membership with ranks handed out by the store, liveness
//! (a member is reported down when its connection ends or it is not heard from within its
//! bound), keys a member owns, the event log each group's watchers read, and the group's
//! membership change (one at a time, a compare-and-swap of its event key). Also WATCH, the
//! wait for a key to change.
//!
//! A membership belongs to the connection that joined: every request of that connection is
//! its heartbeat, and the end of the connection is the member's end. Silence is noticed by
//! whoever looks at the group (a watcher wakes for the earliest deadline of its members, so a
//! group with any watcher reports a silent member within about its bound). A group is
//! forgotten, ranks and cursor included, when its last member goes. Must never touch a socket:
//! callers release the lock before any I/O.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::connection::{Connection, Next};
use super::state::{Entry, State};
use super::Shared;
use crate::wire::{
    group_event_key, GroupEvent, GroupEventKind, GroupView, Reply, MAX_GROUP_EVENTS, MAX_KEY_LEN,
};

/// Largest group size a GROUP_JOIN may name.
pub const MAX_GROUP_SIZE: u32 = 16384;
/// Longest member id, in bytes.
pub const MAX_MEMBER_ID_LEN: usize = 256;
/// Most keys one member may own at once.
pub const MAX_OWNED_KEYS: usize = 4096;
/// Events a group keeps for watchers that are behind.
const KEPT_EVENTS: usize = 2 * MAX_GROUP_EVENTS;
/// Why a member whose connection ended is down (the detail of its event).
pub const CONNECTION_ENDED: &str = "its connection to the store ended";
/// Shortest silence bound a member may ask for.
const MIN_LOSS: Duration = Duration::from_millis(100);

/// One group's state.
pub(super) struct Group {
    size: u32,
    drop_owned: bool,
    /// Where the search for the next rank the store picks starts.
    cursor: u32,
    /// Members by rank.
    members: BTreeMap<u32, Member>,
    events: VecDeque<GroupEvent>,
    /// The change in progress: its tag and the rank of the member that began it.
    change: Option<(String, u32)>,
}

struct Member {
    id: String,
    /// The connection that joined.
    conn: u64,
    /// Silence after which the member is reported down.
    loss: Duration,
    last_seen: Instant,
    /// A PE of the job whose connection is inside a request (a store barrier at finalize):
    /// the store itself holds its answer, so its silence is not counted.
    busy: bool,
    owned: Vec<String>,
}

/// The key a group's watchers wait on: no client key starts with a NUL byte's worth of
/// meaning, and one that does only costs a watcher a spurious wake-up.
fn watch_key(group: &str) -> String {
    format!("\0group/{group}")
}

impl State {
    fn log(&mut self, group: &str, kind: GroupEventKind, rank: u32, member: &str, detail: String) {
        let ranks = match kind {
            GroupEventKind::ChangeBegun => self
                .groups
                .get(group)
                .map(|g| g.members.keys().copied().collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        self.group_seq += 1;
        let seq = self.group_seq;
        if let Some(g) = self.groups.get_mut(group) {
            if g.events.len() == KEPT_EVENTS {
                g.events.pop_front();
            }
            g.events.push_back(GroupEvent {
                seq,
                kind,
                rank,
                member: member.to_string(),
                detail: cut(detail),
                ranks,
            });
        }
        self.notify(&watch_key(group));
    }

    /// Removes the member of `group` at `rank` (it left, or is down for `down`): frees its
    /// rank, ends the change it began, drops what it owned if the group says so, and forgets
    /// the group once it has no member left.
    fn remove_member(&mut self, group: &str, rank: u32, down: Option<String>) {
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        let Some(member) = g.members.remove(&rank) else {
            return;
        };
        let owned = if g.drop_owned {
            member.owned
        } else {
            Vec::new()
        };
        let change = match &g.change {
            Some((tag, holder)) if *holder == rank => {
                let tag = tag.clone();
                g.change = None;
                Some(tag)
            }
            _ => None,
        };
        for key in owned {
            self.remove(&key);
        }
        let kind = match &down {
            Some(_) => GroupEventKind::Down,
            None => GroupEventKind::Left,
        };
        self.log(group, kind, rank, &member.id, down.unwrap_or_default());
        if let Some(tag) = change {
            self.remove(&group_event_key(group));
            self.log(group, GroupEventKind::ChangeEnded, rank, &member.id, tag);
        }
        if self.groups.get(group).is_some_and(|g| g.members.is_empty()) {
            self.groups.remove(group);
            self.notify(&watch_key(group));
        }
    }

    /// Reports down every member of `group` not heard from within its bound; returns when the
    /// next one would be due (`None`: no member).
    fn sweep(&mut self, group: &str, now: Instant) -> Option<Instant> {
        let g = self.groups.get(group)?;
        let late: Vec<(u32, Duration, Duration)> = (g.members.iter())
            .filter(|(_, m)| !m.busy && now.saturating_duration_since(m.last_seen) > m.loss)
            .map(|(&r, m)| (r, now.saturating_duration_since(m.last_seen), m.loss))
            .collect();
        for (rank, silent, loss) in late {
            let why = format!(
                "not heard from for {:.1} s (its bound is {:.1} s): its heartbeat stopped",
                silent.as_secs_f64(),
                loss.as_secs_f64()
            );
            tracing::warn!("store: member {rank} of group '{group}' is down: {why}");
            self.remove_member(group, rank, Some(why));
        }
        let g = self.groups.get(group)?;
        (g.members.values())
            .filter(|m| !m.busy)
            .map(|m| m.last_seen + m.loss)
            .min()
    }

    /// Marks the members connection `conn` holds as heard from now, and as `busy` or not.
    fn touch(&mut self, groups: &[String], conn: u64, now: Instant, busy: bool) {
        for name in groups {
            if let Some(g) = self.groups.get_mut(name) {
                for m in g.members.values_mut().filter(|m| m.conn == conn) {
                    m.last_seen = now;
                    m.busy = busy;
                }
            }
        }
    }

    /// The rank connection `conn` holds in `group`.
    fn rank_of(&self, group: &str, conn: u64) -> Option<u32> {
        let g = self.groups.get(group)?;
        g.members
            .iter()
            .find(|(_, m)| m.conn == conn)
            .map(|(&r, _)| r)
    }

    fn view(&self, group: &str, after: u64) -> GroupView {
        let Some(g) = self.groups.get(group) else {
            return GroupView {
                last: self.group_seq,
                first: self.group_seq + 1,
                ..GroupView::default()
            };
        };
        GroupView {
            last: g.events.back().map_or(0, |e| e.seq),
            first: g.events.front().map_or(self.group_seq + 1, |e| e.seq),
            members: g.members.iter().map(|(&r, m)| (r, m.id.clone())).collect(),
            events: (g.events.iter())
                .filter(|e| e.seq > after)
                .take(MAX_GROUP_EVENTS)
                .cloned()
                .collect(),
        }
    }

    /// Wakes whoever waits on `key` (a write, a removal, a group event).
    pub(super) fn notify(&self, key: &str) {
        if let Some(waiters) = self.waiters.get(key) {
            waiters.written.notify_all();
        }
    }
}

/// Cuts a detail to what the wire carries.
fn cut(mut text: String) -> String {
    if text.len() > MAX_KEY_LEN {
        let mut end = MAX_KEY_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

impl Shared {
    /// Connection `conn` has ended: each member it held is down.
    pub(super) fn connection_closed(&self, conn: u64, groups: &[String]) {
        let mut state = self.lock();
        for group in groups {
            if let Some(rank) = state.rank_of(group, conn) {
                tracing::info!(
                    "store: member {rank} of group '{group}' is down: its connection ended"
                );
                state.remove_member(group, rank, Some(CONNECTION_ENDED.into()));
            }
        }
    }

    /// GROUP_WATCH: waits until `group` has events after `after` or `timeout` passes, and
    /// returns its view then. Members silent past their bound are reported down meanwhile.
    /// `watcher`: the groups and id of the connection asking, whose own members are heard.
    pub(super) fn watch_group(
        &self,
        group: &str,
        after: u64,
        timeout: Duration,
        watcher: Option<(&[String], u64)>,
    ) -> GroupView {
        let deadline = Instant::now().checked_add(timeout);
        let key = watch_key(group);
        let mut state = self.lock();
        loop {
            let now = Instant::now();
            if let Some((groups, conn)) = watcher {
                state.touch(groups, conn, now, false);
            }
            let due = state.sweep(group, now);
            let view = state.view(group, after);
            if !view.events.is_empty() || deadline.is_some_and(|d| now >= d) {
                return view;
            }
            // Wake for the earliest member's deadline too, to report it if it stays silent.
            let until = match (deadline, due) {
                (Some(d), Some(due)) => Some(d.min(due + Duration::from_millis(1))),
                (d, due) => d.or(due),
            };
            (state, _) = Shared::wait_key(state, &key, until);
        }
    }

    /// How long each member of `group` has been silent (rank, id, silence): zero for a PE
    /// inside a request.
    pub(super) fn silences(&self, group: &str) -> Vec<(u32, String, Duration)> {
        let now = Instant::now();
        let state = self.lock();
        let Some(g) = state.groups.get(group) else {
            return Vec::new();
        };
        (g.members.iter())
            .map(|(&rank, m)| {
                let silent = if m.busy {
                    Duration::ZERO
                } else {
                    now.saturating_duration_since(m.last_seen)
                };
                (rank, m.id.clone(), silent)
            })
            .collect()
    }

    /// Waits until `key` holds something other than `seen` or `timeout` passes (an
    /// unrepresentable deadline waits forever); returns what it holds then, or `None` at the
    /// timeout. A descriptor is an error.
    pub(super) fn wait_change(
        &self,
        key: &str,
        seen: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Option<Option<Arc<[u8]>>>, String> {
        let deadline = Instant::now().checked_add(timeout);
        let mut state = self.lock();
        loop {
            let now = match state.entries.get(key) {
                None => None,
                Some(Entry::Bytes(v)) => Some(Arc::clone(v)),
                Some(Entry::Fd(_)) => return Err("key holds a file descriptor".into()),
            };
            if now.as_deref() != seen {
                return Ok(Some(now));
            }
            let in_time;
            (state, in_time) = Self::wait_key(state, key, deadline);
            if !in_time {
                return Ok(None);
            }
        }
    }
}

impl Connection {
    fn group_error(&self, op: &str, group: &str, why: impl std::fmt::Display) -> Next {
        Next::Reply(
            Reply::Error(format!("{op} of group '{group}': {why}")),
            None,
        )
    }

    /// Counts this request as the heartbeat of the members this connection holds: on its
    /// arrival (`arriving`) and, for a PE's connection, once it is answered, the PE being busy
    /// in between. A client without a PE's place is counted from its requests' arrivals only,
    /// whatever they wait for.
    pub(super) fn heard(&self, arriving: bool) {
        if !self.groups.is_empty() && (arriving || !self.open) {
            self.shared.lock().touch(
                &self.groups,
                self.id,
                Instant::now(),
                arriving && !self.open,
            );
        }
    }

    pub(super) fn group_join(
        &mut self,
        group: String,
        member: String,
        size: u32,
        rank: Option<u32>,
        loss_ms: u64,
        drop_owned: bool,
    ) -> Next {
        let op = "GROUP_JOIN";
        if size == 0 || size > MAX_GROUP_SIZE {
            return self.group_error(
                op,
                &group,
                format_args!("size {size} out of range (1..={MAX_GROUP_SIZE})"),
            );
        }
        if member.len() > MAX_MEMBER_ID_LEN {
            return self.group_error(
                op,
                &group,
                format_args!(
                    "member id is {} bytes, limit {MAX_MEMBER_ID_LEN}",
                    member.len()
                ),
            );
        }
        let loss = Duration::from_millis(loss_ms);
        if loss < MIN_LOSS {
            return self.group_error(
                op,
                &group,
                format_args!(
                    "a loss bound of {loss_ms} ms is below {} ms",
                    MIN_LOSS.as_millis()
                ),
            );
        }
        let now = Instant::now();
        let mut state = self.shared.lock();
        state.sweep(&group, now);
        if state.rank_of(&group, self.id).is_some() {
            return self.group_error(op, &group, "this connection is a member already");
        }
        let g = state.groups.entry(group.clone()).or_insert_with(|| Group {
            size,
            drop_owned,
            cursor: 0,
            members: BTreeMap::new(),
            events: VecDeque::new(),
            change: None,
        });
        if g.size != size {
            let have = g.size;
            return self.group_error(
                op,
                &group,
                format_args!("it has size {have}, this member says {size}"),
            );
        }
        if let Some((&r, _)) = g.members.iter().find(|(_, m)| m.id == member) {
            return self.group_error(op, &group, crate::wire::member_id_held(&member, r));
        }
        let picked = match rank {
            Some(r) if r >= size => {
                return self.group_error(
                    op,
                    &group,
                    format_args!("rank {r} out of range for its size {size}"),
                )
            }
            Some(r) if g.members.contains_key(&r) => {
                let holder = g.members[&r].id.clone();
                return self.group_error(
                    op,
                    &group,
                    format_args!("rank {r} is held by member '{holder}'"),
                );
            }
            Some(r) => r,
            None => {
                let found = (0..size)
                    .map(|i| (g.cursor + i) % size)
                    .find(|r| !g.members.contains_key(r));
                match found {
                    Some(r) => {
                        g.cursor = (r + 1) % size;
                        r
                    }
                    None => {
                        return self.group_error(
                            op,
                            &group,
                            format_args!(
                                "it is full: its size is {size} and {size} members hold its ranks"
                            ),
                        )
                    }
                }
            }
        };
        g.members.insert(
            picked,
            Member {
                id: member.clone(),
                conn: self.id,
                loss,
                last_seen: now,
                busy: false,
                owned: Vec::new(),
            },
        );
        state.log(
            &group,
            GroupEventKind::Joined,
            picked,
            &member,
            String::new(),
        );
        drop(state);
        if !self.groups.contains(&group) {
            self.groups.push(group);
        }
        Next::Reply(Reply::Counter(i64::from(picked)), None)
    }

    pub(super) fn group_leave(&mut self, group: String) -> Next {
        let mut state = self.shared.lock();
        let Some(rank) = state.rank_of(&group, self.id) else {
            return self.group_error("GROUP_LEAVE", &group, "this connection is no member of it");
        };
        state.remove_member(&group, rank, None);
        drop(state);
        self.groups.retain(|g| *g != group);
        Next::Reply(Reply::Ok, None)
    }

    pub(super) fn group_own(&mut self, group: String, key: String) -> Next {
        let mut state = self.shared.lock();
        let Some(rank) = state.rank_of(&group, self.id) else {
            return self.group_error("GROUP_OWN", &group, "this connection is no member of it");
        };
        let Some(member) = state
            .groups
            .get_mut(&group)
            .and_then(|g| g.members.get_mut(&rank))
        else {
            return self.group_error("GROUP_OWN", &group, "this connection is no member of it");
        };
        if !member.owned.contains(&key) {
            if member.owned.len() >= MAX_OWNED_KEYS {
                return self.group_error(
                    "GROUP_OWN",
                    &group,
                    format_args!("member {rank} owns {MAX_OWNED_KEYS} keys already, the limit"),
                );
            }
            member.owned.push(key);
        }
        Next::Reply(Reply::Ok, None)
    }

    pub(super) fn group_watch(&self, group: String, after: u64, timeout_ms: u64) -> Next {
        let view = self.shared.watch_group(
            &group,
            after,
            Duration::from_millis(timeout_ms),
            Some((&self.groups, self.id)),
        );
        Next::Reply(Reply::Group(view), None)
    }

    pub(super) fn group_change(&self, group: String, begin: bool, tag: String) -> Next {
        let op = "GROUP_CHANGE";
        let key = group_event_key(&group);
        let mut state = self.shared.lock();
        let Some(rank) = state.rank_of(&group, self.id) else {
            return self.group_error(op, &group, "this connection is no member of it");
        };
        let current = match state.entries.get(&key) {
            None => None,
            Some(Entry::Bytes(v)) => Some(Arc::clone(v)),
            Some(Entry::Fd(_)) => {
                return self.group_error(op, &group, "its event key holds a file descriptor")
            }
        };
        let member = state.groups[&group].members[&rank].id.clone();
        let swapped = if begin {
            current.is_none()
        } else {
            current.as_deref() == Some(tag.as_bytes())
        };
        if !swapped {
            return Next::Reply(
                Reply::Swapped {
                    swapped: false,
                    current: current.map(|v| v.to_vec()),
                },
                None,
            );
        }
        if begin {
            state.put(key, Entry::Bytes(tag.as_bytes().into()));
            if let Some(g) = state.groups.get_mut(&group) {
                g.change = Some((tag.clone(), rank));
            }
            state.log(
                &group,
                GroupEventKind::ChangeBegun,
                rank,
                &member,
                tag.clone(),
            );
            Next::Reply(
                Reply::Swapped {
                    swapped: true,
                    current: Some(tag.into_bytes()),
                },
                None,
            )
        } else {
            state.remove(&key);
            if let Some(g) = state.groups.get_mut(&group) {
                g.change = None;
            }
            state.log(&group, GroupEventKind::ChangeEnded, rank, &member, tag);
            Next::Reply(
                Reply::Swapped {
                    swapped: true,
                    current: None,
                },
                None,
            )
        }
    }

    /// Answers WATCH.
    pub(super) fn watch(&self, key: String, seen: Option<Vec<u8>>, timeout_ms: u64) -> Next {
        let wait = Duration::from_millis(timeout_ms);
        match self.shared.wait_change(&key, seen.as_deref(), wait) {
            Ok(None) => Next::Reply(Reply::Timeout, None),
            Ok(Some(now)) => Next::Reply(Reply::Watched(now.map(|v| v.to_vec())), None),
            Err(why) => Next::Reply(Reply::Error(why), None),
        }
    }
}

/// Groups of a store, by name.
pub(super) type Groups = HashMap<String, Group>;
