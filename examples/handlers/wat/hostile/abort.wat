;; abort: a hostile Snodo handler for the host's tests. It calls
;; AssemblyScript's env.abort, as a failed assertion in AssemblyScript does,
;; with the message "boom" (an AssemblyScript string: UTF-16, its byte
;; length in the four bytes before it).
(module
  (import "snodo" "set_output" (func $set_output (param i32 i32)))
  (import "env" "abort" (func $abort (param i32 i32 i32 i32)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":1,\"methods\":[\"elicitation/create\"]}")
  (data (i32.const 60) "\08\00\00\00b\00o\00o\00m\00")

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
    (call $abort (i32.const 64) (i32.const 64) (i32.const 7) (i32.const 3))
    (i32.const 0))
)
