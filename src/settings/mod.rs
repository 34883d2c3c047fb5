//! What a user configures: the [`Builder`] both clients are built with, and the setting types it
//! takes — [`Expiry`], [`Protocol`], [`Stampede`], [`FailurePolicy`], [`Credentials`], [`HotKeys`], (feature
//! `tls`) [`TlsConfig`] and (feature `tracing`) [`TraceKeys`]. Every setting documents its
//! default; a setting that cannot work is refused when the client is built, with
//! [`Error::Setting`](crate::Error::Setting).
//!
//! May import: `error`, placement (`ring`, `hash`, `servers`),
//! `proto` (limits), and the optional layers a setting names (`value`,
//! `near`). Never the core, a client, or what runs on the settings (the hot-key detector,
//! observability); peer configurations apply themselves to a builder (the `config` module).

mod builder;
pub(crate) use builder::weighted_if_weights;
mod conn;
mod credentials;
mod discovery;
pub(crate) mod expiry;
mod failure;
pub(crate) mod hot_keys;
mod protocol;
mod resolver;
pub(crate) mod stampede;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub(crate) mod tls;

pub use builder::{Builder, DEFAULT_REJOIN_LIMIT, LARGE_VALUE_CHUNK, MIN_LARGE_VALUE_CHUNK};
pub(crate) use builder::{PoolSettings, Settings};
pub(crate) use conn::ConnOptions;
pub use conn::RequestCaps;
pub use credentials::{AuthScheme, Credentials};
pub use discovery::{DEFAULT_DISCOVERY_INTERVAL, Discovery, DiscoveryKind};
pub use expiry::Expiry;
pub use failure::FailurePolicy;
pub use hot_keys::HotKeys;
pub use protocol::{Protocol, UnknownProtocol};
pub use resolver::{Resolve, SystemResolver};
pub use stampede::Stampede;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub(crate) mod trace;
#[cfg(feature = "tls")]
#[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
pub use tls::TlsConfig;
#[cfg(feature = "tracing")]
pub(crate) use trace::Trace;
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
pub use trace::{TRACE_KEYS_SHOWN, TraceKeys};
