//! Guest SDK for Snodo handler modules in Rust: the guest side of the
//! handler ABI (abi/ABI.md), so that a handler is a typed Rust function.
//!
//! ```no_run
//! use snodo_guest::{Context, ElicitRequest, ElicitResult, Error, FieldValue, Registry};
//!
//! fn answer(ctx: &Context, req: &ElicitRequest) -> Result<ElicitResult, Error> {
//!     ctx.info(&format!("asked: {}", req.message));
//!     if req.requested_schema.property("name").is_some() {
//!         return Ok(ElicitResult::accept(vec![("name".into(), FieldValue::String("Ada".into()))]));
//!     }
//!     Ok(ElicitResult::decline())
//! }
//!
//! fn register(r: &mut Registry) {
//!     r.name("policy");
//!     r.elicitation(answer);
//! }
//!
//! snodo_guest::register!(register);
//! ```
//!
//! Build it as a `cdylib` for `wasm32-wasi` (Debian's rustc 1.63) or
//! `wasm32-wasip1` (a current rustup toolchain); see README.md. The
//! `register!` macro exports `_initialize`, which the host calls once per
//! instance: it runs the registration function, so the module is a reactor.
//!
//! An instance runs one call at a time: handlers need no locking, and the
//! request they get borrows the host's input buffer (strings without
//! escapes are not copied). A panic is reported to the host's log and
//! stderr (so the call's -32603 error names it) and then traps.

mod intercept;
pub mod json;
mod types;

pub use intercept::{Decision, InterceptRequest, InterceptResult};
pub use json::Value;
pub use types::*;

use std::cell::RefCell;
use std::fmt;

/// The ABI version this crate implements. A module's manifest says 2 only
/// when it registers an interceptor, and 1 otherwise.
pub const ABI_VERSION: u32 = 2;

/// Longest log message the host keeps, in bytes.
pub const MAX_LOG_BYTES: usize = 4096;

/// A JSON-RPC error a handler answers with. Any other failure (a `String`
/// or `&str` turned into an `Error` by `?`) is answered -32603 with its text.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub code: i64,
    pub message: String,
    pub data: Option<Value<'static>>,
}

impl Error {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), data: None }
    }
    /// -32603, internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(-32603, message)
    }
    /// -32602, invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Error::new(-32602, message)
    }
    pub fn with_data(mut self, data: Value<'static>) -> Self {
        self.data = Some(data);
        self
    }
    pub(crate) fn encode(&self, out: &mut String) {
        out.push_str("{\"code\":");
        out.push_str(&self.code.to_string());
        out.push_str(",\"message\":");
        json::write_str(out, &self.message);
        if let Some(d) = &self.data {
            out.push_str(",\"data\":");
            d.write_json(out);
        }
        out.push('}');
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

impl From<String> for Error {
    fn from(s: String) -> Self {
        Error::internal(s)
    }
}
impl From<&str> for Error {
    fn from(s: &str) -> Self {
        Error::internal(s)
    }
}
impl From<json::ParseError> for Error {
    fn from(e: json::ParseError) -> Self {
        Error::internal(e.to_string())
    }
}

/// A result that writes its own JSON.
pub trait Encode {
    fn encode(&self, out: &mut String) -> Result<(), Error>;
}

/// Log levels of the host's `log` import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Debug = 0,
    Info = 1,
    Warn = 2,
    Error = 3,
}

/// What a handler has at hand: the method it answers, logging and the
/// module's configuration.
#[derive(Clone, Debug)]
pub struct Context<'a> {
    /// The request's method, the event's method, or "notifications/progress".
    pub method: &'a str,
}

impl<'a> Context<'a> {
    pub fn debug(&self, msg: &str) {
        log(Level::Debug, msg)
    }
    pub fn info(&self, msg: &str) {
        log(Level::Info, msg)
    }
    pub fn warn(&self, msg: &str) {
        log(Level::Warn, msg)
    }
    pub fn error(&self, msg: &str) {
        log(Level::Error, msg)
    }
}

