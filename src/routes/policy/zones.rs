//! Zone replication: every write to each zone's route, reads from the local zone, a miss or
//! a failure read again from the other zones in order (Netflix EVCache's zones; mcrouter's
//! `AllSyncRoute`/`AllMajorityRoute` for writes and `MissFailoverRoute` for reads). A warming
//! zone takes writes and is never read. A write answers once the acknowledgement policy
//! ([`Ack`]) is met; a zone that missed a write others took is repaired before it is read
//! again (the key deleted there, or its server held out of reads until it is), so a zone
//! never serves a value older than one the route acknowledged.

use super::{Client, Count, Fut, Items, Node, Policy, Stored, join_all};
use crate::Expiry;
use crate::error::{Error, Result};
use crate::outcome::{DeleteOutcome, Item, StoreOutcome};
use crate::routes::{Class, Counter, RouteCas, RouteItem, Write, Written, is_failure};

/// How many zones must take a write before the route answers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Ack {
    /// One zone.
    One,
    /// More than half of the zones that are read (warming zones do not count).
    #[default]
    Quorum,
    /// Every zone that is read.
    All,
}

impl Ack {
    /// The zones that must take a write, of `zones` read zones.
    pub fn needed(self, zones: usize) -> usize {
        match self {
            Ack::One => 1.min(zones),
            Ack::Quorum => zones / 2 + 1,
            Ack::All => zones,
        }
    }
}

impl std::str::FromStr for Ack {
    type Err = Error;
    fn from_str(s: &str) -> Result<Ack> {
        match s {
            "one" => Ok(Ack::One),
            "quorum" | "majority" => Ok(Ack::Quorum),
            "all" => Ok(Ack::All),
            other => Err(Error::Config(format!(
                "unknown acknowledgement policy {other:?}: use one, quorum or all"
            ))),
        }
    }
}

/// One zone of a [`ZoneRoute`]: its name and route, and whether it is warming (written,
/// never read).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Zone<N> {
    /// The zone's name.
    pub name: String,
    /// The zone's route (a pool, or a route such as a gutter).
    pub route: N,
    /// Written, never read (a zone being filled before it serves).
    pub warming: bool,
}

impl<N> Zone<N> {
    /// A zone that is read and written.
    pub fn new(name: impl Into<String>, route: N) -> Zone<N> {
        Zone {
            name: name.into(),
            route,
            warming: false,
        }
    }

    /// The same zone, written and never read.
    pub fn warming(mut self) -> Zone<N> {
        self.warming = true;
        self
    }
}

/// Zone replication in a route: `zones`, the `local` zone that reads go to first, and the
/// acknowledgement policy of writes.
///
/// ```
/// use memshard::routes::{RouteNode, policy::zones::{Ack, Zone, ZoneRoute}};
/// let route = ZoneRoute::new(
///     [Zone::new("a", RouteNode::pool("a")), Zone::new("b", RouteNode::pool("b"))],
///     "b",
///     Ack::All,
/// );
/// assert_eq!(route.read_order()?, [1, 0]);
/// # Ok::<(), memshard::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ZoneRoute<N> {
    /// The zones, in the order reads fall back through them after the local one.
    pub zones: Vec<Zone<N>>,
    /// The zone read first.
    pub local: String,
    /// How many zones must take a write.
    pub ack: Ack,
}

impl<N> ZoneRoute<N> {
    /// Replication over `zones`, reading `local` first.
    pub fn new(
        zones: impl IntoIterator<Item = Zone<N>>,
        local: impl Into<String>,
        ack: Ack,
    ) -> Self {
        ZoneRoute {
            zones: zones.into_iter().collect(),
            local: local.into(),
            ack,
        }
    }

    /// The indexes of the zones reads go to, the local one first; [`Error::Config`] when the
    /// local zone is not one of the zones or is warming, or no zone is read.
    pub fn read_order(&self) -> Result<Vec<usize>> {
        let names: Vec<&str> = self.zones.iter().map(|z| z.name.as_str()).collect();
        let Some(local) = names.iter().position(|n| *n == self.local) else {
            return Err(Error::Config(format!(
                "zone route: the local zone {:?} is not one of its zones ({})",
                self.local,
                names.join(", ")
            )));
        };
        if self.zones[local].warming {
            return Err(Error::Config(format!(
                "zone route: the local zone {:?} is warming (never read): make another zone local",
                self.local
            )));
        }
        let mut order = vec![local];
        order.extend((0..self.zones.len()).filter(|&i| i != local && !self.zones[i].warming));
        Ok(order)
    }

