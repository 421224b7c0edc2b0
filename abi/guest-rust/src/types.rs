//! Typed requests and results of the methods a handler answers, and the
//! notifications a consumer sees (abi/ABI.md section 3).

use crate::json::{self, Value};
use crate::Error;
use std::borrow::Cow;

type Str<'a> = Cow<'a, str>;

/// Decoding helpers: a missing member or null is None; a member of the
/// wrong type is an error naming it.
fn bad(field: &str, want: &str) -> Error {
    Error::invalid_params(format!("{} must be {}", field, want))
}
fn opt_str<'a>(o: &Value<'a>, k: &str) -> Result<Option<Str<'a>>, Error> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(k, "a string")),
    }
}
fn str_or_empty<'a>(o: &Value<'a>, k: &str) -> Result<Str<'a>, Error> {
    Ok(opt_str(o, k)?.unwrap_or(Cow::Borrowed("")))
}
fn opt_f64(o: &Value<'_>, k: &str) -> Result<Option<f64>, Error> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or_else(|| bad(k, "a number")),
    }
}
fn strings<'a>(o: &Value<'a>, k: &str) -> Result<Vec<Str<'a>>, Error> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                _ => Err(bad(k, "an array of strings")),
            })
            .collect(),
        Some(_) => Err(bad(k, "an array of strings")),
    }
}
fn opt_raw<'a>(o: &Value<'a>, k: &str) -> Option<Value<'a>> {
    o.get(k).cloned()
}
fn object<'v, 'a>(v: &'v Value<'a>, what: &str) -> Result<&'v Value<'a>, Error> {
    match v {
        Value::Object(_) => Ok(v),
        _ => Err(bad(what, "an object")),
    }
}

/// The params of `elicitation/create` (a form, or a URL to visit).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ElicitRequest<'a> {
    /// "form" (also when the request gives none) or "url".
    pub mode: Str<'a>,
    pub message: Str<'a>,
    /// The form's fields (form mode).
    pub requested_schema: Schema<'a>,
    /// Set in url mode.
    pub url: Str<'a>,
    pub elicitation_id: Str<'a>,
    pub meta: Option<Value<'a>>,
}

impl<'a> ElicitRequest<'a> {
    /// Whether the request asks the user to visit a URL.
    pub fn is_url(&self) -> bool {
        self.mode == "url"
    }
    pub(crate) fn decode(p: &Value<'a>) -> Result<Self, Error> {
        let p = object(p, "params")?;
        let mut r = ElicitRequest {
            mode: opt_str(p, "mode")?.unwrap_or(Cow::Borrowed("form")),
            message: str_or_empty(p, "message")?,
            url: str_or_empty(p, "url")?,
            elicitation_id: str_or_empty(p, "elicitationId")?,
            meta: opt_raw(p, "_meta"),
            ..Default::default()
        };
        if let Some(s) = p.get("requestedSchema") {
            if !s.is_null() {
                r.requested_schema = Schema::decode(object(s, "requestedSchema")?)?;
            }
        }
        Ok(r)
    }
}

/// The restricted JSON Schema of an elicitation form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Schema<'a> {
    pub type_: Str<'a>,
    /// The fields, in the order of the request.
    pub properties: Vec<Property<'a>>,
    pub required: Vec<Str<'a>>,
}

impl<'a> Schema<'a> {
    /// The field called name.
    pub fn property(&self, name: &str) -> Option<&Property<'a>> {
        self.properties.iter().rev().find(|p| p.name == name)
    }
    /// Whether the field called name is required.
    pub fn is_required(&self, name: &str) -> bool {
        self.required.iter().any(|r| r == name)
    }
    fn decode(s: &Value<'a>) -> Result<Self, Error> {
        let mut out = Schema { type_: str_or_empty(s, "type")?, required: strings(s, "required")?, ..Default::default() };
        match s.get("properties") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (name, ps) in m {
                    let ps = object(ps, "a property's schema")?;
                    out.properties.push(Property {
                        name: name.clone(),
                        type_: str_or_empty(ps, "type")?,
                        title: str_or_empty(ps, "title")?,
                        description: str_or_empty(ps, "description")?,
                        default: opt_raw(ps, "default"),
                        enum_: strings(ps, "enum")?,
                        format: str_or_empty(ps, "format")?,
                        minimum: opt_f64(ps, "minimum")?,
                        maximum: opt_f64(ps, "maximum")?,
                    });
                }
            }
            Some(_) => return Err(bad("properties", "an object")),
        }
        Ok(out)
    }
}