/// Logs msg through the host (cut to 4 KiB on a character boundary).
pub fn log(level: Level, msg: &str) {
    let mut n = msg.len().min(MAX_LOG_BYTES);
    while !msg.is_char_boundary(n) {
        n -= 1;
    }
    host::log(level as i32, &msg.as_bytes()[..n]);
}

thread_local! {
    static CONFIG: RefCell<Option<String>> = RefCell::new(None);
    static PARSED: RefCell<Option<Result<Value<'static>, Error>>> = RefCell::new(None);
}

/// The module's configuration JSON ("null" when none is given).
pub fn config_json() -> String {
    CONFIG.with(|c| c.borrow_mut().get_or_insert_with(host::config).clone())
}

/// Runs f on the module's configuration (Null when none is given), parsed
/// once per instance. Invalid configuration JSON is an error that says so.
pub fn with_config<T>(f: impl FnOnce(&Value<'_>) -> Result<T, Error>) -> Result<T, Error> {
    PARSED.with(|p| {
        if p.borrow().is_none() {
            let text = config_json();
            let parsed = json::parse(text.as_bytes())
                .map(Value::into_owned)
                .map_err(|e| Error::internal(format!("module configuration: {}", e)));
            *p.borrow_mut() = Some(parsed);
        }
        // A shared borrow: f may call with_config again.
        match p.borrow().as_ref() {
            Some(Ok(v)) => f(v),
            Some(Err(e)) => Err(e.clone()),
            None => Err(Error::internal("module configuration: not read")),
        }
    })
}

/// A handler of one kind of request; the request type borrows the input.
type ElicitFn = Box<dyn for<'a, 'b> Fn(&Context<'a>, &ElicitRequest<'b>) -> Result<ElicitResult, Error>>;
type SamplingFn = Box<dyn for<'a, 'b> Fn(&Context<'a>, &SamplingRequest<'b>) -> Result<SamplingResult, Error>>;
type RootsFn = Box<dyn for<'a, 'b> Fn(&Context<'a>, &RootsRequest<'b>) -> Result<RootsResult, Error>>;
type ProgressFn = Box<dyn for<'a, 'b> Fn(&Context<'a>, &Progress<'b>) -> Result<Flow, Error>>;
type EventFn = Box<dyn for<'a, 'b> Fn(&Context<'a>, &Event<'b>) -> Result<Flow, Error>>;

/// What a module answers: filled by the registration function given to
/// `register!`.
#[derive(Default)]
pub struct Registry {
    name: Option<String>,
    elicitation: Option<ElicitFn>,
    sampling: Option<SamplingFn>,
    sampling_tools: bool,
    roots: Option<RootsFn>,
    progress: Option<ProgressFn>,
    events: Option<EventFn>,
    intercept_request: Option<intercept::RequestFn>,
    intercept_result: Option<intercept::ResultFn>,
    intercept_methods: Vec<String>,
}

impl Registry {
    /// The module's name in its manifest (used in host logs).
    pub fn name(&mut self, name: &str) -> &mut Self {
        self.name = Some(name.to_string());
        self
    }
    /// Answers `elicitation/create` with f.
    pub fn elicitation<F>(&mut self, f: F) -> &mut Self
    where
        F: for<'a, 'b> Fn(&Context<'a>, &ElicitRequest<'b>) -> Result<ElicitResult, Error> + 'static,
    {
        self.elicitation = Some(Box::new(f));
        self
    }
    /// Answers `sampling/createMessage` with f (deprecated in MCP 2026-07-28,
    /// still answered in both eras).
    pub fn sampling<F>(&mut self, f: F) -> &mut Self
    where
        F: for<'a, 'b> Fn(&Context<'a>, &SamplingRequest<'b>) -> Result<SamplingResult, Error> + 'static,
    {
        self.sampling = Some(Box::new(f));
        self
    }
    /// Says the sampling handler supports tool use: the manifest says
    /// `"samplingTools": true`, and requests may carry `tools`.
    pub fn sampling_tools(&mut self) -> &mut Self {
        self.sampling_tools = true;
        self
    }
    /// Answers `roots/list` with f.
    pub fn roots<F>(&mut self, f: F) -> &mut Self
    where
        F: for<'a, 'b> Fn(&Context<'a>, &RootsRequest<'b>) -> Result<RootsResult, Error> + 'static,
    {
        self.roots = Some(Box::new(f));
        self
    }
    /// Consumes progress notifications: `Flow::Stop` (or an error) cancels
    /// the request.
    pub fn progress<F>(&mut self, f: F) -> &mut Self
    where
        F: for<'a, 'b> Fn(&Context<'a>, &Progress<'b>) -> Result<Flow, Error> + 'static,
    {
        self.progress = Some(Box::new(f));
        self
    }
    /// Consumes subscription events: `Flow::Stop` ends the subscription
    /// (an error ends it too).
    pub fn events<F>(&mut self, f: F) -> &mut Self
    where
        F: for<'a, 'b> Fn(&Context<'a>, &Event<'b>) -> Result<Flow, Error> + 'static,
    {
        self.events = Some(Box::new(f));
        self
    }

    /// Makes the module a request interceptor (ABI version 2, abi/ABI.md
    /// section 8): f sees each request of the methods listed (every method
    /// when the list is empty) before it is sent, and answers a `Decision`
    /// or, to deny it, an `Error`. The methods are shared with
    /// `intercept_results`: the last list given that is not empty applies
    /// to both.
    pub fn intercept_requests<F>(&mut self, f: F, methods: &[&str]) -> &mut Self
    where
        F: for<'a, 'b> Fn(&Context<'a>, &InterceptRequest<'b>) -> Result<Decision, Error> + 'static,
    {
        self.intercept_request = Some(Box::new(f));
        self.set_intercept_methods(methods)
    }
    /// Makes the module a result interceptor: f sees the server's answer
    /// to each request of the methods listed (every method when the list
    /// is empty) before the client's caller does, and answers a `Decision`
    /// or, to withhold it, an `Error`.
    pub fn intercept_results<F>(&mut self, f: F, methods: &[&str]) -> &mut Self
    where
        F: for<'a, 'b> Fn(&Context<'a>, &InterceptResult<'b>) -> Result<Decision, Error> + 'static,
    {
        self.intercept_result = Some(Box::new(f));
        self.set_intercept_methods(methods)
    }
    fn set_intercept_methods(&mut self, methods: &[&str]) -> &mut Self {
        if !methods.is_empty() {
            self.intercept_methods = methods.iter().map(|m| m.to_string()).collect();
        }
        self
    }

    /// The module's manifest (abi/ABI.md section 2).
    pub fn manifest(&self) -> String {
        let intercepts = self.intercept_request.is_some() || self.intercept_result.is_some();
        let mut out = format!("{{\"abi\":{},\"methods\":[", if intercepts { 2 } else { 1 });
        let mut first = true;
        for (m, on) in [
            (METHOD_ELICITATION, self.elicitation.is_some()),
            (METHOD_SAMPLING, self.sampling.is_some()),
            (METHOD_ROOTS, self.roots.is_some()),
        ] {
            if on {
                if !first {
                    out.push(',');
                }
                first = false;
                json::write_str(&mut out, m);
            }
        }
        out.push_str("],\"progress\":");
        out.push_str(if self.progress.is_some() { "true" } else { "false" });
        out.push_str(",\"events\":");
        out.push_str(if self.events.is_some() { "true" } else { "false" });
        if self.sampling_tools && self.sampling.is_some() {
            out.push_str(",\"samplingTools\":true");
        }
        if intercepts {
            out.push_str(",\"intercept\":{\"requests\":");
            out.push_str(if self.intercept_request.is_some() { "true" } else { "false" });
            out.push_str(",\"results\":");
            out.push_str(if self.intercept_result.is_some() { "true" } else { "false" });
            if !self.intercept_methods.is_empty() {
                out.push_str(",\"methods\":[");
                for (i, m) in self.intercept_methods.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    json::write_str(&mut out, m);
                }
                out.push(']');
            }
            out.push('}');
        }
        if let Some(n) = &self.name {
            out.push_str(",\"name\":");
            json::write_str(&mut out, n);
        }
        out.push('}');
        out
    }
}

