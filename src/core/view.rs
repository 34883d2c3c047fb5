//! The live view requests route with: the ring over every configured server, the members
//! (one per server: its pool, health and rejoin log), and with auto-eject the ring over the
//! live ones. Replaced as a whole; a request loads it once and finishes on it.

use crate::core::failure::health::Health;
use crate::core::failure::rejoin::RejoinLog;
use crate::ring::Ring;
use crate::servers::Server;
use std::sync::Arc;

/// One configured server: its connection pool `P` (the blocking or the async client's), its
/// health, and the keys changed elsewhere while it is out. A server that stays in the list
/// across `set_servers` keeps its member.
pub(crate) struct Member<P> {
    pub(crate) server: Server,
    pub(crate) pool: P,
    pub(crate) health: Health,
    pub(crate) rejoin: RejoinLog,
    /// What the client reports about the server (metrics' labels made once).
    pub(crate) observe: crate::observe::PerServer,
    /// The server's item size limit, once learned.
    pub(crate) limit: crate::core::item_limit::ItemLimit,
}

/// See the module docs.
pub(crate) struct View<P> {
    /// The ring over every configured server; `members` is parallel to its servers.
    pub(crate) full: Arc<Ring>,
    pub(crate) members: Vec<Arc<Member<P>>>,
    /// `full`, or with auto-eject the ring over the live servers.
    pub(crate) routing: Arc<Ring>,
    /// `routing`'s server index → index into `members`.
    pub(crate) to_member: Vec<usize>,
}

impl<P> View<P> {
    /// The view over `members`; with `eject`, routing over the members that are not down.
    pub(crate) fn new(full: Arc<Ring>, members: Vec<Arc<Member<P>>>, eject: bool) -> View<P> {
        let (routing, to_member) = live_routing(&full, |i| eject && members[i].health.is_down());
        View {
            full,
            members,
            routing,
            to_member,
        }
    }

    /// The member every key is routed to when the ring in force has one server.
    pub(crate) fn sole_member(&self) -> Option<&Arc<Member<P>>> {
        if !self.routing.single() {
            return None;
        }
        self.members.get(*self.to_member.first()?)
    }

    /// The member owning `hashed` (the key as hashed), or `None` for an empty ring.
    pub(crate) fn owner(&self, hashed: &[u8]) -> Option<usize> {
        self.routing.route(hashed).map(|i| self.to_member[i])
    }

    /// A write or delete of `wire` (hashed as `hashed`) goes to member `owner`: if a server is
    /// ejected and the key's owner on the full ring is another member, that one records it
    /// ([`RejoinLog`]) with `owner` as the fallback holding the copy, to delete it on both when
    /// it returns. False when that member's log is not out, so nothing was recorded (unless
    /// `anyway`): this view is from before its rejoin, or it is being ejected right now.
    pub(crate) fn record_redirected(
        &self,
        hashed: &[u8],
        owner: usize,
        wire: &[u8],
        anyway: bool,
    ) -> bool {
        if self.to_member.len() == self.members.len() {
            return true; // nobody ejected
        }
        let (Some(out), Some(fallback)) = (
            self.full
                .route(hashed)
                .filter(|&i| i != owner)
                .and_then(|i| self.members.get(i)),
            self.members.get(owner),
        ) else {
            return true;
        };
        out.rejoin.record_copy(wire, &fallback.server.addr, anyway)
    }

    /// The members for `ring`'s servers: a server already present (same host and port, reached
    /// at the same address) keeps its member (pool, health), a new one gets `make(server)`.
    pub(crate) fn keep_or_make(
        &self,
        ring: &Ring,
        make: impl Fn(&Server) -> Arc<Member<P>>,
    ) -> Vec<Arc<Member<P>>> {
        ring.servers()
            .iter()
            .map(|s| {
                self.members
                    .iter()
                    .find(|m| {
                        m.server.host == s.host
                            && m.server.port == s.port
                            && m.server.connect_host() == s.connect_host()
                    })
                    .cloned()
                    .unwrap_or_else(|| make(s))
            })
            .collect()
    }
}

/// The routing ring over the servers of `full` for which `down(index)` is false, built
/// exactly as the flavor builds it for that list (live count and total weight change point
/// counts), with each of its servers' index in `full`. Nobody (or everybody) live: `full`
/// itself, and down servers fail fast.
fn live_routing(full: &Arc<Ring>, down: impl Fn(usize) -> bool) -> (Arc<Ring>, Vec<usize>) {
    let n = full.servers().len();
    let live: Vec<usize> = (0..n).filter(|&i| !down(i)).collect();
    if live.is_empty() || live.len() == n {
        return (full.clone(), (0..n).collect());
    }
    let servers = live.iter().map(|&i| full.servers()[i].clone()).collect();
    match full.with_servers(servers) {
        Ok(r) => (Arc::new(r), live),
        // Cannot happen for a subset of a list that built; keep the full ring.
        Err(_) => (full.clone(), (0..n).collect()),
    }
}