/// One field of an elicitation form.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Property<'a> {
    pub name: Str<'a>,
    /// "string", "number", "integer", "boolean" or "array".
    pub type_: Str<'a>,
    pub title: Str<'a>,
    pub description: Str<'a>,
    pub default: Option<Value<'a>>,
    pub enum_: Vec<Str<'a>>,
    pub format: Str<'a>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
}

/// What an elicitation is answered with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

impl ElicitAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitAction::Accept => "accept",
            ElicitAction::Decline => "decline",
            ElicitAction::Cancel => "cancel",
        }
    }
    /// "accept", "decline" or "cancel".
    pub fn parse(s: &str) -> Option<ElicitAction> {
        match s {
            "accept" => Some(ElicitAction::Accept),
            "decline" => Some(ElicitAction::Decline),
            "cancel" => Some(ElicitAction::Cancel),
            _ => None,
        }
    }
}

/// A value of an accepted form: MCP allows these five kinds and no other.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    String(String),
    Number(f64),
    Integer(i64),
    Bool(bool),
    /// A multiple-choice field's answer.
    Strings(Vec<String>),
}

/// The answer to an elicitation.
#[derive(Clone, Debug, PartialEq)]
pub struct ElicitResult {
    pub action: ElicitAction,
    /// The form's values (accept only), written in this order.
    pub content: Vec<(String, FieldValue)>,
}

impl ElicitResult {
    pub fn accept(content: Vec<(String, FieldValue)>) -> Self {
        ElicitResult { action: ElicitAction::Accept, content }
    }
    pub fn decline() -> Self {
        ElicitResult { action: ElicitAction::Decline, content: Vec::new() }
    }
    pub fn cancel() -> Self {
        ElicitResult { action: ElicitAction::Cancel, content: Vec::new() }
    }
}

impl crate::Encode for ElicitResult {
    fn encode(&self, out: &mut String) -> Result<(), Error> {
        out.push_str("{\"action\":\"");
        out.push_str(self.action.as_str());
        out.push('"');
        if self.action == ElicitAction::Accept {
            out.push_str(",\"content\":{");
            for (i, (name, v)) in self.content.iter().enumerate() {
                if self.content[..i].iter().any(|(n, _)| n == name) {
                    return Err(Error::internal(format!("field {:?} given twice", name)));
                }
                if i > 0 {
                    out.push(',');
                }
                json::write_str(out, name);
                out.push(':');
                match v {
                    FieldValue::String(s) => json::write_str(out, s),
                    FieldValue::Number(f) if f.is_finite() => out.push_str(&json::format_f64(*f)),
                    FieldValue::Number(_) => {
                        return Err(Error::internal(format!("field {:?} is not a finite number", name)))
                    }
                    FieldValue::Integer(n) => out.push_str(&n.to_string()),
                    FieldValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                    FieldValue::Strings(l) => {
                        out.push('[');
                        for (j, s) in l.iter().enumerate() {
                            if j > 0 {
                                out.push(',');
                            }
                            json::write_str(out, s);
                        }
                        out.push(']');
                    }
                }
            }
            out.push('}');
        }
        out.push('}');
        Ok(())
    }
}

/// The params of `sampling/createMessage`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SamplingRequest<'a> {
    pub messages: Vec<SamplingMessage<'a>>,
    pub system_prompt: Str<'a>,
    pub max_tokens: i64,
    pub temperature: Option<f64>,
    pub stop_sequences: Vec<Str<'a>>,
    pub include_context: Str<'a>,
    pub model_preferences: Option<Value<'a>>,
    pub metadata: Option<Value<'a>>,
    /// Set on a request with tool use, which only a module that declared
    /// `Registry::sampling_tools` receives.
    pub tools: Option<Value<'a>>,
    pub tool_choice: Option<Value<'a>>,
    pub meta: Option<Value<'a>>,
}

impl<'a> SamplingRequest<'a> {
    pub(crate) fn decode(p: &Value<'a>) -> Result<Self, Error> {
        let p = object(p, "params")?;
        let mut messages = Vec::new();
        match p.get("messages") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                for m in a {
                    let m = object(m, "a message")?;
                    messages.push(SamplingMessage {
                        role: str_or_empty(m, "role")?,
                        content: m.get("content").cloned().unwrap_or(Value::Null),
                    });
                }
            }
            Some(_) => return Err(bad("messages", "an array")),
        }
        let max_tokens = match p.get("maxTokens") {
            None | Some(Value::Null) => 0,
            Some(v) => v.as_i64().ok_or_else(|| bad("maxTokens", "an integer"))?,
        };
        Ok(SamplingRequest {
            messages,
            system_prompt: str_or_empty(p, "systemPrompt")?,
            max_tokens,
            temperature: opt_f64(p, "temperature")?,
            stop_sequences: strings(p, "stopSequences")?,
            include_context: str_or_empty(p, "includeContext")?,
            model_preferences: opt_raw(p, "modelPreferences"),
            metadata: opt_raw(p, "metadata"),
            tools: opt_raw(p, "tools"),
            tool_choice: opt_raw(p, "toolChoice"),
            meta: opt_raw(p, "_meta"),
        })
    }
}

