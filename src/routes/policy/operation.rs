//! Operation selector: each command to the route named for it, the rest to a default
//! (mcrouter's `OperationSelectorRoute`): deletes to every zone, gets to the nearest pool.

use super::{Client, Fut, Items, Node, Policy, Stored};
use crate::Expiry;
use crate::error::{Error, Result};
use crate::outcome::{DeleteOutcome, Item, StoreOutcome};
use crate::routes::{RouteCas, RouteItem, Write, Written};

/// The commands an operation selector tells apart, by the names a route file uses.
///
/// `get` covers `get`, `gets` and `get_multi` (and `verify`); `set` covers `set` and
/// `set_multi`; `delete` covers `delete` and `delete_multi`; each other command is its own.
pub const OPERATIONS: [&str; 11] = [
    "get", "set", "add", "replace", "append", "prepend", "cas", "touch", "incr", "decr", "delete",
];

/// An operation selector in a route: a route per command name ([`OPERATIONS`]) and the
/// `default` for the commands not named.
///
/// ```
/// use memshard::routes::{RouteNode, policy::operation::OperationRoute};
/// let route = OperationRoute::new(Some(RouteNode::pool("near")))
///     .with("delete", RouteNode::pool("all"))?;
/// assert_eq!(route.pick("delete"), Some(&RouteNode::pool("all")));
/// assert_eq!(route.pick("get"), Some(&RouteNode::pool("near")));
/// # Ok::<(), memshard::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OperationRoute<N> {
    /// Each named command's route.
    pub operations: Vec<(String, N)>,
    /// The route of the commands not named (`None`: every command must be named).
    pub default: Option<Box<N>>,
}

impl<N: PartialEq> OperationRoute<N> {
    /// A selector sending every command to `default` until [`with`](Self::with) names one.
    pub fn new(default: Option<N>) -> OperationRoute<N> {
        OperationRoute {
            operations: Vec::new(),
            default: default.map(Box::new),
        }
    }

    /// The same selector with `operation` (one of [`OPERATIONS`]) sent to `route`;
    /// [`Error::Config`] for another name.
    pub fn with(mut self, operation: &str, route: N) -> Result<OperationRoute<N>> {
        if !OPERATIONS.contains(&operation) {
            return Err(Error::Config(format!(
                "unknown operation {operation:?} for an operation route: use {}",
                OPERATIONS.join(", ")
            )));
        }
        self.operations.retain(|(o, _)| o != operation);
        self.operations.push((operation.to_string(), route));
        Ok(self)
    }

    /// The route of `operation`.
    pub fn pick(&self, operation: &str) -> Option<&N> {
        self.operations
            .iter()
            .find(|(o, _)| o == operation)
            .map(|(_, n)| n)
            .or(self.default.as_deref())
    }

    /// The first of [`OPERATIONS`] with no route (`None`: every command has one).
    pub fn unrouted(&self) -> Option<&'static str> {
        OPERATIONS.into_iter().find(|o| self.pick(o).is_none())
    }

    /// Every route it selects from, each once, in the order of [`OPERATIONS`].
    pub fn children(&self) -> Vec<&N> {
        let mut out: Vec<&N> = Vec::new();
        for n in OPERATIONS.iter().filter_map(|o| self.pick(o)) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out
    }

    /// The built selector, each distinct child built once by `child`; [`Error::Config`]
    /// when a command has no route.
    pub(crate) fn build<T: Client>(
        &self,
        child: &mut dyn FnMut(&N) -> Result<Node<T>>,
    ) -> Result<Node<T>> {
        if let Some(op) = self.unrouted() {
            return Err(Error::Config(format!(
                "operation route: no route for {op} and no default: give {op} or a default"
            )));
        }
        let distinct = self.children();
        let mut routes = [0; OPERATIONS.len()];
        for (slot, op) in routes.iter_mut().zip(OPERATIONS) {
            let n = self.pick(op);
            *slot = distinct.iter().position(|d| Some(*d) == n).unwrap_or(0);
        }
        let mut children = Vec::with_capacity(distinct.len());
        for n in distinct {
            children.push(child(n)?);
        }
        Ok(Box::new(Operation { children, routes }))
    }

    /// The selector a route file gives at `at`: a route per command name and an optional
    /// `default`, each read by `child`.
    #[cfg(feature = "peer-config")]
    pub(crate) fn parse(
        y: &yaml_rust2::Yaml,
        at: &str,
        child: &mut dyn FnMut(&yaml_rust2::Yaml, &str) -> Result<N>,
    ) -> Result<OperationRoute<N>> {
        use yaml_rust2::Yaml;
        let mut known = vec!["policy", "default"];
        known.extend(OPERATIONS);
        if let Yaml::Hash(h) = y {
            crate::routes::yaml::unknown_keys(h, &known, &format!("{at}."))?;
        }
        let default = match &y["default"] {
            Yaml::BadValue | Yaml::Null => None,
            d => Some(child(d, &format!("{at}.default"))?),
        };
        let mut route = OperationRoute::new(default);
        for op in OPERATIONS {
            match &y[op] {
                Yaml::BadValue | Yaml::Null => {}
                n => route = route.with(op, child(n, &format!("{at}.{op}"))?)?,
            }
        }
        Ok(route)
    }
}