    /// Every zone's route, in order.
    pub fn children(&self) -> Vec<&N> {
        self.zones.iter().map(|z| &z.route).collect()
    }

    /// The built route, each zone built by `child`; [`Error::Config`] as
    /// [`read_order`](Self::read_order) says, and when two zones share a server.
    pub(crate) fn build<T: Client>(
        &self,
        child: &mut dyn FnMut(&N) -> Result<Node<T>>,
        count: Count,
    ) -> Result<Node<T>> {
        let order = self.read_order()?;
        let mut zones = Vec::with_capacity(self.zones.len());
        for z in &self.zones {
            zones.push((z.name.clone(), child(&z.route)?));
        }
        let built = Zones {
            zones,
            order,
            ack: self.ack,
            count,
        };
        built.check_disjoint()?;
        Ok(Box::new(built))
    }

    /// The zones a route file gives at `at`: `zones` (a mapping of zone name to route, in
    /// fallback order), `local`, `ack` (default quorum) and `warming` (a list of zone names).
    #[cfg(feature = "peer-config")]
    pub(crate) fn parse(
        y: &yaml_rust2::Yaml,
        at: &str,
        child: &mut dyn FnMut(&yaml_rust2::Yaml, &str) -> Result<N>,
    ) -> Result<ZoneRoute<N>> {
        use crate::routes::yaml::{bad, shown, string, unknown_keys};
        use yaml_rust2::Yaml;
        if let Yaml::Hash(h) = y {
            unknown_keys(
                h,
                &["policy", "zones", "local", "ack", "warming"],
                &format!("{at}."),
            )?;
        }
        let Yaml::Hash(list) = &y["zones"] else {
            return bad(format!(
                "`{at}.zones` is {}: give a mapping of each zone's name to its route",
                shown(&y["zones"])
            ));
        };
        let warming: Vec<String> = match &y["warming"] {
            Yaml::BadValue | Yaml::Null => Vec::new(),
            Yaml::Array(names) => names
                .iter()
                .map(|n| n.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .map_or_else(
                    || bad(format!("`{at}.warming`: give a list of zone names")),
                    Ok,
                )?,
            other => {
                return bad(format!(
                    "`{at}.warming` is {}: give a list of zone names",
                    shown(other)
                ));
            }
        };
        let mut zones = Vec::with_capacity(list.len());
        for (name, node) in list {
            let Some(name) = name.as_str() else {
                return bad(format!(
                    "`{at}.zones` has the key {}: give a zone name",
                    shown(name)
                ));
            };
            let mut zone = Zone::new(name, child(node, &format!("{at}.zones.{name}"))?);
            zone.warming = warming.iter().any(|w| w == name);
            zones.push(zone);
        }
        if let Some(w) = warming
            .iter()
            .find(|w| !zones.iter().any(|z| z.name == **w))
        {
            return bad(format!(
                "`{at}.warming` names {w:?}, which is not one of its zones"
            ));
        }
        let Some(local) = string(&y["local"], &format!("{at}.local"))? else {
            return bad(format!(
                "`{at}` needs `local`: the zone this process reads first (its own)"
            ));
        };
        let ack = match string(&y["ack"], &format!("{at}.ack"))? {
            Some(a) => a.parse().or_else(|e| bad(format!("`{at}.ack`: {e}")))?,
            None => Ack::default(),
        };
        let route = ZoneRoute::new(zones, local, ack);
        route
            .read_order()
            .or_else(|e| bad(format!("`{at}`: {e}")))?;
        Ok(route)
    }
}

/// A built zone route.
pub(crate) struct Zones<T> {
    pub(crate) zones: Vec<(String, Node<T>)>,
    /// The zones reads go to, the local one first.
    pub(crate) order: Vec<usize>,
    pub(crate) ack: Ack,
    pub(crate) count: Count,
}

/// Every zone's answer to one write, by zone index.
type Answers<O> = Vec<Result<O>>;

impl<T: Client> Zones<T> {
    /// Zones that share a server would hold one copy where the route counts two.
    pub(crate) fn check_disjoint(&self) -> Result<()> {
        let mut seen: Vec<(String, &str)> = Vec::new();
        for (name, zone) in &self.zones {
            for s in zone.servers() {
                if let Some((_, other)) = seen.iter().find(|(t, _)| *t == s) {
                    return Err(Error::Config(format!(
                        "zones {other:?} and {name:?} share server {s}: give each zone its own servers"
                    )));
                }
                seen.push((s, name));
            }
        }
        Ok(())
    }

