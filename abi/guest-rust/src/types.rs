//! Typed requests and results of the methods a handler answers, and the
//! notifications a consumer sees (abi/ABI.md section 3).

use crate::json::{self, Parser, Value};
use crate::Error;
use std::borrow::Cow;
use std::fmt::Write as _;

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
    /// Decodes the params from a value tree: what `decode_from` does from
    /// the input, kept to test that the two agree.
    #[cfg(test)]
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

/// Pull decoding, straight from the input: a missing member or null is
/// the default; a member of the wrong type is the same error as above.
/// The input was checked whole before (`json::validate`), so the parser
/// meets no syntax error here; when a member is given twice, the last one
/// counts, as with the value tree.
fn p_opt_str<'a>(p: &mut Parser<'a>, k: &str) -> Result<Option<Str<'a>>, Error> {
    match p.peek() {
        Some(b'"') => Ok(Some(p.str()?)),
        _ if p.null()? => Ok(None),
        _ => Err(bad(k, "a string")),
    }
}
fn p_str<'a>(p: &mut Parser<'a>, k: &str) -> Result<Str<'a>, Error> {
    Ok(p_opt_str(p, k)?.unwrap_or(Cow::Borrowed("")))
}
fn p_opt_f64(p: &mut Parser<'_>, k: &str, depth: usize) -> Result<Option<f64>, Error> {
    match p.peek() {
        Some(b'-') | Some(b'0'..=b'9') => p.tree(depth)?.as_f64().map(Some).ok_or_else(|| bad(k, "a number")),
        _ if p.null()? => Ok(None),
        _ => Err(bad(k, "a number")),
    }
}
fn p_strings<'a>(p: &mut Parser<'a>, k: &str, depth: usize, into: &mut Vec<Str<'a>>) -> Result<(), Error> {
    into.clear();
    match p.peek() {
        Some(b'[') => p.array(depth, |p: &mut Parser<'a>| -> Result<(), Error> {
            if p.peek() != Some(b'"') {
                return Err(bad(k, "an array of strings"));
            }
            into.push(p.str()?);
            Ok(())
        }),
        _ if p.null()? => Ok(()),
        _ => Err(bad(k, "an array of strings")),
    }
}
fn p_raw<'a>(p: &mut Parser<'a>, depth: usize) -> Result<Option<Value<'a>>, Error> {
    Ok(Some(p.tree(depth)?))
}

impl<'a> ElicitRequest<'a> {
    /// Decodes the params straight from the input, the parser on them.
    pub(crate) fn decode_from(p: &mut Parser<'a>, depth: usize) -> Result<Self, Error> {
        let mut r = ElicitRequest { mode: Cow::Borrowed("form"), ..Default::default() };
        if p.null()? {
            return Ok(r);
        }
        if p.peek() != Some(b'{') {
            return Err(bad("params", "an object"));
        }
        let mut mode = None;
        p.object(depth, |p: &mut Parser<'a>, k| -> Result<(), Error> {
            match &*k {
                "mode" => mode = p_opt_str(p, "mode")?,
                "message" => r.message = p_str(p, "message")?,
                "url" => r.url = p_str(p, "url")?,
                "elicitationId" => r.elicitation_id = p_str(p, "elicitationId")?,
                "_meta" => r.meta = p_raw(p, depth + 1)?,
                "requestedSchema" => {
                    r.requested_schema = Schema::default();
                    match p.peek() {
                        Some(b'{') => r.requested_schema.decode_from(p, depth + 1)?,
                        _ if p.null()? => {}
                        _ => return Err(bad("requestedSchema", "an object")),
                    }
                }
                _ => p.skip_value(depth + 1)?,
            }
            Ok(())
        })?;
        if let Some(m) = mode {
            r.mode = m;
        }
        Ok(r)
    }
}