/// The selector's group of `command` (a client command's name).
fn operation_of(command: &str) -> &str {
    match command {
        "gets" | "get_multi" | "verify" => "get",
        "set_multi" => "set",
        "delete_multi" => "delete",
        other => other,
    }
}

/// A built operation selector: `routes[i]` is the child of [`OPERATIONS`]`[i]`.
pub(crate) struct Operation<T> {
    pub(crate) children: Vec<Node<T>>,
    pub(crate) routes: [usize; OPERATIONS.len()],
}

impl<T> Operation<T> {
    fn child(&self, command: &str) -> &Node<T> {
        let op = operation_of(command);
        let i = OPERATIONS.iter().position(|o| *o == op).unwrap_or(0);
        &self.children[self.routes[i]]
    }
}

impl<T: Client> Policy<T> for Operation<T> {
    fn get<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<Item>>> {
        self.child("get").get(key)
    }

    fn gets<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<Option<RouteItem>>> {
        self.child("gets").gets(key)
    }

    fn get_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<Option<Item>>>> {
        self.child("get_multi").get_multi(keys)
    }

    fn write<'a>(&'a self, key: &'a [u8], w: Write<'a>) -> Fut<'a, Result<Written>> {
        self.child(w.command()).write(key, w)
    }

    fn cas<'a>(
        &'a self,
        key: &'a [u8],
        value: Stored<'a>,
        token: &'a RouteCas,
    ) -> Fut<'a, Result<StoreOutcome>> {
        self.child("cas").cas(key, value, token)
    }

    fn set_multi<'a>(
        &'a self,
        items: &'a Items<'a>,
        flags: u32,
        expiry: Expiry,
    ) -> Fut<'a, Vec<Result<StoreOutcome>>> {
        self.child("set_multi").set_multi(items, flags, expiry)
    }

    fn delete_multi<'a>(&'a self, keys: &'a [&'a [u8]]) -> Fut<'a, Vec<Result<DeleteOutcome>>> {
        self.child("delete_multi").delete_multi(keys)
    }

    fn verify<'a>(&'a self, key: &'a [u8]) -> Fut<'a, Result<bool>> {
        self.child("verify").verify(key)
    }

    fn repair<'a>(&'a self, key: &'a [u8], failed: bool) -> Fut<'a, ()> {
        // every child may hold a copy that reads would see
        let calls = self
            .children
            .iter()
            .map(|c| c.repair(key, failed))
            .collect();
        Box::pin(async move {
            super::join_all(calls).await;
        })
    }

    fn owners(&self, key: &[u8]) -> Result<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for c in &self.children {
            for o in c.owners(key)? {
                if !out.contains(&o) {
                    out.push(o);
                }
            }
        }
        Ok(out)
    }

    fn servers(&self) -> Vec<String> {
        super::servers_of(&self.children)
    }

    fn describe(&self) -> String {
        let parts: Vec<String> = OPERATIONS
            .iter()
            .zip(self.routes)
            .map(|(o, i)| format!("{o}: {}", self.children[i].describe()))
            .collect();
        format!("operation {{ {} }}", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_command_falls_in_its_operation() {
        assert_eq!(operation_of("gets"), "get");
        assert_eq!(operation_of("get_multi"), "get");
        assert_eq!(operation_of("verify"), "get");
        assert_eq!(operation_of("set_multi"), "set");
        assert_eq!(operation_of("delete_multi"), "delete");
        assert_eq!(operation_of("incr"), "incr");
        let r = OperationRoute::new(None).with("get", "a");
        let r = r.expect("get is an operation");
        assert_eq!(r.unrouted(), Some("set"));
        assert!(OperationRoute::new(None).with("flush", "a").is_err());
        let twice = r.with("get", "b").expect("named again");
        assert_eq!(twice.pick("get"), Some(&"b"));
        assert_eq!(twice.children(), [&"b"]);
    }
}
