//! sampling-answer answers sampling/createMessage deterministically: the
//! first configured reply whose key occurs in the last message, else an
//! echo of that message cut to maxTokens words. A request with tools is
//! answered with a tool_use block for its first tool.
//!
//! ```json
//! {"model": "rust-echo", "replies": {"weather": "Sunny."}}
//! ```

use snodo_guest::{with_config, Context, Error, Registry, SamplingRequest, SamplingResult, Value};

fn answer(ctx: &Context<'_>, req: &SamplingRequest<'_>) -> Result<SamplingResult, Error> {
    with_config(|cfg| {
        let model = cfg.get("model").and_then(Value::as_str).unwrap_or("rust-echo");
        if let Some(Value::Array(tools)) = &req.tools {
            if let Some(name) = tools.first().and_then(|t| t.get("name")).and_then(Value::as_str) {
                ctx.info(&format!("calling tool {:?}", name));
                let mut r = SamplingResult::text(model, "");
                r.content = Value::Array(vec![SamplingResult::tool_use_block(
                    "call-1",
                    name,
                    Value::object(Vec::<(String, Value<'static>)>::new()),
                )]);
                r.stop_reason = Some("toolUse".into());
                return Ok(r);
            }
        }
        let last = req.messages.last().map(|m| m.text()).unwrap_or_default();
        if let Some(replies) = cfg.get("replies").and_then(Value::as_object) {
            for (key, reply) in replies {
                if last.contains(&**key) {
                    if let Some(reply) = reply.as_str() {
                        return Ok(SamplingResult::text(model, reply));
                    }
                }
            }
        }
        let max = if req.max_tokens > 0 { req.max_tokens as usize } else { usize::MAX };
        let echo: Vec<&str> = last.split_whitespace().take(max).collect();
        Ok(SamplingResult::text(model, echo.join(" ")))
    })
}

fn register(r: &mut Registry) {
    r.name("rust-sampling-answer").sampling(answer).sampling_tools();
}

snodo_guest::register!(register);