    /// The zones that count for the acknowledgement: the read ones.
    fn read(&self, zone: usize) -> bool {
        self.order.contains(&zone)
    }

    /// A read of the zones in order until one has the key: the first hit; a miss when a zone
    /// answered; else the first failure.
    async fn read_one<'a, O>(
        &'a self,
        call: impl Fn(&'a Node<T>) -> Fut<'a, Result<Option<O>>>,
    ) -> Result<Option<O>> {
        let mut first_error = None;
        let mut answered = false;
        for (n, &z) in self.order.iter().enumerate() {
            if n > 0 {
                self.count.one(Counter::zone_fallback_reads);
            }
            match call(&self.zones[z].1).await {
                Ok(Some(v)) => {
                    if n > 0 {
                        self.count.one(Counter::zone_fallback_hits);
                    }
                    return Ok(Some(v));
                }
                Ok(None) => answered = true,
                Err(e) if is_failure(&e) => {
                    first_error.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        match first_error {
            Some(e) if !answered => Err(e),
            _ => Ok(None),
        }
    }

    /// One write's answers from every zone settled: the answer to return, or the refusal
    /// when too few zones took it; each zone that missed a write another took is repaired.
    async fn settle_one(
        &self,
        key: &[u8],
        command: &'static str,
        class: Class,
        answers: Answers<Written>,
    ) -> Result<Written> {
        let chosen = self.chosen(&answers, |w| w.took());
        let mut fixes = Vec::new();
        for (z, r) in answers.iter().enumerate() {
            match (r, chosen) {
                (Err(e), Some(_)) => fixes.push((z, is_failure(e))),
                // a read-modify command that answered differently here: this copy is not
                // the one the caller was told about
                (Ok(w), Some(c))
                    if class != Class::Overwrite && answers[c].as_ref().ok() != Some(w) =>
                {
                    self.count.one(Counter::zone_divergences);
                    fixes.push((z, false));
                }
                _ => {}
            }
        }
        let acks = self.acks(&answers);
        for (z, failed) in fixes {
            self.zones[z].1.repair(key, failed).await;
        }
        self.answer(key, command, acks, chosen, answers)
    }

    /// The zone whose answer the caller gets: the first read zone (local first) that
    /// answered and `took` it, else the first that answered, else a warming zone's.
    fn chosen<O>(&self, answers: &Answers<O>, took: impl Fn(&O) -> bool) -> Option<usize> {
        let ok = |z: &usize| answers[*z].is_ok();
        let read = self.order.iter().copied();
        read.clone()
            .find(|&z| matches!(&answers[z], Ok(o) if took(o)))
            .or_else(|| read.clone().find(ok))
    }

    /// The read zones that took a write.
    fn acks<O>(&self, answers: &Answers<O>) -> usize {
        (0..answers.len())
            .filter(|&z| self.read(z) && answers[z].is_ok())
            .count()
    }

    /// The chosen answer when the acknowledgement policy is met, else the refusal.
    fn answer<O>(
        &self,
        key: &[u8],
        command: &'static str,
        acks: usize,
        chosen: Option<usize>,
        mut answers: Answers<O>,
    ) -> Result<O> {
        let needed = self.ack.needed(self.order.len());
        if acks >= needed
            && let Some(c) = chosen
        {
            return answers.swap_remove(c);
        }
        self.count.one(Counter::zone_short_writes);
        let first_error = answers.into_iter().find_map(|r| r.err());
        let why = match first_error {
            Some(e) => format!("{e}; "),
            None => String::new(),
        };
        let reason = format!(
            "{why}{acks} of {} zones took it and the route needs {needed} ({:?}); the zones that took it keep it",
            self.order.len(),
            self.ack
        );
        Err(self.count.refusal(command, key, reason))
    }

    async fn write(&self, key: &[u8], w: Write<'_>) -> Result<Written> {
        let calls = self.zones.iter().map(|(_, z)| z.write(key, w)).collect();
        let answers = join_all(calls).await;
        self.settle_one(key, w.command(), w.class(), answers).await
    }

    async fn cas(&self, key: &[u8], v: Stored<'_>, token: &RouteCas) -> Result<StoreOutcome> {
        let mut from = None;
        for (z, (_, zone)) in self.zones.iter().enumerate() {
            if zone.owners(key)?.contains(&token.server) {
                from = Some(z);
            }
        }
        let Some(from) = from else {
            let why = format!(
                "the token came from {}, which no zone keeps the key on now: read the key again with gets and retry",
                token.server
            );
            return Err(self.count.refuse("cas", key, why));
        };
        let r = self.zones[from].1.cas(key, v, token).await?;
        if r == StoreOutcome::Stored {
            // the other zones' copies are older than the one just written
            let others = (0..self.zones.len()).filter(|&z| z != from);
            let calls = others.map(|z| self.zones[z].1.repair(key, false)).collect();
            join_all(calls).await;
        }
        Ok(r)
    }

    async fn get_multi(&self, keys: &[&[u8]]) -> Vec<Result<Option<Item>>> {
        let mut out: Vec<Result<Option<Item>>> = (0..keys.len()).map(|_| Ok(None)).collect();
        let mut answered = vec![false; keys.len()];
        let mut todo: Vec<usize> = (0..keys.len()).collect();
        for (n, &z) in self.order.iter().enumerate() {
            if todo.is_empty() {
                break;
            }
            if n > 0 {
                self.count.n(Counter::zone_fallback_reads, todo.len());
            }
            let sub: Vec<&[u8]> = todo.iter().map(|&i| keys[i]).collect();
            let got = self.zones[z].1.get_multi(&sub).await;
            let mut left = Vec::new();
            for (&i, r) in todo.iter().zip(got) {
                match r {
                    Ok(Some(item)) => {
                        if n > 0 {
                            self.count.one(Counter::zone_fallback_hits);
                        }
                        out[i] = Ok(Some(item));
                    }
                    Ok(None) => {
                        answered[i] = true;
                        out[i] = Ok(None);
                        left.push(i);
                    }
                    Err(e) if is_failure(&e) => {
                        if !answered[i] && matches!(out[i], Ok(None)) {
                            out[i] = Err(e);
                        }
                        left.push(i);
                    }
                    Err(e) => out[i] = Err(e),
                }
            }
            todo = left;
        }
        out
    }

    /// A multi-key write on every zone, settled key by key as one write is.
    async fn multi<'k, O: Clone + PartialEq>(
        &self,
        command: &'static str,
        keys: impl Fn(usize) -> &'k [u8],
        n: usize,
        took: impl Fn(&O) -> bool,
        answers: Vec<Vec<Result<O>>>,
    ) -> Vec<Result<O>> {
        let mut per_zone: Vec<std::vec::IntoIter<Result<O>>> =
            answers.into_iter().map(Vec::into_iter).collect();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let one: Answers<O> = per_zone
                .iter_mut()
                .map(|z| {
                    z.next().unwrap_or_else(|| {
                        Err(Error::protocol(
                            "route",
                            "a zone answered fewer keys than it was given",
                        ))
                    })
                })
                .collect();
            let chosen = self.chosen(&one, &took);
            if chosen.is_some() {
                for (z, r) in one.iter().enumerate() {
                    if let Err(e) = r {
                        self.zones[z].1.repair(keys(i), is_failure(e)).await;
                    }
                }
            }
            let acks = self.acks(&one);
            out.push(self.answer(keys(i), command, acks, chosen, one));
        }
        out
    }
}

impl<T: Client> Policy<T> for Zones<T> {
    fn get<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<Item>>> {
        Box::pin(self.read_one(move |z| z.get(key)))
    }

