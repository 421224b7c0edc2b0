//! hostile does, when an elicitation's message says so, one thing the host
//! must survive: "panic" panics (with a newline and an ANSI escape in the
//! message), "overflow" recurses until the stack is gone, "alloc" asks for
//! more memory than the module may have, "error" answers a JSON-RPC error.
//! Anything else is accepted.

use snodo_guest::{Context, ElicitRequest, ElicitResult, Error, Registry};

#[allow(unconditional_recursion)]
fn depth(n: u64, pad: &mut [u8; 256]) -> u64 {
    pad[(n % 256) as usize] = n as u8;
    let mut next = [0u8; 256];
    next[0] = pad[0];
    // std::hint::black_box is newer than rustc 1.63: the array passed on
    // keeps the frame from being optimised away.
    n + depth(n + 1, &mut next) + next[(n % 7) as usize] as u64
}

fn answer(_ctx: &Context<'_>, req: &ElicitRequest<'_>) -> Result<ElicitResult, Error> {
    match &*req.message {
        "panic" => panic!("guest gave up\n\x1b[31mforged"),
        "overflow" => {
            let mut pad = [0u8; 256];
            let n = depth(0, &mut pad);
            Err(Error::internal(format!("recursion ended at {}", n)))
        }
        "alloc" => {
            let mut v: Vec<u8> = Vec::with_capacity(1 << 30);
            // A volatile write, so that the optimizer cannot drop the
            // allocation (it removes one that nothing reads or writes).
            unsafe { std::ptr::write_volatile(v.as_mut_ptr(), 1) };
            Err(Error::internal(format!("allocated {}", v.capacity())))
        }
        "error" => Err(Error::new(-32000, "refused by policy")),
        _ => Ok(ElicitResult::accept(Vec::new())),
    }
}

fn register(r: &mut Registry) {
    r.name("rust-hostile").elicitation(answer);
}

snodo_guest::register!(register);
