//! event-count consumes the events of a subscription, logs each one, and
//! ends the subscription after "after" events (default 3):
//!
//! ```json
//! {"after": 2}
//! ```
//!
//! The count lives as long as the instance (one call at a time: a Cell
//! is enough).

use snodo_guest::{with_config, Context, Error, Event, Flow, Registry, Value};
use std::cell::Cell;

fn register(r: &mut Registry) {
    let seen = Cell::new(0i64);
    r.name("rust-event-count").events(move |ctx: &Context<'_>, ev: &Event<'_>| -> Result<Flow, Error> {
        let after = with_config(|cfg| Ok(cfg.get("after").and_then(Value::as_i64).unwrap_or(3)))?;
        seen.set(seen.get() + 1);
        let uri = ev.params.get("uri").and_then(Value::as_str).unwrap_or("");
        ctx.info(&format!("event {} {} {}", seen.get(), ev.method, uri));
        if seen.get() >= after {
            return Ok(Flow::Stop);
        }
        Ok(Flow::Continue)
    });
}

snodo_guest::register!(register);