    fn gets<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<RouteItem>>> {
        Box::pin(self.read_one(move |z| z.gets(key)))
    }

    fn get_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<Option<Item>>>> {
        Box::pin(Zones::get_multi(self, keys))
    }

    fn write<'a>(&'a self, key: &'a [u8], w: Write<'a>) -> Fut<'a, Result<Written>> {
        Box::pin(Zones::write(self, key, w))
    }

    fn cas<'a>(
        &'a self,
        key: &'a [u8],
        value: Stored<'a>,
        token: &'a RouteCas,
    ) -> Fut<'a, Result<StoreOutcome>> {
        Box::pin(Zones::cas(self, key, value, token))
    }

    fn set_multi<'a>(
        &'a self,
        items: &'a Items<'a>,
        flags: u32,
        expiry: Expiry,
    ) -> Fut<'a, Vec<Result<StoreOutcome>>> {
        Box::pin(async move {
            let calls = self
                .zones
                .iter()
                .map(|(_, z)| z.set_multi(items, flags, expiry));
            let answers = join_all(calls.collect()).await;
            let took = |o: &StoreOutcome| *o == StoreOutcome::Stored;
            self.multi("set_multi", |i| items[i].0, items.len(), took, answers)
                .await
        })
    }

    fn delete_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<DeleteOutcome>>> {
        Box::pin(async move {
            let calls = self.zones.iter().map(|(_, z)| z.delete_multi(keys));
            let answers = join_all(calls.collect()).await;
            let took = |o: &DeleteOutcome| *o == DeleteOutcome::Deleted;
            self.multi("delete_multi", |i| keys[i], keys.len(), took, answers)
                .await
        })
    }

    fn verify<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<bool>> {
        Box::pin(async move {
            let calls = self
                .order
                .iter()
                .map(|&z| self.zones[z].1.get(key))
                .collect();
            let mut seen: Option<Item> = None;
            let mut same = true;
            for r in join_all(calls).await {
                if let Some(item) = r? {
                    match &seen {
                        Some(s) if s.value != item.value || s.flags != item.flags => same = false,
                        Some(_) => {}
                        None => seen = Some(item),
                    }
                }
            }
            if !same {
                self.count.one(Counter::zone_divergences);
            }
            Ok(same)
        })
    }

    fn repair<'a>(&'a self, key: &'a [u8], failed: bool) -> Fut<'a, ()> {
        let calls = self
            .zones
            .iter()
            .map(|(_, z)| z.repair(key, failed))
            .collect();
        Box::pin(async move {
            join_all(calls).await;
        })
    }

    fn owners(&self, key: &[u8]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for (_, z) in &self.zones {
            out.extend(z.owners(key)?);
        }
        Ok(out)
    }

    fn servers(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, z) in &self.zones {
            out.extend(z.servers());
        }
        out
    }

    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .zones
            .iter()
            .enumerate()
            .map(|(i, (n, z))| {
                let role = match self.order.iter().position(|&o| o == i) {
                    Some(0) => " (local)",
                    Some(_) => "",
                    None => " (warming)",
                };
                format!("{n}{role}: {}", z.describe())
            })
            .collect();
        format!("zones {{ ack: {:?}, {} }}", self.ack, parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acknowledgements_needed() {
        assert_eq!(
            [Ack::One, Ack::Quorum, Ack::All].map(|a| a.needed(3)),
            [1, 2, 3]
        );
        assert_eq!(Ack::Quorum.needed(2), 2);
        assert_eq!(Ack::Quorum.needed(4), 3);
        assert_eq!(Ack::One.needed(0), 0);
        assert_eq!("majority".parse::<Ack>().ok(), Some(Ack::Quorum));
        assert!("most".parse::<Ack>().is_err());
    }

    #[test]
    fn reads_start_at_the_local_zone_and_skip_warming_ones() {
        let z = |n: &'static str| Zone::new(n, n);
        let r = ZoneRoute::new([z("a"), z("b").warming(), z("c")], "c", Ack::One);
        assert_eq!(r.read_order().ok(), Some(vec![2, 0]));
        let r = ZoneRoute::new([z("a"), z("b").warming()], "b", Ack::One);
        assert!(r.read_order().is_err(), "a warming zone is never local");
        let r = ZoneRoute::new([z("a")], "x", Ack::One);
        assert!(r.read_order().is_err());
    }
}