/// One message of a sampling request: its content is a content block or
/// an array of them.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingMessage<'a> {
    pub role: Str<'a>,
    pub content: Value<'a>,
}

impl<'a> SamplingMessage<'a> {
    /// The text of the message's text content blocks, joined.
    pub fn text(&self) -> String {
        let one = |b: &Value<'_>| -> Option<String> {
            if b.get("type")?.as_str()? == "text" {
                Some(b.get("text")?.as_str()?.to_string())
            } else {
                None
            }
        };
        match &self.content {
            Value::Array(a) => a.iter().filter_map(one).collect(),
            b => one(b).unwrap_or_default(),
        }
    }
}

/// The answer to a sampling request.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingResult {
    pub role: String,
    /// A content block (`SamplingResult::text_block`), or an array of them
    /// (tool use: `tool_use` blocks).
    pub content: Value<'static>,
    pub model: String,
    pub stop_reason: Option<String>,
}

impl SamplingResult {
    /// An assistant's text answer.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        SamplingResult {
            role: "assistant".into(),
            content: Self::text_block(text),
            model: model.into(),
            stop_reason: Some("endTurn".into()),
        }
    }
    /// A text content block.
    pub fn text_block(text: impl Into<String>) -> Value<'static> {
        Value::object([("type", Value::string("text")), ("text", Value::string(text))])
    }
    /// A tool_use content block (answers a request with tools).
    pub fn tool_use_block(id: impl Into<String>, name: impl Into<String>, input: Value<'static>) -> Value<'static> {
        Value::object([
            ("type", Value::string("tool_use")),
            ("id", Value::string(id)),
            ("name", Value::string(name)),
            ("input", input),
        ])
    }
}

impl crate::Encode for SamplingResult {
    fn encode(&self, out: &mut String) -> Result<(), Error> {
        out.push_str("{\"role\":");
        json::write_str(out, &self.role);
        out.push_str(",\"content\":");
        self.content.write_json(out);
        out.push_str(",\"model\":");
        json::write_str(out, &self.model);
        if let Some(r) = &self.stop_reason {
            out.push_str(",\"stopReason\":");
            json::write_str(out, r);
        }
        out.push('}');
        Ok(())
    }
}

/// The params of `roots/list`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RootsRequest<'a> {
    pub meta: Option<Value<'a>>,
}

impl<'a> RootsRequest<'a> {
    pub(crate) fn decode(p: &Value<'a>) -> Result<Self, Error> {
        Ok(RootsRequest { meta: opt_raw(object(p, "params")?, "_meta") })
    }
}

/// A root the client exposes: a file:// URI and an optional name.
#[derive(Clone, Debug, PartialEq)]
pub struct Root {
    pub uri: String,
    pub name: Option<String>,
}

/// The answer to `roots/list`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RootsResult {
    pub roots: Vec<Root>,
}

impl crate::Encode for RootsResult {
    fn encode(&self, out: &mut String) -> Result<(), Error> {
        out.push_str("{\"roots\":[");
        for (i, r) in self.roots.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str("{\"uri\":");
            json::write_str(out, &r.uri);
            if let Some(n) = &r.name {
                out.push_str(",\"name\":");
                json::write_str(out, n);
            }
            out.push('}');
        }
        out.push_str("]}");
        Ok(())
    }
}

/// The params of one `notifications/progress`.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress<'a> {
    pub progress_token: Value<'a>,
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Str<'a>,
}

impl<'a> Progress<'a> {
    pub(crate) fn decode(p: &Value<'a>) -> Result<Self, Error> {
        let p = object(p, "params")?;
        Ok(Progress {
            progress_token: p.get("progressToken").cloned().unwrap_or(Value::Null),
            progress: opt_f64(p, "progress")?.unwrap_or(0.0),
            total: opt_f64(p, "total")?,
            message: str_or_empty(p, "message")?,
        })
    }
}

/// One event of a subscription.
#[derive(Clone, Debug, PartialEq)]
pub struct Event<'a> {
    pub method: Str<'a>,
    pub params: Value<'a>,
}

/// What a progress or event consumer wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Let the request go on, or keep the subscription.
    Continue,
    /// Cancel the request (progress) or end the subscription (events).
    Stop,
}