pub const METHOD_ELICITATION: &str = "elicitation/create";
pub const METHOD_SAMPLING: &str = "sampling/createMessage";
pub const METHOD_ROOTS: &str = "roots/list";

/// The status an entry point returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok = 0,
    Error = 1,
    Stop = 2,
    /// Interceptors only: the output replaces the params or the answer.
    Replace = 3,
}

/// An entry point of the ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `snodo_handle`: a request.
    Handle,
    /// `snodo_progress`: a progress notification.
    Progress,
    /// `snodo_event`: a subscription event.
    Event,
    /// `snodo_intercept_request`: a request about to be sent.
    InterceptRequest,
    /// `snodo_intercept_result`: the server's answer to a request.
    InterceptResult,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
    static OUT: RefCell<String> = RefCell::new(String::new());
}

/// Runs the registration function and installs the panic hook. Called by
/// the `_initialize` that `register!` exports (and by tests).
#[doc(hidden)]
pub fn __init(f: fn(&mut Registry)) {
    std::panic::set_hook(Box::new(panic_hook));
    host::call_ctors();
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        *r = Registry::default();
        f(&mut r);
    });
}

/// Reports a panic to the host's log and, on one line, to stderr: the host
/// names the first line of stderr in the call's -32603 error. The module
/// then traps (panics abort on Wasm).
fn panic_hook(info: &std::panic::PanicInfo<'_>) {
    let payload = info.payload();
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.as_str()
    } else {
        "Box<dyn Any>"
    };
    let mut line = String::from("panicked: ");
    for c in msg.chars() {
        match c {
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            c => line.push(c),
        }
    }
    if let Some(l) = info.location() {
        line.push_str(&format!(" (at {}:{})", l.file(), l.line()));
    }
    log(Level::Error, &line);
    line.push('\n');
    host::stderr(line.as_bytes());
}

