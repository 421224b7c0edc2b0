//! Interceptors' entry points, run natively as the host would run them.

use snodo_guest::*;

fn register(r: &mut Registry) {
    r.name("guard")
        .intercept_requests(
            |ctx: &Context<'_>, req: &InterceptRequest<'_>| -> Result<Decision, Error> {
                assert_eq!(ctx.method, req.method);
                let p = json::parse(req.params.as_bytes())?;
                match p.get("name").and_then(Value::as_str).unwrap_or("") {
                    "rm" => Err(Error::new(-32602, format!("{} from {} is denied", "rm", req.caller))),
                    "ls" => Ok(Decision::RewriteParams(r#" {"name":"ls","arguments":{"all":true}} "#.into())),
                    "wrong" => Ok(Decision::ReplaceResult("{}".into())),
                    _ => Ok(Decision::Pass),
                }
            },
            &[],
        )
        .intercept_results(
            |_: &Context<'_>, r: &InterceptResult<'_>| -> Result<Decision, Error> {
                if let Some(e) = r.error {
                    assert!(r.result.is_none());
                    return Ok(Decision::ReplaceError(Error::new(-32000, "hidden").with_data(Value::string(e))));
                }
                match r.result.unwrap() {
                    r#"{"content":"secret"}"# => Ok(Decision::ReplaceResult(r#"{"content":"[REDACTED]"}"#.into())),
                    r#"{"content":"deny"}"# => Err("withheld".into()),
                    r#"{"content":"wrong"}"# => Ok(Decision::RewriteParams("{}".into())),
                    _ => Ok(Decision::Pass),
                }
            },
            &["tools/call", "tasks/result"],
        );
}

const REQ: &str = r#"{"method":"tools/call","era":"legacy","protocolVersion":"2025-11-25","server":"s","caller":"c\u00e9","params":"#;

#[test]
fn manifest_says_abi_2_and_what_is_intercepted() {
    test_register(register);
    assert_eq!(
        manifest(),
        r#"{"abi":2,"methods":[],"progress":false,"events":false,"intercept":{"requests":true,"results":true,"methods":["tools/call","tasks/result"]},"name":"guard"}"#
    );
    test_register(|r: &mut Registry| {
        r.intercept_results(|_: &Context<'_>, _: &InterceptResult<'_>| Ok(Decision::Pass), &[]);
    });
    assert_eq!(manifest(), r#"{"abi":2,"methods":[],"progress":false,"events":false,"intercept":{"requests":false,"results":true}}"#);
}

#[test]
fn decisions_and_denials() {
    test_register(register);
    let req = |params: &str| format!("{}{}}}", REQ, params);
    let res = |member: &str| format!(r#"{{"method":"tools/call","params":{{"name":"x"}},{}}}"#, member);
    let cases: Vec<(Entry, String, Status, &str)> = vec![
        (Entry::InterceptRequest, req(r#"{"name":"cat"}"#), Status::Ok, ""),
        (Entry::InterceptRequest, req(r#"{"name":"ls","arguments":{}}"#), Status::Replace, r#"{"name":"ls","arguments":{"all":true}}"#),
        (Entry::InterceptRequest, req(r#"{"name":"rm"}"#), Status::Error, r#"{"code":-32602,"message":"rm from cé is denied"}"#),
        (
            Entry::InterceptRequest,
            req(r#"{"name":"wrong"}"#),
            Status::Error,
            r#"{"code":-32603,"message":"ReplaceResult and ReplaceError answer results only, not requests"}"#,
        ),
        (Entry::InterceptResult, res(r#""result":{"content":"fine"}"#), Status::Ok, ""),
        (Entry::InterceptResult, res(r#""result":{"content":"secret"}"#), Status::Replace, r#"{"result":{"content":"[REDACTED]"}}"#),
        (Entry::InterceptResult, res(r#""result":{"content":"deny"}"#), Status::Error, r#"{"code":-32603,"message":"withheld"}"#),
        (
            Entry::InterceptResult,
            res(r#""result":{"content":"wrong"}"#),
            Status::Error,
            r#"{"code":-32603,"message":"RewriteParams answers requests only, not results"}"#,
        ),
        (
            Entry::InterceptResult,
            res(r#""error":{"code":-1,"message":"m"}"#),
            Status::Replace,
            r#"{"error":{"code":-32000,"message":"hidden","data":"{\"code\":-1,\"message\":\"m\"}"}}"#,
        ),
        (Entry::InterceptRequest, "[]".into(), Status::Error, r#"{"code":-32602,"message":"invalid intercept envelope: not a JSON object"}"#),
        (
            Entry::InterceptRequest,
            r#"{"method":7,"params":{}}"#.into(),
            Status::Error,
            r#"{"code":-32602,"message":"invalid intercept envelope: method must be a string"}"#,
        ),
        (
            Entry::InterceptResult,
            format!(r#"{{"method":"tools/call","result":{}}}"#, "[".repeat(100_000)),
            Status::Error,
            r#"{"code":-32602,"message":"invalid intercept envelope: invalid JSON at byte 159: nested too deeply"}"#,
        ),
    ];
    for (entry, input, status, output) in cases {
        let (st, out) = call(entry, input.as_bytes());
        assert_eq!((st, out.as_str()), (status, output), "input {:.200}", input);
    }
}

#[test]
fn a_module_without_interceptors_refuses_their_calls() {
    test_register(|r: &mut Registry| {
        r.elicitation(|_: &Context<'_>, _: &ElicitRequest<'_>| Ok(ElicitResult::decline()));
    });
    assert!(manifest().starts_with(r#"{"abi":1,"#));
    let (st, out) = call(Entry::InterceptRequest, br#"{"method":"tools/call","params":{}}"#);
    assert_eq!((st, out.as_str()), (Status::Error, r#"{"code":-32603,"message":"module does not intercept requests"}"#));
    let (st, out) = call(Entry::InterceptResult, br#"{"method":"tools/call","result":{}}"#);
    assert_eq!((st, out.as_str()), (Status::Error, r#"{"code":-32603,"message":"module does not intercept results"}"#));
}
