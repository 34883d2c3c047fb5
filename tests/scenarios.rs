//! One scenario list, two runners: every scenario is an `async fn` generic
//! over [`api::Api`], the client operations with the blocking client's names, arguments and
//! results. The `runners!` macro turns the list into one `#[test]` per scenario and client:
//! `blocking::<scenario>` runs it on `memshard::Client` (no async runtime at all), and
//! `nonblocking::<scenario>` on `memshard::aio::Client` (feature `async`, a tokio runtime).
//! Both build their client with the same closure over the same builder settings.
//!
//! Each test starts its own memcached servers (tests/common/servers.rs: free ports on
//! loopback, killed when the test ends), so tests run in parallel and test binaries never meet
//! each other's servers. No assertion is about time: a wait is for a state, with a generous
//! deadline that only a state that never comes reaches. Nothing outside the repository is read
//! (the watcher's server file lives in `CARGO_TARGET_TMPDIR`, the DNS watcher resolves an IP
//! literal).
//!
//! Two more runners run the core list over the meta protocol (with meta, every
//! command and multi-key operation gives the outcome it gives over text): `blocking_meta` and
//! `nonblocking_meta` run it on [`api::Meta`] of each client, whose builder starts with
//! `.protocol(Protocol::Meta)`. The scenarios that fake server bytes fake meta replies for
//! them (`Api::PROTOCOL`), and `commands::requests_use_the_protocol_asked_for` reads the wire
//! to check that meta is what is sent. The parity list runs over meta too
//! (`blocking_parity_meta`, `nonblocking_parity_meta`; the one outcome memcached itself gives
//! differently over meta: see [`parity_meta_scenarios!`]).
//!
//! Two lists:
//!
//! - [`core_scenarios!`]: commands, failures, reliability, bounded reads, membership, typed
//!   values and expiry.
//! - [`parity_scenarios!`]: what the async client once lacked (`Builder::peer_config`,
//!   `Builder::near_cache`, `near_cache_stats`, `replicated`, `watch_server_file`, `watch_dns`,
//!   `set_multi_noreply`, metrics), kept apart so that the parity of the two clients reads
//!   as a list; both runners run it too.
//!
//! Needs memcached; without it the tests print SKIPPED (and fail when CI is set).

mod common;

#[path = "scenarios/api.rs"]
mod api;
#[path = "scenarios/bounded.rs"]
mod bounded;
#[path = "scenarios/commands.rs"]
mod commands;
#[path = "scenarios/failures.rs"]
mod failures;
#[path = "scenarios/hot.rs"]
mod hot;
#[path = "scenarios/membership.rs"]
mod membership;
#[path = "scenarios/observe.rs"]
mod observe;
#[path = "scenarios/reliability.rs"]
mod reliability;
#[path = "scenarios/support.rs"]
mod support;
#[path = "scenarios/values.rs"]
mod values;

/// The scenarios both clients run today. `$then!(args; list)`: hands the list to a runner.
macro_rules! core_scenarios {
    ($then:ident!($($args:tt)*)) => {
        $then!($($args)*;
            commands::outcomes_of_every_command,
            commands::invalid_keys_and_values_are_refused_before_anything_is_sent,
            commands::multi_key_operations_across_four_servers,
            commands::large_values_round_trip,
            commands::prefix_is_sent_and_hashed_only_when_asked,
            commands::placement_follows_each_flavor,
            commands::server_wide_commands_answer_per_server,
            commands::settings_that_cannot_work_are_refused_at_build,
            commands::requests_use_the_protocol_asked_for,
            failures::a_killed_server_is_ejected_and_rejoins_when_revived,
            failures::a_down_server_fails_fast_without_a_connection_attempt,
            failures::a_refused_server_fails_at_once_and_the_healthy_keys_come_back,
            failures::timeouts_never_leave_a_reply_for_the_next_request,
            reliability::connections_closed_by_idle_timeout_are_replaced_without_a_failure,
            reliability::a_restarted_server_is_used_at_once_without_a_failure,
            reliability::a_connection_closed_under_a_request_is_retried_only_when_harmless,
            reliability::stray_bytes_between_replies_are_never_taken_as_a_reply,
            reliability::stray_bytes_read_with_a_reply_never_make_a_wrong_answer,
            reliability::a_reply_that_cannot_belong_to_the_request_is_a_protocol_error,
            bounded::stats_with_endless_slow_lines_times_out_once_for_the_whole_reply,
            bounded::stats_with_endless_fast_lines_stops_at_the_line_limit,
            bounded::stats_with_endless_long_lines_stops_at_the_byte_limit,
            bounded::get_multi_with_values_repeated_endlessly_stops_at_the_keys_asked,
            membership::set_servers_adds_a_server,
            values::typed_values_go_through_the_clients_codec,
            values::typed_values_read_back_with_default_settings,
            values::values_a_codec_cannot_handle_are_typed_errors,
            values::expiry_beyond_thirty_days_is_kept,
        );
    };
}