/// Registers the module's handlers: `register!(f)` with
/// `fn f(r: &mut Registry)` exports `_initialize`, which runs f once per
/// instance. Use it once, in the crate that builds the module.
#[macro_export]
macro_rules! register {
    ($f:path) => {
        #[no_mangle]
        pub extern "C" fn _initialize() {
            $crate::__init($f);
        }
    };
}

/// Runs one call of an entry point on an input envelope, as the host
/// would, and returns the status and the output (empty for none). It lets
/// handler logic be tested natively with `cargo test`: call the
/// registration function with `test_register` first.
pub fn call(entry: Entry, input: &[u8]) -> (Status, String) {
    let mut out = String::new();
    let st = dispatch(entry, input, &mut out);
    (st, out)
}

/// Runs the registration function, for `call` in native tests.
pub fn test_register(f: fn(&mut Registry)) {
    REGISTRY.with(|r| {
        let mut r = r.borrow_mut();
        *r = Registry::default();
        f(&mut r);
    });
}

/// The manifest of what is registered.
pub fn manifest() -> String {
    REGISTRY.with(|r| r.borrow().manifest())
}

pub(crate) fn error_output(out: &mut String, e: &Error) -> Status {
    out.clear();
    e.encode(out);
    Status::Error
}

fn flow_output(out: &mut String, r: Result<Flow, Error>) -> Status {
    match r {
        Ok(Flow::Continue) => Status::Ok,
        Ok(Flow::Stop) => Status::Stop,
        Err(e) => error_output(out, &e),
    }
}

fn answer<R: Encode>(out: &mut String, r: Result<R, Error>) -> Status {
    match r {
        Ok(res) => match res.encode(out) {
            Ok(()) => Status::Ok,
            Err(e) => error_output(out, &Error::internal(format!("encode result: {}", e.message))),
        },
        Err(e) => error_output(out, &e),
    }
}

