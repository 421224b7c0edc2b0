//! echo accepts every elicitation with the request's message as the
//! "echo" field: the Rust counterpart of the Go guest and the native
//! handler that handlers/wasm's BenchmarkElicitation compares.

use snodo_guest::{Context, ElicitRequest, ElicitResult, Error, FieldValue, Registry};

fn answer(_ctx: &Context<'_>, req: &ElicitRequest<'_>) -> Result<ElicitResult, Error> {
    Ok(ElicitResult::accept(vec![("echo".into(), FieldValue::String(req.message.to_string()))]))
}

fn register(r: &mut Registry) {
    r.name("rust-echo").elicitation(answer);
}

snodo_guest::register!(register);
