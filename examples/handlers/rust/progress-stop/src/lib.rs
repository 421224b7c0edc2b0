//! progress-stop consumes the progress notifications of a request, logs
//! them, and cancels the request once progress reaches "stopAt" or a
//! message contains "onMessage":
//!
//! ```json
//! {"stopAt": 50, "onMessage": "stuck"}
//! ```

use snodo_guest::{with_config, Context, Error, Flow, Progress, Registry, Value};

fn consume(ctx: &Context<'_>, p: &Progress<'_>) -> Result<Flow, Error> {
    with_config(|cfg| {
        ctx.debug(&format!("progress {} of {:?}: {}", p.progress, p.total, p.message));
        if let Some(at) = cfg.get("stopAt").and_then(Value::as_f64) {
            if p.progress >= at {
                ctx.info(&format!("progress {} reached {}: cancelling", p.progress, at));
                return Ok(Flow::Stop);
            }
        }
        if let Some(m) = cfg.get("onMessage").and_then(Value::as_str) {
            if !m.is_empty() && p.message.contains(m) {
                return Err(Error::new(-32000, format!("cancelled on progress message {:?}", p.message)));
            }
        }
        Ok(Flow::Continue)
    })
}

fn register(r: &mut Registry) {
    r.name("rust-progress-stop").progress(consume);
}

snodo_guest::register!(register);