/// The method and where the params start, of a request envelope that was
/// checked whole; None when it is not an object.
fn envelope(text: &str) -> Result<Option<(Option<std::borrow::Cow<'_, str>>, Option<usize>)>, Error> {
    let mut p = json::Parser::new(text);
    if p.peek() != Some(b'{') {
        return Ok(None);
    }
    let (mut method, mut params) = (None, None);
    p.object(0, |p: &mut json::Parser<'_>, k| -> Result<(), Error> {
        match &*k {
            "method" if p.peek() == Some(b'"') => method = Some(p.str()?),
            "method" => {
                method = None;
                p.skip_value(1)?
            }
            "params" => {
                params = if p.null()? {
                    None
                } else {
                    let at = p.offset();
                    p.skip_value(1)?;
                    Some(at)
                }
            }
            _ => p.skip_value(1)?,
        }
        Ok(())
    })?;
    Ok(Some((method, params)))
}

/// Reads an elicitation in one pass over the input, without a value tree:
/// the envelope's members, and the params decoded where they stand when
/// the method came first (as the host writes it). The pass checks all it
/// reads; any error is left to `read_elicitation_checked`, which says
/// what `json::parse` would. Ok(None) when the input is not an
/// elicitation.
fn read_elicitation(text: &str) -> Result<Option<(std::borrow::Cow<'_, str>, ElicitRequest<'_>)>, Error> {
    let mut p = json::Parser::new(text);
    if p.peek() != Some(b'{') {
        return Err(Error::internal("not an object"));
    }
    let (mut method, mut params, mut req) = (None, None, None);
    p.object(0, |p: &mut json::Parser<'_>, k| -> Result<(), Error> {
        match &*k {
            "method" if p.peek() == Some(b'"') => method = Some(p.str()?),
            "method" => {
                method = None;
                p.skip_value(1)?
            }
            "params" => {
                req = None;
                params = if p.null()? {
                    None
                } else {
                    let at = p.offset();
                    if method.as_deref() == Some(METHOD_ELICITATION) {
                        req = Some((ElicitRequest::decode_from(p, 1)?, at));
                    } else {
                        p.skip_value(1)?;
                    }
                    Some(at)
                }
            }
            _ => p.skip_value(1)?,
        }
        Ok(())
    })?;
    if p.peek().is_some() {
        return Err(Error::internal("text after the value"));
    }
    let method = match method {
        Some(m) if m == METHOD_ELICITATION => m,
        _ => return Ok(None),
    };
    let req = match (params, req) {
        (None, _) => ElicitRequest { mode: "form".into(), ..Default::default() },
        (Some(at), Some((req, from))) if at == from => req,
        // The params came before the method: the input is checked now.
        (Some(at), _) => ElicitRequest::decode_from(&mut json::Parser::at(text, at), 1)?,
    };
    Ok(Some((method, req)))
}

/// Reads an elicitation the one pass refused, checking the envelope whole
/// first, so its errors are those of `json::parse`, then the params.
fn read_elicitation_checked(input: &[u8]) -> Result<Option<(std::borrow::Cow<'_, str>, ElicitRequest<'_>)>, Error> {
    let text = json::validate(input)
        .map_err(|e| Error::invalid_params(format!("invalid request envelope: {}", e)))?;
    let (method, params) = match envelope(text) {
        Ok(Some((Some(m), params))) if m == METHOD_ELICITATION => (m, params),
        _ => return Ok(None),
    };
    let req = match params {
        None => Ok(ElicitRequest { mode: "form".into(), ..Default::default() }),
        Some(at) => ElicitRequest::decode_from(&mut json::Parser::at(text, at), 1),
    };
    match req {
        Ok(req) => Ok(Some((method, req))),
        Err(e) => Err(Error::invalid_params(format!("invalid {} params: {}", method, e.message))),
    }
}

/// Answers an elicitation straight from the input. None when the input is
/// not an elicitation this module answers (dispatch then takes the
/// general way).
fn dispatch_elicitation(r: &Registry, input: &[u8], out: &mut String) -> Option<Status> {
    let f = r.elicitation.as_ref()?;
    let fast = std::str::from_utf8(input).map_err(|_| ()).and_then(|t| read_elicitation(t).map_err(|_| ()));
    let read = match fast {
        Ok(r) => Ok(r),
        Err(()) => read_elicitation_checked(input),
    };
    match read {
        Ok(Some((method, req))) => Some(answer(out, f(&Context { method: &method }, &req))),
        Ok(None) => None,
        Err(e) => Some(error_output(out, &e)),
    }
}

