//! Cluster auto discovery settings: where to ask for the cluster's nodes and how often.

use crate::error::SettingError;
use crate::servers::Server;
use std::time::Duration;

/// The AWS clients' poll interval: 60 s.
pub const DEFAULT_DISCOVERY_INTERVAL: Duration = Duration::from_secs(60);

/// Which managed service serves the cluster configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DiscoveryKind {
    /// AWS ElastiCache for Memcached: the configuration endpoint is a name for the data nodes,
    /// and every data node answers `config get cluster`. Polls ask the data nodes in turn and
    /// the configuration endpoint last, as the AWS clients do.
    ElastiCache,
    /// GCP Memorystore for Memcached: a discovery endpoint that is never a data node, asked
    /// alone.
    Memorystore,
}

/// Where a client finds its nodes: a cluster configuration endpoint polled every `interval`
/// (the `discovery` module). The nodes are placed with the client's flavor, named as that
/// flavor's peer names a discovered node.
///
/// ```
/// use memshard::settings::{Discovery, DiscoveryKind};
/// let d = Discovery::new("127.0.0.1:11211")?.interval(std::time::Duration::from_secs(10));
/// assert_eq!(d.kind(), DiscoveryKind::ElastiCache);
/// assert_eq!(d.endpoint().port, 11211);
/// # Ok::<(), memshard::SettingError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovery {
    endpoint: Server,
    kind: DiscoveryKind,
    interval: Duration,
}

impl Discovery {
    /// An ElastiCache configuration endpoint, `host:port` (port 11211 when left out).
    pub fn new(endpoint: &str) -> Result<Discovery, SettingError> {
        let endpoint: Server = endpoint
            .parse()
            .map_err(
                |e: crate::servers::ServerListError| SettingError::Discovery {
                    detail: format!("endpoint {endpoint:?}: {}", e.reason),
                },
            )?;
        Ok(Discovery {
            endpoint,
            kind: DiscoveryKind::ElastiCache,
            interval: DEFAULT_DISCOVERY_INTERVAL,
        })
    }

    /// A Memorystore discovery endpoint, `host:port`.
    pub fn memorystore(endpoint: &str) -> Result<Discovery, SettingError> {
        Ok(Discovery::new(endpoint)?.kind_of(DiscoveryKind::Memorystore))
    }

    /// The same endpoint, served by `kind`.
    pub fn kind_of(mut self, kind: DiscoveryKind) -> Discovery {
        self.kind = kind;
        self
    }

    /// Poll every `interval` (default [`DEFAULT_DISCOVERY_INTERVAL`]; 1 ms to a day).
    pub fn interval(mut self, interval: Duration) -> Discovery {
        self.interval = interval;
        self
    }

    /// The endpoint.
    pub fn endpoint(&self) -> &Server {
        &self.endpoint
    }

    /// The service.
    pub fn kind(&self) -> DiscoveryKind {
        self.kind
    }

    /// The poll interval.
    pub fn poll_interval(&self) -> Duration {
        self.interval
    }

    pub(crate) fn validate(&self) -> Result<(), SettingError> {
        SettingError::check_timeout("discovery interval", self.interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_constructor_names_its_service() {
        let e = Discovery::new("cfg.cache:11212").expect("endpoint");
        assert_eq!(e.kind(), DiscoveryKind::ElastiCache);
        assert_eq!(e.endpoint().addr, "cfg.cache:11212");
        let m = Discovery::memorystore("10.0.0.5:11211").expect("endpoint");
        assert_eq!(m.kind(), DiscoveryKind::Memorystore);
        assert_eq!(m.endpoint().addr, "10.0.0.5:11211");
        assert_eq!(
            m.kind_of(DiscoveryKind::ElastiCache).kind(),
            DiscoveryKind::ElastiCache
        );
        assert!(Discovery::memorystore("").is_err());
    }

    #[test]
    fn the_poll_interval_is_kept_and_checked() {
        let d = Discovery::new("127.0.0.1:11211").expect("endpoint");
        assert_eq!(d.poll_interval(), DEFAULT_DISCOVERY_INTERVAL);
        let every = d.clone().interval(Duration::from_millis(1500));
        assert_eq!(every.poll_interval(), Duration::from_millis(1500));
        assert!(every.validate().is_ok());
        for bad in [
            Duration::ZERO,
            Duration::from_micros(10),
            Duration::from_secs(86_401),
        ] {
            let e = d.clone().interval(bad).validate().expect_err("refused");
            assert!(e.to_string().contains("discovery interval"), "{e}");
        }
    }
}
