//! The entry points, run natively as the host would run them.

use snodo_guest::*;

fn register(r: &mut Registry) {
    r.name("t")
        .elicitation(|ctx: &Context<'_>, req: &ElicitRequest<'_>| -> Result<ElicitResult, Error> {
            assert_eq!(ctx.method, METHOD_ELICITATION);
            match &*req.message {
                "fail" => Err("plain failure".into()),
                "coded" => Err(Error::new(-32000, "no").with_data(Value::string("why"))),
                "twice" => Ok(ElicitResult::accept(vec![
                    ("a".into(), FieldValue::Integer(1)),
                    ("a".into(), FieldValue::Integer(2)),
                ])),
                _ => Ok(ElicitResult::accept(vec![
                    ("name".into(), FieldValue::String(req.requested_schema.properties[0].name.to_string())),
                    ("n".into(), FieldValue::Number(1.5)),
                    ("tags".into(), FieldValue::Strings(vec!["x\n".into()])),
                ])),
            }
        })
        .progress(|_: &Context<'_>, p: &Progress<'_>| Ok(if p.progress > 5.0 { Flow::Stop } else { Flow::Continue }))
        .events(|ctx: &Context<'_>, ev: &Event<'_>| {
            assert_eq!(ctx.method, ev.method);
            Ok(Flow::Stop)
        });
}

#[test]
fn entry_points() {
    test_register(register);
    assert_eq!(
        manifest(),
        r#"{"abi":1,"methods":["elicitation/create"],"progress":true,"events":true,"name":"t"}"#
    );
    let cases: &[(Entry, &str, Status, &str)] = &[
        (
            Entry::Handle,
            r#"{"method":"elicitation/create","params":{"message":"hi","requestedSchema":{"type":"object","properties":{"b\u00e9":{"type":"string"}}}}}"#,
            Status::Ok,
            r#"{"action":"accept","content":{"name":"bé","n":1.5,"tags":["x\n"]}}"#,
        ),
        (Entry::Handle, r#"{"method":"elicitation/create","params":{"message":"fail"}}"#, Status::Error, r#"{"code":-32603,"message":"plain failure"}"#),
        (Entry::Handle, r#"{"method":"elicitation/create","params":{"message":"coded"}}"#, Status::Error, r#"{"code":-32000,"message":"no","data":"why"}"#),
        (Entry::Handle, r#"{"method":"elicitation/create","params":{"message":"twice"}}"#, Status::Error, r#"{"code":-32603,"message":"encode result: field \"a\" given twice"}"#),
        (Entry::Handle, r#"{"method":"elicitation/create","params":{"message":7}}"#, Status::Error, r#"{"code":-32602,"message":"invalid elicitation/create params: message must be a string"}"#),
        (Entry::Handle, r#"{"method":"roots/list"}"#, Status::Error, r#"{"code":-32601,"message":"method not found: roots/list"}"#),
        (Entry::Handle, r#"[1]"#, Status::Error, r#"{"code":-32602,"message":"invalid request envelope: not a JSON object"}"#),
        (Entry::Handle, r#"{"#, Status::Error, r#"{"code":-32602,"message":"invalid request envelope: invalid JSON at byte 1: expected a member name"}"#),
        (Entry::Progress, r#"{"params":{"progressToken":1,"progress":9}}"#, Status::Stop, ""),
        (Entry::Progress, r#"{"params":{"progressToken":1,"progress":1}}"#, Status::Ok, ""),
        (Entry::Event, r#"{"method":"notifications/resources/updated","params":{}}"#, Status::Stop, ""),
    ];
    for (entry, input, status, output) in cases {
        let (st, out) = call(*entry, input.as_bytes());
        assert_eq!((st, out.as_str()), (*status, *output), "input {}", input);
    }
}

#[test]
fn hostile_nesting_is_refused_not_a_crash() {
    test_register(register);
    let deep = format!(r#"{{"method":"elicitation/create","params":{{"message":"x","_meta":{}}}}}"#, "[".repeat(100_000));
    let (st, out) = call(Entry::Handle, deep.as_bytes());
    assert_eq!(st, Status::Error);
    assert!(out.contains("nested too deeply"), "{}", out);
}

/// The envelope's members in any order, given twice, or wrong: the last
/// one counts, and an envelope that is not JSON is refused whatever the
/// params say.
#[test]
fn envelope_order_and_duplicates() {
    test_register(register);
    let ok = r#"{"action":"accept","content":{"name":"p","n":1.5,"tags":["x\n"]}}"#;
    let params = r#"{"message":"hi","requestedSchema":{"properties":{"p":{}}}}"#;
    let cases: Vec<(String, Status, &str)> = vec![
        (format!(r#"{{"params":{},"method":"elicitation/create"}}"#, params), Status::Ok, ok),
        (format!(r#"{{"method":"roots/list","params":{},"method":"elicitation/create"}}"#, params), Status::Ok, ok),
        (format!(r#"{{"method":"elicitation/create","params":{{"message":7}},"params":{}}}"#, params), Status::Ok, ok),
        (format!(r#" {{ "method" : "elicitation\/create" , "params" : {} }} "#, params), Status::Ok, ok),
        (
            format!(r#"{{"method":"elicitation/create","params":{},"method":"roots/list"}}"#, params),
            Status::Error,
            r#"{"code":-32601,"message":"method not found: roots/list"}"#,
        ),
        (
            format!(r#"{{"method":"elicitation/create","params":{},"params":{{"message":7}}}}"#, params),
            Status::Error,
            r#"{"code":-32602,"message":"invalid elicitation/create params: message must be a string"}"#,
        ),
        (
            r#"{"method":"elicitation/create","params":{"message":7},"x":[}"#.into(),
            Status::Error,
            r#"{"code":-32602,"message":"invalid request envelope: invalid JSON at byte 59: unexpected character"}"#,
        ),
        (
            format!(r#"{{"method":"elicitation/create","params":{}}} x"#, params),
            Status::Error,
            r#"{"code":-32602,"message":"invalid request envelope: invalid JSON at byte 100: text after the value"}"#,
        ),
    ];
    for (input, status, output) in cases {
        let (st, out) = call(Entry::Handle, input.as_bytes());
        assert_eq!((st, out.as_str()), (status, output), "input {}", input);
    }
}