fn dispatch(entry: Entry, input: &[u8], out: &mut String) -> Status {
    out.clear();
    match entry {
        Entry::Handle => {
            if let Some(st) = REGISTRY.with(|r| dispatch_elicitation(&r.borrow(), input, out)) {
                return st;
            }
        }
        Entry::InterceptRequest | Entry::InterceptResult => {
            let results = entry == Entry::InterceptResult;
            return REGISTRY.with(|r| intercept::dispatch(&r.borrow(), results, input, out));
        }
        _ => {}
    }
    let env = match json::parse(input) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return error_output(out, &Error::invalid_params("invalid request envelope: not a JSON object")),
        Err(e) => return error_output(out, &Error::invalid_params(format!("invalid request envelope: {}", e))),
    };
    let empty = Value::Object(Vec::new());
    let params = match env.get("params") {
        None | Some(Value::Null) => &empty,
        Some(p) => p,
    };
    REGISTRY.with(|r| {
        let r = r.borrow();
        match entry {
            Entry::Handle => {
                let method = match env.get("method").and_then(Value::as_str) {
                    Some(m) => m,
                    None => {
                        return error_output(out, &Error::invalid_params("invalid request envelope: no method"))
                    }
                };
                let ctx = Context { method };
                let invalid = |e: Error| Error::invalid_params(format!("invalid {} params: {}", method, e.message));
                match method {
                    // dispatch_elicitation answered every elicitation/create
                    // of a module that registered a handler for it.
                    METHOD_SAMPLING if r.sampling.is_some() => match SamplingRequest::decode(params) {
                        Ok(req) => answer(out, (r.sampling.as_ref().unwrap())(&ctx, &req)),
                        Err(e) => error_output(out, &invalid(e)),
                    },
                    METHOD_ROOTS if r.roots.is_some() => match RootsRequest::decode(params) {
                        Ok(req) => answer(out, (r.roots.as_ref().unwrap())(&ctx, &req)),
                        Err(e) => error_output(out, &invalid(e)),
                    },
                    _ => error_output(out, &Error::new(-32601, format!("method not found: {}", method))),
                }
            }
            Entry::Progress => {
                let f = match &r.progress {
                    Some(f) => f,
                    None => return error_output(out, &Error::new(-32601, "module does not consume progress")),
                };
                match Progress::decode(params) {
                    Ok(p) => flow_output(out, f(&Context { method: "notifications/progress" }, &p)),
                    Err(e) => error_output(out, &Error::invalid_params(format!("invalid progress params: {}", e.message))),
                }
            }
            Entry::Event => {
                let f = match &r.events {
                    Some(f) => f,
                    None => return error_output(out, &Error::new(-32601, "module does not consume events")),
                };
                let method = match env.get("method") {
                    None | Some(Value::Null) => "",
                    Some(Value::String(s)) => s,
                    Some(_) => return error_output(out, &Error::invalid_params("invalid event: method must be a string")),
                };
                let ev = Event { method: std::borrow::Cow::Borrowed(method), params: params.clone() };
                flow_output(out, f(&Context { method }, &ev))
            }
            Entry::InterceptRequest | Entry::InterceptResult => unreachable!("answered above"),
        }
    })
}

/// The host side: imports and exports under Wasm, inert natively.
#[cfg(target_arch = "wasm32")]
mod host {
    use super::*;

    #[link(wasm_import_module = "snodo")]
    extern "C" {
        fn set_output(ptr: *const u8, len: usize);
        #[link_name = "log"]
        fn host_log(level: i32, ptr: *const u8, len: usize);
        #[link_name = "config"]
        fn host_config(ptr: *mut u8, cap: usize) -> usize;
    }

    extern "C" {
        // Synthesised by wasm-ld: runs the static constructors (wasi-libc's).
        fn __wasm_call_ctors();
    }

