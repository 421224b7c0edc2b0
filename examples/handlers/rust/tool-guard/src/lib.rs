//! tool-guard is an interceptor (ABI version 2) that stands between the
//! client and a server's tools:
//!
//! ```json
//! {"deny": ["delete_file", "move_file"], "redact": ["hunter2"]}
//! ```
//!
//! - A `tools/call` of a tool named in "deny" (exactly, as MCP tool names
//!   are case-sensitive) is denied with -32030 and never sent; a call
//!   without a tool name is denied too.
//! - In the server's answer to `tools/call` and `tasks/result`, each string
//!   of the result (at any depth, keys included, however the server escaped
//!   it) has every occurrence of a "redact" string replaced by
//!   "[REDACTED]"; a result without one passes unchanged, byte for byte.
//!   Error answers pass as they are.

use snodo_guest::{json, with_config, Context, Decision, Error, InterceptRequest, InterceptResult, Registry, Value};
use std::borrow::Cow;

/// The strings of the configuration's member key (none when it is not given).
fn list(cfg: &Value<'_>, key: &str) -> Result<Vec<String>, Error> {
    match cfg.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v.as_str() {
                Some(s) if !s.is_empty() => Ok(s.to_string()),
                _ => Err(Error::internal(format!("configuration: {:?} must be an array of non-empty strings", key))),
            })
            .collect(),
        Some(_) => Err(Error::internal(format!("configuration: {:?} must be an array of non-empty strings", key))),
    }
}

fn guard(_ctx: &Context<'_>, req: &InterceptRequest<'_>) -> Result<Decision, Error> {
    let deny = with_config(|cfg| list(cfg, "deny"))?;
    let params = json::parse(req.params.as_bytes())?;
    let name = match params.get("name").and_then(Value::as_str) {
        Some(n) => n,
        None => return Err(Error::invalid_params("tools/call without a tool name")),
    };
    if deny.iter().any(|d| d == name) {
        return Err(Error::invalid_params(format!("tool {:?} is on this client's deny list", name)));
    }
    Ok(Decision::Pass)
}

/// Replaces each occurrence of a secret in the strings of v; says whether
/// anything changed.
fn redact(v: &mut Value<'_>, secrets: &[String]) -> bool {
    let fix = |s: &mut Cow<'_, str>| -> bool {
        if !secrets.iter().any(|x| s.contains(x.as_str())) {
            return false;
        }
        let mut t = s.to_string();
        for x in secrets {
            t = t.replace(x.as_str(), "[REDACTED]");
        }
        *s = Cow::Owned(t);
        true
    };
    match v {
        Value::String(s) => fix(s),
        Value::Array(a) => a.iter_mut().fold(false, |changed, e| redact(e, secrets) | changed),
        Value::Object(m) => m.iter_mut().fold(false, |changed, (k, e)| fix(k) | redact(e, secrets) | changed),
        _ => false,
    }
}

fn scrub(_ctx: &Context<'_>, r: &InterceptResult<'_>) -> Result<Decision, Error> {
    let secrets = with_config(|cfg| list(cfg, "redact"))?;
    let result = match r.result {
        Some(res) if !secrets.is_empty() => res,
        _ => return Ok(Decision::Pass),
    };
    let mut tree = json::parse(result.as_bytes())?;
    if redact(&mut tree, &secrets) {
        return Ok(Decision::ReplaceResult(tree.to_json()));
    }
    Ok(Decision::Pass)
}

fn register(r: &mut Registry) {
    r.name("tool-guard")
        .intercept_requests(guard, &["tools/call"])
        .intercept_results(scrub, &["tools/call", "tasks/result"]);
}

snodo_guest::register!(register);
