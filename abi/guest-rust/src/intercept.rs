//! Interceptors (ABI version 2, abi/ABI.md section 8): a module that
//! registers one says `"abi": 2` and `"intercept"` in its manifest; one
//! that registers none stays a version-1 module.

use crate::json::{self, Parser};
use crate::{Error, Status};
use std::borrow::Cow;

type Str<'a> = Cow<'a, str>;

/// A request the client is about to send the server (ABI.md section 8.2).
/// Strings and raw JSON borrow the host's input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InterceptRequest<'a> {
    pub method: Str<'a>,
    /// The request's params, a JSON object, as its JSON text (`{}` when
    /// there are none); `json::parse` reads it into a `Value`.
    pub params: &'a str,
    /// The server's name for itself: its word, not the operator's.
    pub server: Str<'a>,
    /// Who made the request, when the client knows ("" otherwise).
    pub caller: Str<'a>,
    /// "legacy" or "modern".
    pub era: Str<'a>,
    /// The negotiated protocol version.
    pub protocol_version: Str<'a>,
}

/// The server's answer to a request (ABI.md section 8.3): exactly one of
/// `result` and `error` is set, as JSON text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InterceptResult<'a> {
    /// The request as it was sent (after rewrites).
    pub request: InterceptRequest<'a>,
    /// The server's result object.
    pub result: Option<&'a str>,
    /// The server's error object (`{"code", "message", "data"?}`).
    pub error: Option<&'a str>,
}

/// What an interceptor answers. To deny the request or withhold the
/// answer, return an `Error` instead: it is the reason the caller sees in
/// the -32030 error's data.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Let the request go, or the answer pass, unchanged.
    Pass,
    /// Send the request with these params instead (requests only): a JSON
    /// object that keeps what the request addresses (ABI.md section 8.2).
    RewriteParams(String),
    /// Give the caller this result, a JSON object, instead of the server's
    /// answer (results only).
    ReplaceResult(String),
    /// Give the caller this error, as if the server had answered it,
    /// instead of the server's answer (results only).
    ReplaceError(Error),
}

pub(crate) type RequestFn = Box<dyn for<'a, 'b> Fn(&crate::Context<'a>, &InterceptRequest<'b>) -> Result<Decision, Error>>;
pub(crate) type ResultFn = Box<dyn for<'a, 'b> Fn(&crate::Context<'a>, &InterceptResult<'b>) -> Result<Decision, Error>>;

/// Reads an interceptor's input straight from the host's buffer: checked
/// whole first (nesting over json::MAX_DEPTH is refused), then the short
/// strings decoded and params, result and error kept as JSON text.
fn decode(input: &[u8]) -> Result<InterceptResult<'_>, Error> {
    let invalid = |m: String| Error::invalid_params(format!("invalid intercept envelope: {}", m));
    let text = json::validate(input).map_err(|e| invalid(e.to_string()))?;
    let mut p = Parser::new(text);
    if p.peek() != Some(b'{') {
        return Err(invalid("not a JSON object".into()));
    }
    let mut r = InterceptResult::default();
    r.request.params = "{}";
    p.object(0, |p: &mut Parser<'_>, k| -> Result<(), Error> {
        let s = match &*k {
            "method" => &mut r.request.method,
            "server" => &mut r.request.server,
            "caller" => &mut r.request.caller,
            "era" => &mut r.request.era,
            "protocolVersion" => &mut r.request.protocol_version,
            "params" | "result" | "error" => {
                p.peek();
                let at = p.offset();
                p.skip_value(1)?;
                let raw = &text[at..p.offset()];
                match &*k {
                    "params" => r.request.params = if raw == "null" { "{}" } else { raw },
                    "result" => r.result = Some(raw).filter(|v| *v != "null"),
                    _ => r.error = Some(raw).filter(|v| *v != "null"),
                }
                return Ok(());
            }
            _ => return Ok(p.skip_value(1)?),
        };
        match p.peek() {
            Some(b'"') => *s = p.str()?,
            _ if p.null()? => {}
            _ => return Err(invalid(format!("{} must be a string", k))),
        }
        Ok(())
    })?;
    Ok(r)
}

/// Runs an interceptor entry point: the decision's status and output.
pub(crate) fn dispatch(r: &crate::Registry, results: bool, input: &[u8], out: &mut String) -> Status {
    let (f_req, f_res) = (&r.intercept_request, &r.intercept_result);
    if (!results && f_req.is_none()) || (results && f_res.is_none()) {
        let what = if results { "results" } else { "requests" };
        return crate::error_output(out, &Error::internal(format!("module does not intercept {}", what)));
    }
    let env = match decode(input) {
        Ok(env) => env,
        Err(e) => return crate::error_output(out, &e),
    };
    let ctx = crate::Context { method: &env.request.method };
    let d = match (f_req, f_res) {
        (Some(f), _) if !results => f(&ctx, &env.request),
        (_, Some(f)) => f(&ctx, &env),
        _ => unreachable!(),
    };
    let d = match d {
        Ok(d) => d,
        Err(e) => return crate::error_output(out, &e),
    };
    match d {
        Decision::Pass => Status::Ok,
        Decision::RewriteParams(p) if !results => {
            out.push_str(p.trim());
            Status::Replace
        }
        Decision::ReplaceResult(v) if results => {
            out.push_str("{\"result\":");
            out.push_str(v.trim());
            out.push('}');
            Status::Replace
        }
        Decision::ReplaceError(e) if results => {
            out.push_str("{\"error\":");
            e.encode(out);
            out.push('}');
            Status::Replace
        }
        // Fails closed: the host denies the request or withholds the answer.
        Decision::RewriteParams(_) => crate::error_output(out, &Error::internal("RewriteParams answers requests only, not results")),
        _ => crate::error_output(out, &Error::internal("ReplaceResult and ReplaceError answer results only, not requests")),
    }
}