    pub(crate) fn call_ctors() {
        // SAFETY: called once per instance, from _initialize, as
        // wasi-libc's own reactor start does.
        unsafe { __wasm_call_ctors() }
    }

    pub(crate) fn output(b: &[u8]) {
        // SAFETY: the host copies len bytes at ptr during the call.
        unsafe { set_output(b.as_ptr(), b.len()) }
    }

    pub(crate) fn log(level: i32, b: &[u8]) {
        // SAFETY: the host reads len bytes at ptr during the call.
        unsafe { host_log(level, b.as_ptr(), b.len()) }
    }

    pub(crate) fn stderr(b: &[u8]) {
        use std::io::Write;
        let _ = std::io::stderr().write_all(b);
    }

    pub(crate) fn config() -> String {
        // SAFETY: a capacity of 0 writes nothing.
        let n = unsafe { host_config(std::ptr::null_mut(), 0) };
        let mut buf = vec![0u8; n];
        if n > 0 {
            // SAFETY: buf has n writable bytes.
            let m = unsafe { host_config(buf.as_mut_ptr(), n) };
            buf.truncate(m.min(n));
        }
        String::from_utf8(buf).unwrap_or_else(|_| "null".into())
    }

    thread_local! {
        // The input buffer snodo_alloc hands out; the host fills it before
        // each call.
        static INPUT: RefCell<Vec<u8>> = RefCell::new(Vec::new());
    }

    #[no_mangle]
    pub extern "C" fn snodo_alloc(size: usize) -> *mut u8 {
        INPUT.with(|b| {
            let mut b = b.borrow_mut();
            let want = size.max(1);
            if b.len() < want {
                let mut fresh = Vec::new();
                if fresh.try_reserve_exact(want).is_err() {
                    return std::ptr::null_mut();
                }
                fresh.resize(want, 0);
                *b = fresh; // frees the previous buffer
            }
            b.as_mut_ptr()
        })
    }

    #[no_mangle]
    pub extern "C" fn snodo_describe() -> i32 {
        output(manifest().as_bytes());
        Status::Ok as i32
    }

    fn run(entry: Entry, len: usize) -> i32 {
        INPUT.with(|b| {
            let b = b.borrow();
            if len > b.len() {
                let mut out = String::new();
                return error_output(&mut out, &Error::internal("input longer than the buffer snodo_alloc gave"))
                    as i32;
            }
            OUT.with(|o| {
                let mut o = o.borrow_mut();
                let st = dispatch(entry, &b[..len], &mut o);
                if st == Status::Error || st == Status::Replace || (st == Status::Ok && !o.is_empty()) {
                    output(o.as_bytes());
                }
                if o.capacity() > 64 << 10 {
                    *o = String::new();
                }
                st as i32
            })
        })
    }

    #[no_mangle]
    pub extern "C" fn snodo_handle(_ptr: *const u8, len: usize) -> i32 {
        run(Entry::Handle, len)
    }

    #[no_mangle]
    pub extern "C" fn snodo_progress(_ptr: *const u8, len: usize) -> i32 {
        run(Entry::Progress, len)
    }

    #[no_mangle]
    pub extern "C" fn snodo_event(_ptr: *const u8, len: usize) -> i32 {
        run(Entry::Event, len)
    }

    #[no_mangle]
    pub extern "C" fn snodo_intercept_request(_ptr: *const u8, len: usize) -> i32 {
        run(Entry::InterceptRequest, len)
    }

    #[no_mangle]
    pub extern "C" fn snodo_intercept_result(_ptr: *const u8, len: usize) -> i32 {
        run(Entry::InterceptResult, len)
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod host {
    pub(crate) fn call_ctors() {}
    pub(crate) fn log(_level: i32, _b: &[u8]) {}
    pub(crate) fn stderr(b: &[u8]) {
        use std::io::Write;
        let _ = std::io::stderr().write_all(b);
    }
    pub(crate) fn config() -> String {
        std::env::var("SNODO_GUEST_CONFIG").unwrap_or_else(|_| "null".into())
    }
}
