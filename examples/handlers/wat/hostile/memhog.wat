;; memhog: a hostile Snodo handler for the host's tests. Grows its memory a page (64 KiB) at a time until the limit refuses, then traps.
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":1,\"methods\":[\"elicitation/create\"]}")

  (func (export "snodo_describe") (result i32)
    (call $set_output (i32.const 16) (i32.const 42))
    (i32.const 0))

  (func (export "snodo_alloc") (param $n i32) (result i32)
    (local $pages i32)
    (local.set $pages
      (i32.add (i32.const 1)
        (i32.shr_u (i32.add (local.get $n) (i32.const 65535)) (i32.const 16))))
    (if (i32.gt_u (local.get $pages) (memory.size))
      (then
        (if (i32.eq (memory.grow (i32.sub (local.get $pages) (memory.size))) (i32.const -1))
          (then (return (i32.const 0))))))
    (i32.const 65536))

  (func (export "snodo_handle") (param $ptr i32) (param $len i32) (result i32)
    (loop $more
      (br_if $more (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
    unreachable)
)
