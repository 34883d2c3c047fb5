//! Routes between pools on the async client: the handle is defined once for both clients
//! ([`crate::routes::handle`]); what each route does is decided in [`crate::routes`].

use super::client::Client;

crate::routes::handle::router_handle!(
    Client,
    r#"
```no_run
use memshard::aio::{Client, Router};
use std::time::Duration;
# async fn demo() -> memshard::Result<()> {
let main = Client::builder().server_list("127.0.0.1:11211\n127.0.0.1:11212")?.build()?;
let gutter = Client::builder().server_list("127.0.0.1:11311")?.build()?;
let route = Router::gutter(main, gutter, Duration::from_secs(60))?;
route.set("k", "v", Duration::from_secs(300)).await?;
assert_eq!(route.get("k").await?.unwrap().value, "v");
# Ok(())
# }
```"#,
    async await
);
