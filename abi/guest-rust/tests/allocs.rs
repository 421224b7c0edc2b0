//! An elicitation is decoded straight from the input: no value tree, so
//! a call allocates only what the handler keeps (the form's fields) and
//! the output.

use snodo_guest::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = Cell::new(0);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        System.realloc(p, l, size)
    }
}

#[global_allocator]
static A: Counting = Counting;

fn register(r: &mut Registry) {
    r.elicitation(|_: &Context<'_>, req: &ElicitRequest<'_>| -> Result<ElicitResult, Error> {
        assert_eq!(req.message, "bench");
        assert_eq!(req.requested_schema.properties.len(), 1);
        Ok(ElicitResult::decline())
    });
}

#[test]
fn elicitation_allocates_only_the_fields_and_the_output() {
    test_register(register);
    let input = br#"{"method":"elicitation/create","params":{"message":"bench","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}},"_ignored":[{"a":{"b":[1,2,{}]}}]}}"#;
    let (st, out) = call(Entry::Handle, input);
    assert_eq!((st, out.as_str()), (Status::Ok, r#"{"action":"decline"}"#));
    let before = ALLOCS.with(Cell::get);
    let (st, _) = call(Entry::Handle, input);
    let n = ALLOCS.with(Cell::get) - before;
    assert_eq!(st, Status::Ok);
    // The properties' vector, and the output `call` returns (a fresh
    // String, grown once; the module's own output buffer is reused). A
    // value tree made 12.
    assert!(n <= 3, "an elicitation made {} allocations, want at most 3", n);
}