impl<'a> Schema<'a> {
    fn decode_from(&mut self, p: &mut Parser<'a>, depth: usize) -> Result<(), Error> {
        p.object(depth, |p: &mut Parser<'a>, k| -> Result<(), Error> {
            match &*k {
                "type" => self.type_ = p_str(p, "type")?,
                "required" => p_strings(p, "required", depth + 1, &mut self.required)?,
                "properties" => {
                    self.properties.clear();
                    match p.peek() {
                        Some(b'{') => {
                            let props = &mut self.properties;
                            p.object(depth + 1, |p: &mut Parser<'a>, name| -> Result<(), Error> {
                                if p.peek() != Some(b'{') {
                                    return Err(bad("a property's schema", "an object"));
                                }
                                props.push(Property::decode_from(p, name, depth + 2)?);
                                Ok(())
                            })?
                        }
                        _ if p.null()? => {}
                        _ => return Err(bad("properties", "an object")),
                    }
                }
                _ => p.skip_value(depth + 1)?,
            }
            Ok(())
        })
    }
}

impl<'a> Property<'a> {
    fn decode_from(p: &mut Parser<'a>, name: Str<'a>, depth: usize) -> Result<Self, Error> {
        let mut out = Property { name, ..Default::default() };
        p.object(depth, |p: &mut Parser<'a>, k| -> Result<(), Error> {
            match &*k {
                "type" => out.type_ = p_str(p, "type")?,
                "title" => out.title = p_str(p, "title")?,
                "description" => out.description = p_str(p, "description")?,
                "default" => out.default = p_raw(p, depth + 1)?,
                "enum" => p_strings(p, "enum", depth + 1, &mut out.enum_)?,
                "format" => out.format = p_str(p, "format")?,
                "minimum" => out.minimum = p_opt_f64(p, "minimum", depth + 1)?,
                "maximum" => out.maximum = p_opt_f64(p, "maximum", depth + 1)?,
                _ => p.skip_value(depth + 1)?,
            }
            Ok(())
        })?;
        Ok(out)
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
    #[cfg(test)]
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
                    FieldValue::Number(f) if f.is_finite() => json::write_f64(out, *f),
                    FieldValue::Number(_) => {
                        return Err(Error::internal(format!("field {:?} is not a finite number", name)))
                    }
                    FieldValue::Integer(n) => {
                        let _ = write!(out, "{}", n);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The pull decoder answers as the tree decoder did: the same request,
    /// or the same error, for every shape of params.
    #[test]
    fn pull_decoder_agrees_with_tree() {
        let cases = [
            r#"{}"#,
            r#"{"message":"hi","mode":"url","url":"https://x","elicitationId":"e1","_meta":{"a":[1,{"b":null}]}}"#,
            r#"{"message":"a\"b\u00e9","mode":null,"requestedSchema":null}"#,
            r#"{"message":"one","message":"two","mode":"url","mode":null}"#,
            r#"{"requestedSchema":{"type":"object","required":["n","m"],"required":["m"],"properties":{"n":{"type":"integer","minimum":1,"maximum":2.5e1,"default":3,"enum":["a"],"format":"f","title":"T","description":"D","x":[{}]},"m":{},"n":{"type":"string"}}}}"#,
            r#"{"requestedSchema":{"properties":{"a":{}},"properties":{"b":{"type":"boolean"}}}}"#,
            r#"{"requestedSchema":{"properties":null,"required":null}}"#,
            r#"{"unknown":[[[{"deep":"\n"}]]],"message":"m"}"#,
            r#"{"message":7}"#,
            r#"{"mode":true}"#,
            r#"{"requestedSchema":[]}"#,
            r#"{"requestedSchema":{"properties":[]}}"#,
            r#"{"requestedSchema":{"properties":{"a":1}}}"#,
            r#"{"requestedSchema":{"properties":{"a":null}}}"#,
            r#"{"requestedSchema":{"required":"a"}}"#,
            r#"{"requestedSchema":{"required":[1]}}"#,
            r#"{"requestedSchema":{"properties":{"a":{"minimum":"1"}}}}"#,
            r#"{"requestedSchema":{"properties":{"a":{"enum":[null]}}}}"#,
            r#"[]"#,
            r#""params""#,
            r#"3"#,
            r#"null"#,
        ];
        for c in cases {
            let tree = json::parse(c.as_bytes()).unwrap();
            let want = match tree {
                Value::Null => ElicitRequest::decode(&Value::Object(Vec::new())),
                ref t => ElicitRequest::decode(t),
            };
            let got = ElicitRequest::decode_from(&mut Parser::new(c), 1);
            assert_eq!(got, want, "params {}", c);
        }
    }
}
