//! Routes between pools on the blocking client: the handle is defined once for both clients
//! ([`crate::routes::handle`]); what each route does is decided in [`crate::routes`].

use super::client::Client;

crate::routes::handle::router_handle!(
    Client,
    r#"
```no_run
use memshard::{Client, Router};
use std::time::Duration;
// the fleet moves from a twemproxy fnv1a_64 ring to php-memcached's md5 ketama ring
let old = Client::builder().server_list("127.0.0.1:11211\n127.0.0.1:11212")?.flavor(memshard::Flavor::Twemproxy).hash(memshard::KeyHash::Fnv1a_64).build()?;
let new = Client::builder().server_list("127.0.0.1:11211\n127.0.0.1:11212")?.flavor(memshard::Flavor::Libmemcached).hash(memshard::KeyHash::Md5).build()?;
let route = Router::warm_up(new, old, Duration::from_secs(3600));
route.set("k", "v", Duration::from_secs(300))?;
assert_eq!(route.get("k")?.unwrap().value, "v");
println!("{:?}", route.stats());
# Ok::<(), memshard::Error>(())
```"#
);