/// The scenarios of what the async client lacks today (see the parity switch).
macro_rules! parity_scenarios {
    ($then:ident!($($args:tt)*)) => {
        $then!($($args)*;
            reliability::never_used_connections_closed_by_idle_timeout_count_nothing,
            reliability::never_used_connections_to_a_restarted_server_count_nothing,
            reliability::an_add_closed_under_it_is_not_sent_again,
            hot::near_cache_serves_hits_locally_and_client_writes_invalidate_it,
            hot::near_cache_is_invalidated_by_replicated_writes,
            hot::replicas_sit_on_distinct_servers_and_survive_a_failure,
            hot::hot_keys_reports_the_planted_keys_first_within_their_bounds,
            hot::hot_keys_admitted_to_the_near_cache_are_served_locally,
            membership::a_server_file_watcher_follows_the_file,
            membership::a_dns_watcher_applies_the_addresses,
            commands::set_multi_noreply_stores_and_reports_server_errors,
            commands::peer_config_keys_go_where_the_configured_ring_says,
            bounded::noreply_sets_with_endless_slow_errors_time_out_once_for_the_whole_reply,
            bounded::noreply_sets_with_endless_fast_errors_stop_at_one_error_per_request,
            #[cfg(feature = "metrics")]
            observe::metrics_families_are_recorded,
            #[cfg(feature = "metrics")]
            observe::hot_key_gauges_follow_the_top,
        );
    };
}

/// `mod $name`: one `#[test]` per scenario of the list, running it on `$client` with `$run`.
macro_rules! runners {
    ($name:ident, $client:ty, $run:path; $($(#[$attr:meta])* $module:ident :: $scenario:ident),* $(,)?) => {
        mod $name {
            $(
                $(#[$attr])*
                #[test]
                fn $scenario() {
                    if !crate::common::servers::require("memcached") {
                        return;
                    }
                    $run(crate::$module::$scenario::<$client>());
                }
            )*
        }
    };
}

core_scenarios!(runners!(
    blocking,
    memshard::Client,
    crate::support::run_blocking
));
#[cfg(feature = "async")]
core_scenarios!(runners!(
    nonblocking,
    memshard::aio::Client,
    crate::support::run_async
));

// The same list over meta. `version`, `stats`, `flush_all` and `verbosity` stay text (no meta
// form), so the server-wide and bounded `stats` scenarios check that they still work beside
// meta; the others fake meta replies where they fake bytes.
core_scenarios!(runners!(
    blocking_meta,
    crate::api::Meta<memshard::Client>,
    crate::support::run_blocking
));
#[cfg(feature = "async")]
core_scenarios!(runners!(
    nonblocking_meta,
    crate::api::Meta<memshard::aio::Client>,
    crate::support::run_async
));

parity_scenarios!(runners!(
    blocking_parity,
    memshard::Client,
    crate::support::run_blocking
));
#[cfg(feature = "async")]
parity_scenarios!(runners!(
    nonblocking_parity,
    memshard::aio::Client,
    crate::support::run_async
));

/// The parity list over meta: noreply multi-sets, replicas, the near cache, watchers and peer
/// configurations go through the same exchanges. The one outcome that differs is the server's
/// doing: memcached answers a refused quiet `ms` (value too large) where it answers nothing to a
/// refused text noreply `set`; `set_multi_noreply_stores_and_reports_server_errors` checks each.
macro_rules! parity_meta_scenarios {
    ($then:ident!($($args:tt)*)) => {
        $then!($($args)*;
            reliability::never_used_connections_closed_by_idle_timeout_count_nothing,
            reliability::never_used_connections_to_a_restarted_server_count_nothing,
            reliability::an_add_closed_under_it_is_not_sent_again,
            hot::near_cache_serves_hits_locally_and_client_writes_invalidate_it,
            hot::near_cache_is_invalidated_by_replicated_writes,
            hot::replicas_sit_on_distinct_servers_and_survive_a_failure,
            membership::a_server_file_watcher_follows_the_file,
            membership::a_dns_watcher_applies_the_addresses,
            commands::set_multi_noreply_stores_and_reports_server_errors,
            commands::peer_config_keys_go_where_the_configured_ring_says,
            bounded::noreply_sets_with_endless_slow_errors_time_out_once_for_the_whole_reply,
            bounded::noreply_sets_with_endless_fast_errors_stop_at_one_error_per_request,
            #[cfg(feature = "metrics")]
            observe::metrics_families_are_recorded,
        );
    };
}

parity_meta_scenarios!(runners!(
    blocking_parity_meta,
    crate::api::Meta<memshard::Client>,
    crate::support::run_blocking
));
#[cfg(feature = "async")]
parity_meta_scenarios!(runners!(
    nonblocking_parity_meta,
    crate::api::Meta<memshard::aio::Client>,
    crate::support::run_async
));
