//! elicit-policy answers elicitation/create forms from its configuration:
//!
//! ```json
//! {"rules": [{"match": "delete", "action": "decline"}],
//!  "values": {"name": "Snodo", "confirm": true},
//!  "action": "accept", "onMissing": "decline", "url": "decline"}
//! ```
//!
//! The first rule whose "match" occurs in the message (case-insensitively)
//! decides the action and adds its "values". An accepted form is filled,
//! field by field, with the first of the rule's values, "values" and the
//! schema's default that has the field's type and is in its enum; a
//! required field left without one turns the answer into "onMissing".
//! URL-mode elicitations get "url".

use snodo_guest::{
    with_config, Context, ElicitAction, ElicitRequest, ElicitResult, Error, FieldValue, Property, Registry, Value,
};

fn action(cfg: &Value<'_>, key: &str, default: ElicitAction) -> Result<ElicitAction, Error> {
    match cfg.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_str()
            .and_then(ElicitAction::parse)
            .ok_or_else(|| Error::internal(format!("configuration: {:?} must be \"accept\", \"decline\" or \"cancel\"", key))),
    }
}

/// The value for a field of the form's type, from v.
fn field(p: &Property<'_>, v: &Value<'_>) -> Option<FieldValue> {
    match (&*p.type_, v) {
        ("string", Value::String(s)) => {
            if !p.enum_.is_empty() && !p.enum_.iter().any(|e| e == s) {
                return None;
            }
            Some(FieldValue::String(s.to_string()))
        }
        ("integer", v @ Value::Number(_)) => {
            let f = v.as_f64()?;
            if f.fract() != 0.0 {
                return None;
            }
            v.as_i64().map(FieldValue::Integer)
        }
        ("number", v @ Value::Number(_)) => v.as_f64().map(FieldValue::Number),
        ("boolean", Value::Bool(b)) => Some(FieldValue::Bool(*b)),
        ("array", Value::Array(a)) => a
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .map(FieldValue::Strings),
        _ => None,
    }
}

fn answer(ctx: &Context<'_>, req: &ElicitRequest<'_>) -> Result<ElicitResult, Error> {
    with_config(|cfg| {
        if req.is_url() {
            let a = action(cfg, "url", ElicitAction::Decline)?;
            ctx.info(&format!("url elicitation {:?}: {}", req.url, a.as_str()));
            return Ok(ElicitResult { action: a, content: Vec::new() });
        }
        let mut a = action(cfg, "action", ElicitAction::Accept)?;
        let on_missing = action(cfg, "onMissing", ElicitAction::Decline)?;
        let msg = req.message.to_lowercase();
        let mut rule_values = None;
        if let Some(rules) = cfg.get("rules").and_then(Value::as_array) {
            for r in rules {
                let m = r.get("match").and_then(Value::as_str).unwrap_or("");
                if !m.is_empty() && msg.contains(&m.to_lowercase()) {
                    a = action(r, "action", a)?;
                    rule_values = r.get("values");
                    ctx.debug(&format!("rule {:?} matched: {}", m, a.as_str()));
                    break;
                }
            }
        }
        if a != ElicitAction::Accept {
            return Ok(ElicitResult { action: a, content: Vec::new() });
        }
        let values = cfg.get("values");
        let mut content = Vec::new();
        for p in &req.requested_schema.properties {
            let candidates = [
                rule_values.and_then(|v| v.get(&p.name)),
                values.and_then(|v| v.get(&p.name)),
                p.default.as_ref(),
            ];
            match candidates.iter().flatten().find_map(|v| field(p, v)) {
                Some(v) => content.push((p.name.to_string(), v)),
                None if req.requested_schema.is_required(&p.name) => {
                    ctx.info(&format!("no value for required field {:?}: {}", p.name, on_missing.as_str()));
                    return Ok(ElicitResult { action: on_missing, content: Vec::new() });
                }
                None => {}
            }
        }
        Ok(ElicitResult::accept(content))
    })
}

fn register(r: &mut Registry) {
    r.name("rust-elicit-policy").elicitation(answer);
}

snodo_guest::register!(register);
